package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/pipeline"
	"github.com/orchrun/orch/quota"
)

// settle records an attempt's outcome on the run and applies the verdict on it: the next task, a retry, a person's
// decision, or the end of the run. It runs inside the transaction that saves the run.
func (w *Worker) settle(r *jobs.Run, t *jobs.Task, c *jobs.Change, out *outcome) {
	now := w.cfg.Store.Now()
	a := recordAttempt(r, t, c, out, now)
	t.Paused = nil
	// The attempt is settled here, whatever comes of it: what its agent said was kept (keep) only until now, but for
	// a judgement the brain could not make (below).
	kept := t.Pending
	t.Pending = nil
	if out.paused != nil && !out.security() && out.execErr == nil {
		w.pauseAt(r, t, c, a, out.paused, now)
		return
	}
	if l := out.limited(); l != nil {
		w.waitForLimit(r, t, c, a, l, out, false, now)
		return
	}
	if out.budgetCut && !out.security() {
		// Stopped at the run's budget (its time, or the money the CLI was given), not failed: its work stays in the
		// worktree, and a person decides.
		a.Status, a.Summary = "budget", "stopped at the run's budget"
		if !w.stopForBudget(r, t, c, now) {
			t.Reopen(c)
			r.Seq++
		}
		return
	}
	v := judgeAttempt(w.facts(r, t, out))
	if v.kind == vPause {
		// Nothing is decided without the brain, and nothing is lost: the output waits in the run for the resume.
		t.Pending = kept // kept when the agent ended (keep), unless the outcome came some other way
		if t.Pending == nil {
			said := out.said
			said.Text = safetext.Bound(safetext.Redact(said.Text), maxPending)
			said.Stderr = safetext.Redact(said.Stderr)
			t.Pending = &said
		}
		var lim *brain.LimitedError
		if errors.As(out.unavailable, &lim) {
			// The brain's provider said until when: the run waits for that on a timer, not for a person's resume.
			w.waitForLimit(r, t, c, a, &quota.Limit{Reset: lim.Reset, Text: out.unavailable.Error(), Provider: "the brain"},
				out, true, now)
			return
		}
		r.Pause(c, t.ID, "Brain unavailable: "+safetext.Redact(out.unavailable.Error()))
		return
	}
	a.Status = v.status
	if v.kind == vSandboxError {
		a.Error = safetext.Redact(out.execErr.Error())
		c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.SandboxErrorEvent{Error: a.Error}))
		w.escalate(r, t, c, out, v.specs, now)
		return
	}
	// The brain read redacted text; its words are redacted all the same, as they become a commit message and a
	// pull request's body.
	a.Summary, a.Error = w.cfg.Secrets.Redact(out.interp.Summary), w.cfg.Secrets.Redact(out.interp.Error)
	if v.failed {
		t.Failures++
		t.Errors = append(t.Errors, bound(a.Error))
		c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.TaskFailedEvent{Title: t.Title, Attempt: t.Failures,
			MaxAttempts: r.MaxAttempts(t), Error: firstLines(a.Error, 3)}))
	}
	switch v.kind {
	case vComplete:
		t.Summary = a.Summary
		t.RetryGuidance = ""
		t.Complete(c, a.Summary, a)
		w.finish(r, t, c, agentOutcome(t, out.said.Text), now)
	case vHold, vEscalate:
		if v.loop != nil {
			c.Emit(jobs.NewEvent(r.ID, t.ID, *v.loop))
		}
		w.escalate(r, t, c, out, v.specs, now)
	case vRoute:
		note := ""
		if t.Kind == jobs.KindVerify {
			if w.e2eStops(r, t, c, a.Error, now) {
				return // the fixes are not converging: a person looks
			}
			note = fmt.Sprintf("fix attempt %d of %d", r.E2E.Failures, r.Options.E2EFixAttempts())
		}
		// The pipeline says where a failure of this stage goes: no human is needed.
		t.Fail(c)
		w.finish(r, t, c, pipeline.Outcome{Status: pipeline.StatusFail, FailureReason: a.Error, Notes: note}, now)
	case vRetry:
		r.Retry(c, t, v.reason, safetext.Redact(v.guidance), pipeline.RetryDelay(t.Backoff, t.Failures, out.jitter), now)
	}
}

// facts gathers what the verdict on an attempt is made from.
func (w *Worker) facts(r *jobs.Run, t *jobs.Task, out *outcome) facts {
	f := facts{taskID: t.ID, failures: t.Failures, maxAttempts: r.MaxAttempts(t), threshold: w.threshold(r),
		interp: out.interp, decision: out.decision, similarity: out.similarity, secrets: out.secrets, tampered: out.tampered, leaked: out.leaked, custom: out.custom,
		output: out.said.Text, effects: out.said.Effects, unavailable: out.unavailable != nil}
	if out.execErr != nil {
		f.sandboxErr = safetext.Redact(out.execErr.Error())
		f.inputErr = out.inputErr
	}
	f.routed = func() bool { return w.failureRoute(r, t, safetext.Redact(out.interp.Error)) }
	return f
}

// escalate parks the run on the specs, with the run's escalation cap and what the task changed in the workspace.
func (w *Worker) escalate(r *jobs.Run, t *jobs.Task, c *jobs.Change, out *outcome, specs []escalation.Spec, now time.Time) {
	for i := range specs {
		specs[i].MaxPerTask = r.Options.Escalation.MaxPerTask
		specs[i].Files, specs[i].Diff = out.files, out.diff
	}
	escalation.Escalate(r, t, c, specs, now)
}

// recordUsage writes what the agent's run cost onto attempt a of task t, when the agent ran in this delivery (a
// delivery that took a finished attempt over finds it recorded already).
func recordUsage(t *jobs.Task, a *jobs.Attempt, out *outcome) {
	if !out.ran {
		return
	}
	a.Duration = out.duration
	a.ExitCode = out.said.ExitCode
	a.Reserved = 0 // its cost is known: the team's ledger counts it instead of the hold
	a.InputTokens, a.OutputTokens = out.usage.InputTokens, out.usage.OutputTokens
	a.CostUSD, a.Model = out.usage.CostUSD, out.usage.Model
	if out.usage.SessionID != "" {
		t.SessionID = out.usage.SessionID
	}
}

// recordAttempt writes what the attempt cost and said onto its record, and notes a brain that fell back.
// A task with no attempt record lost it with a store holder killed before the record reached disk: the outcome gets a
// record of its own rather than nothing (or a panic), started out's duration before now.
func recordAttempt(r *jobs.Run, t *jobs.Task, c *jobs.Change, out *outcome, now time.Time) *jobs.Attempt {
	if len(t.Attempts) == 0 {
		t.Attempts = append(t.Attempts, &jobs.Attempt{StartedAt: now.Add(-out.duration).UTC()})
		t.Started = max(t.Started, 1)
	}
	a := t.Attempts[len(t.Attempts)-1]
	recordUsage(t, a, out)
	a.Brain = a.Brain.Add(out.brainUsage)
	if out.brainNote != "" {
		c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.BrainFallbackEvent{Reason: safetext.Redact(out.brainNote)}))
	}
	return a
}
