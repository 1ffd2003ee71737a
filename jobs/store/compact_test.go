package store

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/jobs"
)

// parkRun makes a run that ran, asked a question and waits on it, with events and an audit entry as the worker writes
// them.
func parkRun(t *testing.T, s *Store) *jobs.Run {
	t.Helper()
	ctx := context.Background()
	r := newRun()
	if err := s.Create(ctx, r, jobs.NewEvent(r.ID, "", jobs.RunStartedEvent{})); err != nil {
		t.Fatal(err)
	}
	update(t, s, r.ID, func(r *jobs.Run, c *jobs.Change) {
		r.Status = jobs.RunRunning
		c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.TaskStartedEvent{Attempt: 1}))
	})
	return update(t, s, r.ID, func(r *jobs.Run, c *jobs.Change) {
		r.Status = jobs.RunParked
		c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.EscalationEvent{EscalationID: "e1", Question: "Redis or memory?",
			Options: []jobs.Option{{Key: "A", Label: "Redis"}, {Key: "B", Label: "memory"}}}))
		c.Audit = append(c.Audit, jobs.AuditEntry{EscalationID: "e1", Action: "escalated", By: "orch"})
	})
}

func update(t *testing.T, s *Store, id string, fn func(r *jobs.Run, c *jobs.Change)) *jobs.Run {
	t.Helper()
	r, err := s.Update(context.Background(), id, func(r *jobs.Run, c *jobs.Change) error { fn(r, c); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// logOf is everything a reader sees of a run's log.
type logOf struct {
	Events, Recent []jobs.Event
	Last           string
	Audit          []jobs.AuditEntry
}

func readAll(t *testing.T, s *Store, id string) logOf {
	t.Helper()
	ctx := context.Background()
	var l logOf
	var err error
	if l.Events, err = s.Events(ctx, id, "", 0); err != nil {
		t.Fatal(err)
	}
	if l.Recent, err = s.Recent(ctx, id, 2); err != nil {
		t.Fatal(err)
	}
	if l.Last, err = s.LastEventID(ctx, id); err != nil {
		t.Fatal(err)
	}
	if l.Audit, err = s.Audit(ctx, id); err != nil {
		t.Fatal(err)
	}
	return l
}

func streamsOf(t *testing.T, rdb redis.UniversalClient, id string) int64 {
	t.Helper()
	n, err := rdb.Exists(context.Background(), eventsKey(id), auditKey(id)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCompactResting(t *testing.T) {
	for name, rdb := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := New(rdb, nil)
			rdb.Del(ctx, keyResting)
			r := parkRun(t, s)
			before := readAll(t, s, r.ID)
			if len(before.Events) != 3 || len(before.Audit) != 1 {
				t.Fatalf("the parked run's log: %d events, %d audit entries", len(before.Events), len(before.Audit))
			}

			if n, err := s.CompactResting(ctx, time.Hour); err != nil || n != 0 {
				t.Fatalf("a run parked a moment ago was compacted (%d, %v)", n, err)
			}
			if n, err := s.CompactResting(ctx, 0); err != nil || n != 1 {
				t.Fatalf("CompactResting = %d, %v; want the parked run", n, err)
			}
			data, err := rdb.Get(ctx, runKey(r.ID)).Bytes()
			if err != nil || !compact(data) {
				t.Fatalf("the parked run's value is not compact (%v)", err)
			}
			if n := streamsOf(t, rdb, r.ID); n != 0 {
				t.Fatalf("%d of its streams are left", n)
			}
			if n, _ := rdb.ZCard(ctx, keyResting).Result(); n != 0 {
				t.Fatalf("%d runs still indexed to compact", n)
			}
			if got := readAll(t, s, r.ID); !reflect.DeepEqual(got, before) {
				t.Fatalf("the compact run's log reads\n%+v\nnot\n%+v", got, before)
			}
			got, err := s.Get(ctx, r.ID)
			if err != nil || got.Status != jobs.RunParked || got.Version != r.Version {
				t.Fatalf("Get of the compact run = %+v, %v", got, err)
			}
			if found, _, err := s.Find(ctx, Query{}, 0, 100); err != nil || !slices.ContainsFunc(found, func(f *jobs.Run) bool { return f.ID == r.ID }) {
				t.Fatalf("Find misses the compact run (%v)", err)
			}

			// A change that leaves it waiting writes its log back, with the change's entries after the others, and
			// the run is compacted again once quiet.
			update(t, s, r.ID, func(r *jobs.Run, c *jobs.Change) {
				c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.EscalationTimeoutEvent{EscalationID: "e1", N: 1, Of: 3, Next: "reminding"}))
				c.Audit = append(c.Audit, jobs.AuditEntry{EscalationID: "e1", Action: "asked", By: "orch"})
			})
			if n := streamsOf(t, rdb, r.ID); n != 2 {
				t.Fatalf("a change to the compact run left %d streams, want its two back", n)
			}
			waiting := readAll(t, s, r.ID)
			if len(waiting.Events) != 4 || len(waiting.Audit) != 2 || waiting.Last != waiting.Events[3].ID ||
				!streamIDAfter(waiting.Events[3].ID, before.Last) || !reflect.DeepEqual(waiting.Events[:3], before.Events) {
				t.Fatalf("after a change to the compact run: %+v", waiting)
			}
			if n, err := s.CompactResting(ctx, time.Hour); err != nil || n != 0 {
				t.Fatalf("a run changed a moment ago was compacted (%d, %v)", n, err)
			}
			if n, err := s.CompactResting(ctx, 0); err != nil || n != 1 || streamsOf(t, rdb, r.ID) != 0 {
				t.Fatalf("the run still waiting was not compacted again (%d, %v)", n, err)
			}
			if got := readAll(t, s, r.ID); !reflect.DeepEqual(got, waiting) {
				t.Fatalf("compacted again, its log reads\n%+v\nnot\n%+v", got, waiting)
			}

			// A follower blocked on the stream is woken by the answer, and reads what it has not seen, in order.
			type read struct {
				evs []jobs.Event
				err error
			}
			woken := make(chan read, 1)
			go func() {
				evs, err := s.Events(ctx, r.ID, waiting.Last, 20*time.Second)
				woken <- read{evs, err}
			}()
			time.Sleep(100 * time.Millisecond) // most likely blocked by now; if not, it reads the stream written back
			update(t, s, r.ID, func(r *jobs.Run, c *jobs.Change) {
				r.Status = jobs.RunRunning
				c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.ResumedEvent{Resolution: "B"}))
				c.Audit = append(c.Audit, jobs.AuditEntry{EscalationID: "e1", Action: "resolved", By: "ann"})
			})
			w := <-woken
			if w.err != nil || len(w.evs) != 1 || w.evs[0].Type() != (jobs.ResumedEvent{}).Kind() {
				t.Fatalf("the blocked follower read %+v, %v", w.evs, w.err)
			}
			if n := streamsOf(t, rdb, r.ID); n != 2 {
				t.Fatalf("the resumed run has %d streams, want its two back", n)
			}
			data, _ = rdb.Get(ctx, runKey(r.ID)).Bytes()
			if compact(data) {
				t.Fatal("the resumed run is still compact")
			}
			after := readAll(t, s, r.ID)
			if !reflect.DeepEqual(after.Events[:4], waiting.Events) || len(after.Events) != 5 ||
				!reflect.DeepEqual(after.Audit[:2], waiting.Audit) || len(after.Audit) != 3 {
				t.Fatalf("the log written back:\n%+v\nwas\n%+v", after, waiting)
			}
			if n, _ := rdb.ZCard(ctx, keyResting).Result(); n != 0 {
				t.Fatal("the resumed run is indexed to compact")
			}

			// Parked again, it is indexed again; a change before the pass keeps it in streams.
			update(t, s, r.ID, func(r *jobs.Run, c *jobs.Change) { r.Status = jobs.RunParked })
			if ids, _ := rdb.ZRange(ctx, keyResting, 0, -1).Result(); !reflect.DeepEqual(ids, []string{r.ID}) {
				t.Fatalf("indexed to compact: %v", ids)
			}
			update(t, s, r.ID, func(r *jobs.Run, c *jobs.Change) { r.Status = jobs.RunRunning })
			if n, err := s.CompactResting(ctx, 0); err != nil || n != 0 {
				t.Fatalf("a run that no longer waits was compacted (%d, %v)", n, err)
			}
		})
	}
}

// A waiting run with a long log stays in streams (its nodes are full; writing it all back would slow its answer), and
// a damaged compact value says which key to delete.
func TestCompactLimits(t *testing.T) {
	for name, rdb := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := New(rdb, nil)
			rdb.Del(ctx, keyResting)
			r := parkRun(t, s)
			update(t, s, r.ID, func(r *jobs.Run, c *jobs.Change) {
				for range compactMost {
					c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.EscalationTimeoutEvent{EscalationID: "e1", N: 1, Of: 3, Next: "reminding"}))
				}
			})
			if n, err := s.CompactResting(ctx, 0); err != nil || n != 0 {
				t.Fatalf("a run with a long log was compacted (%d, %v)", n, err)
			}
			if n := streamsOf(t, rdb, r.ID); n != 2 {
				t.Fatalf("its streams: %d", n)
			}
			if n, _ := rdb.ZCard(ctx, keyResting).Result(); n != 0 {
				t.Fatal("the run left in streams is still indexed: every pass would read its log again")
			}

			d := parkRun(t, s)
			if _, err := s.CompactResting(ctx, 0); err != nil {
				t.Fatal(err)
			}
			data, _ := rdb.Get(ctx, runKey(d.ID)).Bytes()
			rdb.Set(ctx, runKey(d.ID), data[:len(data)/2], 0)
			_, err := s.Get(ctx, d.ID)
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("Get of a cut compact value: %v", err)
			}
			if _, err := s.Audit(ctx, d.ID); !errors.Is(err, ErrDamaged) {
				t.Fatalf("Audit of a cut compact value: %v", err)
			}
		})
	}
}

// The embedded store saves a compact run (binary, in its journal and snapshot) and reads it back whole after a restart,
// and the run's answer after the restart writes its log back.
func TestACompactRunOutlivesTheEmbeddedStore(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	b, err := Connect(ctx, ConnectConfig{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r := parkRun(t, b.Store)
	before := readAll(t, b.Store, r.ID)
	if n, err := b.Store.CompactResting(ctx, 0); err != nil || n != 1 {
		t.Fatalf("CompactResting = %d, %v", n, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = Connect(ctx, ConnectConfig{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	data, err := b.Redis.Get(ctx, runKey(r.ID)).Bytes()
	if err != nil || !compact(data) || streamsOf(t, b.Redis, r.ID) != 0 {
		t.Fatalf("after the restart the run is not compact (%v)", err)
	}
	if got := readAll(t, b.Store, r.ID); !reflect.DeepEqual(got, before) {
		t.Fatalf("after the restart its log reads\n%+v\nnot\n%+v", got, before)
	}
	update(t, b.Store, r.ID, func(r *jobs.Run, c *jobs.Change) {
		r.Status = jobs.RunRunning
		c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.ResumedEvent{Resolution: "B"}))
	})
	if got := readAll(t, b.Store, r.ID); len(got.Events) != 4 || !reflect.DeepEqual(got.Events[:3], before.Events) {
		t.Fatalf("answered after the restart: %+v", got.Events)
	}
}
