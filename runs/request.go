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
	maxRequestTasks = 50       // tasks a surface may find in one request (a review's threads)
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
	told := ""
	if c := strings.TrimSpace(req.Context); c != "" {
		told = "\n\n## Context\n\n" + safetext.Redact(safetext.Bound(c, maxContext))
	}
	title := RequestTitle(text)
	tasks := []pipeline.Task{{ID: RequestTaskID, Title: title, Description: text + told}}
	if len(req.Tasks) > 0 {
		var err error
		if tasks, err = requestTasks(req.Tasks, told); err != nil {
			return nil, err
		}
	}
	p := &Prepared{}
	p.Run = newRun("", title, tasks, opts, req.Workspace, req.Origin)
	p.Run.Request, p.Run.FollowUpOf = text, req.FollowUpOf
	var err error
	if p.Run.Git, err = branch(ctx, req.Workspace, req.Git, p.Run.ID); err != nil {
		return nil, err
	}
	return p, nil
}

// requestTasks are the tasks a surface found in a request, each checked and bounded, with context after each
// description.
func requestTasks(in []pipeline.Task, told string) ([]pipeline.Task, error) {
	if len(in) > maxRequestTasks {
		return nil, invalidf("a request of %d tasks: at most %d are taken at once", len(in), maxRequestTasks)
	}
	seen := map[string]bool{}
	out := make([]pipeline.Task, 0, len(in))
	for _, t := range in {
		switch {
		case t.ID == "" || seen[t.ID]:
			return nil, invalidf("a request's tasks need ids of their own; %q is empty or taken", t.ID)
		case strings.TrimSpace(t.Title) == "" || strings.TrimSpace(t.Description) == "":
			return nil, invalidf("task %s of the request has no title or no description", t.ID)
		case strings.ContainsRune(t.Title+t.Description, 0) || !utf8.ValidString(t.Title+t.Description):
			return nil, invalidf("task %s of the request holds a NUL byte or is not valid UTF-8", t.ID)
		}
		seen[t.ID] = true
		out = append(out, pipeline.Task{ID: t.ID, Title: RequestTitle(t.Title),
			Description: safetext.Redact(safetext.Bound(t.Description, maxRequest)) + told})
	}
	return out, nil
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
