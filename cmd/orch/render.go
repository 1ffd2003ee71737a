package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/runs"
)

// renderer prints a run's events for people (a line per event, a block per question) or as JSON lines.
type renderer struct {
	mu    sync.Mutex
	out   io.Writer
	json  bool
	runID string // the run orch's own notes are about, once known
	// progress is the spinner line of a terminal; nil elsewhere.
	progress *progress
	// outage says what a follower waits for when the store stops answering.
	outage outage
}

func newRenderer(out io.Writer, asJSON bool) *renderer { return &renderer{out: out, json: asJSON} }

const indent = "            " // lines under a "[15:04:05] " prefix

func stamp(t time.Time) string { return "[" + t.Local().Format("15:04:05") + "] " }

// note prints a message of orch's own (not an event).
func (r *renderer) note(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.progress != nil {
		r.progress.clear()
	}
	if r.json {
		note := map[string]any{"type": "note", "time": time.Now().UTC().Format(time.RFC3339Nano), "message": msg}
		if r.runID != "" {
			note["run_id"] = r.runID
		}
		data, _ := json.Marshal(note)
		fmt.Fprintln(r.out, string(data))
		return
	}
	fmt.Fprintln(r.out, msg)
}

func (r *renderer) event(e jobs.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.progress != nil {
		r.progress.clear()
		r.progress.track(e)
		defer r.progress.draw()
	}
	if r.json {
		data, err := json.Marshal(e)
		if err == nil {
			fmt.Fprintln(r.out, string(data))
		}
		return
	}
	writeEvent(r.out, e)
}

// update prints what a follower learned: an event, or that Redis went away and came back. Questions are printed
// by their events.
func (r *renderer) update(u runs.Update) {
	switch {
	case u.Event != nil:
		r.event(*u.Event)
	case u.Outage != nil:
		r.note(r.outage.away(u.Outage))
	case u.Back > 0:
		r.note(r.outage.back(u.Back))
	}
}

// writeEvent prints an event as lines for people. The engine's bookkeeping (stages entered, checkpoints, the
// interview events) is in --json for tools; on a terminal the task, question and run lines say the same.
// Its complexity is one case per event kind: the terminal's whole vocabulary in one table, kept flat on purpose.
func writeEvent(w io.Writer, e jobs.Event) {
	ts := stamp(e.Time)
	switch b := e.Body.(type) {
	case jobs.RunStartedEvent:
		fmt.Fprintf(w, "%sRun %s started: %s (%s)\n", ts, e.RunID, b.Title, plural(b.Tasks, "task"))
		if b.Permissions != "" {
			fmt.Fprintf(w, "%sPermissions: %s\n", indent, b.Permissions)
		}
	case jobs.TaskStartedEvent:
		fmt.Fprintf(w, "%sTask %s: %s\n", ts, e.TaskID, b.Title)
		if b.Turn > 0 {
			fmt.Fprintf(w, "%sInvoking %s (conversation, reply %d)...\n", indent, agentName(b.Agent), b.Turn)
		} else {
			fmt.Fprintf(w, "%sInvoking %s (attempt %d/%d)...\n", indent, agentName(b.Agent), b.Attempt, b.MaxAttempts)
		}
	case jobs.PipelineStartedEvent:
		if b.PlanKind == "dot" {
			fmt.Fprintf(w, "%sPipeline %s: %s (%s, %s)\n", ts, b.Name, oneLine(b.Goal, 160),
				plural(b.Nodes, "node"), plural(b.Edges, "edge"))
		}
	case jobs.StageCompletedEvent:
		writeHop(w, ts, e.TaskID, b.StageHop)
	case jobs.StageFailedEvent:
		writeHop(w, ts, e.TaskID, b.StageHop)
	case jobs.TaskCompletedEvent:
		fmt.Fprintf(w, "%sTask %s: COMPLETED\n", ts, e.TaskID)
		if b.Summary != "" {
			fmt.Fprintf(w, "%s%s\n", indent, oneLine(b.Summary, 160))
		}
		if b.Commit != "" {
			fmt.Fprintf(w, "%sCommitted %s\n", indent, b.Commit)
		}
	case jobs.TaskFailedEvent:
		fmt.Fprintf(w, "%sTask %s: FAILED (attempt %d/%d)\n", ts, e.TaskID, b.Attempt, b.MaxAttempts)
		if b.Error != "" {
			fmt.Fprintf(w, "%s%s\n", indent, oneLine(b.Error, 200))
		}
	case jobs.LoopDetectedEvent:
		writeLoop(w, ts, e.TaskID, b)
	case jobs.EscalationEvent:
		writeQuestion(w, question{at: e.Time, taskID: e.TaskID, title: b.Title, trigger: b.Trigger, name: b.Name,
			source: b.Source, text: b.Question, recommends: b.Recommendation, options: b.Options})
	case jobs.RetryingEvent:
		fmt.Fprintf(w, "%sRetrying Task %s...\n", ts, e.TaskID)
		if b.Guidance != "" {
			fmt.Fprintf(w, "%sGuidance: %s\n", indent, oneLine(b.Guidance, 200))
		}
	case jobs.ResolutionEvent:
		fmt.Fprintf(w, "%sAnswered by %s (%s) after %s: %s\n", ts, b.By, b.Via,
			seconds(b.WaitSeconds).Round(time.Second), b.Summary)
	case jobs.ResumedEvent:
		switch {
		case b.Resolution == jobs.ResumeContinue:
			fmt.Fprintf(w, "%sContinuing Task %s...\n", ts, e.TaskID)
		case b.Guidance != "":
			fmt.Fprintf(w, "%sResuming Task %s with guidance...\n", ts, e.TaskID)
		default:
			fmt.Fprintf(w, "%sResuming Task %s...\n", ts, e.TaskID)
		}
	case jobs.TaskForcedEvent:
		fmt.Fprintf(w, "%sTask %s: FORCED (marked done by %s despite its error)\n", ts, e.TaskID, b.By)
	case jobs.BrainFallbackEvent:
		fmt.Fprintf(w, "%sBrain fell back to the heuristic: %s\n", ts, b.Reason)
	case jobs.SandboxErrorEvent:
		fmt.Fprintf(w, "%sSandbox error on Task %s: %s\n", ts, e.TaskID, b.Error)
	case jobs.RunCompletedEvent:
		fmt.Fprintf(w, "%sRun %s completed in %s (%s%s)\n", ts, e.RunID, ms(b.DurationMS), plural(b.Tasks, "task"), costSuffix(b.CostUSD))
		writeWork(w, e.RunID, b.Work)
		if b.PullRequest != "" {
			fmt.Fprintf(w, "%sPull request: %s\n", indent, b.PullRequest)
		}
	case jobs.RunFailedEvent:
		fmt.Fprintf(w, "%sRun %s failed: %s\n", ts, e.RunID, b.Reason)
		writeWork(w, e.RunID, b.Work)
	case jobs.BranchPushedEvent:
		fmt.Fprintf(w, "%sPushed %s to %s (%s)\n", ts, b.Branch, b.Remote, b.Commit)
	case jobs.GitErrorEvent:
		fmt.Fprintf(w, "%sgit: %s\n", ts, b.Error)
	case jobs.AttemptLostEvent:
		fmt.Fprintf(w, "%sAttempt %d of task %s dropped: %s\n", ts, b.Attempt, e.TaskID, b.Reason)
	case jobs.AgentActivityEvent:
		for _, call := range b.Calls {
			fmt.Fprintf(w, "%s  › %s\n", ts, call)
		}
		if b.More > 0 {
			fmt.Fprintf(w, "%s  › … and %d more\n", ts, b.More)
		}
	case jobs.WorkspaceBusyEvent:
		holder := b.Run
		if b.Status != "" {
			holder += " (" + b.Status + ")"
		}
		fmt.Fprintf(w, "%sWaiting for run %s: it works in %s, which is not a git repository, and this run starts there when it ends\n",
			ts, holder, b.Workspace)
	case jobs.EscalationTimeoutEvent:
		fmt.Fprintf(w, "%sNo answer to escalation %s after %s (TIMEOUT %d of %d): %s\n", ts, b.EscalationID,
			seconds(b.WaitedSeconds).Round(time.Second), b.N, b.Of, b.Next)
	case jobs.RunPausedEvent:
		fmt.Fprintf(w, "%sRun %s paused: %s\n", ts, e.RunID, b.Reason)
	case jobs.RunAbortedEvent:
		fmt.Fprintf(w, "%sRun %s aborted by %s: %s\n", ts, e.RunID, b.By, b.Reason)
		writeWork(w, e.RunID, b.Work)
	case jobs.StageStartedEvent, jobs.StageRetryingEvent, jobs.CheckpointSavedEvent, jobs.InterviewStartedEvent,
		jobs.InterviewCompletedEvent, jobs.InterviewTimeoutEvent, jobs.PipelineCompletedEvent, jobs.PipelineFailedEvent:
	default:
		fmt.Fprintf(w, "%s%s %s\n", ts, e.Type(), e.TaskID)
	}
}

// writeLoop prints why retries stopped: the contract's "LOOP DETECTED" lines with the error similarity.
// writeWork says what a run left on its branch.
func writeWork(w io.Writer, runID string, wk jobs.Work) {
	if wk.Branch == "" {
		return
	}
	if wk.Commits == 0 {
		fmt.Fprintf(w, "%sBranch %s: no changes from %s\n", indent, wk.Branch, wk.Base)
		return
	}
	fmt.Fprintf(w, "%sBranch %s: %s on %s, %s\n", indent, wk.Branch, plural(wk.Commits, "commit"), wk.Base, diffstat(wk))
	fmt.Fprintf(w, "%sReview it: orch diff %s\n", indent, runID)
}

// diffstat is git's summary line of a change: "3 files changed, 10 insertions(+), 2 deletions(-)".
func diffstat(wk jobs.Work) string {
	s := plural(wk.FilesChanged, "file") + " changed"
	if wk.Insertions > 0 {
		s += fmt.Sprintf(", %d insertion%s(+)", wk.Insertions, pluralS(wk.Insertions))
	}
	if wk.Deletions > 0 {
		s += fmt.Sprintf(", %d deletion%s(-)", wk.Deletions, pluralS(wk.Deletions))
	}
	return s
}

func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func writeLoop(w io.Writer, ts, taskID string, b jobs.LoopDetectedEvent) {
	switch b.LoopKind {
	case jobs.TriggerOscillate:
		fmt.Fprintf(w, "%sLOOP DETECTED: the end-to-end fixes do not converge after %d verifications (failure %d is like failure %d)\n",
			ts, b.Failures, b.Failures, b.Failures-2)
		fmt.Fprintf(w, "%sStopping to prevent resource waste.\n\nError similarity: %.0f%%\n", ts, 100*b.Similarity)
		return
	case jobs.TriggerE2E:
		fmt.Fprintf(w, "%sLOOP DETECTED: the end-to-end verification failed %d times; the fix attempts ran out\n", ts, b.Failures)
		return
	}
	if b.Similar {
		fmt.Fprintf(w, "%sLOOP DETECTED: Task %s failed %d times with similar errors\n", ts, taskID, b.Failures)
	} else {
		fmt.Fprintf(w, "%sLOOP DETECTED: Task %s failed %d times (attempt cap reached)\n", ts, taskID, b.Failures)
	}
	fmt.Fprintf(w, "%sStopping to prevent resource waste.\n\nError similarity: %.0f%%\nPlease investigate and provide guidance.\n",
		ts, 100*b.Similarity)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// question is what the NEEDS HUMAN INPUT block shows.
type question struct {
	at                                            time.Time
	taskID, title, name, source, text, recommends string
	trigger                                       jobs.Trigger
	options                                       []jobs.Option
}

// escalation prints the question block of an open escalation (for a resumed run, which has no event to replay).
func (r *renderer) escalation(e *jobs.Escalation, title, runID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.progress != nil {
		r.progress.clear()
		r.progress.activity = ""
	}
	if r.json {
		ev := jobs.NewEvent(runID, e.TaskID, jobs.NewEscalationEvent(e, title))
		ev.Time = e.CreatedAt
		if data, err := json.Marshal(ev); err == nil {
			fmt.Fprintln(r.out, string(data))
		}
		return
	}
	writeQuestion(r.out, question{at: e.CreatedAt, taskID: e.TaskID, title: title, trigger: e.Trigger, name: e.Name,
		source: e.Source, text: e.Question, recommends: e.Recommendation, options: e.Options})
}

// writeHop prints how the pipeline moved on from a stage, where that is worth a line: a conditional's route, a gate's
// choice, a failure's route, a goal gate sending the run back.
func writeHop(w io.Writer, ts, node string, h jobs.StageHop) {
	to := " → " + h.Next
	if h.Next == "" {
		to = ""
	}
	switch {
	case h.Handler == "exit" && h.Route == "goal_gate":
		fmt.Fprintf(w, "%sGoal gate unsatisfied (%s)%s\n", ts, h.Note, to)
	case h.Handler == "conditional":
		fmt.Fprintf(w, "%sCondition %s: %s%s\n", ts, node, h.Status, to)
	case h.Handler == "wait.human" && h.Status == "success":
		fmt.Fprintf(w, "%sGate %s: %s%s\n", ts, node, h.Note, to)
	case h.Status == "fail" && h.Next != "":
		how := strings.ReplaceAll(h.Route, "_", " ")
		if h.Note != "" {
			how = h.Note
		}
		fmt.Fprintf(w, "%sStage %s failed%s (%s)\n", ts, node, to, how)
	}
}

func writeQuestion(w io.Writer, q question) {
	switch q.trigger {
	case jobs.TriggerGate:
		writeGate(w, q)
		return
	case jobs.TriggerChat:
		writeChat(w, q)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%sNEEDS HUMAN INPUT — Task %s: %s (%s)\n\n", stamp(q.at), q.taskID, q.title, q.trigger.Describe(q.name))
	who := "Agent's question"
	if q.source != "agent" {
		who = "Question"
	}
	fmt.Fprintf(&b, "%s:\n", who)
	for _, line := range strings.Split(strings.TrimSpace(q.text), "\n") {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	rec := q.recommends
	if len(q.options) > 0 {
		b.WriteString("\nOptions:\n")
		for _, o := range q.options {
			fmt.Fprintf(&b, "  %s) %s\n", o.Key, o.Label)
			if o.Key == rec {
				rec = o.Key + ") " + o.Label
			}
		}
	}
	if rec != "" {
		fmt.Fprintf(&b, "\nRecommendation: %s\n", rec)
	}
	b.WriteString("\n")
	fmt.Fprint(w, b.String())
}

// writeGate prints a human gate as the attractor spec's console does: "[?] label", then "  [K] Label" lines; the
// console then asks "Select: ".
func writeGate(w io.Writer, q question) {
	var b strings.Builder
	fmt.Fprintf(&b, "%sHuman gate %s\n[?] %s\n", stamp(q.at), q.taskID, strings.TrimSpace(q.text))
	for _, o := range q.options {
		fmt.Fprintf(&b, "  [%s] %s\n", o.Key, o.Label)
	}
	fmt.Fprint(w, b.String())
}

// writeChat prints the agent's reply in an interactive conversation; the console then asks "> ".
func writeChat(w io.Writer, q question) {
	var b strings.Builder
	fmt.Fprintf(&b, "%sAgent — Task %s: %s\n", stamp(q.at), q.taskID, q.title)
	for _, line := range strings.Split(strings.TrimSpace(q.text), "\n") {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	b.WriteString("(Reply to the agent; /done or /approve ends the conversation, /reject fails the task.)\n")
	fmt.Fprint(w, b.String())
}

// parked tells the person how to go on with a run that waits for a human.
func (r *renderer) parked(run *jobs.Run, hint string) {
	e := run.OpenEscalation()
	var b strings.Builder
	fmt.Fprintf(&b, "\nRun %s is parked: a human is needed", run.ID)
	if e != nil {
		fmt.Fprintf(&b, " (escalation %s, task %s)", e.ID, e.TaskID)
	}
	b.WriteString(". Nothing runs while it waits.\n")
	choose := ""
	if e != nil && len(e.Options) > 0 {
		choose = "--choose KEY | "
	}
	fmt.Fprintf(&b, "  See it:     orch escalation show %s%s\n", run.ID, hint)
	switch {
	case e != nil && e.Trigger == jobs.TriggerGate:
		keys := make([]string, len(e.Options))
		for i, o := range e.Options {
			keys[i] = o.Key
		}
		fmt.Fprintf(&b, "  Answer it:  orch escalation resolve %s%s --choose KEY (%s) | --abort --reason \"…\"\n", run.ID, hint, strings.Join(keys, ", "))
	case e != nil && e.Trigger == jobs.TriggerChat:
		fmt.Fprintf(&b, "  Answer it:  orch escalation resolve %s%s --answer \"…\" | --answer /done | --answer /reject | --abort --reason \"…\"\n", run.ID, hint)
	default:
		fmt.Fprintf(&b, "  Answer it:  orch escalation resolve %s%s %s--answer \"…\" | --resume | --retry | --abort --reason \"…\" | --force-continue --acknowledge-risk\n", run.ID, hint, choose)
	}
	fmt.Fprintf(&b, "  Then:       orch resume %s%s   (or just resume and answer at the prompt)\n", run.ID, hint)
	r.note(strings.TrimRight(b.String(), "\n"))
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func agentName(a string) string {
	switch {
	case a == "claude":
		return "Claude Code"
	case a == "sim":
		return "the simulated agent"
	case strings.HasPrefix(a, "cmd:"):
		return "the agent command"
	case a == "":
		return "the agent"
	}
	return a
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return s
}

func ms(v int64) string {
	return (time.Duration(v) * time.Millisecond).Round(100 * time.Millisecond).String()
}

func costSuffix(usd float64) string {
	if usd <= 0 {
		return ""
	}
	return fmt.Sprintf(", $%.4f", usd)
}
