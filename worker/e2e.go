package worker

import (
	"fmt"
	"strings"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// A milestone with a verification section ends with an end-to-end phase: the agent runs the verification; a failure
// goes to a fix attempt (which gets every failure so far), then to the verification again. e2eStops is asked at each
// failure whether to go on: it stops, and asks a person, when the fixes run out or do not converge — the same failure
// again, or failures that alternate ("fix A breaks B, fix B breaks A": failure n like failure n-2, unlike n-1).

// e2eStops records a failed verification and, when the phase should stop (e2eVerdict), opens the escalation that
// says why and returns true. Otherwise it hands the failure to the fix task and returns false.
func (w *Worker) e2eStops(r *jobs.Run, t *jobs.Task, c *jobs.Change, failure string, now time.Time) bool {
	failure = bound(safetext.Redact(failure))
	r.E2E.Failures++
	r.E2E.Errors = append(r.E2E.Errors, failure)
	spec := e2eVerdict(r.E2E.Errors, r.Options.E2EFixAttempts(), w.threshold(r))
	if spec == nil {
		if fix := r.Task(jobs.FixTaskID); fix != nil {
			fix.Guidance = append(fix.Guidance, fmt.Sprintf("The end-to-end verification failed (verification %d):\n%s",
				r.E2E.Failures, failure))
		}
		return false
	}
	spec.MaxPerTask = r.Options.Escalation.MaxPerTask
	c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.LoopDetectedEvent{Failures: r.E2E.Failures, Similarity: spec.Similarity,
		Similar: spec.Trigger == jobs.TriggerOscillate, LoopKind: spec.Trigger}))
	escalation.Escalate(r, t, c, []escalation.Spec{*spec}, now)
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
