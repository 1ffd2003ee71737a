package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// A step's lease in asynq lasts 30 s, and no dead worker's step can be rescued sooner by the lease alone. So every
// worker also says it lives, once a second, in a key of its own that expires after AliveTTL, and records which worker
// runs each step delivery it takes. A delivery whose lease still runs but whose worker's key expired belongs to a
// worker that died (SIGKILL, OOM, a lost machine): its step is rescued within AliveTTL and a rescue pass, not 30 s.
//
// A worker cut off from Redis stops saying it lives as well, and its step is rescued as if it had died: the fence of
// every step's save (worker/fence.go) keeps what it does when it comes back from counting. And a worker that was
// itself cut off (a failover, a restart of Redis) judges no other until it has said it lives for AliveTTL again, so
// that everyone had the time to say so too.

// AliveTTL is how long a worker's word that it lives holds; AliveEvery how often it says it.
const (
	AliveTTL   = 6 * time.Second
	AliveEvery = time.Second
)

func aliveKey(worker string) string { return "orch:worker:{" + worker + "}:alive" }

// deliveriesKey is a hash: the asynq task id of each step delivery being worked on → the worker working on it.
const deliveriesKey = "orch:deliveries"

// Beat says that worker lives, for AliveTTL.
func (q *Queue) Beat(ctx context.Context, worker string) error {
	return q.rdb.Set(ctx, aliveKey(worker), time.Now().UTC().Format(time.RFC3339Nano), AliveTTL).Err()
}

// Gone says that worker stopped: its deliveries were handed back to the queue.
func (q *Queue) Gone(ctx context.Context, worker string) error {
	return q.rdb.Del(ctx, aliveKey(worker)).Err()
}

// Claim records that worker works on delivery (a step task's id).
func (q *Queue) Claim(ctx context.Context, delivery, worker string) error {
	return q.rdb.HSet(ctx, deliveriesKey, delivery, worker).Err()
}

// Unclaim forgets that worker took delivery: its handling of the delivery ended. A claim another worker made since
// (asynq handing the same delivery to it after this one's lease ran out) is theirs and stays: the worker that holds
// the delivery now must stay known, or its death would go unseen until its lease ends.
func (q *Queue) Unclaim(ctx context.Context, delivery, worker string) error {
	return unclaim.Run(ctx, q.rdb, []string{deliveriesKey}, delivery, worker).Err()
}

// unclaim deletes field ARGV[1] of hash KEYS[1] if it holds ARGV[2]: a compare and delete.
var unclaim = redis.NewScript(`if redis.call("HGET", KEYS[1], ARGV[1]) == ARGV[2] then
	return redis.call("HDEL", KEYS[1], ARGV[1])
end
return 0`)

// DeadDeliveries returns the step deliveries that hold a lease that has not ended by t but whose worker no longer says
// it lives. Claims of deliveries that hold no lease any more (their worker died before it forgot them) are forgotten.
func (q *Queue) DeadDeliveries(ctx context.Context, t time.Time) ([]string, error) {
	leased, err := q.leasedSteps(ctx, fmt.Sprint(t.Unix()+1), "+inf")
	if err != nil {
		return nil, err
	}
	claims, err := q.rdb.HGetAll(ctx, deliveriesKey).Result()
	if err != nil {
		return nil, fmt.Errorf("reading the workers of step deliveries: %w", err)
	}
	live := map[string]bool{}
	for _, id := range leased {
		live[id] = true
	}
	var stale []string
	for id := range claims {
		if !live[id] {
			stale = append(stale, id)
		}
	}
	if len(stale) > 0 {
		q.rdb.HDel(ctx, deliveriesKey, stale...) // best effort: the next pass tries again
	}
	var dead []string
	known := map[string]bool{}
	for _, id := range leased {
		worker, ok := claims[id]
		if !ok {
			continue // taken by a worker that claims nothing (an older orch): its lease alone tells
		}
		alive, seen := known[worker]
		if !seen {
			if alive, err = q.alive(ctx, worker); err != nil {
				return nil, err
			}
			known[worker] = alive
		}
		if !alive {
			dead = append(dead, id)
		}
	}
	return dead, nil
}

// DeliveryDead reports whether the worker that claimed delivery no longer says it lives; false when no worker claimed
// it.
func (q *Queue) DeliveryDead(ctx context.Context, delivery string) (bool, error) {
	worker, err := q.rdb.HGet(ctx, deliveriesKey, delivery).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the worker of %s: %w", delivery, err)
	}
	alive, err := q.alive(ctx, worker)
	return !alive, err
}

func (q *Queue) alive(ctx context.Context, worker string) (bool, error) {
	n, err := q.rdb.Exists(ctx, aliveKey(worker)).Result()
	if err != nil {
		return false, fmt.Errorf("asking whether worker %s lives: %w", worker, err)
	}
	return n == 1, nil
}
