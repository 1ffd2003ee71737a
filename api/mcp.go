package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// ViaMCP names an MCP client in the audit trail.
const ViaMCP = "mcp"

// MCPPath is where the MCP server is served over streamable HTTP, behind the API's access rules.
const MCPPath = "/mcp"

// MCP is orch's MCP server for who: the API's operations as tools, so that a person in an MCP client (Claude Desktop,
// Claude Code, an IDE) drives runs and answers their questions. Every call is who's, audited as via "mcp".
func (s *Server) MCP(who, version string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "orch", Title: "orch", Version: version}, &mcp.ServerOptions{
		Instructions: "orch runs coding agents through plans and asks a person when they need one. Start runs, follow " +
			"them, read their work and answer their questions here; every answer is audited under your name.",
	})
	t := mcpTools{s: s, who: who}
	mcp.AddTool(srv, &mcp.Tool{Name: "start_run", Description: "Start a run: a plan file of the workspace (plan), " +
		"or one task in words (text). Returns the run; its id is run_id."}, t.startRun)
	mcp.AddTool(srv, &mcp.Tool{Name: "list_runs", Description: "List runs, newest first, with the history's filters: " +
		"status (queued, running, parked, paused, completed, failed, aborted, or open for runs that wait for an " +
		"answer), plan, user; page and limit.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.listRuns)
	mcp.AddTool(srv, &mcp.Tool{Name: "get_run", Description: "A run's status, tasks, costs, branch and open question.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.getRun)
	mcp.AddTool(srv, &mcp.Tool{Name: "get_events", Description: "A run's recent events, as `orch run --json` prints " +
		"them (the last 100 unless limit says otherwise).", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.getEvents)
	mcp.AddTool(srv, &mcp.Tool{Name: "get_diff", Description: "A run's work: its branch against its base, as a unified " +
		"diff (stat: only the diffstat).", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.getDiff)
	mcp.AddTool(srv, &mcp.Tool{Name: "list_questions", Description: "The questions runs wait on, oldest first, each " +
		"with its options and the kinds of answer it takes.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.listQuestions)
	mcp.AddTool(srv, &mcp.Tool{Name: "answer_question", Description: "Answer a run's open question with exactly one of: " +
		"choose (an option's key), answer (words: guidance for the agent), retry, resume, force (a reason, with " +
		"acknowledge_risk), abort (a reason). The first answer wins wherever it comes from."}, t.answer)
	mcp.AddTool(srv, &mcp.Tool{Name: "cancel_run", Description: "Cancel a run that is queued, running or waiting " +
		"(its work so far is kept on its branch).", Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, t.cancel)
	return srv
}

func ptr[T any](v T) *T { return &v }

// MCPHandler serves the MCP server over streamable HTTP, behind the API's access rules: each request is the person
// its token (or loopback) says, with a server of its own.
func (s *Server) MCPHandler(version string) http.Handler {
	var servers sync.Map // person → *mcp.Server: the tools and their schemas are built once a person, not per request
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		who, _ := r.Context().Value(personKey{}).(string)
		if who == "" {
			return nil
		}
		if srv, ok := servers.Load(who); ok {
			return srv.(*mcp.Server)
		}
		srv, _ := servers.LoadOrStore(who, s.MCP(who, version))
		return srv.(*mcp.Server)
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: maxBody, Logger: s.cfg.Log})
	return s.guard(func(w http.ResponseWriter, r *http.Request, who string) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), personKey{}, who)))
	})
}

type personKey struct{}

// mcpTools are the tools of one person's MCP server.
type mcpTools struct {
	s   *Server
	who string
}

// RunID names a run.
type RunID struct {
	RunID string `json:"run_id" jsonschema:"the run's id"`
}

func (t mcpTools) startRun(ctx context.Context, _ *mcp.CallToolRequest, in StartRequest) (*mcp.CallToolResult, RunDetail, error) {
	run, err := t.s.start(ctx, t.who, ViaMCP, in)
	if err != nil {
		return nil, RunDetail{}, t.said(err)
	}
	return nil, t.s.detail(run, t.s.cfg.Now()), nil
}

func (t mcpTools) listRuns(ctx context.Context, _ *mcp.CallToolRequest, in ListQuery) (*mcp.CallToolResult, RunList, error) {
	list, err := t.s.list(ctx, in)
	if err != nil {
		return nil, RunList{}, t.said(err)
	}
	return nil, list, nil
}

func (t mcpTools) getRun(ctx context.Context, _ *mcp.CallToolRequest, in RunID) (*mcp.CallToolResult, RunDetail, error) {
	run, err := t.s.cfg.Store.Get(ctx, in.RunID)
	if err != nil {
		return nil, RunDetail{}, t.said(err)
	}
	return nil, t.s.detail(run, t.s.cfg.Now()), nil
}

// EventsQuery asks for a run's latest events.
type EventsQuery struct {
	RunID string `json:"run_id" jsonschema:"the run's id"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many of the latest events (1 to 1000; default 100)"`
}

// EventList is a run's latest events, oldest first, each the JSON `orch run --json` prints.
type EventList struct {
	Events []map[string]any `json:"events"`
}

func (t mcpTools) getEvents(ctx context.Context, _ *mcp.CallToolRequest, in EventsQuery) (*mcp.CallToolResult, EventList, error) {
	if in.Limit == 0 {
		in.Limit = 100
	}
	if in.Limit < 1 || in.Limit > 1000 {
		return nil, EventList{}, errors.New("limit is 1 to 1000")
	}
	if _, err := t.s.cfg.Store.Get(ctx, in.RunID); err != nil {
		return nil, EventList{}, t.said(err)
	}
	events, err := t.s.cfg.Store.Recent(ctx, in.RunID, in.Limit)
	if err != nil {
		return nil, EventList{}, t.said(err)
	}
	out := EventList{Events: []map[string]any{}}
	for _, ev := range events {
		data, err := json.Marshal(ev)
		if err != nil {
			continue
		}
		var m map[string]any
		if json.Unmarshal(data, &m) == nil {
			out.Events = append(out.Events, m)
		}
	}
	return nil, out, nil
}

// DiffQuery asks for a run's work.
type DiffQuery struct {
	RunID string `json:"run_id" jsonschema:"the run's id"`
	Stat  bool   `json:"stat,omitempty" jsonschema:"only the diffstat"`
}

// maxToolDiff bounds a diff sent to an MCP client, which puts it in a model's context.
const maxToolDiff = 256 << 10

func (t mcpTools) getDiff(ctx context.Context, _ *mcp.CallToolRequest, in DiffQuery) (*mcp.CallToolResult, any, error) {
	run, err := t.s.cfg.Store.Get(ctx, in.RunID)
	if err != nil {
		return nil, nil, t.said(err)
	}
	switch {
	case run.Git == nil:
		return nil, nil, fmt.Errorf("run %s has no branch: it worked in a directory that is not a git repository", run.ID)
	case run.Git.BaseCommit == "":
		return nil, nil, fmt.Errorf("run %s has no branch yet: a worker has not started it", run.ID)
	case t.s.cfg.Diffs == nil:
		return nil, nil, errors.New("this server cannot read the runs' repositories")
	}
	var buf bytes.Buffer
	if err := t.s.cfg.Diffs.Diff(ctx, run.Git, in.Stat, &buf); err != nil {
		t.s.cfg.Log.Warn("mcp: diff", "run", run.ID, "err", err)
		return nil, nil, errors.New("the run's branch could not be read; try again")
	}
	text := buf.String()
	if text == "" {
		text = "(no changes)"
	}
	if len(text) > maxToolDiff {
		text = text[:maxToolDiff] + fmt.Sprintf("\n# orch: the diff is cut at %d bytes; ask for stat, or fetch the branch %s\n", maxToolDiff, run.Git.Branch)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
}

func (t mcpTools) listQuestions(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, QuestionList, error) {
	list, err := t.s.questions(ctx, 1, questionsLimit)
	if err != nil {
		return nil, QuestionList{}, t.said(err)
	}
	return nil, list, nil
}

// AnswerArgs is answer_question's input: the run and one answer.
type AnswerArgs struct {
	RunID string `json:"run_id" jsonschema:"the run whose question is answered"`
	AnswerRequest
}

func (t mcpTools) answer(ctx context.Context, _ *mcp.CallToolRequest, in AnswerArgs) (*mcp.CallToolResult, Resolved, error) {
	run, e, err := t.s.answerRun(ctx, t.who, ViaMCP, in.RunID, in.AnswerRequest)
	if err != nil && (run == nil || e == nil) {
		return nil, Resolved{}, t.said(err)
	}
	return nil, Resolved{RunID: run.ID, EscalationID: e.ID, Answer: escalation.Describe(e, e.Resolution),
		RunStatus: string(run.Status)}, nil
}

// CancelArgs is cancel_run's input.
type CancelArgs struct {
	RunID  string `json:"run_id" jsonschema:"the run to cancel"`
	Reason string `json:"reason,omitempty" jsonschema:"why, for the audit trail"`
}

func (t mcpTools) cancel(ctx context.Context, _ *mcp.CallToolRequest, in CancelArgs) (*mcp.CallToolResult, RunDetail, error) {
	run, err := t.s.cancel(ctx, t.who, ViaMCP, in.RunID, in.Reason)
	if err != nil {
		return nil, RunDetail{}, t.said(err)
	}
	return nil, t.s.detail(run, t.s.cfg.Now()), nil
}

// said is an error as a tool result says it: the client's mistakes in their own words, the server's troubles without
// their insides.
func (t mcpTools) said(err error) error {
	var bad *invalidError
	switch {
	case errors.As(err, &bad), errors.Is(err, errNoFront), errors.Is(err, jobs.ErrRunNotFound),
		errors.Is(err, escalation.ErrInvalid), errors.Is(err, escalation.ErrAlreadyResolved),
		errors.Is(err, escalation.ErrNoOpenEscalation), isInvalidRun(err):
		return err
	}
	t.s.cfg.Log.Warn("mcp: a tool failed", "by", t.who, "err", err)
	return errors.New("the store does not answer; try again in a moment")
}
