package worker

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/orchrun/orch/jobs"
)

// One owner per step. A step can be delivered twice while its agent works: a worker dies, the rescue (rescue.go)
// enqueues the step again under its rescue id once the lease has run out, a worker takes it and starts the next
// attempt; a little later asynq's own recoverer hands the original delivery back too. Were the second delivery to
// take the task over as well, it would kill the rescued attempt's agent and start a third, and the second attempt's
// end (killed) would be settled while the third still runs.
//
// So each attempt records the delivery that runs it (Attempt.Owner, its asynq task id), and a delivery that finds the
// task running takes it over only when that delivery is dead: it holds no lease in asynq any more, its lease ran out
// because no heartbeat extends it, or the worker that claimed it no longer says it lives (alive.go). While the owner's lease lives, the step is in hands: the delivery ends without
// doing anything, and should the owner die later its lease runs out and the rescue or asynq brings the step back.

// owner is the delivery that runs an attempt: asynq's id of the step task (Attempt.Owner) and its own handling of
// it (Attempt.Delivery).
type owner struct{ id, delivery string }

func ownerOf(a *jobs.Attempt) owner { return owner{a.Owner, a.Delivery} }

// newDelivery names one handling of a step task (Attempt.Delivery): asynq's id is the same on every delivery of a
// task, and two can run at once when a store lost what it acknowledged (steplock.go). Under the id alone, each would
// pass the other's fences.
func newDelivery() string { return strconv.FormatUint(rand.Uint64(), 36) }

// errOwned ends a delivery of a step whose attempt another live delivery runs.
var errOwned = errors.New("the step's attempt is running under another delivery")

// ownerGone reports whether the attempt of task in progress has lost the delivery that ran it, so that self, the
// delivery at hand, may take the task over. An attempt that names no owner (started before owners were recorded, or
// by a caller outside asynq) is taken over, as is one that self itself ran: asynq delivers a task again only after
// the previous delivery ended (interrupted) or lost its lease.
func (w *Worker) ownerGone(ctx context.Context, task *jobs.Task, self string) (bool, error) {
	owner := ""
	if n := len(task.Attempts); n > 0 {
		owner = task.Attempts[n-1].Owner
	}
	if owner == "" || owner == self {
		return true, nil
	}
	// Leases are in asynq's time: the wall clock's, whatever clock the store keeps (as for the rescue).
	leased, err := w.cfg.Queue.Leased(ctx, owner, time.Now())
	if err != nil || !leased {
		return !leased, err
	}
	// A lease that still runs, of a worker that no longer says it lives (alive.go): dead all the same.
	if !w.alive.steady(time.Now()) {
		return false, nil
	}
	return w.cfg.Queue.DeliveryDead(ctx, owner)
}
