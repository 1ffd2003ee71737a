package escalation_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
	"github.com/orchrun/orch/jobs/store"
)

// storeCase is one Redis the store tests run against.
type storeCase struct {
	name  string
	store *store.Store
	rdb   redis.UniversalClient // the client under store, to remove what a test leaves behind
	clock *clock
}

// stores returns a store per backend under test (jobstest.Clients), each on its own injected clock.
func stores(t *testing.T) []storeCase {
	t.Helper()
	var out []storeCase
	clients := jobstest.Clients(t)
	for _, name := range []string{"miniredis", "redis"} {
		if c, ok := clients[name]; ok {
			clk := newClock()
			out = append(out, storeCase{name: name, store: store.New(c, clk.Now), rdb: c, clock: clk})
		}
	}
	return out
}

// clock is an injected clock that tests move by hand; safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fakeQueue is the Enqueuer Resolve gets: it records every resume and fails them all when err is set.
type fakeQueue struct {
	mu    sync.Mutex
	calls []resumeCall
	err   error
}

type resumeCall struct{ runID, escID string }

var _ escalation.Enqueuer = (*fakeQueue)(nil)

func (q *fakeQueue) Resume(ctx context.Context, runID, escID string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, resumeCall{runID, escID})
	return q.err
}

func (q *fakeQueue) Calls() []resumeCall {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]resumeCall(nil), q.calls...)
}

// newRun saves a running run whose first task has failed three times, and removes its keys when the test ends so
// that a shared Redis stays clean.
func newRun(t *testing.T, sc storeCase) *jobs.Run {
	t.Helper()
	s := sc.store
	ctx := context.Background()
	r := &jobs.Run{
		ID:       jobs.NewRunID(),
		PlanPath: "plan.md", PlanTitle: "Cache layer",
		Options: jobs.Options{Agent: "sim", Brain: "heuristic", Sandbox: "local", MaxAttempts: 3},
		Origin:  jobs.Origin{Kind: "cli", User: "alice"},
		Status:  jobs.RunRunning,
		Tasks: []*jobs.Task{
			{ID: "T1", Title: "Add a cache", Status: jobs.TaskRunning, Started: 3, Failures: 3,
				Errors: []string{"boom 1", "boom 2", "boom 3"}, RetryGuidance: "try a smaller change"},
			{ID: "T2", Title: "Document it", Status: jobs.TaskPending},
		},
		Seq: 4,
	}
	if err := s.Create(ctx, r); err != nil {
		t.Fatalf("creating run: %v", err)
	}
	t.Cleanup(func() {
		// The key names of jobs/store.go; should they change, this only leaves garbage behind.
		id := r.ID
		rdb := sc.rdb
		rdb.Del(context.Background(), "orch:run:{"+id+"}", "orch:run:{"+id+"}:events", "orch:run:{"+id+"}:audit")
		rdb.ZRem(context.Background(), "orch:runs", id)
	})
	return r
}

// open opens an escalation about the run's current task, as a worker does at the end of a step.
func open(t *testing.T, s *store.Store, runID string, spec escalation.Spec) *jobs.Escalation {
	t.Helper()
	var e *jobs.Escalation
	_, err := s.Update(context.Background(), runID, func(r *jobs.Run, c *jobs.Change) error {
		e = escalation.Open(r, r.Current(), c, spec, s.Now())
		return nil
	})
	if err != nil {
		t.Fatalf("opening escalation: %v", err)
	}
	return e
}

// choiceSpec is an agent's question with three options and a recommendation.
func choiceSpec() escalation.Spec {
	return escalation.Spec{
		Trigger: jobs.TriggerNeedsHelp, Source: "agent",
		Question:       "Which cache backend should I use?",
		Options:        []string{"A) Redis", "B) In-memory", "C) Postgres"},
		Recommendation: "B for simplicity",
		Output:         "I looked at the code. Which cache backend should I use?",
	}
}

func mustGet(t *testing.T, s *store.Store, id string) *jobs.Run {
	t.Helper()
	r, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("loading run: %v", err)
	}
	return r
}

// snapshot is everything Redis holds about a run, to show that a rejected resolution changed nothing.
type snapshot struct {
	run    string
	events int
	audit  int
}

func snap(t *testing.T, s *store.Store, id string) snapshot {
	t.Helper()
	ctx := context.Background()
	data, err := json.Marshal(mustGet(t, s, id))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(ctx, id, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	au, err := s.Audit(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return snapshot{run: string(data), events: len(evs), audit: len(au)}
}

func events(t *testing.T, s *store.Store, id string, typ string) []jobs.Event {
	t.Helper()
	evs, err := s.Events(context.Background(), id, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []jobs.Event
	for _, e := range evs {
		if e.Type() == typ {
			out = append(out, e)
		}
	}
	return out
}

func audit(t *testing.T, s *store.Store, id string) []jobs.AuditEntry {
	t.Helper()
	a, err := s.Audit(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
