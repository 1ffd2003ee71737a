package main

import (
	"strings"
	"testing"
)

// An agent command that sends its input back (here the prompt, which a cmd: template gets as an argument) is not
// asking orch's template question ("QUESTION: <your question>") five times over: each attempt fails as one that did
// nothing, and the attempt cap stops the task with a question a person can act on.
func TestAgentThatEchoesItsPrompt(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	writeFile(t, dir, "echo.md", "# Echo\n\n## Task 1: Add a greeting\n\nWrite hello.txt containing hello.\n")
	placeholders := []string{"<your question>", "<first option>", "<the option you recommend>", "escalation loop"}

	t.Run("auto-approve", func(t *testing.T) {
		r := orch(t, dir, "", "run", "echo.md", "--agent", "cmd:echo {prompt}", "--brain", "heuristic", "--auto-approve")
		must(t, r, 1, "only the prompt orch sent it, echoed back", "LOOP DETECTED: Task 1 failed 3 times with similar errors",
			"attempt_cap escalation on task 1 cannot be auto-approved")
		for _, p := range placeholders {
			if strings.Contains(r.stdout+r.stderr, p) {
				t.Errorf("output has %q:\n%s", p, r)
			}
		}
		if n := strings.Count(r.stdout, "NEEDS HUMAN INPUT"); n != 1 {
			t.Errorf("%d questions, want the attempt cap's alone:\n%s", n, r)
		}
	})

	// The same agent re-indenting what it echoes, and nobody at the terminal: the run parks at the cap.
	t.Run("indented, parked", func(t *testing.T) {
		r := orch(t, dir, "", "run", "echo.md", "--brain", "heuristic",
			"--agent", `cmd:sh -c "printf '%s\n' \"$1\" | sed 's/^/    /'" sh {prompt}`)
		must(t, r, 3, "Task 1 failed 3 times with similar errors", "orch resume")
		for _, p := range placeholders {
			if strings.Contains(r.stdout+r.stderr, p) {
				t.Errorf("output has %q:\n%s", p, r)
			}
		}
		show := orch(t, dir, "", "escalation", "show", runID(t, r))
		must(t, show, 0, "attempt_cap")
	})
}
