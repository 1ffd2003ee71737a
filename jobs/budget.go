package jobs

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Budget bounds what a run may spend: money (the agent's and the brain's, in USD) and the agents' working time. A run
// that reaches a bound is stopped at its next safe point (before another attempt starts) and parked with trigger
// budget; a person may extend it by Step, finish without the rest, or abort. The zero value bounds nothing.
type Budget struct {
	// CostUSD bounds the whole run's cost; 0: unbounded.
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Duration bounds the agents' working time over the run (the sum of its attempts, not the time it waited for
	// people); 0: unbounded. An attempt that would run past it is cut at the bound.
	Duration time.Duration `json:"duration,omitempty"`
	// TaskCostUSD bounds one task's cost over its attempts; 0: unbounded.
	TaskCostUSD float64 `json:"task_cost_usd,omitempty"`
	// StepUSD and StepDuration are what one "extend" adds to the bound that was reached (the operator's step).
	StepUSD      float64       `json:"step_usd,omitempty"`
	StepDuration time.Duration `json:"step_duration,omitempty"`
}

// Bounded reports whether the budget bounds anything.
func (b Budget) Bounded() bool { return b.CostUSD > 0 || b.Duration > 0 || b.TaskCostUSD > 0 }

// Default steps, when the operator set none: what one "extend" adds.
const (
	DefaultBudgetStepFraction = 0.5 // of the bound reached, for money and time alike
	minBudgetStepUSD          = 0.01
)

// StepCost is what extending the run's cost bound adds.
func (b Budget) StepCost(bound float64) float64 {
	if b.StepUSD > 0 {
		return b.StepUSD
	}
	return math.Max(roundCents(bound*DefaultBudgetStepFraction), minBudgetStepUSD)
}

// StepTime is what extending the run's time bound adds.
func (b Budget) StepTime() time.Duration {
	if b.StepDuration > 0 {
		return b.StepDuration
	}
	return max(time.Duration(float64(b.Duration)*DefaultBudgetStepFraction).Round(time.Second), time.Second)
}

func roundCents(usd float64) float64 { return math.Round(usd*100) / 100 }

// USD writes a sum of dollars as people read it: cents, or four places under a cent.
func USD(v float64) string {
	if v != 0 && math.Abs(v) < 0.01 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

// TeamBudget bounds what a team's runs spend together over a calendar period (in UTC): "$50/day".
type TeamBudget struct {
	USD    float64 `json:"usd"`
	Period Period  `json:"period"`
}

// Period is the span a team's spend is counted over: day, week (from Monday) or month, in UTC.
type Period string

const (
	Day   Period = "day"
	Week  Period = "week"
	Month Period = "month"
)

// Span is the period holding t: its start, inclusive, and its end, exclusive.
func (p Period) Span(t time.Time) (start, end time.Time) {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch p {
	case Week:
		start = day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
		return start, start.AddDate(0, 0, 7)
	case Month:
		start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 1, 0)
	}
	return day, day.AddDate(0, 0, 1)
}

// Key names the period holding t, as its ledger is kept: "day:2026-11-29", "week:2026-11-23", "month:2026-11".
func (p Period) Key(t time.Time) string {
	start, _ := p.Span(t)
	if p == Month {
		return "month:" + start.Format("2006-01")
	}
	if p != Week {
		p = Day
	}
	return string(p) + ":" + start.Format("2006-01-02")
}

// The bounds a run can reach (BudgetStop.Bound).
const (
	BoundRun  = "run"  // the run's cost
	BoundTask = "task" // one task's cost
	BoundTime = "time" // the agents' working time over the run
	BoundTeam = "team" // the team's spend over its period
)

// The options of a budget question, besides abort.
const (
	BudgetExtend = "extend" // raise the bound reached by its step and go on
	BudgetFinish = "finish" // end the run with what is done, the rest of its tasks left undone
	BudgetWait   = "wait"   // a team's budget: wait for its next period, which a timer brings
)

// BudgetStop is the bound a run reached, as its question records it: what "extend" adds to which bound.
type BudgetStop struct {
	Bound    string        `json:"bound"`
	StepUSD  float64       `json:"step_usd,omitempty"`
	StepTime time.Duration `json:"step_time,omitempty"`
	// Team and Period (a ledger's key: "day:2026-11-29") name the budget a team's stop is about.
	Team   string `json:"team,omitempty"`
	Period string `json:"period,omitempty"`
}

// Spent is what the run cost so far: its agents and its brain.
func (r *Run) Spent() float64 {
	usd, _, _ := r.Cost()
	return usd
}

// Worked is the agents' working time over the run: the sum of its attempts' durations, and of the time the attempts
// running now have run so far.
func (r *Run) Worked(now time.Time) time.Duration {
	var d time.Duration
	for _, t := range r.Tasks {
		for i, a := range t.Attempts {
			if a.Duration == 0 && t.Status == TaskRunning && i == len(t.Attempts)-1 {
				d += max(now.Sub(a.StartedAt), 0)
				continue
			}
			d += a.Duration
		}
	}
	return d
}

// TaskSpent is what task t cost over its attempts.
func TaskSpent(t *Task) float64 {
	var usd float64
	for _, a := range t.Attempts {
		usd += a.CostUSD + a.Brain.CostUSD
	}
	return usd
}

// Account is what a run counts against its team's ledgers: what it spent, and what its running attempts hold, by the
// ledger (the period) each hold was taken from.
type Account struct {
	SpentUSD float64
	Holds    map[string]Hold
	// Settled counts the attempts whose outcome was recorded (the brain's reading of them), whatever their team's
	// budget: what a team's books count as attempts.
	Settled int
}

// Hold is what attempts hold of one ledger: N of them, USD in all.
type Hold struct {
	USD float64
	N   int
}

// AccountOf is r's account now. A run that ended holds nothing, whatever its attempts say: an abort while an attempt
// ran gives its hold back.
func AccountOf(r *Run) Account {
	a := Account{SpentUSD: r.Spent()}
	for _, t := range r.Tasks {
		for _, at := range t.Attempts {
			if at.Status != "" {
				a.Settled++
			}
			if at.Reserved > 0 && !r.Status.Terminal() {
				if a.Holds == nil {
					a.Holds = map[string]Hold{}
				}
				h := a.Holds[at.ReservedKey]
				h.USD += at.Reserved
				h.N++
				a.Holds[at.ReservedKey] = h
			}
		}
	}
	return a
}

// Ledger is a team's spend over one period, read and written in the same transaction as the update of the run that
// changes it: so that two workers cannot both start an attempt on the last of a team's money, and a settled attempt's
// cost is counted exactly once, with its record.
type Ledger struct {
	Team string `json:"team"`
	// Key names the period ("day:2026-11-29").
	Key string `json:"key"`
	// SpentUSD is what the team's runs cost in the period; ReservedUSD what their running attempts hold (Running of
	// them); Attempts how many settled; ExtraUSD what people added to the budget for the period.
	SpentUSD    float64 `json:"spent_usd"`
	ReservedUSD float64 `json:"reserved_usd"`
	Running     int     `json:"running"`
	Attempts    int     `json:"attempts"`
	ExtraUSD    float64 `json:"extra_usd"`
}

// Hold counts a change of what a run's attempts hold of this ledger, from before to after: attempts that let go of
// their hold settled.
func (l *Ledger) Hold(before, after Hold) {
	l.ReservedUSD = max(l.ReservedUSD+after.USD-before.USD, 0)
	if d := after.N - before.N; d < 0 {
		l.Attempts += -d
	}
	l.Running = max(l.Running+after.N-before.N, 0)
	if l.Running == 0 {
		l.ReservedUSD = 0 // what rounding left
	}
}

// Left is what the team may still spend in the period under budget b.
func (l *Ledger) Left(b TeamBudget) float64 { return b.USD + l.ExtraUSD - l.SpentUSD }

// DefaultAttemptEstimate is what an attempt is expected to cost before a team has settled any in the period.
const DefaultAttemptEstimate = 0.50

// Estimate is what the team's next attempt is expected to cost: the mean of its settled attempts in the period.
func (l *Ledger) Estimate() float64 {
	if l.Attempts == 0 || l.SpentUSD <= 0 {
		return DefaultAttemptEstimate
	}
	return l.SpentUSD / float64(l.Attempts)
}

// Admits reports whether the team may start another attempt that is expected to cost est: there is money left that
// no running attempt holds, or there is money left and nothing runs (a last attempt, one at a time). A team is thus
// over its budget by at most what the attempts it let start cost above their estimates.
func (l *Ledger) Admits(b TeamBudget, est float64) bool {
	left := l.Left(b)
	if left <= 0 {
		return false
	}
	return l.Running == 0 || l.ReservedUSD+est <= left
}

// TeamStanding is a team's spend against its budget for one period, as a run last saw it.
type TeamStanding struct {
	Team     string  `json:"team"`
	Period   Period  `json:"period"`
	SpentUSD float64 `json:"spent_usd"` // settled, and held by running attempts
	LimitUSD float64 `json:"limit_usd"` // the budget with what people added for the period
}

// StandingOf is where ledger l stands against budget b.
func StandingOf(l *Ledger, b TeamBudget) *TeamStanding {
	return &TeamStanding{Team: l.Team, Period: b.Period, SpentUSD: l.SpentUSD + l.ReservedUSD, LimitUSD: b.USD + l.ExtraUSD}
}

// BudgetText says where the run stands against its own bounds at now and its team against the team's budget —
// "$1.50 of $2.00 spent, 4m10s of 10m worked, team payments $31.20 of $50.00 this day" — for every surface that
// shows a run at work; "" when nothing bounds it.
func (r *Run) BudgetText(now time.Time) string {
	b := r.Options.Budget
	var parts []string
	if b.CostUSD > 0 {
		parts = append(parts, USD(r.Spent())+" of "+USD(b.CostUSD)+" spent")
	}
	if b.TaskCostUSD > 0 {
		if t := r.Current(); t != nil {
			parts = append(parts, fmt.Sprintf("task %s %s of %s", t.ID, USD(TaskSpent(t)), USD(b.TaskCostUSD+t.ExtraUSD)))
		}
	}
	if b.Duration > 0 {
		parts = append(parts, r.Worked(now).Round(time.Second).String()+" of "+b.Duration.String()+" worked")
	}
	if ts := r.TeamStanding; ts != nil {
		parts = append(parts, fmt.Sprintf("team %s %s of %s this %s", ts.Team, USD(ts.SpentUSD), USD(ts.LimitUSD), ts.Period))
	}
	return strings.Join(parts, ", ")
}
