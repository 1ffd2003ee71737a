package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
	"github.com/orchrun/orch/jobs/queue"
)

// backends returns a Redis client per backend under test.
func backends(t *testing.T) map[string]redis.UniversalClient { return jobstest.Clients(t) }

func newRun() *jobs.Run {
	return &jobs.Run{ID: jobs.NewRunID(), PlanPath: "plan.md", Status: jobs.RunQueued, Options: jobs.Options{MaxAttempts: 3},
		Tasks: []*jobs.Task{{ID: "1.1", Title: "one", Status: jobs.TaskPending}, {ID: "1.2", Title: "two", Status: jobs.TaskPending}}}
}

func TestStore(t *testing.T) {
	for name, rdb := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := New(rdb, nil)

			t.Run("create get list", func(t *testing.T) {
				r := newRun()
				if err := s.Create(ctx, r, jobs.NewEvent(r.ID, "", jobs.RunStartedEvent{})); err != nil {
					t.Fatal(err)
				}
				if err := s.Create(ctx, r); err == nil {
					t.Fatal("a second create with the same id succeeded")
				}
				got, err := s.Get(ctx, r.ID)
				if err != nil || got.ID != r.ID || len(got.Tasks) != 2 || got.Version != 1 {
					t.Fatalf("get = %+v, %v", got, err)
				}
				runs, err := s.List(ctx, 1000)
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, x := range runs {
					found = found || x.ID == r.ID
				}
				if !found {
					t.Fatal("list lacks the run")
				}
				if _, err := s.Get(ctx, "r-missing000"); !errors.Is(err, jobs.ErrRunNotFound) {
					t.Fatalf("missing run: %v", err)
				}
			})

			t.Run("update writes state events and audit together", func(t *testing.T) {
				r := newRun()
				if err := s.Create(ctx, r); err != nil {
					t.Fatal(err)
				}
				got, err := s.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
					r.Status = jobs.RunRunning
					c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.TaskStartedEvent{Attempt: 1}))
					c.Audit = append(c.Audit, jobs.AuditEntry{EscalationID: "e1", Action: "escalated", By: "orch"})
					return nil
				})
				if err != nil || got.Status != jobs.RunRunning || got.Version != 2 {
					t.Fatalf("update = %+v, %v", got, err)
				}
				evs, err := s.Events(ctx, r.ID, "", 0)
				if err != nil || len(evs) != 1 || evs[0].Body != (jobs.TaskStartedEvent{Attempt: 1}) || evs[0].RunID != r.ID {
					t.Fatalf("events = %+v, %v", evs, err)
				}
				more, err := s.Events(ctx, r.ID, evs[0].ID, 0)
				if err != nil || len(more) != 0 {
					t.Fatalf("events after the last = %+v, %v", more, err)
				}
				audit, err := s.Audit(ctx, r.ID)
				if err != nil || len(audit) != 1 || audit[0].RunID != r.ID || audit[0].Time.IsZero() {
					t.Fatalf("audit = %+v, %v", audit, err)
				}
			})

			t.Run("an error in fn changes nothing", func(t *testing.T) {
				r := newRun()
				if err := s.Create(ctx, r); err != nil {
					t.Fatal(err)
				}
				boom := errors.New("boom")
				_, err := s.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
					r.Status = jobs.RunFailed
					c.Emit(jobs.NewEvent(r.ID, "", jobs.RunFailedEvent{}))
					return boom
				})
				if !errors.Is(err, boom) {
					t.Fatalf("err = %v", err)
				}
				got, _ := s.Get(ctx, r.ID)
				evs, _ := s.Events(ctx, r.ID, "", 0)
				if got.Status != jobs.RunQueued || got.Version != 1 || len(evs) != 0 {
					t.Fatalf("state changed: %s v%d, %d events", got.Status, got.Version, len(evs))
				}
			})

			t.Run("concurrent updates are serialised", func(t *testing.T) {
				r := newRun()
				if err := s.Create(ctx, r); err != nil {
					t.Fatal(err)
				}
				const n = 25
				var wg sync.WaitGroup
				errs := make(chan error, n)
				for range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, err := s.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
							r.Tasks[0].Started++
							c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.TaskStartedEvent{}))
							return nil
						})
						errs <- err
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						t.Fatal(err)
					}
				}
				got, _ := s.Get(ctx, r.ID)
				evs, _ := s.Events(ctx, r.ID, "", 0)
				if got.Tasks[0].Started != n || len(evs) != n || got.Version != n+1 {
					t.Fatalf("started %d, events %d, version %d; want %d", got.Tasks[0].Started, len(evs), got.Version, n)
				}
			})

			t.Run("blocking read wakes on a new event", func(t *testing.T) {
				r := newRun()
				if err := s.Create(ctx, r); err != nil {
					t.Fatal(err)
				}
				got := make(chan []jobs.Event, 1)
				go func() {
					evs, _ := s.Events(ctx, r.ID, "$", 5*time.Second)
					got <- evs
				}()
				time.Sleep(100 * time.Millisecond)
				if err := s.Append(ctx, r.ID, jobs.NewEvent(r.ID, "1.1", jobs.RetryingEvent{})); err != nil {
					t.Fatal(err)
				}
				select {
				case evs := <-got:
					if _, ok := evs[0].Body.(jobs.RetryingEvent); len(evs) != 1 || !ok {
						t.Fatalf("got %+v", evs)
					}
				case <-time.After(6 * time.Second):
					t.Fatal("blocking read did not return")
				}
			})
		})
	}
}

const binary = "\x00\xff\xfe proto \x80\x81"

func TestEmbeddedPersistsAcrossOpens(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	b, err := Connect(ctx, ConnectConfig{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r := newRun()
	if err := b.Store.Create(ctx, r, jobs.NewEvent(r.ID, "", jobs.RunStartedEvent{})); err != nil {
		t.Fatal(err)
	}
	b.Redis.HSet(ctx, "h", "f", "v")
	b.Redis.RPush(ctx, "l", "a", "b")
	b.Redis.SAdd(ctx, "s", "x")
	b.Redis.Set(ctx, "ttl", "soon", time.Hour)
	b.Redis.Set(ctx, "gone", "now", 50*time.Millisecond)
	b.Redis.Set(ctx, "bin", binary, 0)
	if err := b.Queue.Step(ctx, "", r.ID, 1, 0); err != nil {
		t.Fatal(err)
	}

	// A second process while the first holds the directory joins its live server.
	live, err := Connect(ctx, ConnectConfig{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if live.Embedded.Owner() {
		t.Fatal("second open owns the directory too")
	}
	if _, err := live.Store.Get(ctx, r.ID); err != nil {
		t.Fatalf("live join does not see the run: %v", err)
	}
	live.Close()
	time.Sleep(100 * time.Millisecond)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b2, err := Connect(ctx, ConnectConfig{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if !b2.Embedded.Owner() {
		t.Fatal("reopen after close does not own the directory")
	}
	got, err := b2.Store.Get(ctx, r.ID)
	if err != nil || got.ID != r.ID {
		t.Fatalf("run lost across processes: %v", err)
	}
	evs, err := b2.Store.Events(ctx, r.ID, "", 0)
	if err != nil || len(evs) != 1 {
		t.Fatalf("events lost: %v %v", evs, err)
	}
	if v := b2.Redis.HGet(ctx, "h", "f").Val(); v != "v" {
		t.Errorf("hash = %q", v)
	}
	if v := b2.Redis.LRange(ctx, "l", 0, -1).Val(); fmt.Sprint(v) != "[a b]" {
		t.Errorf("list = %v", v)
	}
	if !b2.Redis.SIsMember(ctx, "s", "x").Val() {
		t.Error("set lost")
	}
	if ttl := b2.Redis.TTL(ctx, "ttl").Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("ttl = %v", ttl)
	}
	if b2.Redis.Exists(ctx, "gone").Val() != 0 {
		t.Error("an expired key came back")
	}
	// The queued step survived too: asynq's keys are part of the snapshot.
	if err := b2.Queue.Step(ctx, "", r.ID, 1, 0); err != nil {
		t.Fatal(err)
	}
	keys := b2.Redis.Keys(ctx, "asynq:{orch-steps}:t:*").Val()
	if len(keys) != 1 {
		t.Fatalf("queued step not persisted exactly once: %v", keys)
	}
	// asynq stores tasks as protobuf: the bytes must survive exactly, or the queue cannot decode them.
	pending, err := asynq.NewInspectorFromRedisClient(b2.Redis).ListPendingTasks(queue.Steps)
	if err != nil || len(pending) != 1 || pending[0].ID != fmt.Sprintf("step:%s:1", r.ID) {
		t.Fatalf("pending steps after reopen: %v, %v", pending, err)
	}
	if v := b2.Redis.Get(ctx, "bin").Val(); v != binary {
		t.Fatalf("binary value = %q", v)
	}
}

func TestRecentEvents(t *testing.T) {
	for name, rdb := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := New(rdb, nil)
			r := newRun()
			if err := s.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				if err := s.Append(ctx, r.ID, jobs.NewEvent(r.ID, "1.1", jobs.TaskStartedEvent{Started: i})); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.Recent(ctx, r.ID, 3)
			if err != nil || len(got) != 3 || got[0].Body.(jobs.TaskStartedEvent).Started != 2 || got[2].Body.(jobs.TaskStartedEvent).Started != 4 {
				t.Fatalf("recent = %+v, %v", got, err)
			}
		})
	}
}

// A plain workspace has one holder; letting go hands it to the run that waited longest.
func TestHoldsTakeTurns(t *testing.T) {
	for name, rdb := range jobstest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := New(rdb, nil)
			place := "host\x00/w/" + name
			for _, step := range []struct{ run, want string }{{"a", ""}, {"a", ""}, {"b", "a"}, {"c", "a"}, {"b", "a"}} {
				if got, err := s.Hold(ctx, place, step.run); err != nil || got != step.want {
					t.Fatalf("Hold(%s) = %q, %v; want %q", step.run, got, err, step.want)
				}
			}
			if next, err := s.Let(ctx, place, "b"); err != nil || next != "" {
				t.Fatalf("a run that does not hold it let go: %q, %v", next, err)
			}
			if next, err := s.Let(ctx, place, "a"); err != nil || next != "b" {
				t.Fatalf("Let(a) woke %q, %v; want b, who waited first", next, err)
			}
			if got, err := s.Hold(ctx, place, "b"); err != nil || got != "" {
				t.Fatalf("b after a let go: %q, %v", got, err)
			}
			if next, err := s.Let(ctx, place, "b"); err != nil || next != "c" {
				t.Fatalf("Let(b) woke %q, %v; want c", next, err)
			}
		})
	}
}

// A follower on the embedded store waits by polling (pollFor): it gets what comes next, in order, the oldest first
// when more came than one read returns.
func TestEmbeddedFollowerReadsInOrder(t *testing.T) {
	ctx := context.Background()
	b, err := Connect(ctx, ConnectConfig{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := b.Store
	if s.pollEvents <= 0 {
		t.Fatal("the embedded store's followers do not poll")
	}
	r := newRun()
	if err := s.Create(ctx, r, jobs.NewEvent(r.ID, "", jobs.RunStartedEvent{})); err != nil {
		t.Fatal(err)
	}
	got := make(chan []jobs.Event, 1)
	go func() {
		evs, err := s.Events(ctx, r.ID, "$", time.Minute)
		if err != nil {
			t.Error(err)
		}
		got <- evs
	}()
	time.Sleep(100 * time.Millisecond)
	if err := s.Append(ctx, r.ID, jobs.NewEvent(r.ID, "1.1", jobs.RetryingEvent{})); err != nil {
		t.Fatal(err)
	}
	evs := <-got
	if len(evs) != 1 {
		t.Fatalf("a follower from now got %d events: %+v", len(evs), evs)
	}
	if _, ok := evs[0].Body.(jobs.RetryingEvent); !ok {
		t.Fatalf("a follower from now got %+v", evs[0])
	}
	cursor := evs[0].ID

	if evs, err := s.Events(ctx, r.ID, cursor, 50*time.Millisecond); err != nil || len(evs) != 0 {
		t.Fatalf("nothing new: %d events, %v", len(evs), err)
	}
	for i := range 700 {
		if err := s.Append(ctx, r.ID, jobs.NewEvent(r.ID, "1.1", jobs.TaskStartedEvent{Attempt: i})); err != nil {
			t.Fatal(err)
		}
	}
	var attempts []int
	for len(attempts) < 700 {
		evs, err := s.Events(ctx, r.ID, cursor, time.Second)
		if err != nil || len(evs) == 0 {
			t.Fatalf("after %d of 700: %d events, %v", len(attempts), len(evs), err)
		}
		for _, e := range evs {
			attempts = append(attempts, e.Body.(jobs.TaskStartedEvent).Attempt)
		}
		cursor = evs[len(evs)-1].ID
	}
	for i, a := range attempts {
		if a != i {
			t.Fatalf("event %d read is attempt %d: the follower skipped or reordered", i, a)
		}
	}
}
