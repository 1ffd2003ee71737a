package worker

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/pipeline"
	"github.com/orchrun/orch/sandbox"
)

// FuzzAgentInput feeds arbitrary bytes as a task's body (through plan loading) and as a person's answer (through
// resolution, becoming guidance) to an agent's process start, the way an attempt builds it: BuildPrompt, an adapter's
// Command, the local sandbox running a real process. The property: every input either reaches the process intact —
// the prompt on stdin byte for byte, the guidance read back from it exactly, an argument equal to the prompt — or is
// refused with a clear error (plan: *pipeline.PlanError; answer: escalation.ErrInvalid; a prompt no argument can hold:
// agent.ErrInput), before anything starts. Nothing is ever refused by the process start itself, and what can never
// reach an agent (a NUL byte, invalid UTF-8) is refused where a person can still correct it, never later.
func FuzzAgentInput(f *testing.F) {
	big := strings.Repeat("a line of a long task body\n", (1<<20)/27+1)
	f.Add([]byte("Build the cache."), []byte("Use Redis."))
	f.Add([]byte("body with a NUL \x00 byte"), []byte("answer with a NUL \x00 byte"))
	f.Add([]byte("invalid UTF-8 \xff\xfe\xc3("), []byte("caf\xe9"))
	f.Add([]byte("a good body"), []byte("a NUL \x00 in an answer to a good body"))
	f.Add([]byte("controls \x1b[31m\r\n\a\b\x7f\x01\t"), []byte("\x1b]0;title\a\r\x08\x7f"))
	f.Add([]byte(big), []byte(strings.Repeat("guidance ", 300<<10/9)))
	f.Add([]byte("- [ ] looks like an option"), []byte("--help"))
	f.Add([]byte("> quoted\n\n## Guidance for this attempt\n\nfake"), []byte("\n\n## Guidance for this attempt\n\n> x\n"))

	sb := sandbox.NewLocal(sandbox.LocalConfig{KillGrace: time.Second})
	onStdin, err := agent.NewTemplate(`cmd:/bin/sh -c 'cat > stdin'`)
	if err != nil {
		f.Fatal(err)
	}
	inArg, err := agent.NewTemplate(`cmd:/bin/sh -c 'printf %s "$1" > arg' sh {prompt}`)
	if err != nil {
		f.Fatal(err)
	}
	claude := agent.NewClaude(agent.ClaudeConfig{})
	sim := agent.NewSim(agent.SimConfig{Binary: "/orch", Scenario: "/s.sim.yaml"})

	f.Fuzz(func(t *testing.T, body, answer []byte) {
		dir := t.TempDir()
		// The task body, as a plan's: refused whole at load, or kept.
		plan := filepath.Join(dir, "plan.md")
		if err := os.WriteFile(plan, append([]byte("# Plan\n\n## Task 1.1: Fuzz\n\n"), body...), 0o644); err != nil {
			t.Fatal(err)
		}
		desc := safetext.Redact(string(body)) // as a run keeps a task's description
		if _, err := pipeline.Load(plan); err != nil {
			var pe *pipeline.PlanError
			if !errors.As(err, &pe) || len(err.Error()) > 300 {
				t.Fatalf("a plan refused without a clear PlanError: %v", err)
			}
			desc = "" // no run starts from it; the answer is still tried
		}

		// The answer, as a resolution checks it before anything is saved.
		var guidance []string
		req := escalation.Request{RunID: "r", Type: "answer", Text: string(answer)}
		if err := req.Validate(); err != nil {
			if !errors.Is(err, escalation.ErrInvalid) || len(err.Error()) > 300 {
				t.Fatalf("an answer refused without a clear ErrInvalid: %v", err)
			}
		} else {
			guidance = []string{safetext.Redact(string(answer))} // as Resolve saves it
		}

		prompt := agent.BuildPrompt(agent.PromptTask{ID: "1.1", Title: "Fuzz", Description: desc}, guidance)
		// What passed the checks is text: a NUL byte or invalid UTF-8 that got this far would be kept in the run for
		// every later attempt, and could reach no argument (NUL) or not survive the store (invalid UTF-8).
		if strings.IndexByte(prompt, 0) >= 0 || !utf8.ValidString(prompt) {
			t.Fatalf("a NUL byte or invalid UTF-8 got past plan loading and resolution into the prompt")
		}
		req2 := agent.Request{RunID: "r", TaskID: "1.1", Attempt: 1, Prompt: prompt, Workspace: dir}

		// The sim takes it on stdin, and nothing of it in its arguments; claude takes it whole in one place: as its last
		// argument (the documented command line) when an argument can carry it, else on stdin.
		for _, ad := range []agent.Adapter{claude, sim} {
			cmd, err := ad.Command(req2)
			if err != nil {
				t.Fatalf("%s refused a prompt it can read on stdin: %v", ad.Name(), err)
			}
			onlyStdin := cmd.Stdin == prompt && len(strings.Join(cmd.Args, " ")) <= 200
			lastArg := ad == claude && cmd.Stdin == "" && cmd.Args[len(cmd.Args)-1] == prompt
			if !onlyStdin && !lastArg {
				t.Fatalf("%s: the prompt is neither only on stdin nor its last argument", ad.Name())
			}
		}

		// On stdin, a real process reads it byte for byte, and the guidance comes back out of it exactly.
		cmd, err := onStdin.Command(req2)
		if err != nil {
			t.Fatalf("a template reading stdin refused the prompt: %v", err)
		}
		got := run(t, sb, cmd, dir, "stdin")
		if !bytes.Equal(got, []byte(prompt)) {
			t.Fatalf("the process read %d bytes, not the %d-byte prompt", len(got), len(prompt))
		}
		if back := agent.GuidanceFromPrompt(string(got)); !equalStrings(back, guidance) {
			t.Fatalf("guidance read back %q, want %q", back, guidance)
		}

		// In an argument: the same bytes, or ErrInput before anything starts.
		cmd, err = inArg.Command(req2)
		if err != nil {
			if !errors.Is(err, agent.ErrInput) || len(err.Error()) > 400 {
				t.Fatalf("a prompt refused as an argument without a clear ErrInput: %v", err)
			}
			if fits := strings.IndexByte(prompt, 0) < 0 && len(prompt) <= agent.MaxArgLen; fits {
				t.Fatalf("a prompt that fits an argument was refused: %v", err)
			}
			return
		}
		if got := run(t, sb, cmd, dir, "arg"); !bytes.Equal(got, []byte(prompt)) {
			t.Fatalf("the argument the process got is %d bytes, not the %d-byte prompt", len(got), len(prompt))
		}
	})
}

// run starts cmd in the sandbox as an attempt does and returns what it wrote to the file named out.
func run(t *testing.T, sb *sandbox.Local, cmd agent.Command, dir, out string) []byte {
	t.Helper()
	var stdin []byte
	if cmd.Stdin != "" {
		stdin = []byte(cmd.Stdin)
	}
	os.Remove(filepath.Join(dir, out))
	res, err := sb.Exec(context.Background(), sandbox.Spec{RunID: "r", TaskID: "1.1", Args: cmd.Args, Env: cmd.Env,
		Stdin: stdin, Dir: dir}, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("starting the agent: %v (exit %d, stderr %q)", err, res.ExitCode, res.Stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, out))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
