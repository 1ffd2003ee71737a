package web

import (
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// timeline.go is what a run's page says of its event log: a timeline of what a person cares about (starts,
// questions, answers, tasks done or failed, the end), with every event one click away, and the agent's latest tool
// calls while it works — what the terminal shows under its spinner.

// timelineWindow is how many of a run's latest events its page reads: enough for the timeline of a long run even
// when the agent's tool calls fill most of the log, and a single bounded read of the store whatever the run's size.
const timelineWindow = 500

// liveCalls is how many of the agent's latest tool calls the page shows while it works.
const liveCalls = 20

// eventView is one line of a run's timeline.
type eventView struct {
	ID, Time, Task, Kind, Text string
	// Notable marks what a person cares about; the rest (the agent's tool calls, the engine's bookkeeping) shows only
	// when they ask for every event.
	Notable bool
	// Calls are the agent's tool calls an activity event reports, a line each.
	Calls []string `json:",omitempty"`
	// Begin marks the start of an agent's attempt, and Idle an event after which no agent works (the attempt ended,
	// a person is asked, the run stopped): the page's live panel follows them.
	Begin bool `json:",omitempty"`
	Idle  bool `json:",omitempty"`
	// Reload, in the live stream, says the event changed more than the timeline: the page renders itself again.
	Reload bool `json:",omitempty"`
	at     time.Time
}

// eventLine is an event as the timeline shows it: its kind and its description, redacted again in case the event was
// written by an older orch.
func eventLine(e jobs.Event) eventView {
	v := eventRaw(e)
	v.redact()
	return v
}

// redact takes secrets out of what the line shows. It is the costly part of a line (a dozen patterns over its
// text), so a page redacts only the lines it shows.
func (v *eventView) redact() {
	v.Text = safetext.Redact(v.Text)
	for i, c := range v.Calls {
		v.Calls[i] = safetext.Redact(c)
	}
}

// eventRaw is the line of an event before its redaction.
func eventRaw(e jobs.Event) eventView {
	d := e.Describe()
	v := eventView{ID: e.ID, Time: e.Time.UTC().Format("15:04:05"), Task: e.TaskID, Kind: e.Type(), Notable: notable(d), at: e.Time}
	text := d.String()
	if d.Detail != "" {
		text += " — " + d.Detail
	}
	v.Text = text
	switch d.Moment {
	case jobs.MomentBegin:
		v.Begin = true
	case jobs.MomentWork:
		v.Calls = callsOf(e)
	case jobs.MomentStop, jobs.MomentAsk, jobs.MomentPause, jobs.MomentEnd:
		v.Idle = true
	}
	return v
}

// notable reports whether a person reading the run's story wants the event: not the engine's bookkeeping (which
// views for people leave out), not the agent's every tool call (the live panel shows those), not a debug-level
// step of a pipeline's walk.
func notable(d jobs.Description) bool {
	return !d.Quiet && d.Moment != jobs.MomentWork && d.Level >= slog.LevelInfo
}

// callsOf are the tool calls an activity event reports, each on one bounded line.
func callsOf(e jobs.Event) []string {
	a, ok := e.Body.(jobs.AgentActivityEvent)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(a.Calls)+1)
	for _, c := range a.Calls {
		out = append(out, safetext.OneLine(c, 200))
	}
	if a.More > 0 {
		out = append(out, fmt.Sprintf("(+%d more)", a.More))
	}
	return out
}

// timelineView is the timeline as the page shows it: the notable events, or every one.
type timelineView struct {
	Events []eventView
	All    bool
	// Left is how many events of the window the notable timeline leaves out; Older says the log holds events
	// before the window.
	Left  int
	Older bool
	// Toggle links to the other view of the timeline.
	Toggle string
}

// eventViews are the lines of events, each described once for the timeline and the live panel both, and not yet
// redacted: each of them redacts what it shows.
func eventViews(events []jobs.Event) []eventView {
	out := make([]eventView, len(events))
	for i, e := range events {
		out[i] = eventRaw(e)
	}
	return out
}

func timelineOf(run *jobs.Run, events []eventView, all bool) timelineView {
	t := timelineView{All: all, Older: len(events) == timelineWindow}
	for _, v := range events {
		if !all && !v.Notable {
			t.Left++
			continue
		}
		v.redact()
		t.Events = append(t.Events, v)
	}
	t.Toggle = "/runs/" + url.PathEscape(run.ID) + "?all=1#timeline"
	if all {
		t.Toggle = "/runs/" + url.PathEscape(run.ID) + "#timeline"
	}
	return t
}

// liveView is what the agent is doing now: the attempt it works on, since when, and its latest tool calls.
type liveView struct {
	Attempt string
	Since   string
	Calls   []string
}

// liveOf is the agent at work in the run, from its latest events; nil when no agent works (the run is over, waits
// for a person, or its last attempt ended).
func liveOf(run *jobs.Run, events []eventView, now time.Time) *liveView {
	if run.Status.Terminal() || run.Status == jobs.RunParked {
		return nil
	}
	var live *liveView
	for _, v := range events {
		switch {
		case v.Begin:
			live = &liveView{Attempt: v.Text, Since: since(now.Sub(v.at))}
		case v.Idle:
			live = nil
		case live != nil && len(v.Calls) > 0:
			live.Calls = append(live.Calls, v.Calls...)
		}
	}
	if live == nil {
		return nil
	}
	live.Calls = live.Calls[max(0, len(live.Calls)-liveCalls):]
	shown := eventView{Text: live.Attempt, Calls: live.Calls}
	shown.redact()
	live.Attempt, live.Calls = shown.Text, shown.Calls
	return live
}

func lastID(events []jobs.Event) string {
	if len(events) == 0 {
		// The log was empty when the page was rendered (a run just started from the view): every event is new to
		// it, those written before its script connects included. "" would follow from the connection on ("$").
		return "0"
	}
	return events[len(events)-1].ID
}
