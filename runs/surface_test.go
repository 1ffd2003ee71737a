package runs

import (
	"context"
	"errors"
	"testing"

	"github.com/orchrun/orch/jobs"
)

// recorder is a surface that notes which method showed each event.
type recorder struct{ calls []string }

func (r *recorder) Progress(_ context.Context, ev jobs.Event) error {
	r.calls = append(r.calls, "progress "+ev.Type())
	return nil
}

func (r *recorder) Ask(_ context.Context, ev jobs.Event, q jobs.EscalationEvent) error {
	r.calls = append(r.calls, "ask "+ev.Type()+" "+q.EscalationID)
	return nil
}

func (r *recorder) Answered(_ context.Context, ev jobs.Event, a jobs.ResolutionEvent) error {
	r.calls = append(r.calls, "answered "+ev.Type()+" "+a.EscalationID)
	return nil
}

func (r *recorder) Paused(_ context.Context, ev jobs.Event) error {
	r.calls = append(r.calls, "paused "+ev.Type())
	return nil
}

func (r *recorder) Ended(_ context.Context, ev jobs.Event) error {
	r.calls = append(r.calls, "ended "+ev.Type())
	return nil
}

// Every kind orch writes reaches exactly one method of a surface, and the right one: a question, its answer, a pause
// and the three ends have methods of their own; everything else is progress.
func TestPresentShowsEveryKindOnce(t *testing.T) {
	own := map[string]string{
		"escalation":    "ask escalation e1",
		"resolution":    "answered resolution e1",
		"run_paused":    "paused run_paused",
		"run_completed": "ended run_completed",
		"run_failed":    "ended run_failed",
		"run_aborted":   "ended run_aborted",
	}
	kinds := jobs.Kinds()
	if len(kinds) < 30 {
		t.Fatalf("jobs.Kinds returned %d kinds", len(kinds))
	}
	for _, b := range kinds {
		switch v := b.(type) {
		case jobs.EscalationEvent:
			v.EscalationID = "e1"
			b = v
		case jobs.ResolutionEvent:
			v.EscalationID = "e1"
			b = v
		}
		r := &recorder{}
		ev := jobs.NewEvent("r-1", "1.1", b)
		if err := Present(context.Background(), r, ev); err != nil {
			t.Fatal(err)
		}
		want, ok := own[b.Kind()]
		if !ok {
			want = "progress " + b.Kind()
		}
		if len(r.calls) != 1 || r.calls[0] != want {
			t.Errorf("%s: calls %q, want [%q]", b.Kind(), r.calls, want)
		}
		if ends := Ends(ev); ends != (want == "ended "+b.Kind()) {
			t.Errorf("Ends(%s) = %v", b.Kind(), ends)
		}
	}
}

type failing struct{ recorder }

var errShown = errors.New("the surface could not show it")

func (failing) Ended(context.Context, jobs.Event) error { return errShown }

func TestPresentReturnsTheSurfacesError(t *testing.T) {
	ev := jobs.NewEvent("r-1", "", jobs.RunFailedEvent{Reason: "x"})
	if err := Present(context.Background(), &failing{}, ev); !errors.Is(err, errShown) {
		t.Fatalf("Present = %v, want the surface's error", err)
	}
	if Ends(jobs.Event{RunID: "r-1"}) {
		t.Error("an event with no body ends its run")
	}
}
