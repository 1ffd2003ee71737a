package worker

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// A worker that dies mid-step (SIGKILL, OOM, a lost machine) leaves its step active in asynq under a lease nobody
// extends. asynq's recoverer takes the step back only when the lease has been expired for 30 s and its own
// once-a-minute pass comes round: one to two minutes after the crash. Every orch worker looks every two seconds for
// steps whose worker no longer says it lives (alive.go) or whose lease expired, and enqueues the step again under a
// rescue id, so the run goes on within seconds of its worker's death. The rescue and asynq's later retry of the
// original are harmless to each other: whichever comes second finds the step done (the step's sequence check) or its
// attempt owned by the first, which lives (owner.go). The leases are asynq's own, read through queue.ExpiredSteps, on
// every step queue: the default one and each team's. A rescue goes to the queue of the run's team.

// rescueEvery is how often a worker looks for orphaned steps.
const rescueEvery = 2 * time.Second

func (w *Worker) rescueLoop() {
	t := time.NewTicker(rescueEvery)
	defer t.Stop()
	sweep := time.Now() // the first tick sweeps too: a worker starting is when a crash's leftovers are found
	for {
		select {
		case <-w.base.Done():
			return
		case <-t.C:
			if time.Since(sweep) >= 0 {
				sweep = time.Now().Add(sweepEvery)
				if n, err := w.SweepWorktrees(w.base); err != nil && w.base.Err() == nil {
					w.log.Warn("removing the worktrees of runs that ended", "err", err)
				} else if n > 0 {
					w.log.Info("removed the worktrees of runs that ended", "worktrees", n)
				}
				if n, err := w.SweepQueue(w.base); err != nil && w.base.Err() == nil {
					w.log.Warn("removing the queued tasks of runs that ended", "err", err)
				} else if n > 0 {
					w.log.Info("removed the queued tasks of runs that ended", "tasks", n)
				}
			}
			if n, err := w.RescueOrphans(w.base); err != nil && w.base.Err() == nil {
				w.log.Warn("looking for steps of dead workers", "err", err)
			} else if n > 0 {
				w.log.Info("rescued steps of dead workers", "steps", n)
			}
			// The runs that have waited a while are kept compact (jobs/store/compact.go): the workers park them, so
			// wherever runs park, a worker is there to do it.
			if n, err := w.cfg.Store.CompactResting(w.base, store.RestingQuiet); err != nil && w.base.Err() == nil {
				w.log.Warn("compacting the runs that wait", "err", err)
			} else if n > 0 {
				w.log.Debug("compacted the runs that wait", "runs", n)
			}
		}
	}
}

// RescueOrphans enqueues again the steps whose worker died, and returns how many it enqueued now (those an earlier
// pass rescued are not counted again).
func (w *Worker) RescueOrphans(ctx context.Context) (int, error) {
	// Leases are in asynq's time: the wall clock's, whatever clock the store keeps.
	now := time.Now()
	q := w.stepQueue() // the leases of every step queue, the teams' too
	ids, err := q.ExpiredSteps(ctx, now)
	if err != nil {
		return 0, err
	}
	if w.alive.steady(now) {
		dead, err := q.DeadDeliveries(ctx, now)
		if err != nil {
			return 0, err
		}
		ids = append(ids, dead...)
	}
	n := 0
	for _, id := range ids {
		runID, seq, ok := parseStepID(id)
		if !ok {
			continue
		}
		run, err := w.cfg.Store.Get(ctx, runID)
		if err != nil || run.Status != jobs.RunRunning || run.Seq != seq {
			continue // the run moved on, or ended: asynq's recoverer will find the step stale
		}
		enqueued, err := q.Rescue(ctx, id, run.Team(), runID, seq, run.AgentTimeout(run.Current()))
		if err != nil {
			return n, err
		}
		if enqueued {
			n++ // a dead delivery is found on every pass until asynq recovers it: it is rescued once
		}
	}
	return n, nil
}

// parseStepID reads orch's step task ids: "step:RUN:SEQ", with a suffix for a rescue (":rescue"), or for a step that
// looks again later (":later-…").
func parseStepID(id string) (runID string, seq int64, ok bool) {
	rest, found := strings.CutPrefix(id, "step:")
	if !found {
		return "", 0, false
	}
	runID, s, found := strings.Cut(rest, ":")
	if !found || runID == "" {
		return "", 0, false
	}
	s, _, _ = strings.Cut(s, ":")
	seq, err := strconv.ParseInt(s, 10, 64)
	return runID, seq, err == nil
}

// SweepQueue deletes the queued tasks of runs that are over or unknown (queue.Sweep): a step interrupted as its run
// ended (a worker shut down right after), a timeout of a question answered long ago. It returns how many it deleted.
func (w *Worker) SweepQueue(ctx context.Context) (int, error) {
	return w.cfg.Queue.Sweep(ctx, func(ctx context.Context, id string) (bool, error) {
		r, err := w.cfg.Store.Get(ctx, id)
		if errors.Is(err, jobs.ErrRunNotFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return r.Status.Terminal(), nil
	})
}
