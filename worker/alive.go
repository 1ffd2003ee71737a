package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/orchrun/orch/jobs/queue"
)

// Every worker says it lives once a second, and names itself on each step delivery it works on, so that a step whose
// worker died is rescued within seconds (queue.AliveTTL and a rescue pass), not when its 30 s lease in asynq runs out
// (queue/alive.go). Only a worker whose own word has held for queue.AliveTTL judges others dead: after a failover or a
// restart of Redis, when nobody could say it lives for a while, everyone has said so again before anyone is judged.

// aliveness is when this worker's word that it lives started to hold without a break; zero while it does not.
type aliveness struct{ since atomic.Int64 }

// steady reports whether the worker has said it lives, without a break, for queue.AliveTTL by now.
func (a *aliveness) steady(now time.Time) bool {
	s := a.since.Load()
	return s != 0 && now.Sub(time.Unix(0, s)) >= queue.AliveTTL
}

func workerID(host string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// aliveLoop says the worker lives every queue.AliveEvery until it shuts down.
func (w *Worker) aliveLoop() {
	t := time.NewTicker(queue.AliveEvery)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(w.base, queue.AliveEvery)
		err := w.cfg.Queue.Beat(ctx, w.id)
		cancel()
		switch {
		case err != nil:
			w.alive.since.Store(0)
		case w.alive.since.Load() == 0:
			w.alive.since.Store(time.Now().UnixNano())
		}
		select {
		case <-w.base.Done():
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
		_ = w.cfg.Queue.Unclaim(ctx, self)
	}
}
