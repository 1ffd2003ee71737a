package worker

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/orchrun/orch/internal/backoff"
	"github.com/orchrun/orch/internal/flock"
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
// leaves its transaction, waits for the holder to end, and reads the run again: it finds what the holder saved (the
// step settled: nothing left to do), or that it saved nothing (it was interrupted, or its worker died: the kernel
// drops a dead process's locks) and goes on from there. A delivery that finds the attempt in another live delivery's
// hands leaves it to that one before it looks at the lock (owner.go), holding no worker slot while it runs.
// Deliveries on other machines are kept apart by the fences alone (fence.go), which tell every handling of a step from
// the others (Attempt.Delivery). A run that keeps no endings (a run in a plain directory on a Redis server's
// deployment, which writes nothing to the state directory) has no lock either: its deliveries have their fences alone.

// stepLockWait is how often a delivery that waits for the run's step lock tries it again; stepLockSaid is how long it
// waits before it says so in the log (the next step of a run, delivered as the step before it ends, waits a few
// milliseconds for it: nothing to say).
var (
	stepLockWait = backoff.Policy{Initial: 5 * time.Millisecond, Factor: 2, Max: 250 * time.Millisecond}
	stepLockSaid = time.Second
)

// errHeld ends a step's first transaction, changing nothing, when another delivery holds the run's step lock: the
// delivery waits for it outside the transaction (stepLock.wait), then reads the run again.
var errHeld = errors.New("another delivery of the step holds the run's step lock on this machine")

// stepLock is a delivery's hold on its run's step lock.
type stepLock struct {
	f   *os.File
	dir string // the lock's directory, once looked for
}

// try takes the step lock of run r for the delivery without waiting: nil when it holds it now (or there is no lock to
// hold: a run that keeps no endings), errHeld when another delivery holds it.
func (l *stepLock) try(w *Worker, r *jobs.Run, seq int64) error {
	if l.f != nil {
		return nil
	}
	if l.dir = w.endingsDir(r); l.dir == "" {
		return nil
	}
	if l.take(w, r.ID, seq) {
		return errHeld
	}
	return nil
}

// wait takes the step lock try found held, waiting for its holder to end; ctx's error when ctx ends first.
func (l *stepLock) wait(ctx context.Context, w *Worker, runID string, seq int64) error {
	if w.testStepWaits != nil {
		w.testStepWaits()
	}
	began := time.Now()
	said := false
	for n := 1; ; n++ {
		if !l.take(w, runID, seq) {
			return nil
		}
		if !said && time.Since(began) >= stepLockSaid {
			said = true
			w.log.Info("another delivery of the run's step works on this machine; waiting for it to end", "run_id", runID,
				"seq", seq)
		}
		if err := backoff.Sleep(ctx, stepLockWait.Delay(n)); err != nil {
			return err
		}
	}
}

// take tries the lock once, and reports whether another has it. The directory is the one its path names when the lock is had
// (a run that ended removes it, and a delivery that locked the one removed would hold nothing: it tries again, on
// the new one). A lock that cannot be had for another reason (a full disk) is gone without, said in the log: only a
// store that lost writes makes it matter.
func (l *stepLock) take(w *Worker, runID string, seq int64) (held bool) {
	var why error
	for range 3 {
		if why = os.MkdirAll(l.dir, 0o700); why != nil {
			continue // the directory of endings removed under it, as the last run's endings went
		}
		f, err := os.Open(l.dir)
		if err != nil {
			why = err
			continue
		}
		if w.testLockOpened != nil {
			w.testLockOpened()
		}
		ok, err := flock.TryLock(f)
		if err != nil || !ok {
			f.Close()
			if err != nil {
				why = err
				break
			}
			return true
		}
		if same(f, l.dir) {
			l.f = f
			return false
		}
		flock.Unlock(f)
		f.Close()
		why = errors.New("its directory was removed as it was locked")
	}
	w.log.Warn("the run's step goes on without its lock on this machine", "run_id", runID, "seq", seq, "err", why)
	return false
}

// same reports whether f is the file path names now.
func same(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// release lets the lock go, if held.
func (l *stepLock) release() {
	if l.f != nil {
		flock.Unlock(l.f)
		l.f.Close()
		l.f = nil
	}
}
