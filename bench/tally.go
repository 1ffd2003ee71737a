package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/orchrun/orch/jobs"
)

// tally counts the events of the changes this process commits (the worker's and the bot's, through
// store.Store.Observe): how a measurement knows, without polling Redis, that runs parked, resumed or ended. It also
// hands the moment an event was committed to whoever waits for it.
type tally struct {
	mu     sync.Mutex
	counts map[string]int
	last   map[string]time.Time // when the latest event of each type was committed
	hooks  []func(e jobs.Event, at time.Time)
	change chan struct{} // signalled after every change
}

func newTally() *tally {
	return &tally{counts: map[string]int{}, last: map[string]time.Time{}, change: make(chan struct{}, 1)}
}

// observe is the store's observer; it runs right after each commit, so it stays short.
func (t *tally) observe(events []jobs.Event) {
	at := time.Now()
	t.mu.Lock()
	for _, e := range events {
		t.counts[e.Type()]++
		t.last[e.Type()] = at
	}
	hooks := t.hooks
	t.mu.Unlock()
	for _, e := range events {
		for _, h := range hooks {
			h(e, at)
		}
	}
	select {
	case t.change <- struct{}{}:
	default:
	}
}

// hook has fn called with every event and the moment its change was committed.
func (t *tally) hook(fn func(e jobs.Event, at time.Time)) {
	t.mu.Lock()
	t.hooks = append(t.hooks, fn)
	t.mu.Unlock()
}

// count is how many events of a type were committed.
func (t *tally) count(typ string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counts[typ]
}

// lastAt is when the latest event of a type was committed.
func (t *tally) lastAt(typ string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last[typ]
}

// waitCount waits until n events of type typ were committed. Events of a type in fail end the wait with an error:
// the runs did not go the way the measurement needs. progress, if not nil, is called every ten seconds.
func (t *tally) waitCount(ctx context.Context, typ string, n int, timeout time.Duration, fail []string,
	progress func(done int)) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		if got := t.count(typ); got >= n {
			return nil
		}
		for _, f := range fail {
			if c := t.count(f); c > 0 {
				return fmt.Errorf("%d %s events while waiting for %s", c, f, typ)
			}
		}
		select {
		case <-t.change:
		case <-tick.C:
			if progress != nil {
				progress(t.count(typ))
			}
		case <-deadline.C:
			return fmt.Errorf("%d of %d %s events after %s", t.count(typ), n, typ, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
