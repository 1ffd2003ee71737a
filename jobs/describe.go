package jobs

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/orchrun/orch/internal/safetext"
)

// Description is what an event says to people, written once for every surface: the terminal, Slack's thread, the
// web view's timeline and the log all render an event from its description, and none of them switches over event
// kinds. A new kind of event must describe itself (Body requires it) before any surface can show it.
type Description struct {
	// Text is the event in one line: "Task 2: FAILED (attempt 1/3)". A Span naming a person lets each surface show
	// them its own way (a Slack mention, a name).
	Text []Span
	// Detail is the one line a short view adds after Text: the summary, the error, the guidance. It is already on
	// one line and bounded.
	Detail string
	// More are further lines a full view shows under Detail: the commit, the branch, the pull request.
	More []string
	// Level is how much the event matters to an operator: debug for the engine's bookkeeping, warn for a run that
	// failed or stopped.
	Level slog.Level
	// Quiet marks the engine's bookkeeping (a stage entered, a checkpoint saved): what it says, a line for people
	// already says, so views for people leave it out; logs and tools keep it.
	Quiet bool
	// Mark is which kind of moment it is, for a surface that shows one with an icon.
	Mark Mark
	// Moment is what the event says about the run's progress: an attempt begins or ends, a person is asked.
	Moment Moment
}

// Span is a piece of a description's Text: words, or a person (Person set: Text is who, Via where from).
type Span struct {
	Text   string
	Person bool
	Via    string
}

// String is the description's Text as plain words.
func (d Description) String() string {
	var b strings.Builder
	for _, s := range d.Text {
		b.WriteString(s.Text)
	}
	return b.String()
}

// Mark names the kind of moment an event is.
type Mark string

// The marks; a surface with icons gives each one.
const (
	MarkNone     Mark = ""
	MarkStart    Mark = "start"
	MarkWork     Mark = "work"
	MarkDone     Mark = "done"
	MarkFailed   Mark = "failed"
	MarkForced   Mark = "forced"
	MarkRetry    Mark = "retry"
	MarkLoop     Mark = "loop"
	MarkAsk      Mark = "ask"
	MarkAnswer   Mark = "answer"
	MarkResume   Mark = "resume"
	MarkPause    Mark = "pause"
	MarkAbort    Mark = "abort"
	MarkBroken   Mark = "broken" // orch could not do its part: the sandbox, git
	MarkTimeout  Mark = "timeout"
	MarkRoute    Mark = "route"
	MarkBack     Mark = "back" // the walk went back: a failure's route, an unsatisfied goal gate
	MarkPush     Mark = "push"
	MarkWait     Mark = "wait"
	MarkFallback Mark = "fallback"
)

// Marks lists every mark but MarkNone.
var Marks = []Mark{MarkStart, MarkWork, MarkDone, MarkFailed, MarkForced, MarkRetry, MarkLoop, MarkAsk, MarkAnswer,
	MarkResume, MarkPause, MarkAbort, MarkBroken, MarkTimeout, MarkRoute, MarkBack, MarkPush, MarkWait, MarkFallback}

// Moment is what an event says about a run's progress.
type Moment int

// The moments.
const (
	MomentNone   Moment = iota
	MomentBegin         // an attempt of a task begins: the agent works
	MomentWork          // the agent at work: its latest tool calls
	MomentStop          // an attempt ended (done, failed, or orch could not run it)
	MomentAsk           // the run waits for a person
	MomentAnswer        // a person answered
	MomentPause         // the run stopped until someone resumes it
	MomentEnd           // the run ended
)

var momentNames = [...]string{"none", "begin", "work", "stop", "ask", "answer", "pause", "end"}

func (m Moment) String() string {
	if int(m) < len(momentNames) {
		return momentNames[m]
	}
	return fmt.Sprintf("Moment(%d)", int(m))
}

// Describe is what e says to people.
func (e Event) Describe() Description {
	if e.Body == nil {
		return Description{Text: words("event " + e.TaskID), Level: slog.LevelDebug, Quiet: true}
	}
	return e.Body.describe(e)
}

// Stops reports the status a run is left in by an event that stops it: completed, failed or aborted for good, or
// paused until someone resumes it.
func (e Event) Stops() (RunStatus, bool) {
	switch e.Body.(type) {
	case RunCompletedEvent:
		return RunCompleted, true
	case RunFailedEvent:
		return RunFailed, true
	case RunAbortedEvent:
		return RunAborted, true
	case RunPausedEvent:
		return RunPaused, true
	}
	return "", false
}

// The lengths descriptions cut their free text to, in characters.
const (
	shortText = 160 // a summary, a goal, a reason
	longText  = 200 // an error, guidance
)

func words(parts ...string) []Span { return []Span{{Text: strings.Join(parts, "")}} }

func person(by, via string) Span {
	if by == "" {
		by = "someone"
	}
	return Span{Text: by, Person: true, Via: via}
}

func line(s string, n int) string { return safetext.OneLine(s, n) }

// task names the task an event is about: "Task 2".
func task(e Event) string { return "Task " + e.TaskID }

// titled is "Task 2: Add a cache", or "Task 2" for a task without a title.
func titled(e Event, title string) string {
	if title = line(title, shortText); title != "" {
		return task(e) + ": " + title
	}
	return task(e)
}

func (b RunStartedEvent) describe(e Event) Description {
	d := Description{Text: words("Run ", e.RunID, " started: ", line(b.Title, shortText), " (",
		Tally{Total: b.Tasks, Unit: b.Unit}.Size(), ")"), Mark: MarkStart}
	if b.Permissions != "" {
		d.More = []string{"Permissions: " + b.Permissions}
	}
	return d
}

func (b RunCompletedEvent) describe(e Event) Description {
	size := Count(b.Tasks, "task")
	if b.Total > 0 {
		size = Tally{Done: b.Tasks, Total: b.Total, Unit: b.Unit}.String()
	}
	if b.CostUSD > 0 {
		size += fmt.Sprintf(", $%.4f", b.CostUSD)
	}
	d := Description{Text: words("Run ", e.RunID, " completed in ", Millis(b.DurationMS), " (", size, ")"),
		More: b.Work.Lines(e.RunID), Mark: MarkDone, Moment: MomentEnd}
	if b.PullRequest != "" {
		d.More = append(d.More, "Pull request: "+b.PullRequest)
	}
	if len(b.Unfinished) > 0 {
		d.More = append(d.More, fmt.Sprintf("Finished without the rest: %s left undone (%s)",
			Count(len(b.Unfinished), "task"), line(strings.Join(b.Unfinished, ", "), shortText)))
	}
	return d
}

func (b RunFailedEvent) describe(e Event) Description {
	return Description{Text: words("Run ", e.RunID, " failed: ", line(b.Reason, longText)), More: b.Work.Lines(e.RunID),
		Level: slog.LevelWarn, Mark: MarkFailed, Moment: MomentEnd}
}

func (b RunAbortedEvent) describe(e Event) Description {
	return Description{Text: []Span{{Text: "Run " + e.RunID + " aborted by "}, person(b.By, ""),
		{Text: ": " + line(b.Reason, longText)}}, More: b.Work.Lines(e.RunID), Level: slog.LevelWarn, Mark: MarkAbort,
		Moment: MomentEnd}
}

func (b RunPausedEvent) describe(e Event) Description {
	return Description{Text: words("Run ", e.RunID, " paused: ", line(b.Reason, longText)), Level: slog.LevelWarn,
		Mark: MarkPause, Moment: MomentPause}
}

func (b BranchPushedEvent) describe(Event) Description {
	return Description{Text: words("Pushed ", b.Branch, " to ", b.Remote, " (", b.Commit, ")"), Mark: MarkPush}
}

func (b GitErrorEvent) describe(Event) Description {
	return Description{Text: words("git: ", line(b.Error, longText)), Level: slog.LevelWarn, Mark: MarkBroken}
}

func (b AttemptLostEvent) describe(e Event) Description {
	return Description{Text: words(fmt.Sprintf("Attempt %d of task %s dropped: ", b.Attempt, e.TaskID),
		line(b.Reason, longText)), Level: slog.LevelWarn, Mark: MarkBack}
}

func (b WorkspaceBusyEvent) describe(Event) Description {
	holder := b.Run
	if b.Status != "" {
		holder += " (" + b.Status + ")"
	}
	return Description{Text: words("Waiting for run ", holder, ": it works in ", b.Workspace,
		", which is not a git repository, and this run starts there when it ends"), Mark: MarkWait}
}

// AgentActivity shows the last calls of a batch: progress is a glance, not a log (the JSON form has them all).
const activityShown = 3

func (b AgentActivityEvent) describe(Event) Description {
	calls := b.Calls[max(len(b.Calls)-activityShown, 0):]
	text := "› " + line(strings.Join(calls, " · "), longText)
	if more := b.More + len(b.Calls) - len(calls); more > 0 {
		text += fmt.Sprintf(" (+%d)", more)
	}
	return Description{Text: words(text), Level: slog.LevelDebug, Mark: MarkWork, Moment: MomentWork}
}

func (b TaskStartedEvent) describe(e Event) Description {
	how := AttemptText(b.Attempt, b.MaxAttempts)
	if b.Turn > 0 {
		how = fmt.Sprintf("conversation, reply %d", b.Turn)
	}
	if b.Budget != "" {
		how += "; budget: " + b.Budget
	}
	return Description{Text: words(titled(e, b.Title)),
		Detail: "Invoking " + AgentName(b.Agent) + " (" + how + ")...", Mark: MarkStart, Moment: MomentBegin}
}

func (b TaskCompletedEvent) describe(e Event) Description {
	d := Description{Text: words(task(e), ": COMPLETED"), Detail: line(b.Summary, shortText), Mark: MarkDone,
		Moment: MomentStop}
	if b.Commit != "" {
		d.More = []string{"Committed " + b.Commit}
	}
	return d
}

func (b TaskFailedEvent) describe(e Event) Description {
	failed := task(e) + ": FAILED"
	if a := AttemptText(b.Attempt, b.MaxAttempts); a != "" {
		failed += " (" + a + ")"
	}
	return Description{Text: words(failed),
		Detail: line(b.Error, longText), Mark: MarkFailed, Moment: MomentStop}
}

func (b TaskForcedEvent) describe(e Event) Description {
	return Description{Text: []Span{{Text: task(e) + ": FORCED (marked done by "}, person(b.By, ""),
		{Text: " despite its error)"}}, Mark: MarkForced}
}

func (b RetryingEvent) describe(e Event) Description {
	d := Description{Text: words("Retrying ", task(e), "..."), Mark: MarkRetry}
	if b.Guidance != "" {
		d.Detail = "Guidance: " + line(b.Guidance, longText)
	}
	return d
}

func (b LoopDetectedEvent) describe(e Event) Description {
	d := Description{Level: slog.LevelWarn, Mark: MarkLoop,
		Detail: fmt.Sprintf("Error similarity: %.0f%%", 100*b.Similarity),
		More:   []string{"Stopping to prevent resource waste."}}
	switch {
	case b.LoopKind == TriggerOscillate:
		d.Text = words(fmt.Sprintf("LOOP DETECTED: the end-to-end fixes do not converge after %d verifications "+
			"(failure %d is like failure %d)", b.Failures, b.Failures, b.Failures-2))
		return d
	case b.LoopKind == TriggerE2E:
		d.Text = words(fmt.Sprintf("LOOP DETECTED: the end-to-end verification failed %d times; "+
			"the fix attempts ran out", b.Failures))
		d.Detail, d.More = "", nil
		return d
	case b.Similar:
		d.Text = words(fmt.Sprintf("LOOP DETECTED: %s failed %d times with similar errors", task(e), b.Failures))
	default:
		d.Text = words(fmt.Sprintf("LOOP DETECTED: %s failed %d times (attempt cap reached)", task(e), b.Failures))
	}
	d.More = append(d.More, "Please investigate and provide guidance.")
	return d
}

func (b ResumedEvent) describe(e Event) Description {
	d := Description{Text: words("Resuming ", task(e), "..."), Mark: MarkResume}
	switch {
	case b.Resolution == ResumeContinue:
		d.Text = words("Continuing ", task(e), "...")
	case b.Guidance != "":
		d.Text = words("Resuming ", task(e), " with guidance...")
	}
	return d
}

func (b BrainFallbackEvent) describe(Event) Description {
	return Description{Text: words("Brain fell back to the heuristic: ", line(b.Reason, longText)), Mark: MarkFallback}
}

func (b SandboxErrorEvent) describe(e Event) Description {
	return Description{Text: words("Sandbox error on ", task(e), ": ", line(b.Error, longText)), Level: slog.LevelWarn,
		Mark: MarkBroken, Moment: MomentStop}
}

// The question itself is shown by each surface in full (its options are buttons in Slack, a prompt on a terminal):
// the description is the line that says a question is open.
func (b EscalationEvent) describe(e Event) Description {
	d := Description{Mark: MarkAsk, Moment: MomentAsk, Detail: line(safetext.HeadLine(b.Question), shortText)}
	switch b.Trigger {
	case TriggerGate:
		d.Text = words("Human gate ", e.TaskID)
	case TriggerChat:
		d.Text = words("Agent — ", titled(e, b.Title))
	default:
		d.Text = words("NEEDS HUMAN INPUT — ", titled(e, b.Title), " (", b.Trigger.Describe(b.Name), ")")
	}
	return d
}

func (b ResolutionEvent) describe(Event) Description {
	return Description{Text: []Span{{Text: "Answered by "}, person(b.By, b.Via),
		{Text: " (" + b.Via + ") after " + Seconds(b.WaitSeconds) + ": " + line(b.Summary, shortText)}},
		Mark: MarkAnswer, Moment: MomentAnswer}
}

func (b EscalationTimeoutEvent) describe(Event) Description {
	return Description{Text: words(fmt.Sprintf("No answer to escalation %s after %s (TIMEOUT %d of %d): %s",
		b.EscalationID, Seconds(b.WaitedSeconds), b.N, b.Of, b.Next)), Mark: MarkTimeout}
}

// A plan of milestones is a pipeline too, of one stage per task: only a DOT pipeline's start says so.
func (b PipelineStartedEvent) describe(Event) Description {
	return Description{Text: words("Pipeline ", b.Name, ": ", line(b.Goal, shortText), " (", Count(b.Nodes, "node"),
		", ", Count(b.Edges, "edge"), ")"), Quiet: b.PlanKind != "dot", Mark: MarkStart}
}

func (b PipelineCompletedEvent) describe(Event) Description {
	return Description{Text: words("Pipeline completed in ", Millis(b.DurationMS), " (", Count(b.Completed, "stage"),
		" done)"), Level: slog.LevelDebug, Quiet: true}
}

func (b PipelineFailedEvent) describe(Event) Description {
	return Description{Text: words("Pipeline failed: ", line(b.Error, longText)), Level: slog.LevelDebug, Quiet: true}
}

func (b StageStartedEvent) describe(e Event) Description {
	return Description{Text: words(fmt.Sprintf("Stage %s entered (%s, visit %d)", e.TaskID, b.Handler, b.Visit)),
		Level: slog.LevelDebug, Quiet: true}
}

func (b StageCompletedEvent) describe(e Event) Description { return b.StageHop.describe(e) }
func (b StageFailedEvent) describe(e Event) Description    { return b.StageHop.describe(e) }

// describe says how the pipeline moved on from a node. Where that is worth a line for people — a conditional's
// route, a gate's choice, a goal gate sending the run back, a failure's route — it is not quiet.
func (h StageHop) describe(e Event) Description {
	to := " → " + h.Next
	if h.Next == "" {
		to = ""
	}
	d := Description{Level: slog.LevelDebug, Mark: MarkRoute}
	switch {
	case h.Handler == "exit" && h.Route == "goal_gate":
		d.Text, d.Mark = words("Goal gate unsatisfied (", line(h.Note, shortText), ")", to), MarkBack
	case h.Handler == "conditional":
		d.Text = words("Condition ", e.TaskID, ": ", h.Status, to)
	case h.Handler == "wait.human" && h.Status == "success":
		d.Text = words("Gate ", e.TaskID, ": ", line(h.Note, shortText), to)
	case h.Status == "fail" && h.Next != "":
		how := strings.ReplaceAll(h.Route, "_", " ")
		if h.Note != "" {
			how = h.Note
		}
		d.Text, d.Mark = words("Stage ", e.TaskID, " failed", to, " (", line(how, shortText), ")"), MarkBack
	default:
		d.Text, d.Quiet, d.Mark = words("Stage ", e.TaskID, ": ", h.Status, to), true, MarkNone
	}
	return d
}

func (b StageRetryingEvent) describe(e Event) Description {
	text := fmt.Sprintf("Stage %s retrying (attempt %d, in %s)", e.TaskID, b.Attempt, Millis(b.DelayMS))
	if b.Reason != "" {
		text += ": " + line(b.Reason, longText)
	}
	return Description{Text: words(text), Level: slog.LevelDebug, Quiet: true}
}

func (b InterviewStartedEvent) describe(Event) Description {
	return Description{Text: words("Interview at ", b.Stage, ": ", line(safetext.HeadLine(b.Question), shortText)),
		Level: slog.LevelDebug, Quiet: true}
}

func (b InterviewCompletedEvent) describe(Event) Description {
	answer := b.Answer
	if b.Label != "" {
		answer = b.Label
	}
	return Description{Text: []Span{{Text: "Interview answered by "}, person(b.By, b.Via),
		{Text: ": " + line(answer, shortText)}}, Level: slog.LevelDebug, Quiet: true}
}

func (b InterviewTimeoutEvent) describe(Event) Description {
	return Description{Text: words("Interview at ", b.Stage, " timed out after ", Seconds(b.WaitedSeconds),
		"; default: ", b.Default), Level: slog.LevelDebug, Quiet: true}
}

func (b CheckpointSavedEvent) describe(Event) Description {
	return Description{Text: words("Checkpoint at ", b.NodeID, " (", Count(b.Completed, "stage"), " completed)"),
		Level: slog.LevelDebug, Quiet: true}
}

// An event of a kind this orch does not know says its name.
func (b UnknownEvent) describe(e Event) Description {
	return Description{Text: words(strings.TrimSpace(b.Type + " " + e.TaskID)), Level: slog.LevelDebug}
}
