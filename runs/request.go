package runs

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/pipeline"
)

// Bounds of a request in words: Slack lets a message carry 40,000 characters, more than any task asked in words needs,
// and everything here ends up in every attempt's prompt.
const (
	maxRequest      = 16 << 10 // the request itself
	maxContext      = 16 << 10 // the conversation and run it was asked in
	maxRequestTitle = 80       // runes of the title made from its first line
)

// RequestTaskID is the id of the one task of a run asked for in words.
const RequestTaskID = "1"

// prepareRequest turns a request in words into a run of one agent task: the text is its description, with the context
// after it. Both are redacted: a secret pasted into Slack must not reach orch's state or the agent's prompt.
func prepareRequest(ctx context.Context, req Request) (*Prepared, error) {
	text := strings.TrimSpace(req.Text)
	if text == "" {
		return nil, invalidf("what should the agent do? The request is empty")
	}
	if strings.ContainsRune(text, 0) || !utf8.ValidString(text) {
		return nil, invalidf("the request holds a NUL byte or is not valid UTF-8")
	}
	opts := req.Options
	if opts.Agent == "sim" && opts.SimScenario == "" {
		// A plan's scenario is found beside it; a request in words has no plan to look beside.
		return nil, invalidf("the simulated agent needs a scenario for a request in words: set ORCH_SIM_SCENARIO or --sim-scenario")
	}
	if err := checkAgent(&opts, "", req.Workspace, req.Confined); err != nil {
		return nil, err
	}
	text = safetext.Redact(safetext.Bound(text, maxRequest))
	desc := text
	if c := strings.TrimSpace(req.Context); c != "" {
		desc += "\n\n## Context\n\n" + safetext.Redact(safetext.Bound(c, maxContext))
	}
	title := RequestTitle(text)
	p := &Prepared{}
	p.Run = newRun("", title, []pipeline.Task{{ID: RequestTaskID, Title: title, Description: desc}}, opts,
		req.Workspace, req.Origin)
	p.Run.Request, p.Run.FollowUpOf = text, req.FollowUpOf
	var err error
	if p.Run.Git, err = branch(ctx, req.Workspace, req.Git, p.Run.ID); err != nil {
		return nil, err
	}
	return p, nil
}

// RequestTitle is what a run asked for in words is called: the request's first line, on one line, cut to a title's
// length at a word where it can.
func RequestTitle(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.Join(strings.Fields(line), " ")
	if utf8.RuneCountInString(line) <= maxRequestTitle {
		return line
	}
	runes := []rune(line)[:maxRequestTitle]
	cut := string(runes)
	if i := strings.LastIndexByte(cut, ' '); i > maxRequestTitle/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:.-") + "…"
}
