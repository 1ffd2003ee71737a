package worker

import (
	"fmt"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/quota"
)

// A provider's usage limit with a reset time ("You've hit your session limit · resets 4:40pm", a Retry-After) is not
// the task's failure and not a person's problem: the run parks with trigger limit on the question's own timer — a
// task scheduled on the queue, which survives restarts and fires once across workers, not a sleeping goroutine —
// and goes on by itself a little after the reset. A person may answer sooner (go on now, words, abort); the timer
// then finds the question answered and does nothing. A limit without a reset time is a failure like any other and
// goes the usual way, to a person when the brain says no retry fixes it.

// The limit question's option: go on now (the timer takes it at the reset).
const limitGo = "go"

// limitMargin is how long after a reset the run goes on: the provider's clock and orch's differ a little, and a
// window that has just reset may still refuse the first seconds' calls.
func limitMargin(wait time.Duration) time.Duration {
	return min(2*time.Second+wait/20, time.Minute)
}

// limited is the usage limit the agent stopped on in this delivery, nil when it did not.
func (out *outcome) limited() *quota.Limit {
	if !out.ran || out.execErr != nil || out.said.Success || out.usage.Limit == nil || out.security() {
		return nil
	}
	return out.usage.Limit
}

// waitForLimit parks task t of run r until the limit l resets: the attempt is not a failure and its work stays in the
// worktree. After a call with effects beyond the worktree, nothing runs again by itself: the question waits for a
// person, who sees the calls.
// judging is set when it is the brain's provider that refused: the agent's work is done and waits (Task.Pending) to be
// judged when the run goes on, without running the agent again.
func (w *Worker) waitForLimit(r *jobs.Run, t *jobs.Task, c *jobs.Change, a *jobs.Attempt, l *quota.Limit, out *outcome, judging bool, now time.Time) {
	a.Status, a.Summary = "limit", "stopped by the provider's usage limit"
	stopped := "stopped on"
	if judging {
		a.Status, a.Summary = "limit", "waiting for the brain's provider's limit to be judged"
		stopped, out.said.Effects = "could not be judged because of", nil // the agent runs not again: its calls neither
	}
	wait := max(l.Reset.Sub(now), 0)
	at := now.Add(wait + limitMargin(wait))
	who := l.Provider
	if who == "" {
		who = "the agent's provider"
	}
	said := safetext.OneLine(safetext.Redact(l.Text), quota.MaxText)
	spec := escalation.Spec{Trigger: jobs.TriggerLimit, Source: "orch", Output: out.said.Text,
		MaxPerTask: r.Options.Escalation.MaxPerTask,
		Keyed:      []jobs.Option{{Key: limitGo, Label: "Go on now, without waiting for the reset"}}}
	if n := limitsInARow(r, t.ID); n >= maxLimitWaits {
		// The limit came back after every reset orch waited for: a provider that does not keep its word, or an agent
		// that says it is limited when it is not (its own words are where such lines are read). Nothing waits on it
		// by itself again: a person looks.
		spec.Trigger = jobs.TriggerBrain
		spec.Question = fmt.Sprintf("Task %s "+stopped+" %s's usage limit again (%q): the %s time in a row, after "+
			"orch waited for each reset it was given. orch no longer waits by itself: go on, give words to guide the "+
			"agent, or abort.", t.ID, who, said, ordinal(n+1))
		escalation.Open(r, t, c, spec, now)
		return
	}
	if len(out.said.Effects) > 0 {
		spec.Question = fmt.Sprintf("Task %s "+stopped+" %s's usage limit (%q), after running what a person let through, "+
			"with effects beyond its worktree:\n%s\nRunning the task again may run it again, so orch does not go on by "+
			"itself: go on (the limit resets at %s UTC), give words to guide the agent, or abort.", t.ID, who, said,
			escalation.Bullets(out.said.Effects), l.Reset.UTC().Format("Jan 2 15:04:05"))
	} else {
		spec.Question = fmt.Sprintf("Task %s "+stopped+" %s's usage limit: %q. orch waits for the reset and goes on by "+
			"itself at %s UTC, holding no worker; answer to go on sooner, or abort.", t.ID, who, said,
			at.UTC().Format("Jan 2 15:04:05"))
		spec.Default, spec.Timeout = limitGo, at.Sub(now)
	}
	escalation.Open(r, t, c, spec, now)
}

// maxLimitWaits is how many times in a row a task waits for a limit's reset by itself before a person is asked.
const maxLimitWaits = 3

// limitsInARow counts the questions about task taskID that were usage limits, from the last back to the first
// that was not: the resets this task has waited for without an attempt getting past the limit.
func limitsInARow(r *jobs.Run, taskID string) int {
	n := 0
	for i := len(r.Escalations) - 1; i >= 0; i-- {
		e := r.Escalations[i]
		if e.TaskID != taskID {
			continue
		}
		if e.Trigger != jobs.TriggerLimit {
			break
		}
		n++
	}
	return n
}

func ordinal(n int) string {
	switch n {
	case 1:
		return "first"
	case 2:
		return "second"
	case 3:
		return "third"
	case 4:
		return "fourth"
	}
	return fmt.Sprintf("%dth", n)
}
