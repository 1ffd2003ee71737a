package runs

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
	"github.com/orchrun/orch/jobs/store"
)

// stores returns a store per Redis under test.
func stores(t *testing.T) map[string]*store.Store {
	out := map[string]*store.Store{}
	for name, c := range jobstest.Clients(t) {
		out[name] = store.New(c, nil)
	}
	return out
}

// parkedRun creates a run parked on a question with options A and B, and returns it with the question's event id.
func parkedRun(t *testing.T, st *store.Store) *jobs.Run {
	t.Helper()
	ctx := context.Background()
	r := &jobs.Run{ID: jobs.NewRunID(), Status: jobs.RunRunning, Options: jobs.Options{MaxAttempts: 3},
		Tasks: []*jobs.Task{{ID: "1.1", Title: "Cache", Status: jobs.TaskRunning}}}
	if err := st.Create(ctx, r, jobs.NewEvent(r.ID, "", jobs.RunStartedEvent{Tasks: 1})); err != nil {
		t.Fatal(err)
	}
	r, err := st.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
		escalation.Open(r, r.Tasks[0], c, escalation.Spec{Trigger: jobs.TriggerNeedsHelp, Source: "agent",
			Question: "Which cache?", Options: []string{"A) Redis", "B) In-memory"}, Recommendation: "B"}, time.Now())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// complete ends a run as the worker would when its last task is done. Tests call it from other goroutines too.
func complete(t *testing.T, st *store.Store, id string) {
	t.Helper()
	_, err := st.Update(context.Background(), id, func(r *jobs.Run, c *jobs.Change) error {
		r.Status = jobs.RunCompleted
		c.Emit(jobs.NewEvent(r.ID, "", jobs.RunCompletedEvent{Tasks: 1}))
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// collect reads updates until the channel closes or time runs out.
func collect(t *testing.T, ch <-chan Update) []Update {
	t.Helper()
	var out []Update
	timeout := time.After(10 * time.Second)
	for {
		select {
		case u, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, u)
		case <-timeout:
			t.Fatalf("updates did not end: %d so far", len(out))
		}
	}
}

func kinds(us []Update) []string {
	var out []string
	for _, u := range us {
		switch {
		case u.Event != nil:
			out = append(out, u.Event.Type())
		case u.Question != nil:
			out = append(out, "question "+u.Question.Escalation.ID)
		case u.Outage != nil:
			out = append(out, "outage")
		case u.Back > 0:
			out = append(out, "back")
		case u.Err != nil:
			out = append(out, "err")
		}
	}
	return out
}

func TestFollowReplaysAndEnds(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			r := parkedRun(t, st)
			ch := Follow(ctx, st, r.ID, FollowOptions{})
			// The log so far, with the open question after its event; then what happens next, to the end.
			var got []Update
			for len(got) < 3 {
				got = append(got, <-ch)
			}
			if _, _, err := escalation.Resolve(ctx, st, noQueue{}, escalation.Request{RunID: r.ID, Type: jobs.ResolveChoose, Key: "B", By: "ann"}); err != nil {
				t.Fatal(err)
			}
			complete(t, st, r.ID)
			got = append(got, collect(t, ch)...)
			want := "run_started escalation question e1 resolution run_completed"
			if s := join(kinds(got)); s != want {
				t.Fatalf("updates %q, want %q", s, want)
			}
			// Replayed once the question is answered, the log asks nothing.
			again := collect(t, Follow(ctx, st, r.ID, FollowOptions{}))
			if s := join(kinds(again)); s != "run_started escalation resolution run_completed" {
				t.Fatalf("replay %q", s)
			}
		})
	}
}

// A follower that starts after the question was asked (orch resume) is shown it first, and not twice.
func TestFollowFromTheEndShowsTheOpenQuestion(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := parkedRun(t, st)
			last, err := st.LastEventID(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			ch := Follow(ctx, st, r.ID, FollowOptions{From: last})
			first, second := <-ch, <-ch
			if first.Event == nil || first.Event.ID != r.Escalations[0].EventRef || second.Question == nil {
				t.Fatalf("first updates: %+v %+v", first, second)
			}
			if b := first.Event.Body.(jobs.EscalationEvent); b.Question != "Which cache?" || b.Title != "Cache" || len(b.Options) != 2 {
				t.Fatalf("question event %+v", b)
			}
			complete(t, st, r.ID)
			if s := join(kinds(collect(t, ch))); s != "run_completed" {
				t.Fatalf("then %q", s)
			}
			// From before the question, its own event is replayed and the question follows it.
			ch = Follow(ctx, st, r.ID, FollowOptions{From: "0"})
			if s := join(kinds(collect(t, ch))); s != "run_started escalation run_completed" {
				t.Fatalf("from the start %q", s) // completed: the question is no longer open
			}
		})
	}
}

type noQueue struct{}

func (noQueue) Resume(ctx context.Context, runID, escID string) error { return nil }

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

// flakyLog fails its reads while down is set.
type flakyLog struct {
	Log
	mu   sync.Mutex
	down int // reads left to fail
}

var errDown = errors.New("dial tcp: connection refused")

func (f *flakyLog) fail() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down > 0 {
		f.down--
		return true
	}
	return false
}

func (f *flakyLog) Events(ctx context.Context, runID, after string, block time.Duration) ([]jobs.Event, error) {
	if f.fail() {
		return nil, errDown
	}
	return f.Log.Events(ctx, runID, after, block)
}

func TestFollowRidesOutAnOutage(t *testing.T) {
	st := stores(t)["miniredis"]
	r := parkedRun(t, st)
	complete(t, st, r.ID)
	log := &flakyLog{Log: st, down: 3}
	got := collect(t, Follow(context.Background(), log, r.ID, FollowOptions{Retry: time.Millisecond}))
	if s := join(kinds(got)); s != "outage back run_started escalation run_completed" {
		t.Fatalf("updates %q", s)
	}
	if !errors.Is(got[0].Outage, errDown) {
		t.Fatalf("outage %v", got[0].Outage)
	}
	// A store that stays away longer than the patience ends the updates with an error that says so.
	log = &flakyLog{Log: st, down: 1 << 30}
	got = collect(t, Follow(context.Background(), log, r.ID, FollowOptions{Retry: time.Millisecond, Patience: 20 * time.Millisecond}))
	last := got[len(got)-1]
	if s := join(kinds(got)); s != "outage err" || !errors.Is(last.Err, errDown) || last.Err.Error() != "redis did not come back in 20ms: "+errDown.Error() {
		t.Fatalf("updates %q, last %v", s, last.Err)
	}
	// No such run: said at once.
	got = collect(t, Follow(context.Background(), st, "r-nosuchrun0", FollowOptions{}))
	if len(got) != 1 || !errors.Is(got[0].Err, jobs.ErrRunNotFound) {
		t.Fatalf("unknown run: %+v", got)
	}
}
