package escalation

import (
	"strings"
	"testing"

	"github.com/orchrun/orch/jobs"
)

func TestAnUnclearAttemptIsAQuestionAboutIt(t *testing.T) {
	long := strings.Repeat("checked the staging logs line by line\n", 100) + "Pushed the tag; the pipeline is running."
	s := UnclearSpec("2.1", long, nil)
	if !s.Unclear || len(s.Keyed) != 2 || s.Keyed[0].Key != UnclearAccept || s.Keyed[1].Key != UnclearRetry {
		t.Fatalf("spec = %+v", s)
	}
	// The agent's last words are in the question, quoted and bounded; the whole output stays in the context.
	if !strings.Contains(s.Question, "> Pushed the tag; the pipeline is running.") || len(s.Question) > maxLastWords+600 {
		t.Fatalf("question (%d bytes):\n%s", len(s.Question), s.Question)
	}
	if s.Output != long {
		t.Fatal("the output is not kept for the context")
	}
	effects := []string{"`Bash: git push --force origin main` (allowed for this run: Bash(git push:*))"}
	if q := UnclearSpec("2.1", "Pushed.", effects).Question; !strings.Contains(q, "may run again what a person let through") ||
		!strings.Contains(q, "- "+effects[0]) {
		t.Fatalf("the question does not name what running again would repeat:\n%s", q)
	}
	if q := UnclearSpec("2.1", "  ", nil).Question; !strings.Contains(q, "> (nothing)") {
		t.Fatalf("an empty answer: %s", q)
	}
	e := &jobs.Escalation{Trigger: jobs.TriggerNeedsHelp, Unclear: true, Options: s.Keyed}
	a := AnswersOf(e)
	if len(a.Options) != 2 || !a.Retry || a.Resume || a.Force {
		t.Fatalf("answers = %+v: want its two options and Retry", a)
	}
	for _, c := range []struct {
		res     jobs.Resolution
		accepts bool
	}{
		{jobs.Resolution{Type: jobs.ResolveChoose, Key: UnclearAccept}, true},
		{jobs.Resolution{Type: jobs.ResolveResume}, true},
		{jobs.Resolution{Type: jobs.ResolveChoose, Key: UnclearRetry}, false},
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: "the tests were not run: run them"}, false},
		{jobs.Resolution{Type: jobs.ResolveRetry}, false},
	} {
		if got := Accepts(e, &c.res); got != c.accepts {
			t.Errorf("Accepts(%+v) = %v, want %v", c.res, got, c.accepts)
		}
	}
	if g := GuidanceFor(e, &jobs.Resolution{Type: jobs.ResolveChoose, Key: UnclearRetry}); g != "" {
		t.Errorf("running again as it was gives the agent guidance %q", g)
	}
	if g := GuidanceFor(e, &jobs.Resolution{Type: jobs.ResolveAnswer, Text: "run the tests"}); g != "run the tests" {
		t.Errorf("words are not the next attempt's guidance: %q", g)
	}
	held := &jobs.Escalation{Trigger: jobs.TriggerSecurity, Held: true}
	if !Accepts(held, &jobs.Resolution{Type: jobs.ResolveAnswer, Text: "fine"}) || Accepts(held, &jobs.Resolution{Type: jobs.ResolveRetry}) {
		t.Error("a held attempt: any answer but a retry accepts it")
	}
}
