package runs

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/pipeline"
)

// Ask is a run a person asks for away from the terminal — the web view, the HTTP API, an MCP client — in the terms
// they have there: a plan of the workspace or words, and what the operator lets them choose.
type Ask struct {
	// Plan is a plan file, relative to the workspace (or absolute inside it); Text, instead, is the one task in words.
	Plan, Text string
	// Agent, when set, is one of the agents the operator allows (Front.Agents); Base the ref the run's branch starts
	// from.
	Agent, Base string
	Origin      jobs.Origin
}

// maxAskText bounds a task asked in words: a request, not a document (a plan file is the place for one).
const maxAskText = 16 << 10

// Front starts the runs people ask for on a surface, with the operator's options and workspace, through the same
// Prepare as every other run. What a person asks is checked here, once for every surface, and what it says back never
// shows where the workspace is on the server.
type Front struct {
	Starter   *Starter
	Options   jobs.Options
	Workspace string
	Git       Git
	// Agents are the agents a person may ask for besides Options.Agent: KnownAgents unless the operator says
	// otherwise. Never a command template: that would let anyone who may start a run run any command.
	Agents []string
}

// KnownAgents are the agents a surface lets people choose by name.
var KnownAgents = []string{"claude", "codex", "sim"}

// Differ shows a run's work: its branch against its base, in full or as a diffstat (the workspace's worktrees).
type Differ interface {
	Diff(ctx context.Context, g *jobs.Git, stat bool, out io.Writer) error
}

// Start checks the ask and starts its run. An error wraps ErrInvalid when the ask is at fault (said in words fit to
// show the person who asked); other errors are the server's own.
func (f *Front) Start(ctx context.Context, a Ask) (*jobs.Run, error) {
	req, err := f.request(a)
	if err != nil {
		return nil, err
	}
	run, err := f.Starter.Start(ctx, req)
	if err != nil {
		var plan *pipeline.PlanError
		if errors.Is(err, ErrInvalid) || errors.As(err, &plan) {
			return nil, invalidf("%s", WithoutWorkspace(f.Workspace, err.Error()))
		}
		return nil, err
	}
	return run, nil
}

// AgentChoices are the agents a person may ask for, the operator's default first.
func (f *Front) AgentChoices() []string {
	out := []string{f.Options.Agent}
	for _, a := range f.Agents {
		if !slices.Contains(out, a) && !strings.HasPrefix(a, "cmd:") {
			out = append(out, a)
		}
	}
	return out
}

func (f *Front) request(a Ask) (Request, error) {
	plan, text := strings.TrimSpace(a.Plan), strings.TrimSpace(a.Text)
	switch {
	case plan == "" && text == "":
		return Request{}, invalidf("ask for a plan (a file in the workspace) or a task in words")
	case plan != "" && text != "":
		return Request{}, invalidf("ask for a plan or a task in words, not both")
	case !utf8.ValidString(a.Text) || strings.ContainsRune(a.Text, 0):
		return Request{}, invalidf("the task is not UTF-8 text without NUL bytes")
	case len(text) > maxAskText:
		return Request{}, invalidf("the task is %d bytes; a task in words is at most %d (put a longer one in a plan file)", len(text), maxAskText)
	case strings.HasPrefix(a.Base, "-"):
		return Request{}, invalidf("the base %q is not a git ref", a.Base)
	}
	opts := f.Options
	if a.Agent != "" {
		if !slices.Contains(f.AgentChoices(), a.Agent) {
			return Request{}, invalidf("agent %q is not one this server runs (choose from: %s)", a.Agent, strings.Join(f.AgentChoices(), ", "))
		}
		opts.Agent = a.Agent
	}
	git := f.Git
	if a.Base != "" {
		git.Base = a.Base
	}
	req := Request{Text: text, Options: opts, Workspace: f.Workspace, Origin: a.Origin, Confined: true, Git: git}
	if plan == "" {
		return req, nil
	}
	p, err := PlanIn(f.Workspace, plan)
	if err != nil {
		return Request{}, err
	}
	req.Text, req.Plan = "", p
	if req.PlanName, err = filepath.Rel(f.Workspace, p); err != nil {
		req.PlanName = plan
	}
	return req, nil
}

// PlanIn is the plan a person named, as a path inside the workspace ws: relative to it, or absolute inside it. A path
// that leads out of the workspace (by .. or by a symlink) is refused, and so is one that is not a file. The errors wrap
// ErrInvalid and name the path as given, never where the workspace is.
func PlanIn(ws, arg string) (string, error) {
	if strings.TrimSpace(arg) == "" {
		return "", invalidf("which plan? Name a file in the workspace")
	}
	p := arg
	if !filepath.IsAbs(p) {
		p = filepath.Join(ws, p)
	}
	p = filepath.Clean(p)
	if !within(ws, p) {
		return "", invalidf("%s is outside the workspace; plans must be inside it", arg)
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		wsReal, _ := filepath.EvalSymlinks(ws)
		if !within(wsReal, real) {
			return "", invalidf("%s leads outside the workspace; plans must be inside it", arg)
		}
	}
	switch fi, err := os.Stat(p); {
	case errors.Is(err, fs.ErrNotExist):
		return "", invalidf("%s is not in the workspace: no such file", arg)
	case err != nil:
		return "", invalidf("%s cannot be read in the workspace", arg)
	case fi.IsDir():
		return "", invalidf("%s is a directory, not a plan", arg)
	}
	return p, nil
}

// WithoutWorkspace says msg with the workspace ws's place on the server taken out: a file in it by its path inside
// it, the workspace itself as ".". A path that only starts like the workspace's ("/srv/ws2") is left alone.
func WithoutWorkspace(ws, msg string) string {
	ws = filepath.Clean(ws)
	if ws == "" || ws == "." || ws == string(filepath.Separator) {
		return msg
	}
	// The workspace's path where it is whole: followed by a separator (a file in it, now relative), or by what
	// cannot go on a name (the workspace itself, now ".").
	whole := regexp.MustCompile(regexp.QuoteMeta(ws) + `(/|[^\w.\-/]|$)`)
	return whole.ReplaceAllStringFunc(msg, func(m string) string {
		rest := strings.TrimPrefix(m, ws)
		if rest == "/" {
			return ""
		}
		return "." + rest
	})
}
