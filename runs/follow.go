package runs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/orchrun/orch/internal/backoff"
	"github.com/orchrun/orch/jobs"
)

// Log is what Follow reads: a run's document and its event log.
type Log interface {
	Get(ctx context.Context, id string) (*jobs.Run, error)
	Events(ctx context.Context, runID, after string, block time.Duration) ([]jobs.Event, error)
}

// Update is the next thing a follower learns about a run. Exactly one field is set.
type Update struct {
	// Event is the run's next event, in the log's order.
	Event *jobs.Event
	// Question is a question of the run that is open as the follower sees it: the run waits for an answer. It comes
	// right after its escalation event.
	Question *Question
	// Outage is set, once, when the store stops answering; Back, once it answers again, with how long it was away.
	Outage error
	Back   time.Duration
	// Err ends the updates: the store stayed away longer than the follower's patience.
	Err error
}

// Question is an open escalation and the run it belongs to, as read when its event was seen.
type Question struct {
	Run        *jobs.Run
	Escalation *jobs.Escalation
}

// FollowOptions says where to start and how long to wait for a store that went away. The zero value follows from
// the start of the log and waits two minutes.
type FollowOptions struct {
	// From is the id of the last event already seen ("" or "0": none, the whole log is replayed). When the run is
	// parked on a question whose event is not after From, the question's event is sent first, so that a follower
	// who starts late still sees what the run waits for.
	From string
	// Patience bounds a store outage (default 2 minutes): the state is in the store and comes back with it.
	Patience time.Duration
	// Retry is the wait between tries while the store is away (default 1 s).
	Retry time.Duration
	// Block is how long one read waits for new events (default 500 ms).
	Block time.Duration
}

// Follow sends a run's events, and its questions as they open, until the run ends (its final event is the last
// update), ctx is done, or the store stays away beyond Patience (an update with Err). The channel is closed then.
func Follow(ctx context.Context, log Log, runID string, opt FollowOptions) <-chan Update {
	if opt.Patience <= 0 {
		opt.Patience = 2 * time.Minute
	}
	if opt.Retry <= 0 {
		opt.Retry = time.Second
	}
	if opt.Block <= 0 {
		opt.Block = 500 * time.Millisecond
	}
	out := make(chan Update, 64)
	f := &follower{log: log, runID: runID, opt: opt, out: out, after: opt.From}
	go func() {
		defer close(out)
		if err := f.run(ctx); err != nil && ctx.Err() == nil {
			f.send(ctx, Update{Err: err})
		}
	}()
	return out
}

type follower struct {
	log   Log
	runID string
	opt   FollowOptions
	out   chan<- Update
	after string
	down  time.Time // when the store stopped answering; zero while it answers
}

func (f *follower) send(ctx context.Context, u Update) bool {
	select {
	case f.out <- u:
		return true
	case <-ctx.Done():
		return false
	}
}

func (f *follower) run(ctx context.Context) error {
	if err := f.retry(ctx, f.pending); err != nil {
		return err
	}
	for ctx.Err() == nil {
		var evs []jobs.Event
		err := f.retry(ctx, func(ctx context.Context) error {
			var err error
			evs, err = f.log.Events(ctx, f.runID, f.after, f.opt.Block)
			return err
		})
		if err != nil {
			return err
		}
		for i := range evs {
			e := &evs[i]
			f.after = e.ID
			if !f.send(ctx, Update{Event: e}) {
				return nil
			}
			if Ends(*e) {
				return nil
			}
			if q, ok := e.Body.(jobs.EscalationEvent); ok {
				if err := f.retry(ctx, func(ctx context.Context) error { return f.question(ctx, q.EscalationID) }); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// pending sends the question a parked run waits on, its event first, when that event is not after From: the log read
// from From will not replay it, so it is shown once.
func (f *follower) pending(ctx context.Context) error {
	run, err := f.log.Get(ctx, f.runID)
	if errors.Is(err, jobs.ErrRunNotFound) {
		return backoff.Permanent(err) // no waiting will bring it
	}
	if err != nil {
		return err
	}
	e := run.OpenEscalation()
	if run.Status != jobs.RunParked || e == nil || e.EventRef == "" || after(e.EventRef, f.after) {
		return nil
	}
	t := run.Task(e.TaskID)
	title := ""
	if t != nil {
		title = t.Title
	}
	ev := jobs.Event{ID: e.EventRef, RunID: run.ID, TaskID: e.TaskID, Time: e.CreatedAt, Body: jobs.NewEscalationEvent(e, title)}
	if f.send(ctx, Update{Event: &ev}) {
		f.send(ctx, Update{Question: &Question{Run: run, Escalation: e}})
	}
	return nil
}

// question sends escalation id as a question when it is still open (a replayed log holds answered ones).
func (f *follower) question(ctx context.Context, id string) error {
	run, err := f.log.Get(ctx, f.runID)
	if err != nil {
		return err
	}
	if e := run.Escalation(id); e != nil && e.Resolution == nil && !run.Status.Terminal() {
		f.send(ctx, Update{Question: &Question{Run: run, Escalation: e}})
	}
	return nil
}

// retry rides out a store that went away: Redis restarting (a deploy, a failover) is no reason to give up the run,
// whose state is in Redis and comes back with it. It says so once when the store goes and once when it is back.
func (f *follower) retry(ctx context.Context, fn func(ctx context.Context) error) error {
	r := backoff.Retry{Policy: backoff.Policy{Initial: f.opt.Retry}, Patience: f.opt.Patience,
		OnRetry: func(n int, err error, _ time.Duration) {
			if f.down.IsZero() {
				f.down = time.Now()
				f.send(ctx, Update{Outage: err})
			}
		}}
	err := r.Do(ctx, fn)
	if err == nil && !f.down.IsZero() {
		f.send(ctx, Update{Back: time.Since(f.down)})
		f.down = time.Time{}
	}
	if err != nil && !f.down.IsZero() && ctx.Err() == nil {
		return fmt.Errorf("redis did not come back in %s: %w", f.opt.Patience, err)
	}
	return err
}

// after reports whether stream id a comes after b ("" and "0" come before everything).
func after(a, b string) bool {
	am, as := streamID(a)
	bm, bs := streamID(b)
	return am > bm || am == bm && as > bs
}

func streamID(id string) (ms, seq int64) {
	m, s, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseInt(m, 10, 64)
	seq, _ = strconv.ParseInt(s, 10, 64)
	return ms, seq
}
