package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// leaseKey is asynq's sorted set of the tasks of a queue that a server is working on: member the task id, score the
// Unix time (in whole seconds) its lease expires. This is the private layout of asynq v0.26.0, the version in go.mod:
// internal/base/base.go, LeaseKey ("asynq:{<qname>}:lease"); internal/rdb/rdb.go, Dequeue (the lease is taken with
// the task: now + LeaseDuration, 30 s) and ExtendLease (called by the server's heartbeater, heartbeat.go, every 5 s:
// now + 30 s again).
func leaseKey(queue string) string { return "asynq:{" + queue + "}:lease" }

// ExpiredSteps returns the ids of the step tasks whose lease ended by t: tasks a worker took and then stopped extending
// the lease of, because it died (SIGKILL, OOM, a lost machine). asynq keeps whole seconds, so a lease that ends
// within t's second counts, as it does for asynq.
//
// asynq has no API for this; it reads its own leases in its recoverer, which takes a task back only once the lease has
// been expired for 30 s, on a pass once a minute (recoverer.go, recoverLeaseExpiredTasks; server.go, its interval):
// one to two minutes after the worker died. Reading the lease set directly lets orch rescue a dead worker's step about
// 30 s after the crash, the lease's own length. It depends on asynq v0.26's layout (leaseKey);
// TestExpiredStepsSeesAsynqLeases runs a real asynq server and fails if an upgrade moves the set or changes its scores.
// It reads the leases of every step queue (StepQueues): the default one and every team's.
func (q *Queue) ExpiredSteps(ctx context.Context, t time.Time) ([]string, error) {
	return q.leasedSteps(ctx, "-inf", strconv.FormatInt(t.Unix(), 10))
}

// leasedSteps returns the ids of the step tasks, on every step queue, whose lease ends between lo and hi (Unix
// seconds, or ±inf).
func (q *Queue) leasedSteps(ctx context.Context, lo, hi string) ([]string, error) {
	names, err := q.StepQueues()
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, name := range names {
		some, err := q.rdb.ZRangeByScore(ctx, leaseKey(name), &redis.ZRangeBy{Min: lo, Max: hi}).Result()
		if err != nil {
			return nil, fmt.Errorf("reading asynq's leases of steps on %s: %w", name, err)
		}
		ids = append(ids, some...)
	}
	return ids, nil
}

// Leased reports whether the step task id holds a lease that has not ended by t: a worker is on it, and its
// heartbeat keeps extending the lease. A task that is not being worked on (pending, retrying, done, gone) holds none.
// The boundary is ExpiredSteps': a lease that ends within t's second has ended, so that a step ExpiredSteps found
// orphaned is never found leased at a later t unless its worker extended the lease after all.
// The task may be on any step queue (its run's team's, or the default one when the team was not configured then).
func (q *Queue) Leased(ctx context.Context, id string, t time.Time) (bool, error) {
	names, err := q.StepQueues()
	if err != nil {
		return false, err
	}
	for _, name := range names {
		end, err := q.rdb.ZScore(ctx, leaseKey(name), id).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("reading asynq's lease of %s: %w", id, err)
		}
		if int64(end) > t.Unix() {
			return true, nil
		}
	}
	return false, nil
}
