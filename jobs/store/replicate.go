package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis replicates asynchronously: a change the primary acknowledged and a failover promoted a replica before it
// reached is lost, though orch told a person it was saved ("Answered", "parked"). With a replicated Redis (a primary
// that Sentinel elects), every change to a run waits, on the connection that made it, until a replica has it
// (Redis's WAIT), before the store returns: a failover then loses no change orch acknowledged, short of losing the
// primary and its replica at once.
//
// A primary whose replicas are all away would make every change wait the whole timeout: after a change that no replica
// took in time the store says so once and stops waiting for a while, and the changes made then are the primary's
// alone (a failover in that time loses them, as it would without orch waiting at all).

// replication is how a store waits for its changes to reach a replica.
type replication struct {
	replicas int           // how many replicas must have a change; 0: none is waited for
	timeout  time.Duration // how long a change waits for them

	mu     sync.Mutex
	until  time.Time // no waiting before this: the replicas did not answer in time lately
	warned bool
}

// Default replication of a Redis that Sentinel manages: one replica, a change waits at most half a second, and after a
// change that no replica took the store stops waiting for two seconds.
const (
	waitReplicas = 1
	waitTimeout  = 500 * time.Millisecond
	waitPause    = 2 * time.Second
)

// WaitForReplicas has every change to a run return only once n replicas have it, or timeout passed.
func (s *Store) WaitForReplicas(n int, timeout time.Duration) {
	s.repl = &replication{replicas: n, timeout: timeout}
}

// ErrNotReplicated says a change was made on a primary that stopped being one before a replica confirmed it: a failover
// under way. The change may be lost with that primary; the caller tries again, on the new one.
var ErrNotReplicated = errors.New("the change reached no replica before Redis changed hands: try again")

// replicate waits until the changes made on c, a transaction's connection, reached the replicas. A primary that lost
// its replicas (down, resyncing) has its changes acknowledged all the same, said once in the log; one that is not the
// primary any more, or a connection lost while waiting, is ErrNotReplicated.
func (s *Store) replicate(ctx context.Context, c *redis.Tx, runID string) error {
	r := s.repl
	if r == nil || r.replicas <= 0 {
		return nil
	}
	r.mu.Lock()
	skip := time.Now().Before(r.until)
	r.mu.Unlock()
	if skip {
		return nil
	}
	got, err := c.Wait(ctx, r.replicas, r.timeout).Result()
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrNotReplicated, err)
	}
	if got >= int64(r.replicas) {
		r.mu.Lock()
		if r.warned {
			r.warned = false
			s.log.Info("changes reach a replica of Redis again before orch acknowledges them")
		}
		r.mu.Unlock()
		return nil
	}
	// No replica in time: is this still the primary, or is a failover taking it away?
	if role, err := c.Do(ctx, "ROLE").Slice(); err != nil || len(role) == 0 || role[0] != "master" {
		return fmt.Errorf("%w (role %v, %v)", ErrNotReplicated, role, err)
	}
	r.mu.Lock()
	r.until = time.Now().Add(waitPause)
	first := !r.warned
	r.warned = true
	r.mu.Unlock()
	if first {
		s.log.Warn("a change reached no replica of Redis in time: until one answers again, a failover may lose the latest changes",
			"run_id", runID, "replicas", got, "want", r.replicas, "timeout", r.timeout)
	}
	return nil
}
