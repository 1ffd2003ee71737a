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

// handleTimeout runs when a question's time ran out, and applies judgeTimeout: the question's default choice when
// it has one to take; otherwise TIMEOUT is recorded — never a denial — with a reminder, and after the reminders the
// fallback applies: keep waiting, or abort.
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
	waited := w.cfg.Store.Now().Sub(e.CreatedAt).Round(time.Second)
	v := judgeTimeout(e, run.Options.Escalation, p.N)
	if v.ownLimit && e.Trigger == jobs.TriggerGate {
		if err := w.cfg.Store.Append(ctx, run.ID, jobs.NewEvent(run.ID, e.TaskID,
			jobs.InterviewTimeoutEvent{EscalationID: e.ID, Question: e.Question, Stage: e.TaskID,
				WaitedSeconds: waited.Seconds(), Default: e.Default})); err != nil {
			return err
		}
	}
	if v.resolve != nil {
		req := *v.resolve
		req.RunID, req.EscalationID, req.By, req.Via = run.ID, e.ID, "orch", "timeout"
		_, _, err := escalation.Resolve(ctx, w.cfg.Store, w.cfg.Queue, req)
		return ignoreSettled(err)
	}
	if run, err = w.recordTimeout(ctx, p, v, waited); err != nil || run == nil {
		return err
	}
	switch {
	case v.abort:
		_, _, err := escalation.Resolve(ctx, w.cfg.Store, w.cfg.Queue, escalation.Request{RunID: run.ID,
			EscalationID: p.EscalationID, Type: jobs.ResolveAbort, By: "orch", Via: "timeout",
			Reason: fmt.Sprintf("no answer after %s and %d reminders", waited, v.reminders)})
		return ignoreSettled(err)
	case v.remind:
		return w.scheduleTimeout(ctx, run)
	}
	return nil // keep waiting, for as long as it takes
}

// recordTimeout records the timeout as TIMEOUT with what follows, in the run's log and audit trail. A retried
// delivery finds it recorded already (e.Timeouts == N) and only redoes what follows, which is safe to repeat (the
// next timeout's task id, the atomic abort). A nil run with no error means the question was settled meanwhile.
func (w *Worker) recordTimeout(ctx context.Context, p queue.Payload, v timeoutVerdict, waited time.Duration) (*jobs.Run, error) {
	run, err := w.cfg.Store.Update(ctx, p.RunID, func(r *jobs.Run, c *jobs.Change) error {
		e := r.Escalation(p.EscalationID)
		switch {
		case e != nil && e.Resolution == nil && e.Timeouts == p.N:
			return errRecorded
		case r.Status != jobs.RunParked || e == nil || e.Resolution != nil || e.Timeouts != p.N-1:
			return errStale
		}
		e.Timeouts = p.N
		c.Emit(jobs.NewEvent(r.ID, e.TaskID, jobs.EscalationTimeoutEvent{EscalationID: e.ID, N: p.N, Of: v.reminders,
			WaitedSeconds: waited.Seconds(), Question: e.Question, Next: v.next}))
		c.Audit = append(c.Audit, jobs.AuditEntry{TaskID: e.TaskID, EscalationID: e.ID, Action: "timeout",
			Trigger: e.Trigger, Resolution: "TIMEOUT", Detail: fmt.Sprintf("no answer after %s (timeout %d of %d): %s",
				waited, p.N, v.reminders, v.next), By: "orch", Via: "timeout"})
		return nil
	})
	switch {
	case errors.Is(err, errRecorded):
		return w.cfg.Store.Get(ctx, p.RunID)
	case errors.Is(err, errStale):
		return nil, nil
	}
	return run, err
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
