package worker

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/orchrun/orch/jobs"
)

// One owner per step. A step can be delivered twice while its agent works: a worker dies, the rescue (rescue.go)
// enqueues the step again under its rescue id once the lease has run out, a worker takes it and starts the next
// attempt; a little later asynq's own recoverer hands the original delivery back too. Were the second delivery to
// take the task over as well, it would kill the rescued attempt's agent and start a third, and the second attempt's
// end (killed) would be settled while the third still runs.
//
// So each attempt records the delivery that runs it (Attempt.Owner: its asynq task id and nonce), and a delivery that finds the
// task running takes it over only when that delivery is dead: it holds no lease in asynq any more, its lease ran out
// because no heartbeat extends it, or the worker that claimed it no longer says it lives (alive.go). While the owner's lease lives, the step is in hands: the delivery ends without
// doing anything, and should the owner die later its lease runs out and the rescue or asynq brings the step back.

// A delivery is named by asynq's id of the task it delivers and a nonce of its own: the id is the same on every
// delivery of a task, and two deliveries of one task can run at once — a store that lost what it acknowledged hands
// the task again while the first still works (steplock.go). Under one name, each would pass the other's fences.

// deliveryOf names a new delivery of asynq task id ("" for a caller outside asynq, whose every call is a delivery of
// one task).
func deliveryOf(id string) string {
	return id + "#" + strconv.FormatUint(rand.Uint64(), 36)
}

// taskOf is the asynq task id of delivery, which names its lease and its worker's claim. An owner recorded before
// deliveries had nonces is the task id itself.
func taskOf(delivery string) string {
	id, _, _ := strings.Cut(delivery, "#")
	return id
}

// errOwned ends a delivery of a step whose attempt another live delivery runs.
var errOwned = errors.New("the step's attempt is running under another delivery")

// ownerGone reports whether the attempt of task in progress has lost the delivery that ran it, so that self, the
// delivery at hand, may take the task over. An attempt that names no owner (started before owners were recorded, or
// by a caller outside asynq) is taken over, as is one that an earlier delivery of self's own task ran: asynq delivers
// a task again only after the previous delivery ended (interrupted) or lost its lease — or after the store lost it,
// and then the previous delivery, on this machine, ended before self held the run's step lock (steplock.go), and on
// another machine loses at its fence the moment self's claim is saved.
func (w *Worker) ownerGone(ctx context.Context, task *jobs.Task, self string) (bool, error) {
	owner := ""
	if n := len(task.Attempts); n > 0 {
		owner = task.Attempts[n-1].Owner
	}
	if owner == "" || taskOf(owner) == taskOf(self) {
		return true, nil
	}
	// Leases are in asynq's time: the wall clock's, whatever clock the store keeps (as for the rescue).
	leased, err := w.cfg.Queue.Leased(ctx, taskOf(owner), time.Now())
	if err != nil || !leased {
		return !leased, err
	}
	// A lease that still runs, of a worker that no longer says it lives (alive.go): dead all the same.
	if !w.alive.steady(time.Now()) {
		return false, nil
	}
	return w.cfg.Queue.DeliveryDead(ctx, taskOf(owner))
}
