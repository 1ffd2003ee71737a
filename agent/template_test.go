package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "", want: nil},
		{in: "  a  b\tc\n", want: []string{"a", "b", "c"}},
		{in: `'a b' "c d"`, want: []string{"a b", "c d"}},
		{in: `a\ b`, want: []string{"a b"}},
		{in: `a"b"'c'd`, want: []string{"abcd"}},
		{in: `"" ''`, want: []string{"", ""}},
		{in: `'it'\''s'`, want: []string{"it's"}},
		{in: `"say \"hi\" \\ \$HOME \` + "`x`" + `"`, want: []string{"say \"hi\" \\ $HOME `x`"}},
		{in: `"\n \a"`, want: []string{`\n \a`}},
		{in: `'$(rm -rf /) \n'`, want: []string{`$(rm -rf /) \n`}},
		{in: "a \\\nb", want: []string{"a", "b"}},
		{in: "\"multi\nline\"", want: []string{"multi\nline"}},
		{in: `'open`, wantErr: "unterminated single quote"},
		{in: `"open`, wantErr: "unterminated double quote"},
		{in: `"open\"`, wantErr: "unterminated double quote"},
		{in: `end\`, wantErr: "a backslash ends the template"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := splitWords(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNewTemplateErrors(t *testing.T) {
	tests := []struct{ tmpl, want string }{
		{"", `agent template "": no command`},
		{"cmd:", `agent template "cmd:": no command`},
		{"cmd:   ", `agent template "cmd:   ": no command`},
		{`cmd:aider --message '{prompt}`, `agent template "cmd:aider --message '{prompt}": unterminated single quote`},
		{`cmd:aider --message "{prompt}`, `agent template "cmd:aider --message \"{prompt}": unterminated double quote`},
		{`cmd:aider --message {promt}`, `agent template "cmd:aider --message {promt}": unknown placeholder {promt} (known: {prompt}, {task_id}, {run_id}, {attempt}, {workspace})`},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl, func(t *testing.T) {
			_, err := NewTemplate(tt.tmpl)
			if err == nil || err.Error() != tt.want {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// evilPrompt would do damage if any shell ever saw it, and would split into several arguments if anything
// split it.
const evilPrompt = "it's \"quoted\" and 'single'\nsecond line\t$(rm -rf /) `reboot` ; echo pwned > /tmp/x {task_id} \\"

func TestTemplateCommand(t *testing.T) {
	req := Request{RunID: "r9", TaskID: "2.3", Attempt: 4, Prompt: evilPrompt, Workspace: "/w s"}
	tests := []struct {
		tmpl      string
		want      []string
		wantStdin string
	}{
		{
			tmpl: "cmd:aider --yes --message {prompt}",
			want: []string{"aider", "--yes", "--message", evilPrompt},
		},
		{
			tmpl: `aider --yes --message "{prompt}"`,
			want: []string{"aider", "--yes", "--message", evilPrompt},
		},
		{
			tmpl: `cmd:agent --msg={prompt} --task={task_id}`,
			want: []string{"agent", "--msg=" + evilPrompt, "--task=2.3"},
		},
		{
			tmpl:      `cmd:./run.sh --run {run_id} -n{attempt} -C '{workspace}' "task {task_id} of {run_id}"`,
			want:      []string{"./run.sh", "--run", "r9", "-n4", "-C", "/w s", "task 2.3 of r9"},
			wantStdin: evilPrompt,
		},
		{
			tmpl:      `cmd:codex exec --json --skip-git-repo-check -`,
			want:      []string{"codex", "exec", "--json", "--skip-git-repo-check", "-"},
			wantStdin: evilPrompt,
		},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl, func(t *testing.T) {
			tm, err := NewTemplate(tt.tmpl)
			if err != nil {
				t.Fatal(err)
			}
			cmd, err := tm.Command(req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cmd.Args, tt.want) {
				t.Errorf("args\n got %q\nwant %q", cmd.Args, tt.want)
			}
			if cmd.Stdin != tt.wantStdin {
				t.Errorf("stdin %q, want %q", cmd.Stdin, tt.wantStdin)
			}
			wantEnv := []string{"ORCH_RUN_ID=r9", "ORCH_TASK_ID=2.3", "ORCH_ATTEMPT=4"}
			if !reflect.DeepEqual(cmd.Env, wantEnv) {
				t.Errorf("env %q, want %q", cmd.Env, wantEnv)
			}
		})
	}
	t.Run("an empty program after substitution is refused", func(t *testing.T) {
		tm, err := NewTemplate("{workspace} run")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tm.Command(Request{Prompt: "x"}); err == nil {
			t.Error("no error")
		}
	})
}

// TestTemplateRunsVerbatim runs a template command for real: the prompt reaches the program as one argument,
// byte for byte, and nothing was interpreted on the way.
func TestTemplateRunsVerbatim(t *testing.T) {
	bin := buildFakeClaude(t)
	ws := t.TempDir()
	tm, err := NewTemplate(`cmd:'` + filepath.Join(bin, "claude") + `' --message {prompt} --task "{task_id}"`)
	if err != nil {
		t.Fatal(err)
	}
	req := Request{RunID: "r1", TaskID: "1.1", Attempt: 1, Prompt: evilPrompt, Workspace: ws}
	cmd, err := tm.Command(req)
	if err != nil {
		t.Fatal(err)
	}
	out, err := filepath.Abs(filepath.Join("testdata", "plain", "aider_message.txt"))
	if err != nil {
		t.Fatal(err)
	}
	r, inv := runFake(t, tm, cmd, ws, out, 0, "")
	want := []string{"--message", evilPrompt, "--task", "1.1"}
	if !reflect.DeepEqual(inv.Args, want) {
		t.Errorf("argv\n got %q\nwant %q", inv.Args, want)
	}
	if !r.Success || !strings.HasPrefix(r.Text, "Aider v0.86.2\n") {
		t.Errorf("got %+v", r)
	}
}

func TestPlainParser(t *testing.T) {
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join("testdata", "plain", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	tests := []struct {
		name   string
		out    string
		exit   int
		stderr string
		want   Result
	}{
		{
			name: "aider prints text",
			out:  read("aider_message.txt"),
			want: Result{
				Success: true,
				Text:    "Aider v0.86.2\nModel: openai/mock-model with whole edit format\nThe directory contains the files listed above.\nTokens: 597 sent, 8 received.",
			},
		},
		{
			name: "codex exec --json",
			out:  read("codex_exec.jsonl"),
			want: Result{
				Success: true, Text: "Yep — there’s a `README.md` in the repository root.",
				SessionID:   "0199a213-81c0-7800-8aa1-bbab2a035a53",
				InputTokens: 24763 - 24448, CacheReadTokens: 24448, OutputTokens: 122,
			},
		},
		{
			name: "codex turn.failed exits 1",
			out:  `{"type":"thread.started","thread_id":"t1"}` + "\n" + `{"type":"turn.failed","error":{"message":"synthetic server error"}}` + "\n",
			exit: 1,
			want: Result{
				SessionID: "t1",
				Text:      "synthetic server error\nexit status 1",
				Errors:    []string{"synthetic server error", "exit status 1"},
			},
		},
		{
			name:   "failure with stderr",
			out:    "\n\npartial work\n",
			exit:   2,
			stderr: "error: unexpected argument '--full-auto' found\n",
			want: Result{
				Text:   "partial work\n\nexit status 2\nstderr: error: unexpected argument '--full-auto' found",
				Errors: []string{"exit status 2", "stderr: error: unexpected argument '--full-auto' found"},
			},
		},
		{
			name: "JSON that is not codex stays text",
			out:  `{"response": "The capital of France is Paris."}` + "\n",
			want: Result{Success: true, Text: `{"response": "The capital of France is Paris."}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm, err := NewTemplate("cmd:x")
			if err != nil {
				t.Fatal(err)
			}
			p := tm.NewParser()
			feed(t, p, strings.NewReader(tt.out))
			assertResult(t, p.Finish(tt.exit, []byte(tt.stderr)), tt.want)
		})
	}
}
