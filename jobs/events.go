package jobs

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Event is one entry of a run's append-only event log: where and when it happened, and what (Body, one of the
// *Event types of this file). Consumers switch on the body's type, so a field renamed here fails to compile
// everywhere it is read. An event is one flat JSON object — its kind's name as "type", run_id, task_id, time and
// the body's fields — in `orch run --json` and in the Redis stream: that form is the contract.
type Event struct {
	ID     string // stream id: set when read back, or by Change.Emit
	RunID  string
	TaskID string
	Time   time.Time
	Body   Body
}

// Body is what an event says. Its fields are the event's JSON fields, beside type, run_id, task_id and time.
type Body interface {
	// Kind is the event's name, its "type" in JSON: run_started, task_failed, escalation, …
	Kind() string
	// describe is what the event says to people (describe.go): every kind has one.
	describe(Event) Description
}

// NewEvent is an event of run runID about task taskID ("" for the run as a whole).
func NewEvent(runID, taskID string, b Body) Event {
	return Event{RunID: runID, TaskID: taskID, Body: b}
}

// Type is the event's name (its body's Kind).
func (e Event) Type() string {
	if e.Body == nil {
		return ""
	}
	return e.Body.Kind()
}

// The run as a whole.

// RunStartedEvent: a worker took the run off the queue.
type RunStartedEvent struct {
	// Branch and Base name the run's own branch and where it starts, when the run has one.
	Branch  string `json:"branch,omitempty"`
	Base    string `json:"base,omitempty"`
	Plan    string `json:"plan"`
	Title   string `json:"title"`
	Tasks   int    `json:"tasks"`
	Unit    string `json:"unit,omitempty"` // what the plan's tasks are: "task", or "stage" in a DOT pipeline
	Agent   string `json:"agent"`
	Brain   string `json:"brain"`
	Sandbox string `json:"sandbox"`
	// Permissions says which permission policy the agent works under (claude).
	Permissions string `json:"permissions,omitempty"`
}

// RunCompletedEvent: every task is done.
type RunCompletedEvent struct {
	Tasks        int     `json:"tasks"`           // those done
	Total        int     `json:"total,omitempty"` // the plan's
	Unit         string  `json:"unit,omitempty"`  // as RunStartedEvent's`
	DurationMS   int64   `json:"duration_ms"`
	CostUSD      float64 `json:"cost_usd"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	Work
	PullRequest string `json:"pull_request,omitempty"`
	// Unfinished lists the tasks a person chose to leave undone (a budget's "finish without the rest").
	Unfinished []string `json:"unfinished,omitempty"`
}

// Work is what a run left on its branch, told at its end; empty for a run without a branch.
type Work struct {
	Branch       string `json:"branch,omitempty"`
	Base         string `json:"base,omitempty"`
	Commits      int    `json:"commits,omitempty"`
	FilesChanged int    `json:"files_changed,omitempty"`
	Insertions   int    `json:"insertions,omitempty"`
	Deletions    int    `json:"deletions,omitempty"`
	// Unfinished is the ref that holds what was left uncommitted in the run's worktree when it ended without its
	// last task done (a budget's "finish without the rest", a failure).
	Unfinished string `json:"unfinished,omitempty"`
}

// WorkOf is what r's branch holds.
func WorkOf(r *Run) Work {
	if r.Git == nil {
		return Work{}
	}
	g := r.Git
	// A run that clones from the remote's default branch names no base of its own: its commit says where it starts.
	base := g.Base
	if base == "" {
		base = g.BaseCommit[:min(len(g.BaseCommit), 12)]
	}
	if base == "" {
		base = "the remote's default branch"
	}
	return Work{Branch: g.Branch, Base: base, Commits: g.Commits, FilesChanged: g.FilesChanged,
		Insertions: g.Insertions, Deletions: g.Deletions, Unfinished: g.Unfinished}
}

// RunFailedEvent: the run ended without completing.
type RunFailedEvent struct {
	Reason     string `json:"reason"`
	DurationMS int64  `json:"duration_ms"`
	Work
}

// RunAbortedEvent: a person (or a timeout's fallback) stopped the run.
type RunAbortedEvent struct {
	Reason     string `json:"reason"`
	By         string `json:"by"`
	DurationMS int64  `json:"duration_ms"`
	Work
}

// BranchPushedEvent: the run's branch went to its remote.
type BranchPushedEvent struct {
	Remote string `json:"remote"`
	Branch string `json:"branch"`
	Commit string `json:"commit"`
}

// GitErrorEvent: something orch does with the run's branch failed (a commit, a push, the pull request). The run goes
// on; the work stays in the worktree.
type GitErrorEvent struct {
	Error string `json:"error"`
}

// AttemptLostEvent: an attempt's result was dropped, and nothing of it reached the branch. Either the worker that ran
// it finished after it had lost the step to another (a partition from Redis outlasted its lease and the step was
// rescued), or the worker that took a finished attempt over found that its work had stayed on a machine that is gone,
// and the task runs again.
type AttemptLostEvent struct {
	Attempt int    `json:"attempt"`
	Reason  string `json:"reason"`
	Owner   string `json:"owner,omitempty"`     // the delivery that ran the attempt
	Now     string `json:"now_owner,omitempty"` // the delivery that has the step now
}

// WorkspaceBusyEvent: the run's workspace is a plain directory another run holds; the run waits for it.
type WorkspaceBusyEvent struct {
	Workspace string `json:"workspace"`
	Run       string `json:"holder"`
	Status    string `json:"holder_status,omitempty"`
}

// AgentActivityEvent: the tool calls the agent made lately, a line each ("Bash: npm test"), gathered a second at a
// time so that a busy agent writes a few events a second at most.
type AgentActivityEvent struct {
	Calls []string `json:"calls"`
	// More counts calls made in the same second beyond those listed.
	More int `json:"more,omitempty"`
}

// RunPausedEvent: orch stopped the run (the brain was unavailable); `orch resume` continues it.
type RunPausedEvent struct {
	Reason string `json:"reason"`
}

// Tasks.

// TaskStartedEvent: an attempt of a task (or a conversation's next reply) began.
type TaskStartedEvent struct {
	Title       string `json:"title"`
	Attempt     int    `json:"attempt"` // failures since the last reset, plus one
	MaxAttempts int    `json:"max_attempts"`
	Started     int    `json:"started"` // every start in this run: ORCH_ATTEMPT
	Agent       string `json:"agent"`
	Turn        int    `json:"turn,omitempty"` // the agent's reply number, in a conversation
	// Budget is where the run stands against its budget as the attempt starts ("$1.50 of $2.00"); "" when unbounded.
	Budget string `json:"budget,omitempty"`
}

// TaskCompletedEvent: a task is done.
type TaskCompletedEvent struct {
	Title      string  `json:"title"`
	Summary    string  `json:"summary"`
	CostUSD    float64 `json:"cost_usd"`
	DurationMS int64   `json:"duration_ms"`
	// Commit is the commit on the run's branch that holds the task's work, if it changed anything.
	Commit string `json:"commit,omitempty"`
}

// TaskFailedEvent: an attempt failed.
type TaskFailedEvent struct {
	Title       string `json:"title"`
	Attempt     int    `json:"attempt"`
	MaxAttempts int    `json:"max_attempts"`
	Error       string `json:"error"`
}

// TaskForcedEvent: a person marked a task done despite its error.
type TaskForcedEvent struct {
	Title string `json:"title"`
	By    string `json:"by"`
}

// RetryingEvent: a failed task runs again, after DelayMS, with the brain's guidance.
type RetryingEvent struct {
	Title    string `json:"title"`
	Reason   string `json:"reason"`
	Guidance string `json:"guidance"`
	DelayMS  int64  `json:"delay_ms"`
}

// LoopDetectedEvent: retries stopped because they were not getting anywhere.
type LoopDetectedEvent struct {
	Failures   int     `json:"failures"`
	Similarity float64 `json:"similarity"`
	Similar    bool    `json:"similar"`
	// LoopKind is set for the end-to-end phase's loops: TriggerOscillate or TriggerE2E.
	LoopKind Trigger `json:"kind,omitempty"`
}

// ResumedEvent: a task goes on after a person's answer (Resolution is the answer's type), or after a pause
// (Resolution "continue").
type ResumedEvent struct {
	Title      string `json:"title"`
	Guidance   string `json:"guidance,omitempty"`
	Resolution string `json:"resolution"`
}

// ResumeContinue is ResumedEvent.Resolution of a run continued after a pause.
const ResumeContinue = "continue"

// BrainFallbackEvent: an LLM brain could not answer and the heuristic one did.
type BrainFallbackEvent struct {
	Reason string `json:"reason"`
}

// SandboxErrorEvent: orch could not run the agent at all.
type SandboxErrorEvent struct {
	Error string `json:"error"`
}

// Questions to people.

// EscalationEvent: the run parked on a question.
type EscalationEvent struct {
	EscalationID   string   `json:"escalation_id"`
	Trigger        Trigger  `json:"trigger"`
	Name           string   `json:"name"`
	Priority       int      `json:"priority"`
	Source         string   `json:"source"`
	Question       string   `json:"question"`
	Options        []Option `json:"options"`
	Recommendation string   `json:"recommendation"`
	Attempt        int      `json:"attempt"`
	Failures       int      `json:"failures"`
	Similarity     float64  `json:"similarity"`
	Title          string   `json:"title"` // the task's
}

// NewEscalationEvent is the event of escalation e about a task titled title.
func NewEscalationEvent(e *Escalation, title string) EscalationEvent {
	return EscalationEvent{EscalationID: e.ID, Trigger: e.Trigger, Name: e.Name, Priority: e.Priority, Source: e.Source,
		Question: e.Question, Options: e.Options, Recommendation: e.Recommendation, Attempt: e.Attempt,
		Failures: e.Failures, Similarity: e.Similarity, Title: title}
}

// ResolutionEvent: a question was answered.
type ResolutionEvent struct {
	EscalationID string         `json:"escalation_id"`
	Resolution   ResolutionType `json:"resolution"`
	Key          string         `json:"key"`
	Text         string         `json:"text"`
	Reason       string         `json:"reason"`
	By           string         `json:"by"`
	Via          string         `json:"via"`
	WaitSeconds  float64        `json:"wait_seconds"`
	Summary      string         `json:"summary"` // what the answer did, in a few words
	Trigger      Trigger        `json:"trigger"`
	Question     string         `json:"question"`
	Visit        int            `json:"visit"` // of the task's node: which stage span the question belongs to
}

// EscalationTimeoutEvent: a question's time ran out unanswered (TIMEOUT, never a denial).
type EscalationTimeoutEvent struct {
	EscalationID  string  `json:"escalation_id"`
	N             int     `json:"n"`
	Of            int     `json:"of"`
	WaitedSeconds float64 `json:"waited_seconds"`
	Question      string  `json:"question"`
	Next          string  `json:"next"` // what happens now: "reminding", "still waiting", "aborting the run"
}

// The pipeline (attractor spec §9.6).

// PipelineStartedEvent: the run entered its graph.
type PipelineStartedEvent struct {
	Name     string `json:"name"`
	Goal     string `json:"goal"`
	PlanKind string `json:"kind"` // "milestone" or "dot"
	Nodes    int    `json:"nodes"`
	Edges    int    `json:"edges"`
}

// PipelineCompletedEvent: the run reached its exit with its goal gates satisfied.
type PipelineCompletedEvent struct {
	DurationMS int64 `json:"duration_ms"`
	Completed  int   `json:"completed"`
}

// PipelineFailedEvent: the walk ended in failure.
type PipelineFailedEvent struct {
	Error      string `json:"error"`
	DurationMS int64  `json:"duration_ms"`
}

// StageStartedEvent: the run entered a node that does work.
type StageStartedEvent struct {
	Title    string `json:"title"`
	Handler  string `json:"handler"`
	TaskKind string `json:"kind"`
	Visit    int    `json:"visit"`
	Index    int    `json:"index"`
}

// StageHop is how the walk left a node: its handler, its outcome, the next node and why.
type StageHop struct {
	Handler string `json:"handler"`
	Status  string `json:"status"`
	Next    string `json:"next"`
	Route   string `json:"route"`
	Note    string `json:"note"`
	// Visit and EnteredMS are set for a stage that did work: its span runs from when the pipeline entered it.
	Visit     int   `json:"visit,omitempty"`
	EnteredMS int64 `json:"entered_ms,omitempty"`
}

// StageCompletedEvent: a node succeeded and the walk moved on.
type StageCompletedEvent struct{ StageHop }

// StageFailedEvent: a node failed and the walk moved on (or ended).
type StageFailedEvent struct{ StageHop }

// StageRetryingEvent: a node runs again.
type StageRetryingEvent struct {
	Attempt int    `json:"attempt"`
	DelayMS int64  `json:"delay_ms"`
	Reason  string `json:"reason,omitempty"`
}

// InterviewStartedEvent: a gate or a conversation asks a person.
type InterviewStartedEvent struct {
	Question     string   `json:"question"`
	QuestionType string   `json:"question_type"` // MULTIPLE_CHOICE (a gate) or FREEFORM (a conversation)
	Stage        string   `json:"stage"`
	EscalationID string   `json:"escalation_id"`
	Options      []Option `json:"options,omitempty"`
	Turn         int      `json:"turn,omitempty"`
}

// InterviewCompletedEvent: a gate or a conversation turn was answered.
type InterviewCompletedEvent struct {
	EscalationID string  `json:"escalation_id"`
	Answer       string  `json:"answer"`
	Label        string  `json:"label,omitempty"` // a gate's chosen label
	By           string  `json:"by"`
	Via          string  `json:"via"`
	WaitSeconds  float64 `json:"wait_seconds"`
}

// InterviewTimeoutEvent: a gate's own time limit ran out.
type InterviewTimeoutEvent struct {
	EscalationID  string  `json:"escalation_id"`
	Question      string  `json:"question"`
	Stage         string  `json:"stage"`
	WaitedSeconds float64 `json:"waited_seconds"`
	Default       string  `json:"default"`
}

// CheckpointSavedEvent: the run's position in its graph was saved.
type CheckpointSavedEvent struct {
	NodeID    string `json:"node_id"`
	Last      string `json:"last"`
	Completed int    `json:"completed"`
}

// UnknownEvent is an event of a kind this orch does not know (written by another version): kept as it was, so the
// log stays readable and a copy of it loses nothing.
type UnknownEvent struct {
	Type   string
	Fields map[string]any
}

func (RunStartedEvent) Kind() string         { return "run_started" }
func (RunCompletedEvent) Kind() string       { return "run_completed" }
func (RunFailedEvent) Kind() string          { return "run_failed" }
func (RunAbortedEvent) Kind() string         { return "run_aborted" }
func (RunPausedEvent) Kind() string          { return "run_paused" }
func (TaskStartedEvent) Kind() string        { return "task_started" }
func (TaskCompletedEvent) Kind() string      { return "task_completed" }
func (TaskFailedEvent) Kind() string         { return "task_failed" }
func (TaskForcedEvent) Kind() string         { return "task_forced" }
func (RetryingEvent) Kind() string           { return "retrying" }
func (LoopDetectedEvent) Kind() string       { return "loop_detected" }
func (ResumedEvent) Kind() string            { return "resumed" }
func (BrainFallbackEvent) Kind() string      { return "brain_fallback" }
func (SandboxErrorEvent) Kind() string       { return "sandbox_error" }
func (EscalationEvent) Kind() string         { return "escalation" }
func (ResolutionEvent) Kind() string         { return "resolution" }
func (EscalationTimeoutEvent) Kind() string  { return "escalation_timeout" }
func (PipelineStartedEvent) Kind() string    { return "pipeline_started" }
func (PipelineCompletedEvent) Kind() string  { return "pipeline_completed" }
func (PipelineFailedEvent) Kind() string     { return "pipeline_failed" }
func (StageStartedEvent) Kind() string       { return "stage_started" }
func (StageCompletedEvent) Kind() string     { return "stage_completed" }
func (StageFailedEvent) Kind() string        { return "stage_failed" }
func (StageRetryingEvent) Kind() string      { return "stage_retrying" }
func (InterviewStartedEvent) Kind() string   { return "interview_started" }
func (InterviewCompletedEvent) Kind() string { return "interview_completed" }
func (InterviewTimeoutEvent) Kind() string   { return "interview_timeout" }
func (CheckpointSavedEvent) Kind() string    { return "checkpoint_saved" }
func (BranchPushedEvent) Kind() string       { return "branch_pushed" }
func (GitErrorEvent) Kind() string           { return "git_error" }
func (WorkspaceBusyEvent) Kind() string      { return "workspace_busy" }
func (AttemptLostEvent) Kind() string        { return "attempt_lost" }
func (AgentActivityEvent) Kind() string      { return "agent_activity" }
func (b UnknownEvent) Kind() string          { return b.Type }

// kinds holds a zero value of every kind orch writes: decoding finds a body's type by its name here.
var kinds = func() map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for _, b := range []Body{RunStartedEvent{}, RunCompletedEvent{}, RunFailedEvent{}, RunAbortedEvent{}, RunPausedEvent{},
		TaskStartedEvent{}, TaskCompletedEvent{}, TaskFailedEvent{}, TaskForcedEvent{}, RetryingEvent{}, LoopDetectedEvent{},
		ResumedEvent{}, BrainFallbackEvent{}, SandboxErrorEvent{}, EscalationEvent{}, ResolutionEvent{},
		EscalationTimeoutEvent{}, PipelineStartedEvent{}, PipelineCompletedEvent{}, PipelineFailedEvent{},
		StageStartedEvent{}, StageCompletedEvent{}, StageFailedEvent{}, StageRetryingEvent{}, InterviewStartedEvent{},
		InterviewCompletedEvent{}, InterviewTimeoutEvent{}, CheckpointSavedEvent{}, BranchPushedEvent{}, GitErrorEvent{},
		WorkspaceBusyEvent{}, AgentActivityEvent{}, AttemptLostEvent{}} {
		m[b.Kind()] = reflect.TypeOf(b)
	}
	return m
}()

// Kinds returns a zero body of every kind orch writes, ordered by kind: a surface's tests show each one.
func Kinds() []Body {
	out := make([]Body, 0, len(kinds))
	for _, t := range kinds {
		out = append(out, reflect.Zero(t).Interface().(Body))
	}
	slices.SortFunc(out, func(a, b Body) int { return strings.Compare(a.Kind(), b.Kind()) })
	return out
}

// envelope holds the keys every event has; the body's fields sit beside them.
var envelope = []string{"type", "run_id", "task_id", "time"}

// MarshalJSON flattens the event into one object: type, run_id, task_id (when set), time, and the body's fields,
// keys sorted as they always were.
func (e Event) MarshalJSON() ([]byte, error) {
	var fields map[string]json.RawMessage
	if u, ok := e.Body.(UnknownEvent); ok {
		data, err := json.Marshal(u.Fields)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &fields); err != nil {
			return nil, err
		}
	} else if e.Body != nil {
		data, err := json.Marshal(e.Body)
		if err != nil {
			return nil, fmt.Errorf("encoding event %s: %w", e.Type(), err)
		}
		if err := json.Unmarshal(data, &fields); err != nil {
			return nil, fmt.Errorf("encoding event %s: %w", e.Type(), err)
		}
	}
	if fields == nil {
		fields = make(map[string]json.RawMessage, len(envelope))
	}
	put := func(k, v string) { fields[k], _ = json.Marshal(v) }
	put("type", e.Type())
	put("run_id", e.RunID)
	if e.TaskID != "" {
		put("task_id", e.TaskID)
	}
	put("time", e.Time.UTC().Format(time.RFC3339Nano))
	return json.Marshal(fields)
}

// UnmarshalJSON is the inverse of MarshalJSON. A kind this orch does not know becomes an UnknownEvent.
func (e *Event) UnmarshalJSON(data []byte) error {
	var head struct {
		Type   string `json:"type"`
		RunID  string `json:"run_id"`
		TaskID string `json:"task_id"`
		Time   string `json:"time"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return err
	}
	*e = Event{RunID: head.RunID, TaskID: head.TaskID}
	if head.Time != "" {
		e.Time, _ = time.Parse(time.RFC3339Nano, head.Time)
	}
	if t, ok := kinds[head.Type]; ok {
		b := reflect.New(t)
		if err := json.Unmarshal(data, b.Interface()); err != nil {
			return fmt.Errorf("decoding event %s: %w", head.Type, err)
		}
		e.Body = b.Elem().Interface().(Body)
		return nil
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	for _, k := range envelope {
		delete(fields, k)
	}
	e.Body = UnknownEvent{Type: head.Type, Fields: fields}
	return nil
}

// AuditEntry records an escalation or a resolution: who, when, what.
type AuditEntry struct {
	Time         time.Time `json:"time"`
	RunID        string    `json:"run_id"`
	TaskID       string    `json:"task_id,omitempty"`
	EscalationID string    `json:"escalation_id"`
	Action       string    `json:"action"` // "escalated" or "resolved" or "rejected"
	Trigger      Trigger   `json:"trigger,omitempty"`
	Resolution   string    `json:"resolution,omitempty"`
	Detail       string    `json:"detail,omitempty"`
	By           string    `json:"by"`
	Via          string    `json:"via,omitempty"`
}
