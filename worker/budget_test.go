package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
)

// costly runs a shell script as the agent and reads its output as Claude Code's stream-json, so that a test's agent
// reports what each attempt cost (total_cost_usd), as the real CLI does.
type costly struct{ *agent.Template }

func (costly) NewParser() agent.Parser { return agent.NewClaude(agent.ClaudeConfig{}).NewParser() }

func costlyAgent(t *testing.T, body string) func(jobs.Options) (agent.Adapter, error) {
	t.Helper()
	tmpl, err := agent.NewTemplate(script(t, body))
	if err != nil {
		t.Fatal(err)
	}
	return func(jobs.Options) (agent.Adapter, error) { return costly{tmpl}, nil }
}

// resultLine is a script's line printing a Claude result that cost usd, with text (which may use $ORCH_ATTEMPT).
func resultLine(ok bool, text string, usd float64) string {
	sub, isErr, exit := "success", "false", 0
	if !ok {
		sub, isErr, exit = "error_during_execution", "true", 1
	}
	return fmt.Sprintf(`printf '{"type":"result","subtype":"%s","is_error":%s,"result":"%%s","session_id":"s1","total_cost_usd":%g}\n' "%s"
exit %d`, sub, isErr, usd, text, exit)
}

// distinctFailures sets msg to a failure of its own for each attempt: a run that keeps failing, each time differently.
const distinctFailures = `case "$ORCH_ATTEMPT" in
1) msg="could not connect to postgres at db:5432" ;;
2) msg="FAIL TestParseConfig: expected 3 sections, got 4" ;;
3) msg="panic: assignment to entry in nil map (cache.go:88)" ;;
4) msg="npm ERR! peer dependency react@19 not satisfied" ;;
*) msg="lint: 12 warnings treated as errors in api/handlers" ;;
esac
`

func setBudget(t *testing.T, h *harness, id string, b jobs.Budget, team string) {
	t.Helper()
	if _, err := h.store.Update(context.Background(), id, func(r *jobs.Run, c *jobs.Change) error {
		r.Options.Budget, r.Options.Team, r.Options.MaxAttempts = b, team, 10
		r.Options.SimilarityThreshold = 0.95 // the failures differ: the loop detector is not what is tested
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A looping agent with a $2 budget is stopped before the attempt that would start past it: it spent at most $2 and
// one attempt, and the run parks with trigger budget and says what was spent on what. Extend lets one more attempt
// run; finish without the rest ends the run completed, the task left undone; both are in the audit trail.
func TestBudgetStopsALoopingAgent(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			// Each attempt fails differently, so that no loop detector stops it first: only the money does.
			h := newHarness(t, rdb, "", costlyAgent(t, distinctFailures+resultLine(false, "$msg", 0.75)))
			r := h.newRun(t, "1.1", "1.2")
			setBudget(t, h, r.ID, jobs.Budget{CostUSD: 2, StepUSD: 1}, "")
			got := drive(t, h, r.ID)
			e := got.OpenEscalation()
			if got.Status != jobs.RunParked || e == nil || e.Trigger != jobs.TriggerBudget {
				t.Fatalf("run %s, escalation %+v", got.Status, e)
			}
			if spent := got.Spent(); spent < 2 || spent > 2+0.75 {
				t.Fatalf("spent %v: want at least the budget and at most one attempt more", spent)
			}
			for _, want := range []string{"reached its budget", "$2.25 of $2.00", "1.1 $2.25 (3)", "1.2"} {
				if !strings.Contains(e.Question, want) {
					t.Errorf("question lacks %q:\n%s", want, e.Question)
				}
			}
			if a := escalation.AnswersOf(e); a.Retry || a.Resume || a.Force || len(a.Options) != 2 {
				t.Fatalf("answers %+v", a)
			}
			// What the question does not offer is refused from every surface: each would start the attempt it stopped.
			for _, req := range []escalation.Request{{Type: jobs.ResolveRetry}, {Type: jobs.ResolveResume},
				{Type: jobs.ResolveForce, Reason: "ship it", AcknowledgeRisk: true}} {
				req.RunID, req.By = r.ID, "mallory"
				if _, _, err := escalation.Resolve(context.Background(), h.store, h.queue, req); !errors.Is(err, escalation.ErrInvalid) {
					t.Fatalf("%s on a budget question: %v, want it refused", req.Type, err)
				}
			}
			if still := h.get(t, r.ID); still.OpenEscalation() == nil || still.Status != jobs.RunParked {
				t.Fatalf("a refused answer changed the run: %s", still.Status)
			}
			// Extend by the step ($1) from what was spent ($2.25, to $3.25): two more attempts run ($3.00, $3.75), and
			// the run stops again.
			resolve(t, h, r.ID, escalation.Request{Type: jobs.ResolveChoose, Key: jobs.BudgetExtend, By: "ann"})
			got = drive(t, h, r.ID)
			if got.Status != jobs.RunParked || got.Options.Budget.CostUSD != 3.25 || len(got.Tasks[0].Attempts) != 5 {
				t.Fatalf("after extend: %s, budget %v, %d attempts", got.Status, got.Options.Budget.CostUSD, len(got.Tasks[0].Attempts))
			}
			if got.Tasks[0].Failures != 5 {
				t.Fatalf("failures %d: a budget answer must not reset the task's count", got.Tasks[0].Failures)
			}
			// Finish without the rest: completed, with what was left undone.
			resolve(t, h, r.ID, escalation.Request{Type: jobs.ResolveChoose, Key: jobs.BudgetFinish, By: "bob"})
			got = drive(t, h, r.ID)
			if got.Status != jobs.RunCompleted || strings.Join(got.Unfinished, ",") != "1.1,1.2" {
				t.Fatalf("after finish: %s, unfinished %v", got.Status, got.Unfinished)
			}
			trail, err := h.store.Audit(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			var actions []string
			for _, a := range trail {
				actions = append(actions, a.Action+" by "+a.By)
			}
			all := strings.Join(actions, "; ")
			for _, want := range []string{"budget extended by ann", "finished early by bob"} {
				if !strings.Contains(all, want) {
					t.Errorf("audit lacks %q: %s", want, all)
				}
			}
		})
	}
}

func resolve(t *testing.T, h *harness, id string, req escalation.Request) {
	t.Helper()
	req.RunID = id
	if _, _, err := escalation.Resolve(context.Background(), h.store, h.queue, req); err != nil {
		t.Fatal(err)
	}
}

// A task's own budget stops the task; extending it is for that task alone.
func TestTaskBudget(t *testing.T) {
	rdb := clients(t)["miniredis"]
	h := newHarness(t, rdb, "", costlyAgent(t, distinctFailures+resultLine(false, "$msg", 0.40)))
	r := h.newRun(t, "1.1")
	setBudget(t, h, r.ID, jobs.Budget{TaskCostUSD: 1}, "")
	got := drive(t, h, r.ID)
	e := got.OpenEscalation()
	if e == nil || e.Stop == nil || e.Stop.Bound != jobs.BoundTask || len(got.Tasks[0].Attempts) != 3 {
		t.Fatalf("escalation %+v, %d attempts", e, len(got.Tasks[0].Attempts))
	}
	resolve(t, h, r.ID, escalation.Request{Type: jobs.ResolveChoose, Key: jobs.BudgetExtend, By: "ann"})
	got = drive(t, h, r.ID)
	// The step is half the bound ($0.50), from what was spent ($1.20, to $1.70): two attempts more ($1.60, $2.00).
	if x := got.Tasks[0].ExtraUSD; x < 0.69 || x > 0.71 || len(got.Tasks[0].Attempts) != 5 || got.OpenEscalation() == nil {
		t.Fatalf("extra %v, %d attempts, %s", got.Tasks[0].ExtraUSD, len(got.Tasks[0].Attempts), got.Status)
	}
}

// An attempt that would run past the run's time budget is cut at it, its work kept, and the run asks; it is not a
// failure of the task.
func TestTimeBudgetCutsTheAttempt(t *testing.T) {
	rdb := clients(t)["miniredis"]
	h := newHarness(t, rdb, "", costlyAgent(t, "sleep 30\n"+resultLine(true, "Done.", 0.1)))
	r := h.newRun(t, "1.1")
	setBudget(t, h, r.ID, jobs.Budget{Duration: time.Second}, "")
	got := drive(t, h, r.ID)
	e := got.OpenEscalation()
	if e == nil || e.Stop == nil || e.Stop.Bound != jobs.BoundTime {
		t.Fatalf("%s, escalation %+v", got.Status, e)
	}
	a := got.Tasks[0].Attempts[0]
	if a.Status != "budget" || got.Tasks[0].Failures != 0 || a.Duration > 20*time.Second {
		t.Fatalf("attempt %+v, failures %d", a, got.Tasks[0].Failures)
	}
	if !strings.Contains(e.Question, "time budget") || e.Stop.StepTime != time.Second {
		t.Fatalf("question %q, step %v", e.Question, e.Stop.StepTime)
	}
}

// Two workers race for the last dollar of a team's budget: exactly one starts an attempt, and the other run parks on
// the team's budget, waiting for its next day.
func TestTwoWorkersRaceTheLastDollar(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			budgets := map[string]jobs.TeamBudget{"payments": {USD: 10, Period: jobs.Day}}
			body := "sleep 1\n" + resultLine(true, "Done. All tests pass.", 0.8)
			a, b := newHarness(t, rdb, "", costlyAgent(t, body)), newHarness(t, rdb, "", costlyAgent(t, body))
			a.store.UseBudgets(budgets)
			b.store.UseBudgets(budgets)
			// The team spent $9.20 today over ten attempts: 80 cents an attempt, and 80 cents left.
			key := "orch:budget:payments:" + jobs.Day.Key(time.Now())
			if err := rdb.HSet(context.Background(), key, "spent", "9.2", "attempts", 10).Err(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				rdb.Del(context.Background(), key, "orch:spend:payments:"+time.Now().UTC().Format("2006-01-02"))
			})
			runs := []*jobs.Run{a.newRun(t, "1.1"), a.newRun(t, "1.1")}
			for _, r := range runs {
				setBudget(t, a, r.ID, jobs.Budget{}, "payments")
				if err := a.process(t, queue.TypeStart, queue.Payload{RunID: r.ID}); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			for i, h := range []*harness{a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := h.process(t, queue.TypeStep, queue.Payload{RunID: runs[i].ID, Seq: 1}); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			// One attempt started; the other run waits without a question, its step to look again later: the money
			// left was held by the running attempt, which may give some back.
			var waiting *jobs.Run
			started := 0
			for _, r := range runs {
				got := a.get(t, r.ID)
				switch {
				case len(got.Tasks[0].Attempts) > 0:
					started++
				case got.Status == jobs.RunRunning && got.OpenEscalation() == nil:
					waiting = got
				}
			}
			if started != 1 || waiting == nil {
				t.Fatalf("%d attempts started, waiting %v: want one attempt and one run waiting", started, waiting != nil)
			}
			// It settled and spent what was left: the waiting run, looking again, parks on the team's budget.
			if err := b.process(t, queue.TypeStep, queue.Payload{RunID: waiting.ID, Seq: waiting.Seq}); err != nil {
				t.Fatal(err)
			}
			got := a.get(t, waiting.ID)
			e := got.OpenEscalation()
			if e == nil || e.Stop == nil || e.Stop.Bound != jobs.BoundTeam || len(got.Tasks[0].Attempts) != 0 {
				t.Fatalf("the waiting run: %s, %+v", got.Status, e)
			}
			if e.Default != jobs.BudgetWait || e.Timeout <= 0 || !strings.Contains(e.Question, "Team payments") {
				t.Errorf("team question: default %q, timeout %v, %q", e.Default, e.Timeout, e.Question)
			}
			l, _, _, err := a.store.LedgerOf(context.Background(), "payments", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if l.Running != 0 || l.ReservedUSD != 0 || l.Attempts != 11 || l.SpentUSD < 9.99 || l.SpentUSD > 10.01 {
				t.Fatalf("ledger after the race: %+v", l)
			}
			days, err := a.store.TeamSpend(context.Background(), "payments", time.Now(), time.Now())
			if err != nil || len(days) != 1 || days[0].USD < 0.79 || days[0].USD > 0.81 || days[0].Attempts != 1 {
				t.Fatalf("the day's spend: %+v, %v", days, err)
			}
		})
	}
}

// A team's budget that ran out waits for its next period on a timer, holding nothing; the timer resumes it, and the
// new period's money lets it run.
func TestTeamBudgetWaitsForTheNextDay(t *testing.T) {
	rdb := clients(t)["miniredis"]
	// A minute before midnight, tomorrow: asynq keeps the timer as a task scheduled in the future.
	tomorrow := time.Now().UTC().Add(24 * time.Hour)
	clk := &clock{now: time.Date(tomorrow.Year(), tomorrow.Month(), tomorrow.Day(), 23, 59, 0, 0, time.UTC)}
	h := newHarnessAt(t, rdb, "", costlyAgent(t, resultLine(true, "Done. All tests pass.", 0.3)), clk.Now)
	h.store.UseBudgets(map[string]jobs.TeamBudget{"web": {USD: 1, Period: jobs.Day}})
	key := "orch:budget:web:" + jobs.Day.Key(clk.Now())
	rdb.HSet(context.Background(), key, "spent", "1.5", "attempts", 3)
	r := h.newRun(t, "1.1")
	setBudget(t, h, r.ID, jobs.Budget{}, "web")
	got := drive(t, h, r.ID)
	e := got.OpenEscalation()
	if e == nil || e.Stop == nil || e.Stop.Bound != jobs.BoundTeam || len(got.Tasks[0].Attempts) != 0 {
		t.Fatalf("%s, escalation %+v", got.Status, e)
	}
	// No operator may extend it: the question offers no extension, and says the run goes on by itself.
	if strings.Contains(strings.ToLower(e.Question), "extend") || !strings.Contains(e.Question, "wait for the next period") ||
		strings.Contains(e.Question, "Nothing more runs until you answer") {
		t.Errorf("question:\n%s", e.Question)
	}
	info, err := asynq.NewInspectorFromRedisClient(rdb).GetTaskInfo(queue.Control, "timeout:"+r.ID+":"+e.ID+":1")
	if err != nil || info.State != asynq.TaskStateScheduled || !info.NextProcessAt.After(clk.Now().Add(59*time.Second)) {
		t.Fatalf("the timer: %+v, %v", info, err)
	}
	clk.Advance(61 * time.Second)
	if err := h.process(t, queue.TypeTimeout, queue.Payload{RunID: r.ID, EscalationID: e.ID, N: 1}); err != nil {
		t.Fatal(err)
	}
	got = drive(t, h, r.ID)
	res := got.Escalations[0].Resolution
	if got.Status != jobs.RunCompleted || res == nil || res.Key != jobs.BudgetWait || res.Via != "timeout" {
		t.Fatalf("after midnight: %s, resolution %+v", got.Status, res)
	}
	// Every surface that shows the run at work says where its team stands: the attempt's start line first.
	if want := "team web $0.00 of $1.00 this day"; got.BudgetText(clk.Now()) != want {
		t.Errorf("budget text %q, want %q", got.BudgetText(clk.Now()), want)
	}
	events, err := h.store.Events(context.Background(), r.ID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, ev := range events {
		if s, ok := ev.Body.(jobs.TaskStartedEvent); ok {
			lines = append(lines, s.Budget)
		}
	}
	if len(lines) != 1 || lines[0] != "team web $0.00 of $1.00 this day" {
		t.Errorf("the attempt's start says %q", lines)
	}
	asynq.NewInspectorFromRedisClient(rdb).DeleteTask(queue.Control, "timeout:"+r.ID+":"+e.ID+":1")
}

// An agent CLI that stops itself at the money it was given (Claude Code's --max-budget-usd) stopped at the run's
// budget: the run asks about the budget, and the task has not failed.
func TestTheCLIStopsAtTheMoneyLeft(t *testing.T) {
	rdb := clients(t)["miniredis"]
	// Claude Code's result for a session stopped at --max-budget-usd, as captured (reference 04, error_max_budget_usd).
	h := newHarness(t, rdb, "", costlyAgent(t, `printf '{"type":"result","subtype":"error_max_budget_usd","is_error":true,"num_turns":1,"terminal_reason":"budget_exhausted","errors":["Reached maximum budget ($1)"],"total_cost_usd":1.2}\n'; exit 1`))
	r := h.newRun(t, "1.1")
	setBudget(t, h, r.ID, jobs.Budget{CostUSD: 1}, "")
	got := drive(t, h, r.ID)
	e := got.OpenEscalation()
	if e == nil || e.Stop == nil || e.Stop.Bound != jobs.BoundRun || got.Tasks[0].Failures != 0 {
		t.Fatalf("escalation %+v, failures %d", e, got.Tasks[0].Failures)
	}
	if a := got.Tasks[0].Attempts[0]; a.Status != "budget" || a.CostUSD != 1.2 {
		t.Fatalf("attempt %+v", a)
	}
}

// What an invocation is given to spend is what is left of the tightest bound.
func TestMoneyLeft(t *testing.T) {
	task := &jobs.Task{ID: "1.1", Attempts: []*jobs.Attempt{{CostUSD: 0.5}}}
	r := &jobs.Run{Tasks: []*jobs.Task{task, {ID: "1.2", Attempts: []*jobs.Attempt{{CostUSD: 1}}}}}
	for _, c := range []struct {
		b    jobs.Budget
		want float64
	}{
		{jobs.Budget{}, 0},
		{jobs.Budget{CostUSD: 2}, 0.5},
		{jobs.Budget{TaskCostUSD: 0.75}, 0.25},
		{jobs.Budget{CostUSD: 2, TaskCostUSD: 3}, 0.5},
		{jobs.Budget{CostUSD: 1}, 0.01}, // spent already: the least a CLI can be given
	} {
		r.Options.Budget = c.b
		if got := moneyLeft(r, task); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("%+v: %v, want %v", c.b, got, c.want)
		}
	}
}

// A run taken over after its worker died holds money of its team's ledger with its dead attempt: once that attempt
// lets go, its own hold does not keep it from the team's last attempt.
func TestADeadAttemptsHoldDoesNotStopItsOwnRun(t *testing.T) {
	key := jobs.Day.Key(time.Now())
	dead := &jobs.Attempt{N: 1, Reserved: 0.92, ReservedKey: key}
	r := &jobs.Run{Status: jobs.RunRunning, Tasks: []*jobs.Task{{ID: "1.1", Status: jobs.TaskRunning, Attempts: []*jobs.Attempt{dead}}}}
	tb := jobs.TeamBudget{USD: 10, Period: jobs.Day}
	c := jobs.NewChange(r)
	c.Ledger = &jobs.Ledger{Team: "payments", Key: key, SpentUSD: 9.2, Attempts: 10, Running: 1, ReservedUSD: 0.92}
	c.Before = jobs.AccountOf(r)
	if c.Ledger.Admits(tb, c.Ledger.Estimate()) {
		t.Fatal("the ledger as read admits: the test shows nothing")
	}
	dead.Reserved = 0 // taken over (beginAttempt)
	if l := projected(r, c); !l.Admits(tb, l.Estimate()) || teamWaits(r, c, tb) {
		t.Fatalf("projected %+v: want the team's last attempt admitted", l)
	}
	if budgetStop(r, r.Tasks[0], projected(r, c), tb, time.Now()) != nil {
		t.Fatal("stopped on its own dead attempt's hold")
	}
}

// A team's budget is its operator's: without budgets.operators its question offers no extension; with them, only
// they extend it, and anyone else's "extend" lifts nothing and is in the audit trail.
func TestOnlyOperatorsExtendATeamsBudget(t *testing.T) {
	rdb := clients(t)["miniredis"]
	h := newHarness(t, rdb, "", costlyAgent(t, resultLine(true, "Done. All tests pass.", 0.3)))
	h.store.UseBudgets(map[string]jobs.TeamBudget{"ops": {USD: 1, Period: jobs.Day}})
	rdb.HSet(context.Background(), "orch:budget:ops:"+jobs.Day.Key(time.Now()), "spent", "1.5", "attempts", 3)
	r := h.newRun(t, "1.1")
	setBudget(t, h, r.ID, jobs.Budget{}, "ops")
	e := drive(t, h, r.ID).OpenEscalation()
	if _, ok := e.OptionByKey(jobs.BudgetExtend); ok || e.Stop == nil || e.Stop.Bound != jobs.BoundTeam {
		t.Fatalf("without operators: %+v", e)
	}
	if _, err := h.store.Update(context.Background(), r.ID, func(r *jobs.Run, c *jobs.Change) error {
		r.Abort(c, "", "next case", "t", time.Now())
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	h.w.cfg.BudgetOperators = []string{"olga"}
	r = h.newRun(t, "1.1")
	setBudget(t, h, r.ID, jobs.Budget{}, "ops")
	if e = drive(t, h, r.ID).OpenEscalation(); e == nil {
		t.Fatal("no question")
	}
	if _, ok := e.OptionByKey(jobs.BudgetExtend); !ok {
		t.Fatalf("with operators, no extension offered: %+v", e.Options)
	}
	resolve(t, h, r.ID, escalation.Request{Type: jobs.ResolveChoose, Key: jobs.BudgetExtend, By: "mallory"})
	got := drive(t, h, r.ID)
	if got.OpenEscalation() == nil || len(got.Tasks[0].Attempts) != 0 {
		t.Fatalf("a stranger's extension let the run go on: %s, %d attempts", got.Status, len(got.Tasks[0].Attempts))
	}
	resolve(t, h, r.ID, escalation.Request{Type: jobs.ResolveChoose, Key: jobs.BudgetExtend, By: "olga"})
	if got = drive(t, h, r.ID); got.Status != jobs.RunCompleted {
		t.Fatalf("after the operator's extension: %s", got.Status)
	}
	trail, _ := h.store.Audit(context.Background(), r.ID)
	var actions []string
	for _, a := range trail {
		actions = append(actions, a.Action+" by "+a.By)
	}
	all := strings.Join(actions, "; ")
	if !strings.Contains(all, "budget extension refused by mallory") || !strings.Contains(all, "budget extended by olga") {
		t.Fatalf("audit: %s", all)
	}
}

// The agent of a run aborted while it worked spent money all the same: its attempt's cost is recorded, and the team's
// books count it, though its result is dropped.
func TestADroppedAttemptsCostIsCounted(t *testing.T) {
	rdb := clients(t)["miniredis"]
	h := newHarness(t, rdb, "true", nil)
	team := "dropped-" + jobs.NewRunID()
	r := h.newRun(t, "1.1")
	ctx := context.Background()
	r, err := h.store.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
		r.Options.Team = team
		r.Start(c, "")
		r.Seq = 1
		r.StartAttempt(c, r.Tasks[0], "d1", "", time.Now())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	at := &attempt{run: r, task: *r.Tasks[0], n: 1, owner: owner{id: "d1"}, seq: 1}
	if _, err := h.store.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
		r.Abort(c, "1.1", "stop", "ann", time.Now())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	out := &outcome{ran: true, usage: agent.Result{CostUSD: 4, InputTokens: 1000, Model: "m"}, said: jobs.Pending{Text: "done"}}
	if err := h.w.keep(ctx, at, out); !errors.Is(err, errStale) {
		t.Fatalf("keep after the abort: %v", err)
	}
	h.w.keep(ctx, at, out) // a second delivery of the same drop counts nothing more
	got := h.get(t, r.ID)
	if got.Spent() != 4 {
		t.Fatalf("the aborted run cost %v, want 4", got.Spent())
	}
	days, err := h.store.TeamSpend(ctx, team, time.Now(), time.Now())
	if err != nil || len(days) != 1 || days[0].USD != 4 {
		t.Fatalf("the team's day: %+v, %v", days, err)
	}
}
