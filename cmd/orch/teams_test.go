package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Bad teams are refused before anything runs, naming the key; good ones run, and `orch health` names their queues.
func TestTeamsAreChecked(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	for yaml, want := range map[string]string{
		"teams: {a: 0}\n":    "orch.yaml teams.a: weight 0 is not between 1 and 100",
		"teams: {a: 101}\n":  "orch.yaml teams.a: weight 101 is not between 1 and 100",
		"teams: {' ': 1}\n":  "orch.yaml teams: a team needs a name",
		"teams: {a: lots}\n": "orch.yaml",
	} {
		if err := os.WriteFile(filepath.Join(dir, "orch.yaml"), []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		must(t, orch(t, dir, "", "run", "--agent", "sim", "examples/plans/hello.md"), 2, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "orch.yaml"), []byte("teams: {payments: 3, '{web}': 1, default: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, orch(t, dir, "", "run", "--agent", "sim", "--team", "payments", "examples/plans/hello.md"), 0)
	r := orch(t, dir, "", "health", "--agent", "sim")
	must(t, r, r.code, "payments=3 (orch-steps:payments)", "default=2 (orch-steps)", "(orch-steps:_web_~",
		"every worker must have the same teams")
}
