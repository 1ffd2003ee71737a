package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestClaudeCommand(t *testing.T) {
	req := Request{RunID: "r1", TaskID: "1.2", Attempt: 3, Prompt: "do it", Workspace: "/ws"}
	wantEnv := []string{"ORCH_RUN_ID=r1", "ORCH_TASK_ID=1.2", "ORCH_ATTEMPT=3"}
	tests := []struct {
		name     string
		cfg      ClaudeConfig
		session  string
		prompt   string
		wantArgs []string
		stdin    bool // the prompt goes on stdin, not as the last argument
		budget   float64
	}{
		{
			name:     "what is left of the budget, in whole cents up",
			budget:   1.234,
			wantArgs: []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--max-budget-usd", "1.24", "do it"},
		},
		{
			name:     "zero config",
			wantArgs: []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "do it"},
		},
		{
			name:    "model, resume and extra args",
			cfg:     ClaudeConfig{Binary: "/opt/claude", Model: "claude-sonnet-4-6", ExtraArgs: []string{"--max-turns", "30"}},
			session: "9ac571b5-8e1c-4a26-8639-9f2c9697cbae",
			wantArgs: []string{"/opt/claude", "-p", "--output-format", "stream-json", "--verbose", "--model", "claude-sonnet-4-6",
				"--resume", "9ac571b5-8e1c-4a26-8639-9f2c9697cbae", "--max-turns", "30", "do it"},
		},
		{
			name:     "a prompt that looks like an option comes after --",
			prompt:   "- [ ] fix the build",
			wantArgs: []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--", "- [ ] fix the build"},
		},
		{
			name:     "a prompt no argument could hold goes on stdin as it is",
			prompt:   "nul \x00 here\x00, bad utf-8 \xff\xfe, controls \x1b[31m\r\b and " + strings.Repeat("x", 1<<20),
			wantArgs: []string{"claude", "-p", "--output-format", "stream-json", "--verbose"},
			stdin:    true,
		},
		{
			name:     "a prompt longer than an argument should carry goes on stdin",
			prompt:   strings.Repeat("y", promptArgLimit+1),
			wantArgs: []string{"claude", "-p", "--output-format", "stream-json", "--verbose"},
			stdin:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := req
			r.SessionID = tt.session
			r.MaxBudgetUSD = tt.budget
			if tt.prompt != "" {
				r.Prompt = tt.prompt
			}
			cmd, err := NewClaude(tt.cfg).Command(r)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cmd.Args, tt.wantArgs) {
				t.Errorf("args\n got %q\nwant %q", cmd.Args, tt.wantArgs)
			}
			if !reflect.DeepEqual(cmd.Env, wantEnv) {
				t.Errorf("env %q, want %q", cmd.Env, wantEnv)
			}
			if want := map[bool]string{true: r.Prompt}[tt.stdin]; cmd.Stdin != want {
				t.Errorf("stdin is %d bytes, want %d (the prompt on stdin: %v)", len(cmd.Stdin), len(want), tt.stdin)
			}
		})
	}
	t.Run("a paused call is resumed with nothing on stdin", func(t *testing.T) {
		cmd, err := NewClaude(ClaudeConfig{}).Command(Request{TaskID: "1", SessionID: "s1", ResumePaused: true, Prompt: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if cmd.Stdin != "" {
			t.Errorf("stdin %q, want none", cmd.Stdin)
		}
	})
	t.Run("an empty prompt is refused", func(t *testing.T) {
		if _, err := NewClaude(ClaudeConfig{}).Command(Request{TaskID: "1"}); !errors.Is(err, errEmptyPrompt) {
			t.Errorf("err = %v, want errEmptyPrompt", err)
		}
	})
}

// buildFakeClaude builds testdata/fakeclaude as dir/claude.
func buildFakeClaude(t *testing.T) (dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a binary")
	}
	dir = t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "claude"), "./testdata/fakeclaude").CombinedOutput()
	if err != nil {
		t.Fatalf("building fakeclaude: %v\n%s", err, out)
	}
	return dir
}

type fakeInvocation struct {
	Args  []string          `json:"args"`
	Dir   string            `json:"dir"`
	Env   map[string]string `json:"env"`
	Stdin *string           `json:"stdin"`
}

// runFake runs cmd as the sandbox would (no shell, cmd.Env added to the environment, the workspace as the
// working directory), with the fake's instructions, and returns what the parser made of it and what the fake
// recorded.
func runFake(t *testing.T, a Adapter, cmd Command, workspace, transcript string, exit int, stderr string) (Result, fakeInvocation) {
	t.Helper()
	record := filepath.Join(t.TempDir(), "argv.json")
	c := exec.Command(cmd.Args[0], cmd.Args[1:]...)
	c.Dir = workspace
	c.Env = append(append(os.Environ(), cmd.Env...),
		"FAKE_CLAUDE_ARGS="+record,
		"FAKE_CLAUDE_TRANSCRIPT="+transcript,
		"FAKE_CLAUDE_EXIT="+strconv.Itoa(exit),
		"FAKE_CLAUDE_STDERR="+stderr,
	)
	var errBuf bytes.Buffer
	c.Stderr = &errBuf
	if cmd.Stdin != "" {
		c.Stdin = strings.NewReader(cmd.Stdin)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	p := a.NewParser()
	feed(t, p, stdout)
	err = c.Wait()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatal(err)
	}
	res := p.Finish(c.ProcessState.ExitCode(), errBuf.Bytes())

	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatalf("the fake recorded nothing: %v (stderr %s)", err, errBuf.Bytes())
	}
	var inv fakeInvocation
	if err := json.Unmarshal(data, &inv); err != nil {
		t.Fatal(err)
	}
	return res, inv
}

func TestClaudeRunsFakeBinary(t *testing.T) {
	bin := buildFakeClaude(t)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	transcript := func(name string) string {
		p, err := filepath.Abs(filepath.Join("testdata", "claude", name))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	prompt := BuildPrompt(PromptTask{ID: "1.1", Title: "Add a cache", Description: "Use \"LRU\".\n$(rm -rf /)"}, []string{"try again"})

	tests := []struct {
		name       string
		cfg        ClaudeConfig
		session    string
		transcript string
		exit       int
		stderr     string
		wantArgs   []string
		check      func(t *testing.T, r Result)
	}{
		{
			name:       "new session",
			cfg:        ClaudeConfig{Model: "claude-sonnet-4-6"},
			transcript: "02_stream_claude-2.1.63.jsonl",
			wantArgs:   []string{"-p", "--output-format", "stream-json", "--verbose", "--model", "claude-sonnet-4-6", prompt},
			check: func(t *testing.T, r Result) {
				if !r.Success || r.SessionID != "e9ccd9f0-820e-4fad-98d9-d89e6d771b96" || r.OutputTokens != 5307 {
					t.Errorf("got %+v", r)
				}
			},
		},
		{
			name:       "resumed session that fails authentication",
			session:    "e9ccd9f0-820e-4fad-98d9-d89e6d771b96",
			cfg:        ClaudeConfig{ExtraArgs: []string{"--permission-mode", "bypassPermissions"}},
			transcript: "04b_auth_401.jsonl",
			exit:       1,
			wantArgs: []string{"-p", "--output-format", "stream-json", "--verbose",
				"--resume", "e9ccd9f0-820e-4fad-98d9-d89e6d771b96", "--permission-mode", "bypassPermissions", prompt},
			check: func(t *testing.T, r Result) {
				if r.Success || !strings.Contains(strings.Join(r.Errors, "\n"), "API error 401: Invalid API key") {
					t.Errorf("got %+v", r)
				}
			},
		},
		{
			name:       "interrupted: exit 0 without a result line",
			transcript: "04b_sigint_no_result.jsonl",
			wantArgs:   []string{"-p", "--output-format", "stream-json", "--verbose", prompt},
			check: func(t *testing.T, r Result) {
				if r.Success {
					t.Errorf("exit 0 without a result line counted as success: %+v", r)
				}
			},
		},
		{
			name:       "stderr reaches the errors",
			transcript: os.DevNull,
			exit:       1,
			stderr:     "When using --print, --output-format=stream-json requires --verbose",
			wantArgs:   []string{"-p", "--output-format", "stream-json", "--verbose", prompt},
			check: func(t *testing.T, r Result) {
				if r.Success || !strings.Contains(r.Text, "requires --verbose") {
					t.Errorf("got %+v", r)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			req := Request{RunID: "run-7", TaskID: "1.1", Attempt: 2, Prompt: prompt, SessionID: tt.session, Workspace: ws}
			a := NewClaude(tt.cfg)
			cmd, err := a.Command(req)
			if err != nil {
				t.Fatal(err)
			}
			tr := tt.transcript
			if tr != os.DevNull {
				tr = transcript(tr)
			}
			r, inv := runFake(t, a, cmd, ws, tr, tt.exit, tt.stderr)
			if !reflect.DeepEqual(inv.Args, tt.wantArgs) {
				t.Errorf("argv\n got %q\nwant %q", inv.Args, tt.wantArgs)
			}
			if got := inv.Args[len(inv.Args)-1]; got != prompt {
				t.Errorf("last argument %q, want the prompt", got)
			}
			wantEnv := map[string]string{"ORCH_RUN_ID": "run-7", "ORCH_TASK_ID": "1.1", "ORCH_ATTEMPT": "2"}
			if !reflect.DeepEqual(inv.Env, wantEnv) {
				t.Errorf("env %v, want %v", inv.Env, wantEnv)
			}
			if d1, d2 := realPath(t, inv.Dir), realPath(t, ws); d1 != d2 {
				t.Errorf("ran in %s, want the workspace %s", d1, d2)
			}
			tt.check(t, r)
		})
	}
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
