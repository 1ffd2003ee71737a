package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/orchrun/orch/escalation"
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

// The terminal is a surface (runs.Surface): each event is printed by what it is, a question as a block and
// everything else as lines.
var _ runs.Surface = (*renderer)(nil)

// event prints e as runs.Present hands it to the renderer's methods.
func (r *renderer) event(e jobs.Event) { _ = runs.Present(context.Background(), r, e) }

// Progress prints an event that moves the run along.
func (r *renderer) Progress(_ context.Context, ev jobs.Event) error {
	r.show(ev, nil)
	return nil
}

// Ask prints the question block.
func (r *renderer) Ask(_ context.Context, ev jobs.Event, q jobs.EscalationEvent) error {
	r.show(ev, &question{at: ev.Time, taskID: ev.TaskID, title: q.Title, trigger: q.Trigger, name: q.Name,
		source: q.Source, text: q.Question, recommends: q.Recommendation, options: q.Options})
	return nil
}

// Answered, Paused and Ended print their event's lines: the terminal has nothing to update in place.
func (r *renderer) Answered(ctx context.Context, ev jobs.Event, _ jobs.ResolutionEvent) error {
	return r.Progress(ctx, ev)
}

func (r *renderer) Paused(ctx context.Context, ev jobs.Event) error { return r.Progress(ctx, ev) }
func (r *renderer) Ended(ctx context.Context, ev jobs.Event) error  { return r.Progress(ctx, ev) }

// show prints ev — as its JSON line with --json, else as q's block when it asks one, else as its lines — with the
// spinner kept below it.
func (r *renderer) show(ev jobs.Event, q *question) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.progress != nil {
		r.progress.clear()
		r.progress.track(ev)
		defer r.progress.draw()
	}
	switch {
	case r.json:
		if data, err := json.Marshal(ev); err == nil {
			fmt.Fprintln(r.out, string(data))
		}
	case q != nil:
		writeQuestion(r.out, *q)
	default:
		writeLines(r.out, ev)
	}
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

// writeLines prints an event as lines for people, from its description: its text after a timestamp, then its detail
// and further lines indented under it. The engine's bookkeeping (stages entered, checkpoints, the interview events)
// is quiet: it is in --json for tools, and the task, question and run lines say the same for people.
func writeLines(w io.Writer, e jobs.Event) {
	d := e.Describe()
	if d.Quiet {
		return
	}
	fmt.Fprintf(w, "%s%s\n", stamp(e.Time), d)
	for _, l := range append([]string{d.Detail}, d.More...) {
		if l != "" {
			fmt.Fprintf(w, "%s%s\n", indent, l)
		}
	}
}

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
	case e != nil:
		ways := []string{"--answer \"…\""}
		if escalation.Takes(e, jobs.ResolveResume) {
			ways = append(ways, "--resume")
		}
		if escalation.Takes(e, jobs.ResolveRetry) {
			ways = append(ways, "--retry")
		}
		ways = append(ways, "--abort --reason \"…\"")
		if escalation.Takes(e, jobs.ResolveForce) {
			ways = append(ways, "--force-continue --acknowledge-risk")
		}
		fmt.Fprintf(&b, "  Answer it:  orch escalation resolve %s%s %s%s\n", run.ID, hint, choose, strings.Join(ways, " | "))
	default:
		fmt.Fprintf(&b, "  Answer it:  orch escalation resolve %s%s --answer \"…\" | --resume | --retry | --abort --reason \"…\" | --force-continue --acknowledge-risk\n", run.ID, hint)
	}
	fmt.Fprintf(&b, "  Then:       orch resume %s%s   (or just resume and answer at the prompt)\n", run.ID, hint)
	r.note(strings.TrimRight(b.String(), "\n"))
}
