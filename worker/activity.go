package worker

import (
	"context"
	"sync"
	"time"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// The agent's tool calls as it makes them, for the terminal and Slack: gathered by a flusher that writes one
// agent_activity event a second at most, off the goroutine that reads the agent's output.

const (
	activityEvery    = time.Second
	maxActivityCalls = 20 // listed per event; the rest are counted
)

type activity struct {
	w      *Worker
	runID  string
	taskID string

	mu    sync.Mutex
	calls []string
	more  int
	wake  chan struct{}
	done  chan struct{}
	ended chan struct{}
}

// watchTools starts gathering the calls of one agent run; the returned stop flushes what is left and waits.
func (w *Worker) watchTools(ctx context.Context, runID, taskID string) (func(agent.Call), func()) {
	a := &activity{w: w, runID: runID, taskID: taskID, wake: make(chan struct{}, 1), done: make(chan struct{}),
		ended: make(chan struct{})}
	go a.loop(ctx)
	stop := func() {
		close(a.done)
		<-a.ended
	}
	return a.add, stop
}

func (a *activity) add(c agent.Call) {
	line := safetext.Redact(c.Describe())
	a.mu.Lock()
	if len(a.calls) < maxActivityCalls {
		a.calls = append(a.calls, line)
	} else {
		a.more++
	}
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *activity) loop(ctx context.Context) {
	defer close(a.ended)
	defer func() { recover() }() //nolint:errcheck // progress must never take the step down
	var last time.Time
	for {
		select {
		case <-a.done:
			a.flush(ctx)
			return
		case <-a.wake:
		}
		if wait := activityEvery - time.Since(last); wait > 0 {
			select {
			case <-a.done:
				a.flush(ctx)
				return
			case <-time.After(wait):
			}
		}
		a.flush(ctx)
		last = time.Now()
	}
}

func (a *activity) flush(ctx context.Context) {
	a.mu.Lock()
	calls, more := a.calls, a.more
	a.calls, a.more = nil, 0
	a.mu.Unlock()
	if len(calls) == 0 {
		return
	}
	ev := jobs.NewEvent(a.runID, a.taskID, jobs.AgentActivityEvent{Calls: calls, More: more})
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := a.w.cfg.Store.Append(actx, a.runID, ev); err != nil {
		a.w.log.Debug("recording the agent's activity", "run_id", a.runID, "err", err)
	}
}
