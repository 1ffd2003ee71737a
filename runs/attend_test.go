package runs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// scripted answers questions from a list, then blocks until its question is settled elsewhere.
type scripted struct {
	answers []escalation.Answer
	asked   chan escalation.Question
}

func (s *scripted) Ask(ctx context.Context, q escalation.Question) (escalation.Answer, error) {
	if s.asked != nil {
		s.asked <- q
	}
	if len(s.answers) == 0 {
		<-ctx.Done()
		return escalation.Answer{}, ctx.Err()
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	return a, nil
}

func attendant(st *store.Store, iv escalation.Interviewer, notes *[]string) *Attendant {
	return &Attendant{Store: st, Queue: noQueue{}, Interviewer: iv, By: "ann", Via: "console",
		Note: func(s string) { *notes = append(*notes, s) }}
}

// attend runs Attend over the run's updates with the run completing once its question is answered.
func attend(t *testing.T, a *Attendant, id string) (jobs.RunStatus, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return a.Attend(ctx, Follow(ctx, a.Store, id, FollowOptions{}))
}

func TestAttendAnswers(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			r := parkedRun(t, st)
			var notes []string
			// An answer that fits no option of a keyed question is said so, and the question is asked again.
			iv := &scripted{answers: []escalation.Answer{{Value: "Z", Selected: &jobs.Option{Key: "Z"}},
				{Value: "B", Selected: &jobs.Option{Key: "B"}}}}
			a := attendant(st, iv, &notes)
			done := make(chan struct{})
			go func() {
				defer close(done)
				// The run completes once it is answered (the worker's part, here by hand).
				for range 200 {
					got, _ := st.Get(context.Background(), r.ID)
					if e := got.Escalation("e1"); e.Resolution != nil {
						complete(t, st, r.ID)
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			}()
			status, err := attend(t, a, r.ID)
			<-done
			got, _ := st.Get(context.Background(), r.ID)
			res := got.Escalation("e1").Resolution
			if err != nil || status != jobs.RunCompleted || res == nil || res.Key != "B" || res.By != "ann" || res.Via != "console" {
				t.Fatalf("status %s, err %v, resolution %+v", status, err, res)
			}
			if len(notes) != 1 || notes[0] == "" {
				t.Fatalf("notes %q", notes)
			}
		})
	}
}

func TestAttendParksWhenNobodyAnswers(t *testing.T) {
	st := stores(t)["miniredis"]
	r := parkedRun(t, st)
	var notes []string
	status, err := attend(t, attendant(st, &scripted{answers: []escalation.Answer{{Value: escalation.AnswerSkipped}}}, &notes), r.ID)
	if err != nil || status != jobs.RunParked {
		t.Fatalf("status %s, err %v", status, err)
	}
	if got, _ := st.Get(context.Background(), r.ID); got.OpenEscalation() == nil {
		t.Fatal("the question was answered")
	}
}

// Auto-approval answers the agent's question but declines a failure: the run ends as failed, audited once.
func TestAttendAutoApproval(t *testing.T) {
	st := stores(t)["miniredis"]
	r := parkedRun(t, st)
	_, err := st.Update(context.Background(), r.ID, func(r *jobs.Run, c *jobs.Change) error {
		r.Escalations[0].Trigger = jobs.TriggerAttemptCap
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	iv := &escalation.Recording{Inner: escalation.AutoApprove{}, Store: st, By: "ann", Via: "auto-approve"}
	status, err := attend(t, attendant(st, iv, &notes), r.ID)
	got, _ := st.Get(context.Background(), r.ID)
	if err != nil || status != jobs.RunFailed || got.Status != jobs.RunFailed || got.Escalations[0].Resolution.Type != jobs.ResolveDecline {
		t.Fatalf("status %s, err %v, run %s", status, err, got.Status)
	}
	audit, _ := st.Audit(context.Background(), r.ID)
	var actions []string
	for _, e := range audit {
		actions = append(actions, e.Action)
	}
	if join(actions) != "escalated declined" {
		t.Fatalf("audit %q", actions)
	}
}

// A question answered elsewhere (Slack, another terminal) stops being asked here.
func TestAttendAnsweredElsewhere(t *testing.T) {
	st := stores(t)["miniredis"]
	r := parkedRun(t, st)
	iv := &scripted{asked: make(chan escalation.Question, 1)}
	var notes []string
	a := attendant(st, iv, &notes)
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-iv.asked
		_, _, err := escalation.Resolve(context.Background(), st, noQueue{}, escalation.Request{RunID: r.ID,
			Type: jobs.ResolveAnswer, Text: "use Redis", By: "bob", Via: "slack"})
		if err != nil {
			t.Error(err)
		}
		complete(t, st, r.ID)
	}()
	status, err := attend(t, a, r.ID)
	<-done
	if err != nil || status != jobs.RunCompleted {
		t.Fatalf("status %s, err %v", status, err)
	}
	got, _ := st.Get(context.Background(), r.ID)
	if res := got.Escalations[0].Resolution; res.By != "bob" {
		t.Fatalf("resolution %+v", res)
	}
}

func TestAttendEndsOnAStoreError(t *testing.T) {
	ch := make(chan Update, 1)
	boom := errors.New("redis did not come back in 2m0s")
	ch <- Update{Err: boom}
	var notes []string
	if _, err := attendant(nil, &scripted{}, &notes).Attend(context.Background(), ch); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
}

func TestOverdueWait(t *testing.T) {
	now := time.Now()
	run := &jobs.Run{Options: jobs.Options{Escalation: jobs.EscalationPolicy{Timeout: time.Hour}}}
	if d := overdueWait(run, &jobs.Escalation{CreatedAt: now.Add(-2 * time.Hour)}, now); d == 0 {
		t.Fatal("an overdue question was asked at once")
	}
	if d := overdueWait(run, &jobs.Escalation{CreatedAt: now.Add(-time.Minute)}, now); d != 0 {
		t.Fatalf("a fresh question waited %v", d)
	}
	if d := overdueWait(&jobs.Run{}, &jobs.Escalation{CreatedAt: now.Add(-48 * time.Hour)}, now); d != 0 {
		t.Fatalf("a question without a timeout waited %v", d)
	}
}

// A question answers itself for a headless run only when its timer takes what comes by itself, and soon.
func TestAnswersItself(t *testing.T) {
	now := time.Now()
	q := func(trigger jobs.Trigger, wait time.Duration, def string) *jobs.Escalation {
		return &jobs.Escalation{Trigger: trigger, CreatedAt: now, Timeout: wait, Default: def}
	}
	for _, c := range []struct {
		name string
		e    *jobs.Escalation
		want bool
	}{
		{"a limit that resets in a minute", q(jobs.TriggerLimit, time.Minute, "go"), true},
		{"a limit that resets in three hours", q(jobs.TriggerLimit, 3*time.Hour, "go"), false},
		{"a team's next day, in ten minutes", q(jobs.TriggerBudget, 10*time.Minute, jobs.BudgetWait), true},
		{"a run's budget, which waits for a person", q(jobs.TriggerBudget, 0, ""), false},
		{"an agent's question with a default on a timer", q(jobs.TriggerNeedsHelp, time.Minute, "B"), false},
	} {
		if got := answersItself(c.e, now); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
