package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/orchrun/orch/internal/backoff"
)

// One delivery of a run's step works on this machine at a time. asynq hands a task to one worker at a time, but a
// store that lost what it acknowledged hands it again while the first delivery still works: an embedded store whose
// holder was killed before it saved comes back from its last save, a Sentinel failover promotes a replica that had
// not received the last writes (Redis replicates asynchronously). The step is back in the queue as it was before it
// was delivered, the task as it was before the claim, and the second delivery finds nothing that says another works
// on it. Run side by side, the two would run the agent twice in one worktree, one of them resetting the worktree and
// moving the run's branch under the other.
//
// So every delivery holds the run's step lock on this machine, an advisory lock (flock(2)) on the run's directory
// beside its endings, from before it claims the task until it ends, and a second delivery waits for the first to
// end. It then finds what the first saved (the step settled: nothing left to do) or that it saved nothing (it was
// interrupted, or its worker died: the kernel drops a dead process's locks), and goes on from there. Deliveries on
// other machines are kept apart by the fences alone (fence.go): each handling of a step has an owner of its own.

// stepLockWait is how often a delivery that waits for the run's step lock tries it again.
var stepLockWait = backoff.Policy{Initial: 5 * time.Millisecond, Factor: 2, Max: 250 * time.Millisecond}

// stepLockDir is the directory whose lock the deliveries of run runID's steps hold on this machine: the run's
// directory of endings where runs with a worktree keep theirs, or where plain runs do. "" when the worker has neither.
func (w *Worker) stepLockDir(runID string) string {
	if runID != filepath.Base(runID) || strings.HasPrefix(runID, ".") || runID == "" {
		return ""
	}
	root := w.endingsRoot(true)
	if root == "" {
		root = w.cfg.Endings
	}
	if root == "" {
		return ""
	}
	return filepath.Join(root, runID)
}

// holdStep takes run runID's step lock on this machine, waiting for a delivery that holds it to end, and returns
// what lets it go. Without a place for it (no worktrees, no endings), it holds nothing.
func (w *Worker) holdStep(ctx context.Context, runID string, seq int64) (func(), error) {
	dir := w.stepLockDir(runID)
	if dir == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("making the directory of run %s's step lock: %w", runID, err)
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("opening run %s's step lock: %w", runID, err)
	}
	for n := 1; ; n++ {
		ok, err := tryLockStep(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking run %s's step on this machine: %w", runID, err)
		}
		if ok {
			break
		}
		if n == 1 {
			if w.testStepWaits != nil {
				w.testStepWaits()
			}
			w.log.Info("another delivery of the run's step works on this machine; waiting for it to end", "run_id", runID,
				"seq", seq)
		}
		if err := backoff.Sleep(ctx, stepLockWait.Delay(n)); err != nil {
			f.Close()
			return nil, err
		}
	}
	return func() {
		unlockStep(f)
		f.Close()
	}, nil
}
