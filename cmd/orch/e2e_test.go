package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchrun/orch/jobs"
)

// The milestone's end-to-end phase, through a real Redis, for each way a verification can go. Each case has a database
// of its own (4 to 8; the worker package's soak test has 3): an orch run's worker also takes other runs' steps from
// the queue it shares, and when it exits with its own run it gives back the step it is in, whose agent then runs
// again, so runs side by side on one database do not count their attempts as a run alone does.
func TestEndToEndPhase(t *testing.T) {
	t.Parallel()
	cases := []struct {
		scenario   string
		code       int
		wants      []string
		verifies   int // how often the verification ran
		fixes      int
		trigger    jobs.Trigger
		completion bool
	}{
		{"passes", 0, []string{"End-to-end phase: the verification on line 11", "Task e2e: COMPLETED"}, 1, 0, "", true},
		{"fixed_once", 0, []string{"Stage e2e failed → e2e-fix (fix attempt 1 of 5)", "Task e2e-fix: COMPLETED", "Task e2e: COMPLETED"}, 2, 1, "", true},
		{"oscillates", 3, []string{"LOOP DETECTED: the end-to-end fixes do not converge", "failure 2 of the last 3", "TestLogout"}, 3, 2, jobs.TriggerOscillate, false},
		{"never_passes", 3, []string{"the fix attempts ran out", "after 5 fix attempts"}, 6, 5, jobs.TriggerE2E, false},
		{"../../testdata/e2e_same", 3, []string{"failed 3 times with the same failure"}, 3, 2, jobs.TriggerOscillate, false},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.scenario), func(t *testing.T) {
			t.Parallel()
			url := isolatedRedis(t)
			dir := workdir(t)
			r := orch(t, dir, "", "run", "--agent", "sim", "--redis", url, "--sim-scenario", "examples/e2e/"+c.scenario+".sim.yaml",
				"examples/plans/verified.md")
			must(t, r, c.code, c.wants...)
			var run jobs.Run
			json.Unmarshal([]byte(orch(t, dir, "", "status", runID(t, r), "--redis", url, "--json").stdout), &run)
			if v, f := run.Task(jobs.VerifyTaskID), run.Task(jobs.FixTaskID); v == nil || f == nil || v.Started != c.verifies || f.Started != c.fixes {
				t.Fatalf("verification ran %v times, fixes %v; want %d and %d", v, f, c.verifies, c.fixes)
			}
			if e := run.OpenEscalation(); (e == nil) != (c.trigger == "") || e != nil && e.Trigger != c.trigger {
				t.Fatalf("open escalation %+v, want trigger %q", e, c.trigger)
			}
			if c.completion != (run.Status == jobs.RunCompleted) {
				t.Fatalf("run %s", run.Status)
			}
			if c.scenario == "oscillates" {
				// Resumed with guidance, the run goes on in its end-to-end phase, with fresh counters.
				res := orch(t, dir, "Keep the cookie fix; check CSRF after the session.\n", "resume", run.ID, "--redis", url)
				if !strings.Contains(res.stdout, "Task e2e: End-to-end verification") || strings.Contains(res.stdout, "Task 1.1:") ||
					!strings.Contains(res.stdout, "fix attempt 1 of 5") {
					t.Fatalf("the resumed run did not go on in the end-to-end phase:\n%s", res)
				}
			}
			if c.fixes > 0 {
				// Each fix got the failures so far: every failed verification but a last one that stopped the phase.
				if g := run.Task(jobs.FixTaskID).Guidance; len(g) != c.fixes || !strings.Contains(g[0], "FAIL") {
					t.Fatalf("fix guidance: %q", g)
				}
			}
		})
	}
}

// A plan without a verification section says it has no end-to-end phase; orch task never has one.
func TestNoEndToEndPhase(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	must(t, orch(t, dir, "", "run", "--agent", "sim", "examples/plans/hello.md"), 0, "No verification section in the plan")
	r := orch(t, dir, "", "task", "--agent", "sim", "--sim-scenario", "examples/e2e/passes.sim.yaml", "examples/plans/verified.md", "1.1")
	must(t, r, 0, "Task 1.1: COMPLETED")
	if strings.Contains(r.stdout, "Task e2e") {
		t.Fatalf("orch task ran the end-to-end phase:\n%s", r.stdout)
	}
}
