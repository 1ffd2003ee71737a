package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/orchrun/orch/jobs"
)

// renderer prints a run's events for people (a line per event, a block per question) or as JSON lines.
type renderer struct {
	mu    sync.Mutex
	out   io.Writer
	json  bool
	runID string // the run orch's own notes are about, once known
	// progress is the spinner line of a terminal; nil elsewhere.
	progress *progress
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
	ts := stamp(e.Time)
	w := r.out
	switch e.Type {
	case jobs.EventRunStarted:
		fmt.Fprintf(w, "%sRun %s started: %s (%s)\n", ts, e.RunID, e.String("title"), plural(e.Int("tasks"), "task"))
	case jobs.EventTaskStarted:
		if turn := e.Int("turn"); turn > 0 {
			fmt.Fprintf(w, "%sTask %s: %s\n%sInvoking %s (conversation, reply %d)...\n", ts, e.TaskID, e.String("title"), indent,
				agentName(e.String("agent")), turn)
			break
		}
		fmt.Fprintf(w, "%sTask %s: %s\n%sInvoking %s (attempt %d/%d)...\n", ts, e.TaskID, e.String("title"), indent,
			agentName(e.String("agent")), e.Int("attempt"), e.Int("max_attempts"))
	case jobs.EventPipelineStarted:
		if e.String("kind") == "dot" {
			fmt.Fprintf(w, "%sPipeline %s: %s (%s, %s)\n", ts, e.String("name"), oneLine(e.String("goal"), 160),
				plural(e.Int("nodes"), "node"), plural(e.Int("edges"), "edge"))
		}
	case jobs.EventStageCompleted, jobs.EventStageFailed:
		writeHop(w, ts, e)
	case jobs.EventStageStarted, jobs.EventStageRetrying, jobs.EventCheckpointSaved, jobs.EventInterviewStarted,
		jobs.EventInterviewDone, jobs.EventInterviewTimeout, jobs.EventPipelineCompleted, jobs.EventPipelineFailed:
		// In --json for tools; on a terminal the task, question and run lines say the same.
	case jobs.EventTaskCompleted:
		fmt.Fprintf(w, "%sTask %s: COMPLETED\n", ts, e.TaskID)
		if s := e.String("summary"); s != "" {
			fmt.Fprintf(w, "%s%s\n", indent, oneLine(s, 160))
		}
	case jobs.EventTaskFailed:
		fmt.Fprintf(w, "%sTask %s: FAILED (attempt %d/%d)\n", ts, e.TaskID, e.Int("attempt"), e.Int("max_attempts"))
		if s := e.String("error"); s != "" {
			fmt.Fprintf(w, "%s%s\n", indent, oneLine(s, 200))
		}
	case jobs.EventLoopDetected:
		switch e.String("kind") {
		case string(jobs.TriggerOscillate):
			fmt.Fprintf(w, "%sLOOP DETECTED: the end-to-end fixes do not converge after %d verifications (failure %d is like failure %d)\n",
				ts, e.Int("failures"), e.Int("failures"), e.Int("failures")-2)
			fmt.Fprintf(w, "%sStopping to prevent resource waste.\n\nError similarity: %.0f%%\n", ts, 100*e.Float("similarity"))
			return
		case string(jobs.TriggerE2E):
			fmt.Fprintf(w, "%sLOOP DETECTED: the end-to-end verification failed %d times; the fix attempts ran out\n", ts, e.Int("failures"))
			return
		}
		if e.Fields["similar"] == true {
			fmt.Fprintf(w, "%sLOOP DETECTED: Task %s failed %d times with similar errors\n", ts, e.TaskID, e.Int("failures"))
		} else {
			fmt.Fprintf(w, "%sLOOP DETECTED: Task %s failed %d times (attempt cap reached)\n", ts, e.TaskID, e.Int("failures"))
		}
		fmt.Fprintf(w, "%sStopping to prevent resource waste.\n\nError similarity: %.0f%%\nPlease investigate and provide guidance.\n",
			ts, 100*e.Float("similarity"))
	case jobs.EventEscalation:
		writeQuestion(w, questionOf(e))
	case jobs.EventRetrying:
		fmt.Fprintf(w, "%sRetrying Task %s...\n", ts, e.TaskID)
		if g := e.String("guidance"); g != "" {
			fmt.Fprintf(w, "%sGuidance: %s\n", indent, oneLine(g, 200))
		}
	case jobs.EventResolution:
		fmt.Fprintf(w, "%sAnswered by %s (%s) after %s: %s\n", ts, e.String("by"), e.String("via"),
			(time.Duration(e.Float("wait_seconds") * float64(time.Second))).Round(time.Second), e.String("summary"))
	case jobs.EventResumed:
		if e.String("resolution") == "continue" {
			fmt.Fprintf(w, "%sContinuing Task %s...\n", ts, e.TaskID)
		} else if e.String("guidance") != "" {
			fmt.Fprintf(w, "%sResuming Task %s with guidance...\n", ts, e.TaskID)
		} else {
			fmt.Fprintf(w, "%sResuming Task %s...\n", ts, e.TaskID)
		}
	case jobs.EventTaskForced:
		fmt.Fprintf(w, "%sTask %s: FORCED (marked done by %s despite its error)\n", ts, e.TaskID, e.String("by"))
	case jobs.EventBrainFallback:
		fmt.Fprintf(w, "%sBrain fell back to the heuristic: %s\n", ts, e.String("reason"))
	case jobs.EventSandboxError:
		fmt.Fprintf(w, "%sSandbox error on Task %s: %s\n", ts, e.TaskID, e.String("error"))
	case jobs.EventRunCompleted:
		fmt.Fprintf(w, "%sRun %s completed in %s (%s%s)\n", ts, e.RunID, ms(e.Float("duration_ms")), plural(e.Int("tasks"), "task"), costSuffix(e.Float("cost_usd")))
	case jobs.EventRunFailed:
		fmt.Fprintf(w, "%sRun %s failed: %s\n", ts, e.RunID, e.String("reason"))
	case jobs.EventTimeout:
		fmt.Fprintf(w, "%sNo answer to escalation %s after %s (TIMEOUT %d of %d): %s\n", ts, e.String("escalation_id"),
			(time.Duration(e.Float("waited_seconds") * float64(time.Second))).Round(time.Second), e.Int("n"), e.Int("of"), e.String("next"))
	case jobs.EventRunPaused:
		fmt.Fprintf(w, "%sRun %s paused: %s\n", ts, e.RunID, e.String("reason"))
	case jobs.EventRunAborted:
		fmt.Fprintf(w, "%sRun %s aborted by %s: %s\n", ts, e.RunID, e.String("by"), e.String("reason"))
	default:
		fmt.Fprintf(w, "%s%s %s\n", ts, e.Type, e.TaskID)
	}
}

// question is what the NEEDS HUMAN INPUT block shows.
type question struct {
	at                                               time.Time
	taskID, title, trigger, source, text, recommends string
	options                                          []jobs.Option
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
		ev := jobs.NewEvent(jobs.EventEscalation, runID, e.TaskID, "escalation_id", e.ID, "trigger", string(e.Trigger),
			"question", e.Question, "options", e.Options, "recommendation", e.Recommendation, "title", title,
			"attempt", e.Attempt, "failures", e.Failures, "similarity", e.Similarity, "source", e.Source)
		ev.Time = e.CreatedAt
		if data, err := json.Marshal(ev); err == nil {
			fmt.Fprintln(r.out, string(data))
		}
		return
	}
	writeQuestion(r.out, question{at: e.CreatedAt, taskID: e.TaskID, title: title, trigger: string(e.Trigger),
		source: e.Source, text: e.Question, recommends: e.Recommendation, options: e.Options})
}

func questionOf(e jobs.Event) question {
	q := question{at: e.Time, taskID: e.TaskID, title: e.String("title"), trigger: e.String("trigger"),
		source: e.String("source"), text: e.String("question"), recommends: e.String("recommendation")}
	opts, _ := e.Fields["options"].([]any)
	for _, o := range opts {
		m, _ := o.(map[string]any)
		q.options = append(q.options, jobs.Option{Key: fmt.Sprint(m["key"]), Label: fmt.Sprint(m["label"])})
	}
	return q
}

// writeHop prints how the pipeline moved on from a stage, where that is worth a line: a conditional's route, a gate's
// choice, a failure's route, a goal gate sending the run back.
func writeHop(w io.Writer, ts string, e jobs.Event) {
	next := e.String("next")
	to := " → " + next
	if next == "" {
		to = ""
	}
	switch handler, status := e.String("handler"), e.String("status"); {
	case handler == "exit" && e.String("route") == "goal_gate":
		fmt.Fprintf(w, "%sGoal gate unsatisfied (%s)%s\n", ts, e.String("note"), to)
	case handler == "conditional":
		fmt.Fprintf(w, "%sCondition %s: %s%s\n", ts, e.TaskID, status, to)
	case handler == "wait.human" && status == "success":
		fmt.Fprintf(w, "%sGate %s: %s%s\n", ts, e.TaskID, e.String("note"), to)
	case status == "fail" && next != "":
		how := strings.ReplaceAll(e.String("route"), "_", " ")
		if note := e.String("note"); note != "" {
			how = note
		}
		fmt.Fprintf(w, "%sStage %s failed%s (%s)\n", ts, e.TaskID, to, how)
	}
}

func writeQuestion(w io.Writer, q question) {
	switch jobs.Trigger(q.trigger) {
	case jobs.TriggerGate:
		writeGate(w, q)
		return
	case jobs.TriggerChat:
		writeChat(w, q)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%sNEEDS HUMAN INPUT — Task %s: %s (%s)\n\n", stamp(q.at), q.taskID, q.title, triggerText(q.trigger))
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

func triggerText(t string) string {
	switch jobs.Trigger(t) {
	case jobs.TriggerNeedsHelp:
		return "the agent asked"
	case jobs.TriggerBrain:
		return "the brain escalated"
	case jobs.TriggerAttemptCap:
		return "attempt cap"
	case jobs.TriggerPermanent:
		return "an error no retry can fix"
	case jobs.TriggerSecurity:
		return "security"
	case jobs.TriggerConfig:
		return "configuration error"
	case jobs.TriggerLoop:
		return "loop detected"
	case jobs.TriggerOscillate:
		return "end-to-end fixes oscillate"
	case jobs.TriggerE2E:
		return "end-to-end fix attempts ran out"
	}
	return t
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

func ms(v float64) string {
	return (time.Duration(v) * time.Millisecond).Round(100 * time.Millisecond).String()
}

func costSuffix(usd float64) string {
	if usd <= 0 {
		return ""
	}
	return fmt.Sprintf(", $%.4f", usd)
}
