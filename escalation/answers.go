package escalation

import "github.com/orchrun/orch/jobs"

// Answers are the answers a question really has, which is what every surface offers for it and nothing more. Words
// (free text) and an abort answer every question; the rest depend on what the question is about.
type Answers struct {
	// Options are the question's own choices; a security question has none to offer (rotate the secret first).
	Options []jobs.Option
	// Retry runs the task once more with its failure count kept; Resume goes on with the count reset; Force marks the
	// task done despite its error. Each means something only where a task failed: not for an agent's question (it is
	// answered, not retried), a human gate, a tool call waiting for approval or a question the agent paused at. A
	// conversation takes Retry (one more turn of the agent) and neither of the others.
	Retry, Resume, Force bool
}

// AnswersOf is what a question can be answered with.
func AnswersOf(e *jobs.Escalation) Answers {
	var a Answers
	if e.Trigger != jobs.TriggerSecurity {
		a.Options = e.Options
	}
	switch {
	case e.Unclear:
		a.Retry = true // the same as its option B, for the surfaces that show Retry beside the options
	case e.Call, e.Trigger == jobs.TriggerNeedsHelp, e.Trigger == jobs.TriggerGate, e.Trigger == jobs.TriggerApproval,
		e.Trigger == jobs.TriggerBudget, e.Trigger == jobs.TriggerLimit:
		// A budget or a limit is answered by its own options (extend, finish, wait): another try is what they stop.
	case e.Trigger == jobs.TriggerChat:
		a.Retry = true
	default:
		a.Retry, a.Resume, a.Force = true, true, true
	}
	return a
}

// Offers reports whether the question takes an answer of type t.
func (a Answers) Offers(t jobs.ResolutionType) bool {
	switch t {
	case jobs.ResolveChoose:
		return len(a.Options) > 0
	case jobs.ResolveRetry:
		return a.Retry
	case jobs.ResolveResume:
		return a.Resume
	case jobs.ResolveForce:
		return a.Force
	}
	return true // words and an abort answer every question
}
