package worker

import (
	"fmt"
	"strings"

	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// The decisions of a step, made apart from applying them: what an attempt's outcome means for its task (verdict),
// what a question's timeout does (timeoutVerdict), and whether a milestone's end-to-end phase should stop
// (e2eVerdict). They read the task's state, the outcome and the run's policy, and do no I/O: settle and
// handleTimeout apply them inside the transaction that saves the run, and the tests table them from the seeds'
// scenarios.

// verdictKind is what happens to a task after an attempt.
type verdictKind int

const (
	vComplete     verdictKind = iota // the task is done: the pipeline moves on
	vHold                            // the attempt completed, but triggers hold it for a person
	vEscalate                        // a person must decide (the agent asked, the loop stopped, an error no retry fixes…)
	vRetry                           // another attempt, with the brain's guidance, after a backoff
	vRoute                           // the task failed and the pipeline says where failures go: no person needed
	vPause                           // the brain could not judge: the run stops with the output saved for later
	vSandboxError                    // orch could not run the agent: a configuration escalation
)

// facts is what a verdict is made from: the task's state before the attempt, what the attempt produced and what the
// brain said of it, and the run's policy.
type facts struct {
	taskID      string
	failures    int // failed attempts since a person last reset the counter, before this one
	maxAttempts int
	threshold   float64 // error similarity from which two failures count as the same

	interp     brain.Interpretation
	decision   *brain.Decision // the brain's retry/escalate advice, for a failure
	similarity float64         // mean similarity of the recent errors, this one included
	secrets    []string        // kinds of secret found in the agent's output
	tampered   []string        // what the agent changed that orch's git would have trusted
	leaked     []string        // kinds of secret found in what the agent's work adds to the repository
	custom     []escalation.Spec
	output     string // what the agent said
	// effects are the calls with effects beyond the worktree that ran with a person's leave (jobs.Pending.Effects).
	effects     []string
	sandboxErr  string // orch could not run the agent (redacted)
	inputErr    bool   // …because of what it was to be given, not because anything is misconfigured
	unavailable bool   // the brain could not judge
	// routed reports whether the pipeline sends a failure of the task somewhere (asked only for a failure that stops).
	routed func() bool
}

// verdict is what happens to the task.
type verdict struct {
	kind verdictKind
	// failed is set when the attempt counts as a failure against the cap.
	failed bool
	// status is the attempt's status as recorded: the brain's interpretation, "held" or "error".
	status string
	// specs are the questions to ask (vEscalate, vHold, vSandboxError), in no particular order: escalation.Escalate
	// asks the most urgent first.
	specs []escalation.Spec
	// loop is set when the loop detector stopped the task.
	loop *jobs.LoopDetectedEvent
	// reason and guidance are the brain's, for a retry.
	reason, guidance string
}

// judgeAttempt decides what an attempt's outcome means for its task.
func judgeAttempt(f facts) verdict {
	switch {
	case f.unavailable:
		return verdict{kind: vPause}
	case f.sandboxErr != "" && f.inputErr:
		// Not a configuration error: the configuration is not what is wrong, and a person told to fix it would look in
		// vain. The same input fails the same way on every attempt, so this is asked once, as a permanent failure.
		return verdict{kind: vSandboxError, status: "error", specs: []escalation.Spec{{Trigger: jobs.TriggerPermanent,
			Source: "orch", Error: f.sandboxErr,
			Question: fmt.Sprintf("Task %s cannot be given to the agent: %s. Another attempt would fail the same way: "+
				"abort the run (and start it again with an agent that reads its prompt from standard input), or force "+
				"the task to continue if its work is done.", f.taskID, f.sandboxErr)}}}
	case f.sandboxErr != "":
		return verdict{kind: vSandboxError, status: "error", specs: []escalation.Spec{{Trigger: jobs.TriggerConfig,
			Source: "orch", Error: f.sandboxErr,
			Question: fmt.Sprintf("Task %s could not run: %s. Fix the configuration, then resume.", f.taskID, f.sandboxErr)}}}
	}
	// Triggers that stand beside the brain's judgement: they are asked first, by priority.
	extra := beside(f)
	v := verdict{status: string(f.interp.Status)}
	switch f.interp.Status {
	case brain.StatusCompleted:
		if len(extra) == 0 {
			v.kind = vComplete
			return v
		}
		for i := range extra {
			extra[i].Held = true
		}
		v.kind, v.status, v.specs = vHold, "held", extra
	case brain.StatusNeedsHelp:
		v.kind = vEscalate
		if f.interp.Unclear() {
			v.specs = append(extra, escalation.UnclearSpec(f.taskID, f.output, f.effects))
			break
		}
		v.specs = append(extra, escalation.Spec{Trigger: jobs.TriggerNeedsHelp, Source: "agent", Question: f.interp.Question,
			Options: f.interp.Options, Recommendation: f.interp.Recommendation, Output: f.output})
	default:
		v = judgeFailure(f, extra)
	}
	return v
}

// beside lists the triggers an attempt raised whatever the brain made of it: a secret in the output, custom patterns.
func beside(f facts) []escalation.Spec {
	var extra []escalation.Spec
	if len(f.secrets) > 0 {
		extra = append(extra, escalation.Spec{Trigger: jobs.TriggerSecurity, Source: "orch",
			Question: fmt.Sprintf("The agent's output on task %s contains what looks like a secret (%s). It was redacted "+
				"everywhere orch keeps or shows it. Rotate the credential, then decide whether to continue.", f.taskID,
				strings.Join(f.secrets, ", ")),
			Output: f.output})
	}
	if len(f.tampered) > 0 {
		extra = append(extra, escalation.Spec{Trigger: jobs.TriggerSecurity, Source: "orch",
			Question: fmt.Sprintf("On task %s the agent changed git's files outside its own work, where orch or your own "+
				"git would have followed them:\n- %s\nNothing of it was used: the agent's git was made anew, orch's "+
				"own is untouched, and the task's files are kept in the run's worktree, not committed. Look at what "+
				"the agent did, then decide whether to continue.", f.taskID, strings.Join(f.tampered, "\n- ")),
			Output: f.output})
	}
	if len(f.leaked) > 0 {
		extra = append(extra, escalation.Spec{Trigger: jobs.TriggerSecurity, Source: "orch",
			Question: fmt.Sprintf("The work of task %s adds what looks like a secret to the repository (%s). Nothing "+
				"was committed or pushed. Have it removed (and rotate the credential if it is real), then decide "+
				"whether to continue.", f.taskID, strings.Join(f.leaked, ", ")),
			Output: f.output})
	}
	return append(extra, f.custom...)
}

// judgeFailure decides about a failed attempt: route it where the pipeline says, stop at the cap or a loop the brain
// saw, escalate what the brain says no retry fixes, or retry.
func judgeFailure(f facts, extra []escalation.Spec) verdict {
	v := verdict{failed: true, status: string(brain.StatusFailed)}
	failures := f.failures + 1
	errText := f.interp.Error
	similar := f.similarity >= f.threshold
	brainEscalates := f.decision != nil && f.decision.Decision == brain.Escalate
	brainLoop := brainEscalates && !f.decision.Permanent && similar
	atCap := failures >= f.maxAttempts
	if (atCap || brainEscalates) && len(extra) == 0 && f.routed != nil && f.routed() {
		v.kind = vRoute
		return v
	}
	switch {
	case atCap || brainLoop:
		v.loop = &jobs.LoopDetectedEvent{Failures: failures, Similarity: f.similarity, Similar: similar}
		v.kind = vEscalate
		v.specs = append(extra, loopQuestion(f, failures, similar, atCap))
	case brainEscalates:
		trig := jobs.TriggerBrain
		if f.decision.Permanent {
			trig = jobs.TriggerPermanent
		}
		v.kind = vEscalate
		v.specs = append(extra, escalation.Spec{Trigger: trig, Source: "brain",
			Question: fmt.Sprintf("Task %s failed and should not be retried as is: %s", f.taskID, f.decision.Reason),
			Error:    errText, Similarity: f.similarity, Output: f.output})
	case len(extra) > 0:
		v.kind, v.specs = vEscalate, extra
	case len(f.effects) > 0:
		// Another attempt may do again what a person let through and orch cannot take back: that is theirs to say.
		v.kind = vEscalate
		v.specs = []escalation.Spec{{Trigger: jobs.TriggerBrain, Source: "orch", Error: errText, Output: f.output,
			Question: fmt.Sprintf("Task %s failed after running what a person let through, with effects beyond its "+
				"worktree:\n%s\nAnother attempt may run it again. Retry to run the task again anyway (words you give "+
				"guide it), force it on if its work is done, or abort.", f.taskID, escalation.Bullets(f.effects))}}
	default:
		v.kind = vRetry
		if f.decision != nil {
			v.reason, v.guidance = f.decision.Reason, f.decision.GuidanceForRetry
		}
	}
	return v
}

// loopQuestion is the question of a task that failed failures times, at its attempt cap or in a loop the brain saw
// before the cap did.
func loopQuestion(f facts, failures int, similar, atCap bool) escalation.Spec {
	q := fmt.Sprintf("Task %s failed %d times", f.taskID, failures)
	if similar {
		q += " with similar errors"
	}
	q += fmt.Sprintf(" (error similarity %.0f%%). Please investigate and provide guidance.", 100*f.similarity)
	if f.decision != nil && f.decision.Reason != "" {
		q += "\nBrain: " + f.decision.Reason
	}
	trig, src := jobs.TriggerAttemptCap, "orch"
	if !atCap {
		trig, src = jobs.TriggerBrain, "brain"
	}
	return escalation.Spec{Trigger: trig, Source: src, Question: q, Error: f.interp.Error, Similarity: f.similarity,
		Output: f.output}
}

// e2eVerdict decides whether a milestone's end-to-end phase stops after failed verification n of its errs (oldest
// first, this one last): the same failure again, or failures that alternate ("fix A breaks B, fix B breaks A":
// failure n like failure n-2, unlike n-1), or the fixes ran out. It returns the question to ask, or nil to hand the
// failure to the fix task.
func e2eVerdict(errs []string, limit int, threshold float64) *escalation.Spec {
	n := len(errs)
	spec := escalation.Spec{Source: "orch", Error: errs[n-1]}
	switch {
	case n >= 3 && brain.ErrorSimilarity(errs[n-1], errs[n-3]) >= threshold:
		spec.Similarity = brain.ErrorSimilarity(errs[n-1], errs[n-3])
		spec.Trigger = jobs.TriggerOscillate
		if brain.ErrorSimilarity(errs[n-1], errs[n-2]) >= threshold {
			spec.Question = fmt.Sprintf("The end-to-end verification failed %d times with the same failure; the fixes do "+
				"not help. Please investigate and give guidance.\n\n%s", n, sideBySide(errs[n-3:]))
		} else {
			spec.Question = fmt.Sprintf("End-to-end fix oscillation: the fixes alternate between two failures (fix A "+
				"breaks B, fix B breaks A), after %d verifications. Please decide how both can pass.\n\n%s", n, sideBySide(errs[n-3:]))
		}
	case n > limit:
		spec.Trigger = jobs.TriggerE2E
		spec.Question = fmt.Sprintf("The end-to-end verification still fails after %d fix attempts (the limit). Please "+
			"investigate and give guidance.\n\n%s", limit, sideBySide(lastN(errs, 3)))
	default:
		return nil
	}
	return &spec
}

// timeoutVerdict is what a question's n-th timeout does.
type timeoutVerdict struct {
	// resolve, when set, answers the question: its default choice, or (a gate with no default) asking it again.
	resolve *escalation.Request
	// ownLimit is set for a question with a time limit of its own (a gate's timeout attribute).
	ownLimit bool
	// Otherwise the timeout is recorded as TIMEOUT n of reminders — never a denial — and next says what follows:
	// "reminding" (another timeout is scheduled), "still waiting", or "aborting the run".
	reminders int
	next      string
	remind    bool // schedule the next timeout
	abort     bool
}

// judgeTimeout decides about the n-th timeout of question e under the run's policy.
func judgeTimeout(e *jobs.Escalation, policy jobs.EscalationPolicy, n int) timeoutVerdict {
	if e.Timeout > 0 {
		// A question with its own time limit follows the pipeline's rule: its default choice, or TIMEOUT, which asks
		// the gate again as far as its retry policy allows (attractor spec §4.6, §6.5).
		req := &escalation.Request{Type: jobs.ResolveRetry}
		if e.Default != "" {
			req.Type, req.Key = jobs.ResolveChoose, e.Default
		}
		return timeoutVerdict{resolve: req, ownLimit: true}
	}
	def := escalation.QuestionFor(e).Default
	if e.Trigger == jobs.TriggerGate {
		def = e.Default // a gate's default is its human.default_choice, not a recommendation
	}
	if policy.TimeoutDefault && def != "" {
		return timeoutVerdict{resolve: &escalation.Request{Type: jobs.ResolveChoose, Key: def}}
	}
	v := timeoutVerdict{reminders: policy.Reminders}
	if v.reminders <= 0 {
		v.reminders = DefaultReminders
	}
	switch {
	case n < v.reminders:
		v.next, v.remind = "reminding", true
	case policy.Fallback == "abort":
		v.next, v.abort = "aborting the run", true
	default:
		v.next = "still waiting"
	}
	return v
}
