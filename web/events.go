package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/orchrun/orch/jobs"
)

// eventsWait is how long one read of a run's stream blocks: the page sees a new event within that, and the handler
// notices a closed connection as often.
const eventsWait = 2 * time.Second

// handleEvents streams a run's events to the page as server-sent events, from after Last-Event-ID (or the "after"
// parameter the page was rendered with) until the run ends or the browser goes away. Each event's data is the line
// the timeline shows; the page reloads itself on the events that change what it shows.
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
	ended := run.Status.Terminal()
	for ctx.Err() == nil {
		events, err := s.cfg.Store.Events(ctx, runID, after, eventsWait)
		if err != nil {
			if ctx.Err() == nil {
				s.cfg.Log.Warn("web: following events", "run", runID, "err", err)
			}
			return
		}
		for _, e := range events {
			data, _ := json.Marshal(eventLine(e))
			fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", e.ID, "orch", data)
			after = e.ID
			if isEnd(e) {
				ended = true
			}
		}
		if len(events) == 0 {
			fmt.Fprint(w, ": waiting\n\n") // keeps proxies from closing an idle stream
		}
		flusher.Flush()
		if ended && len(events) == 0 {
			return
		}
	}
}

// isEnd reports an event after which a run has nothing more to say.
func isEnd(e jobs.Event) bool {
	if e.Body == nil {
		return false
	}
	switch e.Body.Kind() {
	case "run_completed", "run_failed", "run_aborted":
		return true
	}
	return false
}
