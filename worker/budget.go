package worker

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// Budgets: a run is stopped at its next safe point — before another attempt starts — when it reached what it may
// spend (its cost, one task's cost, its agents' working time) or its team's budget for the period has nothing left
// that running attempts do not hold; an attempt that would run past the time bound is cut at it. The run then parks
// with trigger budget: the question says what was spent on what, and its answers extend the bound by the operator's
// step, finish without the rest, or abort (a team's budget may also wait for its next period, which a timer brings).
// Nothing is held while it waits.

// budgetStop returns the question of the bound that keeps task t of run r from starting another attempt at now, nil
// when none: the run's own bounds first, then its team's ledger (led, nil for a team without a budget, under budget
// tb).
func budgetStop(r *jobs.Run, t *jobs.Task, led *jobs.Ledger, tb jobs.TeamBudget, now time.Time) *escalation.Spec {
	b := r.Options.Budget
	spent := r.Spent()
	switch {
	// An extension is counted from what was spent, not from the bound: an attempt that went far past the bound would
	// otherwise leave every extension short of it, and no attempt would ever run.
	case b.CostUSD > 0 && spent >= b.CostUSD:
		step := b.StepCost(b.CostUSD)
		return budgetSpec(r, t, &jobs.BudgetStop{Bound: jobs.BoundRun, StepUSD: spent - b.CostUSD + step},
			fmt.Sprintf("Run %s reached its budget: it spent %s of %s.", r.ID, jobs.USD(spent), jobs.USD(b.CostUSD)),
			fmt.Sprintf("Extend by %s (to %s)", jobs.USD(step), jobs.USD(spent+step)))
	case b.TaskCostUSD > 0 && jobs.TaskSpent(t) >= b.TaskCostUSD+t.ExtraUSD:
		bound, used := b.TaskCostUSD+t.ExtraUSD, jobs.TaskSpent(t)
		step := b.StepCost(b.TaskCostUSD)
		return budgetSpec(r, t, &jobs.BudgetStop{Bound: jobs.BoundTask, StepUSD: used - bound + step},
			fmt.Sprintf("Task %s reached its budget: it spent %s of %s over %d attempts.", t.ID,
				jobs.USD(used), jobs.USD(bound), len(t.Attempts)),
			fmt.Sprintf("Extend task %s by %s (to %s)", t.ID, jobs.USD(step), jobs.USD(used+step)))
	case b.Duration > 0 && r.Worked(now) >= b.Duration:
		step, worked := b.StepTime(), r.Worked(now).Round(time.Second)
		return budgetSpec(r, t, &jobs.BudgetStop{Bound: jobs.BoundTime, StepTime: max(worked-b.Duration, 0) + step},
			fmt.Sprintf("Run %s reached its time budget: its agents worked %s of %s.", r.ID, worked, b.Duration),
			fmt.Sprintf("Extend by %s (to %s)", step, max(worked, b.Duration)+step))
	case led != nil && !led.Admits(tb, estimate(r, led)):
		return teamStop(r, t, led, tb, now)
	}
	return nil
}

// teamStop is the question of a run whose team's budget for the period cannot take another attempt.
func teamStop(r *jobs.Run, t *jobs.Task, led *jobs.Ledger, tb jobs.TeamBudget, now time.Time) *escalation.Spec {
	_, end := tb.Period.Span(now)
	// The step is the team's own budget's, as the operator set it on the workers: not what the run was started with,
	// which its starter chose. Counted from what was spent, it lets an attempt run whatever the overshoot.
	step := jobs.Budget{}.StepCost(tb.USD) // the default step of that bound, whatever the run's starter chose
	over := max(led.SpentUSD-(tb.USD+led.ExtraUSD), 0)
	held := ""
	if led.Running > 0 {
		held = fmt.Sprintf(" (and %d attempts running now hold %s of what is left)", led.Running, jobs.USD(led.ReservedUSD))
	}
	s := budgetSpec(r, t, &jobs.BudgetStop{Bound: jobs.BoundTeam, StepUSD: over + step, Team: led.Team, Period: led.Key},
		fmt.Sprintf("Team %s reached its budget of %s a %s: its runs spent %s this %s%s.", led.Team,
			jobs.USD(tb.USD+led.ExtraUSD), tb.Period, jobs.USD(led.SpentUSD), tb.Period, held),
		fmt.Sprintf("Extend the team's budget for this %s by %s (budget operators only)", tb.Period, jobs.USD(step)))
	// The next period brings the money back: waiting for it is the default, and a timer takes it.
	wait := jobs.Option{Key: jobs.BudgetWait, Label: fmt.Sprintf("Wait for the next %s (goes on by itself at %s UTC)",
		tb.Period, end.Format("Jan 2 15:04"))}
	s.Keyed = append([]jobs.Option{wait}, s.Keyed...)
	s.Default = jobs.BudgetWait
	s.Timeout = end.Sub(now) + time.Second
	s.Question += fmt.Sprintf("\nThe budget starts again at %s UTC: the run waits for it unless you answer sooner.",
		end.Format("Jan 2 15:04"))
	return s
}

// budgetSpec is a budget question about task t of run r: what was reached (head), what was spent on what, and the
// answers — extend (labelled extend), finish without the rest, abort.
func budgetSpec(r *jobs.Run, t *jobs.Task, stop *jobs.BudgetStop, head, extend string) *escalation.Spec {
	rest := undone(r)
	finish := "Finish without the rest"
	if len(rest) > 0 {
		finish += fmt.Sprintf(" (%d %s left undone)", len(rest), plural(len(rest), "task", "tasks"))
	}
	return &escalation.Spec{Trigger: jobs.TriggerBudget, Source: "orch", Question: head + "\n" + spendLines(r), Stop: stop,
		Keyed: []jobs.Option{{Key: jobs.BudgetExtend, Label: extend}, {Key: jobs.BudgetFinish, Label: finish}}}
}

// budgetAnswers is the end of a budget question: what its answers do, as the question offers them (an extension
// only where someone may give one; waiting only for a team's budget, which its timer takes by itself).
func budgetAnswers(r *jobs.Run, keyed []jobs.Option) string {
	var ways []string
	waits := false
	for _, o := range keyed {
		switch o.Key {
		case jobs.BudgetExtend:
			ways = append(ways, "extend the budget to go on")
		case jobs.BudgetWait:
			ways, waits = append(ways, "wait for the next period"), true
		case jobs.BudgetFinish:
			finish := "finish the run with what is done"
			if rest := undone(r); len(rest) > 0 {
				finish += " (left undone: " + strings.Join(firstN(rest, 5), ", ") + ")"
			}
			ways = append(ways, finish)
		}
	}
	ways = append(ways, "abort")
	s := "\n"
	if !waits {
		s += "Nothing more runs until you answer. "
	}
	if len(ways) > 1 {
		s += "You can " + strings.Join(ways[:len(ways)-1], ", ") + ", or " + ways[len(ways)-1] + "."
	}
	return s + " The work so far is kept either way."
}

// spendLines says what the run spent on what: the agent and the brain, each task, each model.
func spendLines(r *jobs.Run) string {
	rc := r.Costs()
	var b strings.Builder
	fmt.Fprintf(&b, "Spent: %s in all — the agent %s over %d attempts, the brain %s over %d calls.",
		jobs.USD(rc.TotalUSD()), jobs.USD(rc.Agent.CostUSD), rc.Agent.Calls, jobs.USD(rc.Brain.CostUSD), rc.Brain.Calls)
	var tasks []string
	for _, tc := range rc.Tasks {
		if tc.Attempts > 0 {
			tasks = append(tasks, fmt.Sprintf("%s %s (%d)", tc.TaskID, jobs.USD(tc.Agent.CostUSD+tc.Brain.CostUSD), tc.Attempts))
		}
	}
	if len(tasks) > 0 {
		fmt.Fprintf(&b, "\nBy task (attempts): %s.", strings.Join(firstN(tasks, 8), ", "))
	}
	models := rc.Models
	sort.SliceStable(models, func(i, j int) bool { return models[i].CostUSD > models[j].CostUSD })
	var ms []string
	for _, m := range models {
		ms = append(ms, fmt.Sprintf("%s %s", m.Scope, jobs.USD(m.CostUSD)))
	}
	if len(ms) > 0 {
		fmt.Fprintf(&b, "\nBy model: %s.", strings.Join(firstN(ms, 4), ", "))
	}
	return b.String()
}

// undone lists the tasks of r not done yet, the current one first.
func undone(r *jobs.Run) []string {
	var ids []string
	for i := r.Cursor; i >= 0 && i < len(r.Tasks); i++ {
		if s := r.Tasks[i].Status; s != jobs.TaskCompleted && s != jobs.TaskForced {
			ids = append(ids, r.Tasks[i].ID)
		}
	}
	return ids
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("… %d more", len(s)-n))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// stopForBudget parks run r on the bound that keeps task t from another attempt, and reports whether it did. It runs
// in the step's first transaction, where c holds the team's ledger.
func (w *Worker) stopForBudget(r *jobs.Run, t *jobs.Task, c *jobs.Change, now time.Time) bool {
	var tb jobs.TeamBudget
	led := projected(r, c)
	if led != nil {
		tb, _ = w.cfg.Store.Budget(led.Team)
	}
	spec := budgetStop(r, t, led, tb, now)
	if spec == nil {
		return false
	}
	if spec.Stop.Bound == jobs.BoundTeam && len(w.cfg.BudgetOperators) == 0 {
		// Nobody may lift the team's budget from here: the people it bounds would be the ones answering.
		spec.Keyed = slices.DeleteFunc(spec.Keyed, func(o jobs.Option) bool { return o.Key == jobs.BudgetExtend })
	}
	spec.Question += budgetAnswers(r, spec.Keyed)
	spec.MaxPerTask = r.Options.Escalation.MaxPerTask
	escalation.Open(r, t, c, *spec, now)
	return true
}

// projected is the team's ledger as it will be once this update gives back what the run's own attempts held and hold
// no more (an attempt whose worker died, taken over): nil for a team without a budget.
func projected(r *jobs.Run, c *jobs.Change) *jobs.Ledger {
	if c.Ledger == nil {
		return nil
	}
	l := *c.Ledger
	now := jobs.AccountOf(r)
	for k, h := range c.Before.Holds {
		if k == l.Key || k == "" {
			l.Hold(h, now.Holds[k])
		}
	}
	return &l
}

// teamWaits reports whether run r's team's budget has money left for the period that running attempts hold: the
// step looks again shortly, when they may have settled, instead of asking anyone.
func teamWaits(r *jobs.Run, c *jobs.Change, tb jobs.TeamBudget) bool {
	l := projected(r, c)
	return l != nil && !l.Admits(tb, estimate(r, l)) && l.Left(tb) > 0 && l.Running > 0
}

// hold has attempt a of run r hold its team's expected cost of an attempt while it runs, of the current period's
// ledger, when the team has a budget.
func hold(r *jobs.Run, c *jobs.Change, a *jobs.Attempt) {
	if c.Ledger != nil && a != nil {
		a.Reserved, a.ReservedKey = estimate(r, c.Ledger), c.Ledger.Key
	}
}

// estimate is what run r's next attempt is expected to cost: the mean of its team's settled attempts in the period;
// at a period's start, before the team settled any, the mean of the run's own attempts, so that a new day does not
// admit every free worker's attempt at a default far below what they cost.
func estimate(r *jobs.Run, l *jobs.Ledger) float64 {
	if l.Attempts > 0 {
		return l.Estimate()
	}
	var usd float64
	n := 0
	for _, t := range r.Tasks {
		for _, a := range t.Attempts {
			if c := a.CostUSD + a.Brain.CostUSD; c > 0 {
				usd += c
				n++
			}
		}
	}
	if n == 0 {
		return l.Estimate()
	}
	return usd / float64(n)
}

// timeLeft bounds an attempt of task t by what is left of the run's time budget at now: the attempt's timeout, and
// whether the budget cut it shorter than the task's own.
func timeLeft(r *jobs.Run, t *jobs.Task, now time.Time) (time.Duration, bool) {
	own := r.AgentTimeout(t)
	b := r.Options.Budget.Duration
	if b <= 0 {
		return own, false
	}
	left := max(b-r.Worked(now), time.Second)
	if own > 0 && own <= left {
		return own, false
	}
	return left, true
}

// moneyLeft is what task t of run r may still spend under the tightest of the run's and the task's bounds, for an
// agent CLI that can stop itself there (0: unbounded). The team's budget is shared with runs that start and settle
// meanwhile: it is not a bound one invocation can be given.
func moneyLeft(r *jobs.Run, t *jobs.Task) float64 {
	b := r.Options.Budget
	left := 0.0
	if b.CostUSD > 0 {
		left = max(b.CostUSD-r.Spent(), 0.01)
	}
	if b.TaskCostUSD > 0 {
		task := max(b.TaskCostUSD+t.ExtraUSD-jobs.TaskSpent(t), 0.01)
		if left == 0 || task < left {
			left = task
		}
	}
	return left
}

// resumeBudget applies the answer to a budget question: extend the bound reached and go on, finish the run with what
// is done, or (waiting for a team's next period, words, a retry) go on, the next start checking the budget again.
func (w *Worker) resumeBudget(r *jobs.Run, t *jobs.Task, e *jobs.Escalation, c *jobs.Change, now time.Time) {
	res := e.Resolution
	switch {
	case res.Type == jobs.ResolveChoose && res.Key == jobs.BudgetFinish && e.Stop != nil:
		w.finishEarly(r, t, e, c, now)
		return
	case res.Type == jobs.ResolveChoose && res.Key == jobs.BudgetExtend && e.Stop != nil && e.Stop.Bound == jobs.BoundTeam &&
		!slices.Contains(w.cfg.BudgetOperators, res.By):
		// A team's budget is the operator's: someone else's "extend" lifts nothing, and the next start asks again.
		c.Audit = append(c.Audit, jobs.AuditEntry{TaskID: t.ID, EscalationID: e.ID, Action: "budget extension refused",
			Trigger: e.Trigger, Detail: res.By + " is not one of orch.yaml budgets.operators", By: res.By, Via: res.Via})
	case res.Type == jobs.ResolveChoose && res.Key == jobs.BudgetExtend && e.Stop != nil:
		c.Audit = append(c.Audit, jobs.AuditEntry{TaskID: t.ID, EscalationID: e.ID, Action: "budget extended",
			Trigger: e.Trigger, Detail: extend(r, t, c, e.Stop), By: res.By, Via: res.Via})
	}
	w.goOn(r, t, e, c, now)
}

// extend raises the bound stop names by its step, and says what it did.
func extend(r *jobs.Run, t *jobs.Task, c *jobs.Change, stop *jobs.BudgetStop) string {
	b := &r.Options.Budget
	switch stop.Bound {
	case jobs.BoundRun:
		from := b.CostUSD
		b.CostUSD += stop.StepUSD
		return fmt.Sprintf("the run's budget raised from %s to %s: %s past the %s it spent", jobs.USD(from),
			jobs.USD(b.CostUSD), jobs.USD(b.CostUSD-r.Spent()), jobs.USD(r.Spent()))
	case jobs.BoundTask:
		from := b.TaskCostUSD + t.ExtraUSD
		t.ExtraUSD += stop.StepUSD
		return fmt.Sprintf("task %s's budget raised from %s to %s: %s past the %s it spent", t.ID, jobs.USD(from),
			jobs.USD(b.TaskCostUSD+t.ExtraUSD), jobs.USD(b.TaskCostUSD+t.ExtraUSD-jobs.TaskSpent(t)), jobs.USD(jobs.TaskSpent(t)))
	case jobs.BoundTime:
		b.Duration += stop.StepTime
		return fmt.Sprintf("the run's time budget raised by %s to %s", stop.StepTime, b.Duration)
	case jobs.BoundTeam:
		if c.Ledger != nil && c.Ledger.Key == stop.Period {
			c.Ledger.ExtraUSD += stop.StepUSD
			return fmt.Sprintf("team %s's budget for %s raised by %s", stop.Team, stop.Period, jobs.USD(stop.StepUSD))
		}
		return fmt.Sprintf("team %s's budget for %s is over: the run goes on in the next period", stop.Team, stop.Period)
	}
	return "nothing to extend"
}

// finishEarly ends the run as completed with what is done: the task the question was about and the ones after it are
// left undone, and the run's end says so.
func (w *Worker) finishEarly(r *jobs.Run, t *jobs.Task, e *jobs.Escalation, c *jobs.Change, now time.Time) {
	rest := undone(r)
	escalation.DropQueued(r, t.ID)
	r.Resume(c)
	r.Reason = fmt.Sprintf("finished without the rest by %s at the %s budget: %d %s left undone (%s)", e.Resolution.By,
		e.Stop.Bound, len(rest), plural(len(rest), "task", "tasks"), strings.Join(firstN(rest, 5), ", "))
	c.Audit = append(c.Audit, jobs.AuditEntry{TaskID: t.ID, EscalationID: e.ID, Action: "finished early",
		Trigger: e.Trigger, Detail: r.Reason, By: e.Resolution.By, Via: e.Resolution.Via})
	r.Unfinished = rest
	r.Seq++
	r.RetryAt = time.Time{}
	endCompleted(r, c, now)
}

// moneyEvery is how often a step whose team's money left is held by running attempts looks again.
const moneyEvery = 5 * time.Second

// waitForMoney has step seq of run runID look again in a while, holding no worker meanwhile: the team's running
// attempts hold what is left of its budget, and settling may give some of it back.
func (w *Worker) waitForMoney(ctx context.Context, runID string, seq int64) error {
	r, err := w.cfg.Store.Get(ctx, runID)
	if err != nil || r.Status != jobs.RunRunning || r.Seq != seq {
		return skipIfMissing(err)
	}
	return w.stepQueue().StepLater(ctx, r.Team(), r.ID, seq, r.AgentTimeout(r.Current()), time.Now().Add(moneyEvery),
		strconv.FormatInt(time.Now().UnixNano(), 36))
}
