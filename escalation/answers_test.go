package escalation

import (
	"testing"

	"github.com/orchrun/orch/jobs"
)

func TestAnswersOfAQuestion(t *testing.T) {
	opts := []jobs.Option{{Key: "A", Label: "Use Postgres"}, {Key: "B", Label: "Use SQLite"}}
	for _, c := range []struct {
		name                 string
		e                    jobs.Escalation
		options              int
		retry, resume, force bool
	}{
		{"the agent asked", jobs.Escalation{Trigger: jobs.TriggerNeedsHelp, Options: opts}, 2, false, false, false},
		{"Claude's own question", jobs.Escalation{Trigger: jobs.TriggerBrain, Call: true, Options: opts}, 2, false, false, false},
		{"an approval", jobs.Escalation{Trigger: jobs.TriggerApproval, Call: true, Options: opts}, 2, false, false, false},
		{"a gate", jobs.Escalation{Trigger: jobs.TriggerGate, Options: opts}, 2, false, false, false},
		{"a conversation", jobs.Escalation{Trigger: jobs.TriggerChat, Options: opts}, 2, true, false, false},
		{"a loop", jobs.Escalation{Trigger: jobs.TriggerAttemptCap, Options: opts}, 2, true, true, true},
		{"the brain escalated a failure", jobs.Escalation{Trigger: jobs.TriggerBrain}, 0, true, true, true},
		{"a leaked secret", jobs.Escalation{Trigger: jobs.TriggerSecurity, Options: opts}, 0, true, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := AnswersOf(&c.e)
			if len(a.Options) != c.options || a.Retry != c.retry || a.Resume != c.resume || a.Force != c.force {
				t.Fatalf("AnswersOf = %+v, want %d options, retry %v, resume %v, force %v", a, c.options, c.retry, c.resume, c.force)
			}
			for typ, want := range map[jobs.ResolutionType]bool{jobs.ResolveChoose: c.options > 0, jobs.ResolveRetry: c.retry,
				jobs.ResolveResume: c.resume, jobs.ResolveForce: c.force, jobs.ResolveAnswer: true, jobs.ResolveAbort: true} {
				if got := a.Offers(typ); got != want {
					t.Errorf("Offers(%s) = %v, want %v", typ, got, want)
				}
			}
		})
	}
}
