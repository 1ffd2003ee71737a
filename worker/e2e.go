package worker

import (
	"fmt"
	"strings"
	"time"

	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// A milestone with a verification section ends with an end-to-end phase: the agent runs the verification; a failure
// goes to a fix attempt (which gets every failure so far), then to the verification again. e2eStops is asked at each
// failure whether to go on: it stops, and asks a person, when the fixes run out or do not converge — the same failure
// again, or failures that alternate ("fix A breaks B, fix B breaks A": failure n like failure n-2, unlike n-1).

// e2eStops records a failed verification and, when the phase should stop, opens the escalation that says why and
// returns true. Otherwise it hands the failure to the fix task and returns false.
func (w *Worker) e2eStops(r *jobs.Run, t *jobs.Task, c *jobs.Change, failure string, now time.Time) bool {
	failure = bound(escalation.Redact(failure))
	r.E2E.Failures++
	r.E2E.Errors = append(r.E2E.Errors, failure)
	errs := r.E2E.Errors
	n, limit := r.E2E.Failures, r.Options.E2EFixAttempts()
	th := w.cfg.SimilarityThreshold
	spec := escalation.Spec{Source: "orch", Error: failure, MaxPerTask: r.Options.Escalation.MaxPerTask}
	switch {
	case len(errs) >= 3 && brain.Similarity(errs[len(errs)-1], errs[len(errs)-3]) >= th:
		last, prev := errs[len(errs)-1], errs[len(errs)-2]
		spec.Similarity = brain.Similarity(last, errs[len(errs)-3])
		spec.Trigger = jobs.TriggerOscillate
		if brain.Similarity(last, prev) >= th {
			spec.Question = fmt.Sprintf("The end-to-end verification failed %d times with the same failure; the fixes do "+
				"not help. Please investigate and give guidance.\n\n%s", n, sideBySide(errs[len(errs)-3:]))
		} else {
			spec.Question = fmt.Sprintf("End-to-end fix oscillation: the fixes alternate between two failures (fix A "+
				"breaks B, fix B breaks A), after %d verifications. Please decide how both can pass.\n\n%s", n, sideBySide(errs[len(errs)-3:]))
		}
	case n > limit:
		spec.Trigger = jobs.TriggerE2E
		spec.Question = fmt.Sprintf("The end-to-end verification still fails after %d fix attempts (the limit). Please "+
			"investigate and give guidance.\n\n%s", limit, sideBySide(lastN(errs, 3)))
	default:
		if fix := r.Task(jobs.FixTaskID); fix != nil {
			fix.Guidance = append(fix.Guidance, fmt.Sprintf("The end-to-end verification failed (verification %d):\n%s", n, failure))
		}
		return false
	}
	c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.LoopDetectedEvent{Failures: n, Similarity: spec.Similarity,
		Similar: spec.Trigger == jobs.TriggerOscillate, LoopKind: spec.Trigger}))
	escalation.Escalate(r, t, c, []escalation.Spec{spec}, now)
	return true
}

// sideBySide shows failures one after the other, numbered, so that a person sees which alternate.
func sideBySide(errs []string) string {
	var b strings.Builder
	for i, e := range errs {
		fmt.Fprintf(&b, "--- failure %d of the last %d ---\n%s\n", i+1, len(errs), firstLines(e, 8))
	}
	return strings.TrimRight(b.String(), "\n")
}
