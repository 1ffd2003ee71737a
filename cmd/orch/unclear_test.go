package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// When the brain cannot tell what an attempt came to, the person reads the agent's last words and chooses: accept
// the work (the agent does not run again), or run the task again. No answer re-runs the task by default.
func TestAnUnclearAttemptIsAcceptedOrRunAgainAsChosen(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		answer string
		runs   string // the agent's runs, one x each
		says   string
	}{
		{"A", "x\n", "Task 1: COMPLETED"},
		{"run the smoke test before you say anything", "x\nx\n", "Resuming Task 1 with guidance"},
	} {
		t.Run(c.answer, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "plan.md"), []byte("# Release\n\n## Task 1: Tag the release\nTag it.\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "answers.txt"), []byte(c.answer+"\nA\n"), 0o644)
			agent := `cmd:sh -c "echo x >> runs.txt; echo 'I looked at the deploy scripts and the logs from last night.'"`
			r := orch(t, dir, "", "run", "--agent", agent, "--brain", "heuristic", "--answers", "answers.txt", "plan.md")
			must(t, r, 0, "cannot tell whether task 1 is done", "> I looked at the deploy scripts and the logs from last night.",
				"A) Accept as completed", "B) Run the task again", c.says)
			if strings.Contains(r.stdout, "The agent's result is unclear. Please review the output and advise.") {
				t.Fatalf("a bare prompt:\n%s", r)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "runs.txt")); string(got) != c.runs {
				t.Fatalf("the agent ran %q, want %q:\n%s", got, c.runs, r)
			}
		})
	}
}
