package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/orchrun/orch/internal/backoff"
	"github.com/orchrun/orch/jobs"
)

// One delivery of a run's step works on this machine at a time. asynq hands a task to one worker at a time, but a
// store that lost what it acknowledged hands it again while the first delivery still works: an embedded store whose
// holder was killed before it saved comes back from its last save, a failover promotes a replica that had not
// received the last writes. The step is back in the queue as it was before it was delivered, the task as it was
// before the claim, and the second delivery finds nothing in the store that says another works on it. Run side by
// side, the two would run the agent twice in one worktree, one of them resetting the worktree and moving the run's
// branch under the other.
//
// So a delivery that is about to start or take over the task's attempt holds the run's step lock on this machine, an
// advisory lock (flock(2)) on the run's directory of endings (ended.go), until it ends. A delivery that finds it held
// waits for the holder to end and reads the run again: it finds what the holder saved (the step settled: nothing left
// to do), or that it saved nothing (it was interrupted, or its worker died: the kernel drops a dead process's locks)
// and goes on from there. A delivery that finds the attempt in another live delivery's hands leaves it to that one
// before it looks at the lock (owner.go), holding no worker slot while it runs. Deliveries on other machines are kept
// apart by the fences alone (fence.go), each handling of a step an owner of its own. A run that keeps no endings (a
// run in a plain directory on a Redis server's deployment, which writes nothing to the state directory) has no lock
// either: its deliveries have their fences alone.

// stepLockWait is how often a delivery that waits for the run's step lock tries it again.
var stepLockWait = backoff.Policy{Initial: 5 * time.Millisecond, Factor: 2, Max: 250 * time.Millisecond}

// errWaited ends a step's first transaction, changing nothing, once the delivery waited for the run's step lock: what
// the run was then may be what the holder changed since, so it is read again.
var errWaited = errors.New("waited for another delivery of the step on this machine")

// stepLock is a delivery's hold on its run's step lock.
type stepLock struct {
	f *os.File
}

// take holds the step lock of run r for the delivery, once: nil when it holds it now (or there is no lock to hold),
// errWaited when it had to wait for it, ctx's error when ctx ended first. A lock that cannot be had for another reason
// (a full disk) is gone without, said in the log: only a store that lost writes makes it matter.
func (l *stepLock) take(ctx context.Context, w *Worker, r *jobs.Run, seq int64) error {
	if l.f != nil {
		return nil
	}
	dir := w.endingsDir(r)
	if dir == "" {
		return nil
	}
	unlocked := func(err error) error {
		w.log.Warn("the run's step goes on without its lock on this machine", "run_id", r.ID, "seq", seq, "err", err)
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return unlocked(fmt.Errorf("making the directory of its lock: %w", err))
	}
	f, err := os.Open(dir)
	if err != nil {
		return unlocked(fmt.Errorf("opening its lock: %w", err))
	}
	for n := 1; ; n++ {
		ok, err := tryLockStep(f)
		if err != nil {
			f.Close()
			return unlocked(fmt.Errorf("locking: %w", err))
		}
		if ok {
			l.f = f
			if n > 1 {
				return errWaited
			}
			return nil
		}
		if n == 1 {
			if w.testStepWaits != nil {
				w.testStepWaits()
			}
			w.log.Info("another delivery of the run's step works on this machine; waiting for it to end", "run_id", r.ID,
				"seq", seq)
		}
		if err := backoff.Sleep(ctx, stepLockWait.Delay(n)); err != nil {
			f.Close()
			return err
		}
	}
}

// release lets the lock go, if held.
func (l *stepLock) release() {
	if l.f != nil {
		unlockStep(l.f)
		l.f.Close()
		l.f = nil
	}
}
