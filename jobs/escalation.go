package jobs

import (
	"strings"
	"time"
)

// Trigger names why a run needs a human.
type Trigger string

const (
	TriggerNeedsHelp  Trigger = "needs_help"  // the agent asked
	TriggerBrain      Trigger = "brain"       // the brain decided to escalate
	TriggerAttemptCap Trigger = "attempt_cap" // the hard cap stopped a loop
	TriggerPermanent  Trigger = "permanent"   // an error no retry can fix
	TriggerSecurity   Trigger = "security"    // e.g. a secret in the agent's output
	TriggerConfig     Trigger = "config"      // orch or the agent is misconfigured
	TriggerValidation Trigger = "validation"  // saved state failed validation on resume
	TriggerCustom     Trigger = "custom"      // a trigger from configuration
	TriggerGate       Trigger = "gate"        // a pipeline's human gate (wait.human): choose the way on
	TriggerChat       Trigger = "chat"        // an interactive node: the agent replied, the human answers
	TriggerLoop       Trigger = "loop"        // a pipeline entered the same node too often on its own
	TriggerE2E        Trigger = "e2e"         // the end-to-end verification kept failing through its fix attempts
	TriggerOscillate  Trigger = "oscillation" // end-to-end fixes alternate between failures (fix A breaks B, fix B breaks A)
	TriggerApproval   Trigger = "approval"    // the agent's tool call waits for a person's approval
	TriggerBudget     Trigger = "budget"      // the run, the task or the team reached what it may spend
	TriggerLimit      Trigger = "limit"       // the agent's provider said its usage limit was reached until a reset
)

// Counted reports whether an escalation of the trigger counts against a task's escalation cap: a question that is part
// of the pipeline's design (a gate, a chat turn), or about money and limits rather than the task's trouble, does not.
func (t Trigger) Counted() bool {
	return !t.Conversational() && t != TriggerBudget && t != TriggerLimit
}

// Conversational reports whether the escalation is part of the pipeline's design (a gate, a chat turn) rather than a
// sign of trouble: such questions do not count against a task's escalation cap.
func (t Trigger) Conversational() bool { return t == TriggerGate || t == TriggerChat }

// String is the trigger's name, as stored, logged and labelled in metrics.
func (t Trigger) String() string { return string(t) }

// Text says in a few words, for people, why the run needs a human. Every surface (terminal, Slack, logs) uses it.
func (t Trigger) Text() string {
	if d, ok := triggers[t]; ok {
		return d.text
	}
	return string(t)
}

// Describe is Text naming a custom trigger by its name.
func (t Trigger) Describe(name string) string {
	if t == TriggerCustom && name != "" {
		return "custom trigger " + name
	}
	return t.Text()
}

// Priority orders triggers that fire together: what must not wait (a leaked secret) comes first. A custom trigger
// brings its own; the others have these.
func (t Trigger) Priority() int {
	if d, ok := triggers[t]; ok {
		return d.priority
	}
	return customPriority
}

// customPriority is the priority of a custom trigger that sets none.
const customPriority = 30

var triggers = map[Trigger]struct {
	text     string
	priority int
}{
	TriggerSecurity:   {"security", 100},
	TriggerApproval:   {"a tool call needs approval", 95},
	TriggerConfig:     {"configuration error", 90},
	TriggerBudget:     {"budget reached", 85},
	TriggerLimit:      {"the provider's usage limit", 84},
	TriggerValidation: {"saved state failed validation", 80},
	TriggerPermanent:  {"an error no retry can fix", 70},
	TriggerAttemptCap: {"attempt cap", 60},
	TriggerBrain:      {"the brain escalated", 50},
	TriggerNeedsHelp:  {"the agent asked", 40},
	TriggerCustom:     {"custom trigger", customPriority},
	TriggerGate:       {"human gate", customPriority},
	TriggerChat:       {"conversation", customPriority},
	TriggerLoop:       {"loop detected", customPriority},
	TriggerE2E:        {"end-to-end fix attempts ran out", customPriority},
	TriggerOscillate:  {"end-to-end fixes oscillate", customPriority},
}

// ResolutionType is what a human decided.
type ResolutionType string

const (
	ResolveChoose ResolutionType = "choose" // picked an option: guidance; resets the attempt counter
	ResolveAnswer ResolutionType = "answer" // free-text guidance; resets the attempt counter
	ResolveResume ResolutionType = "resume" // continue as is; resets the attempt counter
	ResolveRetry  ResolutionType = "retry"  // one more attempt; the counter is kept
	ResolveAbort  ResolutionType = "abort"  // stop the run
	ResolveForce  ResolutionType = "force"  // mark the task done despite its error
	// ResolveDecline is automation refusing to answer (auto-approval of a failure): the run ends as failed.
	ResolveDecline ResolutionType = "declined"
)

// Option is one choice offered to the human.
type Option struct {
	Key   string `json:"key"`
	Label string `json:"label"`
}

// Escalation is a question to a human, open until resolved.
type Escalation struct {
	ID             string   `json:"id"`
	TaskID         string   `json:"task_id"`
	Trigger        Trigger  `json:"trigger"`
	Name           string   `json:"name,omitempty"` // a custom trigger\'s name
	Priority       int      `json:"priority"`
	Source         string   `json:"source"` // agent, brain or orch
	Question       string   `json:"question"`
	Options        []Option `json:"options,omitempty"`
	Recommendation string   `json:"recommendation,omitempty"` // an option key when it names one, else text
	Attempt        int      `json:"attempt"`
	Failures       int      `json:"failures"`
	Similarity     float64  `json:"similarity,omitempty"`
	Error          string   `json:"error,omitempty"`
	Errors         []string `json:"errors,omitempty"`
	Suggestions    []string `json:"suggestions,omitempty"`
	Output         string   `json:"output,omitempty"` // what the agent said, redacted and bounded
	TaskStatus     string   `json:"task_status,omitempty"`
	Files          []string `json:"files,omitempty"`    // what the task changed in the workspace (git status)
	Diff           string   `json:"diff,omitempty"`     // git diff --stat of the workspace
	Timeouts       int      `json:"timeouts,omitempty"` // how often the question timed out unanswered
	// Timeout, when set, is this question's own time limit (a gate's timeout attribute): it replaces the run's
	// escalation timeout, and running out takes Default or else retries the gate (attractor spec §4.6).
	Timeout time.Duration `json:"timeout,omitempty"`
	// Default is the option taken when the question times out (a gate's human.default_choice).
	Default string `json:"default,omitempty"`
	// Held is set when the attempt completed and only a trigger holds it: resuming accepts the work instead of
	// running the task again.
	Held bool `json:"held,omitempty"`
	// Call is set on a question about a tool call the agent paused at (an approval, Claude's own question).
	Call bool `json:"call,omitempty"`
	// Unclear is set on a question about an attempt whose outcome the brain could not tell: its options accept the
	// attempt's work (UnclearAccept) or run the task again, and words are guidance for the next attempt.
	Unclear bool `json:"unclear,omitempty"`
	// Stop is set on a question about a bound the run reached (trigger budget): which one, and what extending adds.
	Stop       *BudgetStop `json:"budget_stop,omitempty"`
	EventRef   string      `json:"event_ref,omitempty"`
	CreatedAt  time.Time   `json:"created_at"`
	Resolution *Resolution `json:"resolution,omitempty"`
}

// Resolution is a human's answer to an escalation.
type Resolution struct {
	Type   ResolutionType `json:"type"`
	Key    string         `json:"key,omitempty"`
	Text   string         `json:"text,omitempty"`
	Reason string         `json:"reason,omitempty"`
	By     string         `json:"by"`
	Via    string         `json:"via"` // console, cli, slack, answers-file, auto-approve, timeout
	At     time.Time      `json:"at"`
}

// OptionByKey finds an option by key, ignoring case.
func (e *Escalation) OptionByKey(key string) (Option, bool) {
	for _, o := range e.Options {
		if strings.EqualFold(o.Key, key) {
			return o, true
		}
	}
	return Option{}, false
}
