package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/runs"
)

// eventsWait is how long one read of a run's stream blocks: the page sees a new event within that, and the handler
// notices a closed connection as often.
const eventsWait = 2 * time.Second

// handleEvents streams a run's events to the page as server-sent events, from after Last-Event-ID (or the "after"
// parameter the page was rendered with) until the run ends or the browser goes away. Each event's data is the line
// the timeline shows; the page reloads itself on the events marked for it.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request, _ person) {
	ctx := r.Context()
	runID := r.PathValue("id")
	run, err := s.cfg.Store.Get(ctx, runID)
	if errors.Is(err, jobs.ErrRunNotFound) {
		http.Error(w, "no such run", http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = r.URL.Query().Get("after")
	}
	if after == "" {
		after = "$"
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()
	tl := &timeline{w: w, ended: run.Status.Terminal()}
	for ctx.Err() == nil {
		events, err := s.cfg.Store.Events(ctx, runID, after, eventsWait)
		if err != nil {
			if ctx.Err() == nil {
				s.cfg.Log.Warn("web: following events", "run", runID, "err", err)
			}
			return
		}
		for _, e := range events {
			_ = runs.Present(ctx, tl, e)
			after = e.ID
		}
		if len(events) == 0 {
			fmt.Fprint(w, ": waiting\n\n") // keeps proxies from closing an idle stream
		}
		flusher.Flush()
		if tl.ended && len(events) == 0 {
			return
		}
	}
}

// timeline is a run's live timeline on its page, as a surface (runs.Surface): every event is a line sent as a
// server-sent event, marked for a reload when it changes more than the timeline — the run's status, its question, its
// tasks — so that the page renders itself again.
type timeline struct {
	w     io.Writer
	ended bool
}

var _ runs.Surface = (*timeline)(nil)

// send writes ev's line.
func (t *timeline) send(ev jobs.Event, reload bool) error {
	v := eventLine(ev)
	v.Reload = reload
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(t.w, "id: %s\nevent: %s\ndata: %s\n\n", ev.ID, "orch", data)
	return err
}

// Progress sends the line, for a reload when a task stopped or went on from where the page showed it.
func (t *timeline) Progress(_ context.Context, ev jobs.Event) error {
	d := ev.Describe()
	switch {
	case d.Moment == jobs.MomentStop:
		return t.send(ev, true)
	case d.Mark == jobs.MarkForced, d.Mark == jobs.MarkLoop, d.Mark == jobs.MarkResume, d.Mark == jobs.MarkTimeout:
		return t.send(ev, true)
	}
	return t.send(ev, false)
}

// Ask, Answered and Paused change the page's question or status: the page renders itself again.
func (t *timeline) Ask(_ context.Context, ev jobs.Event, _ jobs.EscalationEvent) error {
	return t.send(ev, true)
}

func (t *timeline) Answered(_ context.Context, ev jobs.Event, _ jobs.ResolutionEvent) error {
	return t.send(ev, true)
}

func (t *timeline) Paused(_ context.Context, ev jobs.Event) error { return t.send(ev, true) }

// Ended sends the last line; the stream ends once the log has nothing after it.
func (t *timeline) Ended(_ context.Context, ev jobs.Event) error {
	t.ended = true
	return t.send(ev, true)
}
