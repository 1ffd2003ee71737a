package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
)

// DefaultReminders is how many unanswered timeouts a question records before its fallback applies.
const DefaultReminders = 2

// scheduleTimeout has the open escalation of run time out after the policy's timeout. A question without a timeout
// waits forever. Timeouts are scheduled tasks, not goroutines: a parked run holds nothing while it waits.
func (w *Worker) scheduleTimeout(ctx context.Context, run *jobs.Run) error {
	e := run.OpenEscalation()
	if e == nil {
		return nil
	}
	d := run.Options.Escalation.Timeout
	if e.Timeout > 0 {
		d = e.Timeout
	}
	if d <= 0 {
		return nil
	}
	n := e.Timeouts + 1
	return w.cfg.Queue.Timeout(ctx, run.ID, e.ID, n, e.CreatedAt.Add(time.Duration(n)*d))
}

// handleTimeout runs when a question's time ran out. It takes the question's default choice when the policy says so;
// otherwise it records TIMEOUT — never a denial — reminds, and after the reminders applies the fallback: keep
// waiting, or abort.
func (w *Worker) handleTimeout(ctx context.Context, t *asynq.Task) error {
	p, err := queue.DecodePayload(t)
	if err != nil {
		return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
	}
	run, err := w.cfg.Store.Get(ctx, p.RunID)
	if err != nil {
		return skipIfMissing(err)
	}
	e := run.Escalation(p.EscalationID)
	if run.Status != jobs.RunParked || e == nil || e.Resolution != nil || e.Timeouts < p.N-1 || e.Timeouts > p.N {
		return nil // answered in time, or this timeout was handled already
	}
	policy := run.Options.Escalation
	waited := w.cfg.Store.Now().Sub(e.CreatedAt).Round(time.Second)
	if e.Timeout > 0 {
		// A question with its own time limit (a gate's timeout) follows the pipeline's rule: its default choice, or
		// TIMEOUT, which asks the gate again as far as its retry policy allows (attractor spec §4.6, §6.5).
		if err := w.cfg.Store.Append(ctx, run.ID, jobs.NewEvent(run.ID, e.TaskID,
			jobs.InterviewTimeoutEvent{EscalationID: e.ID, Question: e.Question, Stage: e.TaskID,
				WaitedSeconds: waited.Seconds(), Default: e.Default})); err != nil {
			return err
		}
		req := escalation.Request{RunID: run.ID, EscalationID: e.ID, Type: jobs.ResolveRetry, By: "orch", Via: "timeout"}
		if e.Default != "" {
			req.Type, req.Key = jobs.ResolveChoose, e.Default
		}
		_, _, err := escalation.Resolve(ctx, w.cfg.Store, w.cfg.Queue, req)
		return ignoreSettled(err)
	}
	def := escalation.QuestionFor(e).Default
	if e.Trigger == jobs.TriggerGate {
		def = e.Default // a gate's default is its human.default_choice, not a recommendation
	}
	if policy.TimeoutDefault && def != "" {
		_, _, err := escalation.Resolve(ctx, w.cfg.Store, w.cfg.Queue, escalation.Request{RunID: run.ID,
			EscalationID: e.ID, Type: jobs.ResolveChoose, Key: def, By: "orch", Via: "timeout"})
		return ignoreSettled(err)
	}
	reminders := policy.Reminders
	if reminders <= 0 {
		reminders = DefaultReminders
	}
	final := p.N >= reminders
	// A retried delivery finds the timeout recorded already (e.Timeouts == N): it only redoes what follows, which
	// is safe to repeat (the next timeout's task id, the atomic abort).
	run, err = w.cfg.Store.Update(ctx, run.ID, func(r *jobs.Run, c *jobs.Change) error {
		if e := r.Escalation(p.EscalationID); e != nil && e.Resolution == nil && e.Timeouts == p.N {
			return errRecorded
		}
		e := r.Escalation(p.EscalationID)
		if r.Status != jobs.RunParked || e == nil || e.Resolution != nil || e.Timeouts != p.N-1 {
			return errStale
		}
		e.Timeouts = p.N
		next := "still waiting"
		if final && policy.Fallback == "abort" {
			next = "aborting the run"
		} else if !final {
			next = "reminding"
		}
		c.Emit(jobs.NewEvent(r.ID, e.TaskID, jobs.EscalationTimeoutEvent{EscalationID: e.ID, N: p.N, Of: reminders,
			WaitedSeconds: waited.Seconds(), Question: e.Question, Next: next}))
		c.Audit = append(c.Audit, jobs.AuditEntry{TaskID: e.TaskID, EscalationID: e.ID, Action: "timeout",
			Trigger: e.Trigger, Resolution: "TIMEOUT", Detail: fmt.Sprintf("no answer after %s (timeout %d of %d): %s", waited, p.N, reminders, next),
			By: "orch", Via: "timeout"})
		return nil
	})
	switch {
	case errors.Is(err, errRecorded):
		if run, err = w.cfg.Store.Get(ctx, p.RunID); err != nil {
			return err
		}
	case errors.Is(err, errStale):
		return nil
	case err != nil:
		return err
	}
	switch {
	case !final:
		return w.scheduleTimeout(ctx, run)
	case policy.Fallback == "abort":
		_, _, err := escalation.Resolve(ctx, w.cfg.Store, w.cfg.Queue, escalation.Request{RunID: run.ID,
			EscalationID: p.EscalationID, Type: jobs.ResolveAbort, By: "orch", Via: "timeout",
			Reason: fmt.Sprintf("no answer after %s and %d reminders", waited, reminders)})
		return ignoreSettled(err)
	}
	return nil // keep waiting, for as long as it takes
}

// errRecorded marks a timeout whose TIMEOUT entry a previous delivery wrote already.
var errRecorded = errors.New("timeout recorded already")

// ignoreSettled treats a question answered meanwhile as done.
func ignoreSettled(err error) error {
	if errors.Is(err, escalation.ErrAlreadyResolved) || errors.Is(err, escalation.ErrNoOpenEscalation) {
		return nil
	}
	return err
}
