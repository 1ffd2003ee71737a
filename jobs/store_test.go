package jobs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/jobs/jobstest"
)

// backends returns a Redis client per backend under test.
func backends(t *testing.T) map[string]redis.UniversalClient { return jobstest.Clients(t) }

func newRun() *Run {
	return &Run{ID: NewRunID(), PlanPath: "plan.md", Status: RunQueued, Options: Options{MaxAttempts: 3},
		Tasks: []*Task{{ID: "1.1", Title: "one", Status: TaskPending}, {ID: "1.2", Title: "two", Status: TaskPending}}}
}

func TestStore(t *testing.T) {
	for name, rdb := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := NewStore(rdb, nil)

			t.Run("create get list", func(t *testing.T) {
				r := newRun()
				if err := s.Create(ctx, r, NewEvent(EventRunStarted, r.ID, "")); err != nil {
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
				if _, err := s.Get(ctx, "r-missing000"); !errors.Is(err, ErrRunNotFound) {
					t.Fatalf("missing run: %v", err)
				}
			})

			t.Run("update writes state events and audit together", func(t *testing.T) {
				r := newRun()
				if err := s.Create(ctx, r); err != nil {
					t.Fatal(err)
				}
				got, err := s.Update(ctx, r.ID, func(r *Run, c *Change) error {
					r.Status = RunRunning
					c.Emit(NewEvent(EventTaskStarted, r.ID, "1.1", "attempt", 1))
					c.Audit = append(c.Audit, AuditEntry{EscalationID: "e1", Action: "escalated", By: "orch"})
					return nil
				})
				if err != nil || got.Status != RunRunning || got.Version != 2 {
					t.Fatalf("update = %+v, %v", got, err)
				}
				evs, err := s.Events(ctx, r.ID, "", 0)
				if err != nil || len(evs) != 1 || evs[0].Type != EventTaskStarted || evs[0].Int("attempt") != 1 || evs[0].RunID != r.ID {
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
				_, err := s.Update(ctx, r.ID, func(r *Run, c *Change) error {
					r.Status = RunFailed
					c.Emit(NewEvent(EventRunFailed, r.ID, ""))
					return boom
				})
				if !errors.Is(err, boom) {
					t.Fatalf("err = %v", err)
				}
				got, _ := s.Get(ctx, r.ID)
				evs, _ := s.Events(ctx, r.ID, "", 0)
				if got.Status != RunQueued || got.Version != 1 || len(evs) != 0 {
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
						_, err := s.Update(ctx, r.ID, func(r *Run, c *Change) error {
							r.Tasks[0].Started++
							c.Emit(NewEvent(EventTaskStarted, r.ID, "1.1"))
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
				got := make(chan []Event, 1)
				go func() {
					evs, _ := s.Events(ctx, r.ID, "$", 5*time.Second)
					got <- evs
				}()
				time.Sleep(100 * time.Millisecond)
				if err := s.Append(ctx, r.ID, NewEvent(EventRetrying, r.ID, "1.1")); err != nil {
					t.Fatal(err)
				}
				select {
				case evs := <-got:
					if len(evs) != 1 || evs[0].Type != EventRetrying {
						t.Fatalf("got %+v", evs)
					}
				case <-time.After(6 * time.Second):
					t.Fatal("blocking read did not return")
				}
			})
		})
	}
}

func TestEventJSONRoundTrip(t *testing.T) {
	e := NewEvent(EventTaskFailed, "r-1", "1.1", "attempt", 2, "error", "boom")
	e.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	data, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"attempt":2,"error":"boom","run_id":"r-1","task_id":"1.1","time":"2026-01-02T03:04:05Z","type":"task_failed"}`
	if string(data) != want {
		t.Fatalf("json = %s", data)
	}
	var back Event
	if err := back.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	if back.Type != e.Type || back.RunID != "r-1" || back.TaskID != "1.1" || back.Int("attempt") != 2 || back.String("error") != "boom" || !back.Time.Equal(e.Time) {
		t.Fatalf("round trip = %+v", back)
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
	if err := b.Store.Create(ctx, r, NewEvent(EventRunStarted, r.ID, "")); err != nil {
		t.Fatal(err)
	}
	b.Redis.HSet(ctx, "h", "f", "v")
	b.Redis.RPush(ctx, "l", "a", "b")
	b.Redis.SAdd(ctx, "s", "x")
	b.Redis.Set(ctx, "ttl", "soon", time.Hour)
	b.Redis.Set(ctx, "gone", "now", 50*time.Millisecond)
	b.Redis.Set(ctx, "bin", binary, 0)
	if err := b.Queue.Step(ctx, r.ID, 1, 0); err != nil {
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
	if err := b2.Queue.Step(ctx, r.ID, 1, 0); err != nil {
		t.Fatal(err)
	}
	keys := b2.Redis.Keys(ctx, "asynq:{orch-steps}:t:*").Val()
	if len(keys) != 1 {
		t.Fatalf("queued step not persisted exactly once: %v", keys)
	}
	// asynq stores tasks as protobuf: the bytes must survive exactly, or the queue cannot decode them.
	pending, err := asynq.NewInspectorFromRedisClient(b2.Redis).ListPendingTasks(QueueSteps)
	if err != nil || len(pending) != 1 || pending[0].ID != fmt.Sprintf("step:%s:1", r.ID) {
		t.Fatalf("pending steps after reopen: %v, %v", pending, err)
	}
	if v := b2.Redis.Get(ctx, "bin").Val(); v != binary {
		t.Fatalf("binary value = %q", v)
	}
}

func TestEmbeddedDamagedSnapshot(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, snapshotFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenEmbedded(dir, nil)
	if err == nil {
		t.Fatal("a damaged snapshot was accepted")
	}
	if data, _ := os.ReadFile(filepath.Join(dir, snapshotFile)); string(data) != "{not json" {
		t.Fatal("the damaged snapshot was overwritten")
	}
	// The lock was released: the directory can be opened once the file is moved away.
	os.Remove(filepath.Join(dir, snapshotFile))
	e, err := OpenEmbedded(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
}

func TestNewRunIDUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewRunID()
		if len(id) != 12 || seen[id] {
			t.Fatalf("bad or duplicate id %q", id)
		}
		seen[id] = true
	}
}

// A step whose retries ran out is archived and keeps its id; enqueueing it again must bring it back, or the run
// could never move again.
func TestArchivedStepIsEnqueuedAgain(t *testing.T) {
	for name, rdb := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			q := NewQueue(rdb, QueueConfig{})
			runID := NewRunID()
			if err := q.Step(ctx, runID, 1, time.Minute); err != nil {
				t.Fatal(err)
			}
			id := fmt.Sprintf("step:%s:1", runID)
			insp := asynq.NewInspectorFromRedisClient(rdb)
			if err := insp.ArchiveTask(QueueSteps, id); err != nil {
				t.Fatal(err)
			}
			if err := q.Step(ctx, runID, 1, time.Minute); err != nil {
				t.Fatal(err)
			}
			info, err := insp.GetTaskInfo(QueueSteps, id)
			if err != nil || info.State != asynq.TaskStatePending {
				t.Fatalf("after re-enqueue: %+v, %v", info, err)
			}
			if info.Timeout != time.Minute+5*time.Minute {
				t.Fatalf("step timeout %v, want the agent's timeout plus the margin", info.Timeout)
			}
			// A pending one is left alone.
			if err := q.Step(ctx, runID, 1, time.Minute); err != nil {
				t.Fatal(err)
			}
			insp.DeleteTask(QueueSteps, id)
		})
	}
}

func TestRecentEvents(t *testing.T) {
	for name, rdb := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := NewStore(rdb, nil)
			r := newRun()
			if err := s.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				if err := s.Append(ctx, r.ID, NewEvent(EventTaskStarted, r.ID, "1.1", "started", i)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.Recent(ctx, r.ID, 3)
			if err != nil || len(got) != 3 || got[0].Int("started") != 2 || got[2].Int("started") != 4 {
				t.Fatalf("recent = %+v, %v", got, err)
			}
		})
	}
}
