package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const budgetPlan = `# Budget

## Task 1.1: Migrate the schema

**Description:**
Write the migration.

## Task 1.2: Backfill

**Description:**
Backfill the new column.
`

// Each attempt fails its own way and costs 75 cents: a runaway only money stops.
const budgetScenario = `tasks:
  "1.1":
    - {output: "ERROR: could not connect to postgres at db:5432", exit: 1, cost_usd: 0.75}
    - {output: "FAIL TestParseConfig: expected 3 sections, got 4", exit: 1, cost_usd: 0.75}
    - {output: "panic: assignment to entry in nil map (cache.go:88)", exit: 1, cost_usd: 0.75}
    - {output: "npm ERR! peer dependency react@19 not satisfied", exit: 1, cost_usd: 0.75}
default:
  - {output: "Done. All tests pass.", cost_usd: 0.10}
`

// A run with --max-cost-usd 2 stops before its fourth attempt, asks at the console what to do with the money, and a
// person's "finish" ends it completed with the rest left undone; the team's spend is then in orch costs --team.
func TestBudgetAtTheConsole(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	if err := os.WriteFile(filepath.Join(dir, "budget.md"), []byte(budgetPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "budget.sim.yaml"), []byte(budgetScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	r := orch(t, dir, "finish\n", "run", "--agent", "sim", "--brain", "heuristic", "--max-attempts", "10",
		"--similarity-threshold", "0.99", "--max-cost-usd", "2", "--team", "payments", "budget.md")
	must(t, r, 0, "budget reached", "it spent $2.25 of $2.00", "Extend by $1.00 (to $3.25)", "Finish without the rest",
		"left undone")
	if !strings.Contains(r.stdout, "attempt 3/10; budget: $1.50 of $2.00 spent") || strings.Contains(r.stdout, "attempt 4/10") {
		t.Fatalf("an attempt ran past the budget:\n%s", r)
	}
	c := orch(t, dir, "", "costs", "--team", "payments", "--since", "1d", "--json")
	must(t, c, 0, `"total_usd": 2.25`)
	// The team has no budget of its own: its attempts are counted all the same.
	if !strings.Contains(c.stdout, `"attempts": 3`) {
		t.Errorf("orch costs counts the team's attempts wrong:\n%s", c.stdout)
	}
	must(t, orch(t, dir, "", "costs", "--team", "nobody"), 0, "spent nothing")
}

// Bad budgets are refused before anything runs, saying which setting is wrong.
func TestBadBudgetsAreRefused(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	must(t, orch(t, dir, "", "run", "--agent", "sim", "--max-cost-usd", "lots", "examples/plans/ambiguous_task.md"), 2,
		`--max-cost-usd: "lots" is not a positive sum of dollars`)
	must(t, orch(t, dir, "", "run", "--agent", "sim", "--max-duration", "-1h", "examples/plans/ambiguous_task.md"), 2,
		"--max-duration")
	must(t, orch(t, dir, "", "costs", "--team", "payments", "--since", "forever"), 2, "--since")
	must(t, orch(t, dir, "", "costs", "--since", "3d"), 2, "--since goes with --team")
	must(t, orch(t, dir, "", "run", "--agent", "sim", "--team", "pay\nments", "examples/plans/ambiguous_task.md"), 2,
		"--team (or ORCH_TEAM)", "control characters")
	must(t, orch(t, dir, "", "costs", "--team", strings.Repeat("x", 101)), 2, "at most 100 bytes")
	if err := os.WriteFile(filepath.Join(dir, "orch.yaml"), []byte("budgets:\n  per_team: {payments: \"$50/fortnight\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, orch(t, dir, "", "run", "--agent", "sim", "examples/plans/ambiguous_task.md"), 2,
		"budgets.per_team payments", "want day, week or month")
}

// A headless orch run whose agent stops on a usage limit that says when it resets does not leave the run parked for
// a person who is not there: it waits, its worker fires the question's timer at the reset, and the run completes.
func TestHeadlessRunWaitsOutALimit(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	// Claude Code's older usage-limit result, "Claude AI usage limit reached|<epoch>", resetting in five seconds.
	reset := time.Now().Add(5 * time.Second).Unix()
	scenario := fmt.Sprintf("tasks:\n  \"1.1\":\n    - {output: \"Claude AI usage limit reached|%d\", exit: 1}\n    - {output: \"Done. All tests pass.\"}\n", reset)
	writeFile(t, dir, "limit.md", "# Limit\n\n## Task 1.1: Add the index\n\nAdd it.\n")
	writeFile(t, dir, "limit.sim.yaml", scenario)
	r := orch(t, dir, "", "run", "--agent", "sim", "--brain", "heuristic", "limit.md")
	must(t, r, 0, "Nobody here answered: the run goes on by itself at", "Task 1.1: COMPLETED")
	if strings.Contains(r.stdout+r.stderr, "is parked") {
		t.Fatalf("the run was left parked:\n%s", r)
	}
}
