package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
)

// handleStart moves a queued run onto its graph's first node. The functions of this file are how a run gets moving
// from any saved state: its start, the nudge that queues what the state needs next, a paused run continued.
func (w *Worker) handleStart(ctx context.Context, t *asynq.Task) error {
	p, err := queue.DecodePayload(t)
	if err != nil {
		return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
	}
	run, err := w.cfg.Store.Update(ctx, p.RunID, w.startRun)
	return w.after(ctx, p.RunID, run, err)
}

// startRun is the transition that starts a queued run and puts it on its graph's first node.
func (w *Worker) startRun(r *jobs.Run, c *jobs.Change) error {
	if r.Status != jobs.RunQueued {
		return errStale
	}
	permissions := ""
	if r.Options.Agent == "claude" {
		permissions = Policy(r.Options).Summary()
	}
	r.Start(c, permissions)
	w.begin(r, c, w.cfg.Store.Now())
	return nil
}

// after finishes a handler: on success it enqueues what the run needs next; on a stale task it makes sure the run is
// not left without its next task (the enqueue after an earlier transition may have been lost in a crash).
func (w *Worker) after(ctx context.Context, runID string, run *jobs.Run, err error) error {
	switch {
	case errors.Is(err, errStale):
		run, err = w.cfg.Store.Get(ctx, runID)
		if err != nil {
			return skipIfMissing(err)
		}
		return w.Nudge(ctx, run)
	case err != nil:
		return skipIfMissing(err)
	}
	return w.Nudge(ctx, run)
}

// Continue moves a run on from wherever it stopped: a paused run (the brain was unavailable) runs again and its saved
// output is judged; any other run is nudged.
func (w *Worker) Continue(ctx context.Context, runID string) (*jobs.Run, error) {
	run, err := w.cfg.Store.Update(ctx, runID, continuePaused)
	if errors.Is(err, errStale) {
		run, err = w.cfg.Store.Get(ctx, runID)
	}
	if err != nil {
		return nil, err
	}
	return run, w.Nudge(ctx, run)
}

// continuePaused is the transition that has a paused run work again.
func continuePaused(r *jobs.Run, c *jobs.Change) error {
	if r.Status != jobs.RunPaused {
		return errStale
	}
	r.Continue(c)
	return nil
}

func currentTaskID(r *jobs.Run) string {
	if t := r.Current(); t != nil {
		return t.ID
	}
	return ""
}

// Nudge enqueues the task that moves run on from its saved state: after a crash, an interrupted step, a resolution
// made while no worker ran. Enqueues are idempotent by task id, so nudging a run that is moving does nothing.
func (w *Worker) Nudge(ctx context.Context, run *jobs.Run) error {
	switch run.Status {
	case jobs.RunQueued:
		return w.cfg.Queue.Start(ctx, run.ID)
	case jobs.RunRunning:
		return w.stepQueue().StepAt(ctx, run.Team(), run.ID, run.Seq, run.AgentTimeout(run.Current()), run.RetryAt)
	case jobs.RunParked:
		if last := lastEscalation(run); last != nil && last.Resolution != nil && run.OpenEscalation() == nil {
			return w.cfg.Queue.Resume(ctx, run.ID, last.ID)
		}
		if err := w.scheduleTimeout(ctx, run); err != nil {
			return err
		}
		return w.release(ctx, run, false)
	case jobs.RunPaused:
		return w.letGo(ctx, run, false) // waits for `orch resume`
	default: // terminal
		return w.release(ctx, run, true)
	}
}

func lastEscalation(r *jobs.Run) *jobs.Escalation {
	if len(r.Escalations) == 0 {
		return nil
	}
	return r.Escalations[len(r.Escalations)-1]
}

func skipIfMissing(err error) error {
	if errors.Is(err, jobs.ErrRunNotFound) {
		return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
	}
	return err
}
