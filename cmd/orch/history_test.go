package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// historyIDs returns the run ids `orch history --json` lists with these flags.
func historyIDs(t *testing.T, dir string, flags ...string) []string {
	t.Helper()
	r := orchEnv(t, dir, nil, nil, append([]string{"history", "--json"}, flags...)...)
	must(t, r, 0)
	var runs []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil {
		t.Fatalf("history --json: %v\n%s", err, r)
	}
	out := make([]string, len(runs))
	for i, run := range runs {
		out[i] = run.ID
	}
	return out
}

func TestHistoryKeepsFinishedRunsOutOfTheLiveStore(t *testing.T) {
	dir := workdir(t)
	var done, parked []string
	for range 4 {
		r := orchEnv(t, dir, nil, nil, "run", "--agent", "sim", "examples/plans/hello.md")
		must(t, r, 0)
		done = append(done, runID(t, r))
	}
	for range 2 {
		r := orchEnv(t, dir, nil, strings.NewReader(""), "run", "--agent", "sim", "examples/plans/ambiguous_task.md")
		must(t, r, exitParked)
		parked = append(parked, runID(t, r))
	}
	newestFirst := append(slices.Clone(parked), done...)
	slices.Reverse(newestFirst[:2])
	slices.Reverse(newestFirst[2:])

	// Each finished run is a file of its own, read only when asked for.
	for _, id := range done {
		if _, err := os.Stat(filepath.Join(dir, ".orch", "history", "runs", id+".json.gz")); err != nil {
			t.Fatalf("finished run %s is not archived: %v", id, err)
		}
		must(t, orchEnv(t, dir, nil, nil, "status", id), 0, "Run "+id+": completed")
		must(t, orchEnv(t, dir, nil, nil, "logs", id), 0, "COMPLETED")
	}
	must(t, orchEnv(t, dir, nil, nil, "costs"), 0, done[0], parked[0])
	must(t, orchEnv(t, dir, nil, nil, "escalation", "log", parked[0]), 0, "escalated")

	// Pages, newest first, across the live store and the archive.
	if got := historyIDs(t, dir); !slices.Equal(got, newestFirst) {
		t.Fatalf("history = %v, want %v", got, newestFirst)
	}
	var paged []string
	for page := 1; page <= 3; page++ {
		paged = append(paged, historyIDs(t, dir, "--limit", "2", "--page", string(rune('0'+page)))...)
	}
	if !slices.Equal(paged, newestFirst) {
		t.Fatalf("pages of 2 = %v, want %v", paged, newestFirst)
	}
	must(t, orchEnv(t, dir, nil, nil, "history", "--limit", "2"), 0, "Older runs: orch history --page 2")
	must(t, orchEnv(t, dir, nil, nil, "history", "--page", "9"), 0, "No runs on page 9.")
	must(t, orchEnv(t, dir, nil, nil, "history", "--page", "0"), exitUsage, "--page must be at least 1")

	// Pruning keeps the parked runs and the newest finished ones.
	must(t, orchEnv(t, dir, nil, nil, "history", "--prune"), exitUsage, "set history.keep in orch.yaml or pass --keep")
	must(t, orchEnv(t, dir, nil, nil, "history", "--keep", "2"), exitUsage, "--keep goes with --prune")
	must(t, orchEnv(t, dir, nil, nil, "history", "--prune", "--keep", "3"), 0, "Pruned 1 finished run")
	if got, want := historyIDs(t, dir), newestFirst[:5]; !slices.Equal(got, want) {
		t.Fatalf("history after keeping 3 = %v, want %v", got, want)
	}
	must(t, orchEnv(t, dir, nil, nil, "status", done[0]), exitUsage, "run not found")

	// history.keep in orch.yaml prunes by itself when a run ends.
	writeFile(t, dir, "orch.yaml", "history:\n  keep: {count: 1, age: 30d}\n")
	r := orchEnv(t, dir, nil, nil, "run", "--agent", "sim", "examples/plans/hello.md")
	must(t, r, 0)
	if got, want := historyIDs(t, dir), append(slices.Clone(parked[:]), runID(t, r)); !sameSet(got, want) {
		t.Fatalf("history with keep 1 = %v, want %v", got, want)
	}
	for _, bad := range []string{"keep: 0", "keep: -3", "keep: soon", "keep: 10, 20", "keep: {count: x}"} {
		writeFile(t, dir, "orch.yaml", "history:\n  "+bad+"\n")
		must(t, orchEnv(t, dir, nil, nil, "history"), exitUsage, "history.keep")
	}
	os.Remove(filepath.Join(dir, "orch.yaml"))
	must(t, orchEnv(t, dir, []string{"ORCH_HISTORY_KEEP=90x"}, nil, "history"), exitUsage, `"90x" is neither a count`)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestADamagedRunIsSkipped damages one archived run: the others are still listed and shown, and the damaged one is
// named with its file.
func TestADamagedRunIsSkipped(t *testing.T) {
	dir := workdir(t)
	var ids []string
	for range 2 {
		r := orchEnv(t, dir, nil, nil, "run", "--agent", "sim", "examples/plans/hello.md")
		must(t, r, 0)
		ids = append(ids, runID(t, r))
	}
	r := orchEnv(t, dir, nil, strings.NewReader(""), "run", "--agent", "sim", "examples/plans/ambiguous_task.md")
	must(t, r, exitParked)
	parked := runID(t, r)
	path := filepath.Join(".orch", "history", "runs", ids[0]+".json.gz")
	data, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, path), data[:len(data)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	r = orchEnv(t, dir, nil, nil, "history")
	must(t, r, 0, ids[1], parked, "skipping a damaged run", ids[0])
	if strings.Contains(r.stdout, ids[0]) {
		t.Fatalf("the damaged run is listed:\n%s", r)
	}
	must(t, orchEnv(t, dir, nil, nil, "status"), 0, "Run "+parked)
	must(t, orchEnv(t, dir, nil, nil, "escalation", "show"), 0, parked)
	must(t, orchEnv(t, dir, nil, nil, "status", ids[0]), exitFailed, path, "is damaged", "move it away")
}
