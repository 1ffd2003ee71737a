package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orchrun/orch/jobs/queue"
)

// Every worker says it lives once a second, and names itself on each step delivery it works on, so that a step whose
// worker died is rescued within seconds (queue.AliveTTL and a rescue pass), not when its 30 s lease in asynq runs out
// (queue/alive.go). Only a worker whose own word has held for queue.AliveTTL judges others dead: after a failover or a
// restart of Redis, when nobody could say it lives for a while, everyone has said so again before anyone is judged.

// aliveness is when this worker's word that it lives started to hold without a break (zero while it does not), and
// when it was last said.
type aliveness struct {
	since, last atomic.Int64
}

// steady reports whether the worker has said it lives, without a break, for queue.AliveTTL by now.
func (a *aliveness) steady(now time.Time) bool {
	s := a.since.Load()
	return s != 0 && now.Sub(time.Unix(0, s)) >= queue.AliveTTL
}

// cutOff is how long a worker that cannot say it lives goes on working: less than queue.AliveTTL, after which the
// others may rescue its steps, by two beats. Its agents are stopped then, before a rescued attempt starts elsewhere:
// work that would be done twice, and whose result its fence would drop (fence.go), is not done at all.
const cutOff = queue.AliveTTL - 2*queue.AliveEvery

// errCutOff stops the agents of a worker cut off from Redis: their step is left to the queue, which delivers it again
// (or another worker rescues it).
// It is an interruption (context.Canceled), not the step's failure.
var errCutOff = fmt.Errorf("this worker could not reach Redis for too long, and the others may take its steps over: %w",
	context.Canceled)

// errShutdown stops the agents of a worker shutting down: their steps go back to the queue.
// It is an interruption (context.Canceled), not the step's failure.
var errShutdown = fmt.Errorf("this worker is shutting down: %w", context.Canceled)

// steps are the agent processes this worker runs, each with what stops it.
type steps struct {
	mu   sync.Mutex
	next int
	stop map[int]context.CancelCauseFunc
}

// add registers a step's stop; the returned func forgets it.
func (s *steps) add(stop context.CancelCauseFunc) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop == nil {
		s.stop = map[int]context.CancelCauseFunc{}
	}
	s.next++
	n := s.next
	s.stop[n] = stop
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.stop, n)
	}
}

// stopAll stops every step running, and returns how many there were.
func (s *steps) stopAll(cause error) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, stop := range s.stop {
		stop(cause)
	}
	return len(s.stop)
}

func workerID(host string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// aliveLoop says the worker lives every queue.AliveEvery until its handlers end (a shutdown's grace over: a step still
// settling is its own, and no other worker may take it as a dead one's), and stops the worker's agents once it has not
// been able to say so for cutOff.
func (w *Worker) aliveLoop() {
	t := time.NewTicker(queue.AliveEvery)
	defer t.Stop()
	w.alive.last.Store(time.Now().UnixNano())
	stopped := false
	for {
		ctx, cancel := context.WithTimeout(w.handlers, queue.AliveEvery)
		err := w.cfg.Queue.Beat(ctx, w.id)
		cancel()
		now := time.Now()
		switch {
		case err != nil:
			w.alive.since.Store(0)
			if !stopped && now.Sub(time.Unix(0, w.alive.last.Load())) >= cutOff && w.base.Err() == nil {
				stopped = true
				if n := w.running.stopAll(errCutOff); n > 0 {
					w.log.Warn("cut off from Redis: stopped this worker's agents before other workers take their steps over",
						"steps", n, "err", err)
				}
			}
		default:
			stopped = false
			w.alive.last.Store(now.UnixNano())
			if w.alive.since.Load() == 0 {
				w.alive.since.Store(now.UnixNano())
			}
		}
		select {
		case <-w.handlers.Done():
			return
		case <-t.C:
		}
	}
}

// claim names this worker on the step delivery self for as long as it works on it; the returned func forgets it.
func (w *Worker) claim(ctx context.Context, self string) func() {
	if self == "" {
		return func() {}
	}
	if err := w.cfg.Queue.Claim(ctx, self, w.id); err != nil {
		w.log.Warn("naming this worker on a step delivery; should it die, the step waits for its lease", "delivery", self, "err", err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = w.cfg.Queue.Unclaim(ctx, self, w.id)
	}
}

// agentContext is the context an agent process runs under: it stops when the worker shuts down (Shutdown) or is cut
// off from Redis (aliveLoop). Only the agent: an attempt whose agent has finished goes on to settle, within a
// shutdown's grace, and keeps trying to save its result, which is what keeps it from being done again once Redis
// answers (a failover), and which its fence drops should the step have been taken over meanwhile (a partition).
func (w *Worker) agentContext(ctx context.Context) (context.Context, func()) {
	ctx, stop := context.WithCancelCause(ctx)
	forget := w.running.add(stop)
	if w.base.Err() != nil {
		stop(errShutdown) // Shutdown began before the agent was known to it
	}
	return ctx, func() {
		forget()
		stop(nil)
	}
}
