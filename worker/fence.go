package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/backoff"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// A step has one owner at a time: the delivery that began its current attempt (Attempt.Owner). Ownership passes when
// that delivery is found dead (owner.go) — and a delivery found dead may only be cut off: a worker partitioned from
// Redis past its lease keeps running until it learns better, and then it must change nothing. So everything a step
// does that another worker could see is fenced by the attempt it belongs to:
//
//   - the agent's result is saved on the task (Task.Pending) the moment the agent ends, in a transaction that checks
//     the attempt is still the task's current one under this delivery; a worker that dies after it has its result
//     settled by the next delivery rather than its task run again;
//   - before a step moves the run's branch (in the repository, on the remote), a transaction under the same check
//     records the commit it is about to put there (Git.Moving); the step then moves it only by compare-and-set, from
//     the commit the run recorded or from one its dead owners were about to put there, so a stale worker cannot
//     overwrite the new owner's work (workspace.MoveBranch, workspace.Push). (A worktree checked out anew still
//     sets the repository's branch to the run's record; the remote's branch moves only here.)
//   - the outcome is saved under the same check.
//
// A delivery that fails a check lost the step: it drops its result and says so in the run's events (AttemptLostEvent).

// errLost ends a transaction of a step whose attempt is no longer the task's current one under this delivery.
var errLost = errors.New("the step was taken over by another delivery")

// fence reports whether the run still has at's attempt as its current task's, run by at's delivery: errStale when the
// run moved on (aborted, the task settled), errLost when the task's attempt is another delivery's now.
//
// A store may lose writes it acknowledged: a Sentinel failover promotes a replica that had not received them (Redis
// replicates asynchronously), an embedded store's holder is killed before it saved. When the step's claim is among
// them, the task is back as the claim found it. While it stays so, nobody else runs the task: a delivery of the same
// step that asynq hands out again (its record of this one may have gone back too) waits for this one on this machine
// (steplock.go), and on another machine claims the task, which this one's next check then finds. So that is not a
// lost step: in a transaction (c), the claim is recorded again, and the step goes on; a check outside one (c nil)
// lets it pass.
func (at *attempt) fence(r *jobs.Run, c *jobs.Change) error {
	t := r.Current()
	if r.Status != jobs.RunRunning || r.Seq != at.seq || t == nil || t.ID != at.task.ID {
		return errStale
	}
	if n := len(t.Attempts); n > 0 && t.Attempts[n-1].N == at.n && ownerOf(t.Attempts[n-1]) == at.owner {
		return nil
	}
	if claimOf(t) != at.found {
		return errLost
	}
	if c == nil {
		return nil
	}
	return at.reclaim(r, t, c)
}

// claim is what a step's claim changes of its task: the attempts started, the last one's owner and the task's status.
// While they are as a delivery's claim found them, no attempt started since and none changed hands.
type claim struct {
	started int
	owner   owner
	status  jobs.TaskStatus
}

func claimOf(t *jobs.Task) claim {
	c := claim{started: t.Started, status: t.Status}
	if n := len(t.Attempts); n > 0 {
		c.owner = ownerOf(t.Attempts[n-1])
	}
	return c
}

// reclaim records again the claim of at's delivery on task t, which the store lost: the attempt it started, or the
// finished attempt it took over.
func (at *attempt) reclaim(r *jobs.Run, t *jobs.Task, c *jobs.Change) error {
	if at.rejudge {
		last := t.Attempts[len(t.Attempts)-1]
		last.Owner, last.Delivery = at.owner.id, at.owner.delivery
	} else {
		for _, a := range t.Attempts {
			a.Reserved = 0 // as the claim did: the dead attempts' holds on the team's budget went with them
		}
		r.Waiting = ""
		a := r.StartAttempt(c, t, at.owner.id, at.owner.delivery, at.started)
		if a == nil || a.N != at.n {
			return errLost
		}
		hold(r, c, a)
	}
	if at.log != nil {
		at.log.Warn("the store lost this step's claim on its task (a failover, or a store holder that died before it "+
			"saved); recorded it again", "run_id", r.ID, "task_id", t.ID, "attempt", at.n,
			"delivery", at.owner.id, "handling", at.owner.delivery)
	}
	return nil
}

// save saves fn on run runID, trying again while Redis does not answer (a restart, a failover): what it saves is work
// done that must not be done again. A fenced-off step (errStale, errLost), a run gone, or a change the domain refuses
// (jobs.IllegalMove: trying again cannot make it legal) is not tried again.
func (w *Worker) save(ctx context.Context, runID string, fn func(*jobs.Run, *jobs.Change) error) (*jobs.Run, error) {
	retry := settleRetry
	retry.OnRetry = func(n int, err error, _ time.Duration) {
		if n == 1 {
			w.log.Warn("saving what a step did; trying again until Redis answers", "run_id", runID, "err", err)
		}
	}
	var run *jobs.Run
	err := retry.Do(ctx, func(ctx context.Context) error {
		var err error
		run, err = w.cfg.Store.Update(ctx, runID, fn)
		var illegal *jobs.IllegalMove
		if errors.Is(err, errStale) || errors.Is(err, errLost) || errors.Is(err, jobs.ErrRunNotFound) || errors.As(err, &illegal) {
			return backoff.Permanent(err)
		}
		return err
	})
	return run, err
}

// keep saves what the agent said on its task before orch acts on it (Task.Pending), with its cost on the attempt, and
// the work it left in a run's worktree as a tree the next delivery can check for: should this worker die before the
// attempt is settled, the attempt is judged and settled by whoever takes the step over, not run again.
func (w *Worker) keep(ctx context.Context, at *attempt, out *outcome) error {
	said := out.said
	said.Text = safetext.Bound(said.Text, maxKept) // redacted as it entered orch (runAgent)
	said.Secrets, said.Paused, said.Tampered, said.Leaked = out.secrets, out.paused, out.tampered, out.leaked
	if at.wt != nil {
		work, err := w.cfg.Workspaces.Work(ctx, *at.wt)
		if err != nil {
			// Without it a later delivery that takes the attempt over cannot tell whether the work is there: it runs
			// the task again (takeBack).
			w.log.Warn("reading the work the agent left in the run's worktree", "run_id", at.run.ID, "err", err)
		}
		said.Work = work
	}
	_, err := w.save(ctx, at.run.ID, func(r *jobs.Run, c *jobs.Change) error {
		if err := at.fence(r, c); err != nil {
			return err
		}
		t := r.Current()
		t.Pending = &said
		recordUsage(t, t.Attempts[len(t.Attempts)-1], out)
		return nil
	})
	out.said.Work = said.Work
	if errors.Is(err, errStale) || errors.Is(err, errLost) {
		w.countDropped(ctx, at, out)
	}
	if err == nil || errors.Is(err, errStale) || errors.Is(err, errLost) || errors.Is(err, jobs.ErrRunNotFound) {
		// The task holds what the agent said, or the attempt is not this delivery's: its ending has done its work.
		w.dropEnding(at.run, at.task.ID, at.n)
	}
	return err
}

// countDropped records what an attempt this delivery ran cost when its result is dropped (the run was aborted while
// the agent worked, or another delivery took the step over): the money was spent all the same, and the run's cost and
// its team's books must say so. Only the cost is recorded, on this delivery's own attempt, and only once.
func (w *Worker) countDropped(ctx context.Context, at *attempt, out *outcome) {
	if !out.ran || out.usage.CostUSD <= 0 && out.usage.InputTokens == 0 {
		return
	}
	_, err := w.cfg.Store.Update(ctx, at.run.ID, func(r *jobs.Run, c *jobs.Change) error {
		t := r.Task(at.task.ID)
		if t == nil {
			return errStale
		}
		for _, a := range t.Attempts {
			if a.N == at.n && ownerOf(a) == at.owner && a.CostUSD == 0 && a.InputTokens == 0 {
				a.InputTokens, a.OutputTokens = out.usage.InputTokens, out.usage.OutputTokens
				a.CostUSD, a.Model, a.Duration, a.Reserved = out.usage.CostUSD, out.usage.Model, out.duration, 0
				return nil
			}
		}
		return errStale // not this delivery's attempt, or counted already
	})
	if err != nil && !errors.Is(err, errStale) {
		w.log.Warn("recording what a dropped attempt cost", "run_id", at.run.ID, "err", err)
	}
}

// intend records, under fence, that the step is about to move the run's branch to commit, and returns the commits
// earlier owners were about to put there (the branch may hold one of them: their moves may be replaced).
func (w *Worker) intend(ctx context.Context, runID string, fence func(*jobs.Run, *jobs.Change) error, commit string) ([]string, error) {
	var moving []string
	_, err := w.save(ctx, runID, func(r *jobs.Run, c *jobs.Change) error {
		if err := fence(r, c); err != nil {
			return err
		}
		if r.Git == nil {
			return errStale
		}
		moving = slices.Clone(r.Git.Moving)
		if !slices.Contains(r.Git.Moving, commit) {
			r.Git.Moving = append(r.Git.Moving, commit)
			if n := len(r.Git.Moving); n > maxMoving {
				r.Git.Moving = r.Git.Moving[n-maxMoving:]
			}
		}
		return nil
	})
	return moving, err
}

// maxKept bounds the agent output kept on the task until its attempt is settled: its head and tail, which is what the
// judgement of a finished attempt taken over reads. It is written with the run's document on every step, and must not
// make that document the size of a log.
const maxKept = 128 << 10

// maxMoving bounds Git.Moving: one entry per owner that died between its intent and its save, which the attempt cap
// bounds already.
const maxMoving = 32

// dropLost says in the log and the run's events that at's delivery lost its step and dropped its result.
func (w *Worker) dropLost(ctx context.Context, at *attempt) {
	now := ""
	if r, err := w.cfg.Store.Get(ctx, at.run.ID); err == nil {
		if t := r.Task(at.task.ID); t != nil && len(t.Attempts) > 0 {
			now = t.Attempts[len(t.Attempts)-1].Owner
		}
	}
	w.log.Warn("this delivery lost its step to another while its agent worked; its result is dropped",
		"run_id", at.run.ID, "task_id", at.task.ID, "attempt", at.n, "delivery", at.owner.id, "handling",
		at.owner.delivery, "now", now)
	ev := jobs.NewEvent(at.run.ID, at.task.ID, jobs.AttemptLostEvent{Attempt: at.n, Owner: at.owner.id, Now: now,
		Reason: "its worker lost the step to another while the agent worked; its result was dropped"})
	if err := w.cfg.Store.Append(ctx, at.run.ID, ev); err != nil {
		w.log.Warn("recording a lost step", "run_id", at.run.ID, "err", err)
	}
}

// errWorkGone ends a delivery that took over a finished attempt whose work is not in this worker's worktree: it was
// made on a machine that is gone, and the task must run again.
var errWorkGone = errors.New("the finished attempt's work is not on this worker")

// redo gives up the finished attempt at took over, whose work this worker does not have: its saved result goes, and
// the step is delivered again at once, to start the task's next attempt.
func (w *Worker) redo(ctx context.Context, at *attempt) error {
	_, err := w.save(ctx, at.run.ID, func(r *jobs.Run, c *jobs.Change) error {
		if err := at.fence(r, c); err != nil {
			return err
		}
		t := r.Current()
		var effects []string
		if t.Pending != nil {
			effects = t.Pending.Effects
		}
		t.Pending = nil
		a := t.Attempts[len(t.Attempts)-1]
		a.Status, a.Error = "lost", "its worker was lost after the agent finished, and the work with it"
		if len(effects) > 0 {
			// The attempt ran what a person let through, with effects beyond its worktree: running the task again may
			// run it again, and that is a person's to say, not a lost machine's.
			c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.AttemptLostEvent{Attempt: a.N, Owner: a.Owner,
				Reason: "it finished on a worker that was lost before its work reached the branch"}))
			escalation.Open(r, t, c, escalation.Spec{Trigger: jobs.TriggerBrain, Source: "orch",
				MaxPerTask: r.Options.Escalation.MaxPerTask,
				Question: fmt.Sprintf("Task %s finished on a worker that was lost before its work reached the branch, "+
					"after running what a person let through, with effects beyond its worktree:\n%s\nRunning the task "+
					"again may run it again. Retry to run it again anyway (words you give guide it), force it on if its "+
					"work is done, or abort.", t.ID, escalation.Bullets(effects))}, w.cfg.Store.Now())
			return nil
		}
		c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.AttemptLostEvent{Attempt: a.N, Owner: a.Owner,
			Reason: "it finished on a worker that was lost before its work reached the branch; the task runs again"}))
		return nil
	})
	return err
}
