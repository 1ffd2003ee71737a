package jobs

import (
	"fmt"
	"math"
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
