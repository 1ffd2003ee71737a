package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	_ "embed"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/runs"
)

//go:embed openapi.json
var openapiDoc []byte

func (s *Server) openapi(w http.ResponseWriter, _ *http.Request, _ string) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openapiDoc)
}

// Health is what GET /health answers.
type Health struct {
	Status string `json:"status"`
	Store  string `json:"store"`
	// Starts says whether this server starts runs (POST /runs).
	Starts bool `json:"starts"`
}

func (s *Server) health(w http.ResponseWriter, r *http.Request, _ string) {
	h := Health{Status: "ok", Store: "ok", Starts: s.cfg.Front != nil}
	if err := s.cfg.Store.Ping(r.Context()); err != nil {
		h.Status, h.Store = "degraded", "unreachable"
		writeJSON(w, http.StatusServiceUnavailable, h)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

// StartRequest is POST /runs: a plan of the workspace or a task in words.
type StartRequest struct {
	Plan  string `json:"plan,omitempty"`
	Text  string `json:"text,omitempty"`
	Agent string `json:"agent,omitempty"`
	Base  string `json:"base,omitempty"`
}

// errNoFront is a start asked of a server that starts no runs.
var errNoFront = errors.New("this server starts no runs: it serves the store's runs without a workspace to start them in")

// start starts the run who asked for: the one way the API and MCP start runs.
func (s *Server) start(ctx context.Context, who, via string, req StartRequest) (*jobs.Run, error) {
	if s.cfg.Front == nil {
		return nil, errNoFront
	}
	return s.cfg.Front.Start(ctx, runs.Ask{Plan: req.Plan, Text: req.Text, Agent: req.Agent, Base: req.Base,
		Origin: jobs.Origin{Kind: via, User: who}})
}

func (s *Server) createRun(w http.ResponseWriter, r *http.Request, who string) {
	var req StartRequest
	if !readJSON(w, r, &req) {
		return
	}
	run, err := s.start(r.Context(), who, Via, req)
	switch {
	case errors.Is(err, errNoFront):
		problem(w, http.StatusNotImplemented, "This server starts no runs", err.Error())
		return
	case errors.Is(err, runs.ErrInvalid):
		problem(w, http.StatusUnprocessableEntity, "The run cannot start", err.Error())
		return
	case err != nil:
		s.cfg.Log.Error("api: starting a run", "by", who, "err", err)
		problem(w, http.StatusServiceUnavailable, "The run did not start", "the server could not queue it; try again in a moment")
		return
	}
	w.Header().Set("Location", Prefix+"runs/"+run.ID)
	writeJSON(w, http.StatusCreated, s.detail(run, s.cfg.Now()))
}

// RunList is GET /runs.
type RunList struct {
	Runs []RunSummary `json:"runs"`
	// Page is this page's number (from 1); NextPage the next one's, when there is one.
	Page     int `json:"page"`
	NextPage int `json:"next_page,omitempty"`
}

// maxLimit bounds one page of runs.
const maxLimit = 200

// ListQuery is the history's filters: status (a run status or "open"), plan, user, page and limit.
type ListQuery struct {
	Status string `json:"status,omitempty"`
	Plan   string `json:"plan,omitempty"`
	User   string `json:"user,omitempty"`
	Page   int    `json:"page,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// list is one page of runs, newest first.
func (s *Server) list(ctx context.Context, q ListQuery) (RunList, error) {
	if q.Page == 0 {
		q.Page = 1
	}
	if q.Limit == 0 {
		q.Limit = 50
	}
	switch {
	case q.Page < 1:
		return RunList{}, invalid("page is counted from 1")
	case q.Limit < 1 || q.Limit > maxLimit:
		return RunList{}, invalid(fmt.Sprintf("limit is 1 to %d", maxLimit))
	case q.Status != "" && q.Status != store.StatusOpen && !knownStatus(q.Status):
		return RunList{}, invalid(fmt.Sprintf("status %q is not a run status (queued, running, parked, paused, completed, failed, aborted, or open)", q.Status))
	}
	found, more, err := s.cfg.Store.Find(ctx, store.Query{Status: q.Status, Plan: q.Plan, User: q.User},
		(q.Page-1)*q.Limit, q.Limit)
	if err != nil {
		return RunList{}, err
	}
	out := RunList{Runs: []RunSummary{}, Page: q.Page}
	now := s.cfg.Now()
	for _, r := range found {
		out.Runs = append(out.Runs, s.summary(r, now))
	}
	if more {
		out.NextPage = q.Page + 1
	}
	return out, nil
}

func knownStatus(s string) bool {
	switch jobs.RunStatus(s) {
	case jobs.RunQueued, jobs.RunRunning, jobs.RunParked, jobs.RunPaused, jobs.RunCompleted, jobs.RunFailed, jobs.RunAborted:
		return true
	}
	return false
}

// invalidError is a request the client got wrong.
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }

func invalid(msg string) error { return &invalidError{msg} }

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, _ string) {
	v := r.URL.Query()
	q := ListQuery{Status: v.Get("status"), Plan: v.Get("plan"), User: v.Get("user")}
	if !numbers(w, v, map[string]*int{"page": &q.Page, "limit": &q.Limit}) {
		return
	}
	list, err := s.list(r.Context(), q)
	var bad *invalidError
	switch {
	case errors.As(err, &bad):
		problem(w, http.StatusBadRequest, "Bad query", bad.msg)
	case err != nil:
		s.unavailable(w, "listing runs", err)
	default:
		writeJSON(w, http.StatusOK, list)
	}
}

// run reads the run a request names, answering 404 or 503 itself.
func (s *Server) run(w http.ResponseWriter, r *http.Request) (*jobs.Run, bool) {
	id := r.PathValue("id")
	run, err := s.cfg.Store.Get(r.Context(), id)
	switch {
	case errors.Is(err, jobs.ErrRunNotFound):
		problem(w, http.StatusNotFound, "No such run", fmt.Sprintf("there is no run %q (GET %sruns lists them)", id, Prefix))
		return nil, false
	case err != nil:
		s.unavailable(w, "reading run "+id, err)
		return nil, false
	}
	return run, true
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request, _ string) {
	if run, ok := s.run(w, r); ok {
		writeJSON(w, http.StatusOK, s.detail(run, s.cfg.Now()))
	}
}

// CancelRequest is POST /runs/{id}/cancel.
type CancelRequest struct {
	Reason string `json:"reason"`
}

// cancel stops a run wherever it is, for who: the one way the API and MCP cancel.
func (s *Server) cancel(ctx context.Context, who, via, runID, reason string) (*jobs.Run, error) {
	if strings.TrimSpace(reason) == "" {
		reason = "cancelled by " + who + " via " + via
	}
	return escalation.Abort(ctx, s.cfg.Store, s.cfg.Queue, runID, who, via, reason)
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request, who string) {
	var req CancelRequest
	if !readJSON(w, r, &req) {
		return
	}
	id := r.PathValue("id")
	run, err := s.cancel(r.Context(), who, Via, id, req.Reason)
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, s.detail(run, s.cfg.Now()))
	case errors.Is(err, jobs.ErrRunNotFound):
		problem(w, http.StatusNotFound, "No such run", fmt.Sprintf("there is no run %q", id))
	case errors.Is(err, escalation.ErrNoOpenEscalation), errors.Is(err, escalation.ErrAlreadyResolved):
		s.conflict(w, r.Context(), id, "", err)
	case errors.Is(err, escalation.ErrInvalid):
		problem(w, http.StatusBadRequest, "The cancel was refused", err.Error())
	default:
		s.unavailable(w, "cancelling run "+id, err)
	}
}

// maxDiff bounds a diff the API sends: past it the diff is cut and says so (the branch has it all).
const maxDiff = 8 << 20

func (s *Server) diff(w http.ResponseWriter, r *http.Request, _ string) {
	run, ok := s.run(w, r)
	if !ok {
		return
	}
	stat := r.URL.Query().Get("stat") == "1" || r.URL.Query().Get("stat") == "true"
	switch {
	case run.Git == nil:
		problem(w, http.StatusNotFound, "The run has no branch", "it worked in a directory that is not a git repository")
		return
	case run.Git.BaseCommit == "":
		problem(w, http.StatusNotFound, "The run has no branch yet", "a worker has not started it")
		return
	case s.cfg.Diffs == nil:
		problem(w, http.StatusNotImplemented, "Diffs are not served here", "this server cannot read the runs' repositories")
		return
	}
	w.Header().Set("Content-Type", "text/x-diff; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	out := &capped{w: w, left: maxDiff}
	bw := bufio.NewWriterSize(out, 32<<10)
	err := s.cfg.Diffs.Diff(r.Context(), run.Git, stat, bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil && !errors.Is(err, errCapped) {
		s.cfg.Log.Warn("api: diff", "run", run.ID, "err", err)
		if !out.sent {
			problem(w, http.StatusServiceUnavailable, "The diff could not be read", "the run's branch could not be read; try again")
		}
	}
}

// errCapped ends a diff at maxDiff.
var errCapped = errors.New("diff capped")

// capped writes up to left bytes, then a line that says the rest was left out.
type capped struct {
	w    http.ResponseWriter
	left int
	sent bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.left < 0 {
		return 0, errCapped // cut, and said so
	}
	c.sent = c.sent || len(p) > 0
	if len(p) <= c.left {
		c.left -= len(p)
		return c.w.Write(p)
	}
	c.w.Write(p[:c.left])
	c.left = -1
	fmt.Fprintf(c.w, "\n# orch: the diff is cut at %d bytes; fetch the run's branch for the rest\n", maxDiff)
	return 0, errCapped
}

// eventsPatience is how long the event stream waits out a store that went away before it ends.
const eventsPatience = 2 * time.Minute

// events streams a run's events as server-sent events, each the JSON `orch run --json` prints, from after
// Last-Event-ID (or ?after=) — from the start when neither is given — until the run ends or the client goes away.
func (s *Server) events(w http.ResponseWriter, r *http.Request, _ string) {
	run, ok := s.run(w, r)
	if !ok {
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		problem(w, http.StatusInternalServerError, "Streaming is not supported here", "the connection cannot stream")
		return
	}
	from := r.Header.Get("Last-Event-ID")
	if from == "" {
		from = r.URL.Query().Get("after")
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()
	for u := range runs.Follow(r.Context(), s.cfg.Store, run.ID, runs.FollowOptions{From: from, Patience: eventsPatience}) {
		switch {
		case u.Event != nil:
			data, err := json.Marshal(u.Event)
			if err != nil {
				continue
			}
			fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", u.Event.ID, u.Event.Type(), data)
		case u.Outage != nil:
			fmt.Fprint(w, "event: outage\ndata: {\"store\":\"unreachable\"}\n\n")
		case u.Back > 0:
			fmt.Fprintf(w, "event: back\ndata: {\"away_s\":%.1f}\n\n", u.Back.Seconds())
		case u.Err != nil:
			fmt.Fprint(w, "event: error\ndata: {\"store\":\"unreachable\"}\n\n")
		}
		flusher.Flush()
	}
}

// isInvalidRun reports whether err is a start refused for the request's sake.
func isInvalidRun(err error) bool { return errors.Is(err, runs.ErrInvalid) }

// numbers reads the query's numeric parameters into what into names; a parameter that is not a number is answered as
// a bad query, and numbers then reports false.
func numbers(w http.ResponseWriter, v url.Values, into map[string]*int) bool {
	for name, n := range into {
		if raw := v.Get(name); raw != "" {
			i, err := strconv.Atoi(raw)
			if err != nil {
				problem(w, http.StatusBadRequest, "Bad query", fmt.Sprintf("%s=%q is not a number", name, raw))
				return false
			}
			*n = i
		}
	}
	return true
}
