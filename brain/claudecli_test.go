package brain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildFakeClaude compiles testdata/fakeclaude into dir as "claude".
func buildFakeClaude(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go toolchain to build the fake claude: %v", err)
	}
	bin := filepath.Join(dir, "claude")
	out, err := exec.Command(goBin, "build", "-o", bin, "./testdata/fakeclaude").CombinedOutput()
	if err != nil {
		t.Fatalf("building the fake claude: %v\n%s", err, out)
	}
	return bin
}

// fakeCLIRun is one test's use of the fake: its recording directory and the environment steering it.
type fakeCLIRun struct {
	dir string
	env []string
}

func newFakeCLIRun(t *testing.T, env ...string) *fakeCLIRun {
	dir := t.TempDir()
	return &fakeCLIRun{dir: dir, env: append([]string{"FAKECLAUDE_DIR=" + dir}, env...)}
}

func (r *fakeCLIRun) invocations(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, "count"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	var n int
	fmt.Sscan(string(b), &n)
	return n
}

func (r *fakeCLIRun) argv(t *testing.T, n int) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, fmt.Sprintf("argv-%d.json", n)))
	if err != nil {
		t.Fatal(err)
	}
	var argv []string
	if err := json.Unmarshal(b, &argv); err != nil {
		t.Fatal(err)
	}
	return argv
}

func (r *fakeCLIRun) stdin(t *testing.T, n int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, fmt.Sprintf("stdin-%d.txt", n)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fixture(name string) string {
	p, _ := filepath.Abs(filepath.Join("testdata", "llm", name))
	return p
}

func TestClaudeCLI(t *testing.T) {
	bin := buildFakeClaude(t, t.TempDir())
	newCLI := func(run *fakeCLIRun, s *sleeps, edit ...func(*ClaudeCLIConfig)) *ClaudeCLI {
		cfg := ClaudeCLIConfig{Binary: bin, Env: run.env, Sleep: s.sleep}
		for _, e := range edit {
			e(&cfg)
		}
		return NewClaudeCLI(cfg)
	}

	t.Run("exact flags, and a 2 MB output in full on stdin", func(t *testing.T) {
		run := newFakeCLIRun(t, "FAKECLAUDE_REPLIES="+fixture("claude_interpret_object.json"))
		var s sleeps
		c := newCLI(run, &s, func(cfg *ClaudeCLIConfig) { cfg.MaxOutputBytes = 3 << 20 })
		var b strings.Builder
		for i := 0; b.Len() < 2<<20; i++ {
			fmt.Fprintf(&b, "line %d of the agent's output\n", i)
		}
		b.WriteString("Which cache should I use? A) Redis B) In-memory C) File-based")
		output := b.String()
		got, err := c.Interpret(context.Background(), output)
		if err != nil {
			t.Fatal(err)
		}
		if n := run.invocations(t); n != 1 {
			t.Fatalf("%d invocations, want 1", n)
		}
		want := []string{"--model", "claude-haiku-4-5-20251001", "--print", "--no-session-persistence",
			"--output-format", "json", "--tools", "", "--strict-mcp-config"}
		if argv := run.argv(t, 1); fmt.Sprintf("%q", argv) != fmt.Sprintf("%q", want) {
			t.Errorf("argv %q\nwant %q", argv, want)
		}
		stdin := run.stdin(t, 1)
		if !strings.Contains(stdin, "Claude Code output:\n"+output) {
			t.Errorf("stdin (%d bytes) does not hold the %d-byte output in full", len(stdin), len(output))
		}
		if !strings.HasPrefix(stdin, "Analyze this Claude Code output") {
			t.Errorf("stdin starts %q", stdin[:60])
		}
		if got.Status != StatusNeedsHelp || got.Question != "Which cache should I use?" || len(got.Options) != 3 ||
			got.Recommendation != "B for simplicity" || got.Via != "claude" || got.OmittedBytes != 0 {
			t.Errorf("got %+v", got)
		}
		// The CLI's own cost figure, not the estimate.
		if u := got.Usage; u.Backend != "claude" || u.Calls != 1 || u.InputTokens != 1900 || u.OutputTokens != 60 ||
			math.Abs(u.CostUSD-0.001234) > 1e-12 {
			t.Errorf("usage %+v", u)
		}
	})

	t.Run("the array form of --output-format json", func(t *testing.T) {
		run := newFakeCLIRun(t, "FAKECLAUDE_REPLIES="+fixture("claude_interpret_array.json"))
		got, err := newCLI(run, &sleeps{}).Interpret(context.Background(), "All tests pass.")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != StatusCompleted || got.Summary != "Implemented the in-memory LRU cache; all tests pass." {
			t.Errorf("got %+v", got)
		}
		if math.Abs(got.Usage.CostUSD-0.0021) > 1e-12 || got.Usage.InputTokens != 2000 {
			t.Errorf("usage %+v", got.Usage)
		}
	})

	t.Run("529 twice, then an answer", func(t *testing.T) {
		run := newFakeCLIRun(t, "FAKECLAUDE_FAIL=2", "FAKECLAUDE_FAIL_REPLY="+fixture("claude_529.json"),
			"FAKECLAUDE_REPLIES="+fixture("claude_decide.json"))
		var s sleeps
		d, err := newCLI(run, &s).Decide(context.Background(), DecideInput{TaskID: "1.1", TaskTitle: "t",
			AttemptHistory: []string{"ImportError: x", "ImportError: x", "ImportError: x"}})
		if err != nil {
			t.Fatal(err)
		}
		if d.Decision != Escalate || d.Via != "claude" || d.GuidanceForRetry != "" {
			t.Errorf("got %+v", d)
		}
		if n := run.invocations(t); n != 3 {
			t.Errorf("%d invocations, want 3", n)
		}
		if len(s.waits()) != 2 {
			t.Errorf("waits %v, want 2", s.waits())
		}
		if d.Usage.Calls != 1 {
			t.Errorf("usage %+v: the 529s are not billed calls", d.Usage)
		}
	})

	t.Run("exit 1 twice, then an answer", func(t *testing.T) {
		run := newFakeCLIRun(t, "FAKECLAUDE_FAIL=2", "FAKECLAUDE_REPLIES="+fixture("claude_tasks.json"))
		l, err := newCLI(run, &sleeps{}).Tasks(context.Background(), "## Task 1.1: Create data model\n## Task 1.2: Add API endpoint\n")
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Tasks) != 2 || l.Tasks[1].ID != "1.2" || l.Via != "claude" {
			t.Errorf("got %+v", l)
		}
		if n := run.invocations(t); n != 3 {
			t.Errorf("%d invocations, want 3", n)
		}
	})

	t.Run("529 on every try", func(t *testing.T) {
		run := newFakeCLIRun(t, "FAKECLAUDE_FAIL=9", "FAKECLAUDE_FAIL_REPLY="+fixture("claude_529.json"))
		_, err := newCLI(run, &sleeps{}).Interpret(context.Background(), "output")
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("error %v, want ErrUnavailable", err)
		}
		for _, want := range []string{"claude CLI", "529 Overloaded", "after 3 tries"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
		if n := run.invocations(t); n != 3 {
			t.Errorf("%d invocations, want 3", n)
		}
	})

	t.Run("a process that keeps exiting 1", func(t *testing.T) {
		run := newFakeCLIRun(t, "FAKECLAUDE_FAIL=9")
		_, err := newCLI(run, &sleeps{}).Interpret(context.Background(), "output")
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "exit status 1: boom") {
			t.Fatalf("error %v, want ErrUnavailable with the exit status and stderr", err)
		}
	})

	t.Run("a refused login is not retried", func(t *testing.T) {
		run := newFakeCLIRun(t, "FAKECLAUDE_FAIL=9", "FAKECLAUDE_FAIL_REPLY="+fixture("claude_401.json"))
		var s sleeps
		_, err := newCLI(run, &s).Interpret(context.Background(), "output")
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "Invalid API key") {
			t.Fatalf("error %v", err)
		}
		if n := run.invocations(t); n != 1 || len(s.waits()) != 0 {
			t.Errorf("%d invocations and waits %v, want 1 and none", n, s.waits())
		}
	})

	t.Run("an invalid reply, then a good one after the corrective prompt", func(t *testing.T) {
		run := newFakeCLIRun(t, "FAKECLAUDE_REPLIES="+fixture("claude_invalid.json")+","+fixture("claude_interpret_object.json"))
		got, err := newCLI(run, &sleeps{}).Interpret(context.Background(), "the output")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != StatusNeedsHelp || got.Usage.Calls != 2 || math.Abs(got.Usage.CostUSD-0.002234) > 1e-12 {
			t.Errorf("got %+v", got)
		}
		second := run.stdin(t, 2)
		for _, want := range []string{"Claude Code output:\nthe output", "--- Your previous reply ---\nLooking at the output",
			"could not be used: the reply has no JSON object"} {
			if !strings.Contains(second, want) {
				t.Errorf("the corrective prompt lacks %q:\n%s", want, second)
			}
		}
	})

	t.Run("invalid twice", func(t *testing.T) {
		run := newFakeCLIRun(t, "FAKECLAUDE_REPLIES="+fixture("claude_invalid.json"))
		_, err := newCLI(run, &sleeps{}).Interpret(context.Background(), "the output")
		if !errors.Is(err, ErrInvalidReply) {
			t.Fatalf("error %v, want ErrInvalidReply", err)
		}
	})

	t.Run("not installed", func(t *testing.T) {
		var s sleeps
		c := NewClaudeCLI(ClaudeCLIConfig{Binary: "claude-not-installed-orch-test", Sleep: s.sleep})
		_, err := c.Interpret(context.Background(), "output")
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "claude CLI not found on PATH") {
			t.Fatalf("error %v", err)
		}
		if len(s.waits()) != 0 {
			t.Errorf("waited %v for a binary that is not there", s.waits())
		}
	})

	t.Run("a call that outlives its timeout is retried", func(t *testing.T) {
		run := newFakeCLIRun(t, "FAKECLAUDE_FAIL=9", "FAKECLAUDE_HANG=1")
		c := newCLI(run, &sleeps{}, func(cfg *ClaudeCLIConfig) { cfg.Timeout = 300 * time.Millisecond })
		start := time.Now()
		_, err := c.Interpret(context.Background(), "output")
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no answer within 300ms") {
			t.Fatalf("error %v", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
	})

	t.Run("a cancelled ctx kills the process", func(t *testing.T) {
		run := newFakeCLIRun(t, "FAKECLAUDE_FAIL=9", "FAKECLAUDE_HANG=1")
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := newCLI(run, &sleeps{}).Interpret(ctx, "output")
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnavailable) {
			t.Errorf("error %v, want the context's", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("returned after %v", d)
		}
	})
}

func TestParseCLIResult(t *testing.T) {
	tests := []struct {
		name, out string
		want      string // the result text; "" with wantErr
		wantErr   bool
	}{
		{"object", `{"type":"result","subtype":"success","is_error":false,"result":"hi"}`, "hi", false},
		{"object after a warning line", "warning: something\n{\"type\":\"result\",\"result\":\"hi\"}", "hi", false},
		{"array, last result wins", `[{"type":"system","subtype":"init"},{"type":"result","result":"early"},{"type":"assistant"},{"type":"result","result":"last"}]`, "last", false},
		{"array without a result", `[{"type":"system"},{"type":"assistant"}]`, "", true},
		{"a non-result object", `{"type":"assistant"}`, "", true},
		{"empty", "", "", true},
		{"not JSON", "Error: unknown option '--strict-mcp-config'", "", true},
		{"cut off", `{"type":"result","result":"hi`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := parseCLIResult([]byte(tt.out))
			if tt.wantErr {
				if err == nil {
					t.Errorf("want an error, got %+v", r)
				}
				return
			}
			if err != nil || r.Result != tt.want {
				t.Errorf("got %+v, %v; want result %q", r, err, tt.want)
			}
		})
	}
}

func TestCLIResultClassify(t *testing.T) {
	status := func(n int) *int { return &n }
	tests := []struct {
		name      string
		r         cliResult
		retryable bool
		kind      error
	}{
		{"429 session limit", cliResult{IsError: true, APIErrorStatus: status(429), Result: "You've hit your session limit"}, true, nil},
		{"529", cliResult{IsError: true, APIErrorStatus: status(529), Result: "API Error: 529 Overloaded."}, true, nil},
		{"interrupted, no status", cliResult{IsError: true, Subtype: "error_during_execution"}, true, nil},
		{"not logged in", cliResult{IsError: true, Result: "Not logged in · Please run /login"}, false, ErrUnavailable},
		{"401", cliResult{IsError: true, APIErrorStatus: status(401), Result: "Invalid API key · Fix external API key"}, false, ErrUnavailable},
		{"prompt too long", cliResult{IsError: true, APIErrorStatus: status(400), Result: "Prompt is too long"}, false, ErrInvalidReply},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			te := tt.r.classify()
			if te.retryable != tt.retryable || (!tt.retryable && te.kind != tt.kind) {
				t.Errorf("retryable %v kind %v (%s), want %v %v", te.retryable, te.kind, te.msg, tt.retryable, tt.kind)
			}
		})
	}
}
