package web

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/runs"
)

// start.go starts runs from the view — a plan of the workspace or a task in words, with the agent and base the
// operator lets people choose — and starts a run again as it was asked. Both go through runs.Front, the one place that
// checks what a person asks for on any surface.

// originKind is the Origin.Kind of the runs the view starts.
const originKind = "web"

// startForm is what the start form shows: the choices, and what was asked when it comes back with an error.
type startForm struct {
	Plan, Text, Agent, Base string
	Agents                  []string
	Plans                   []string // plan files of the workspace, offered as the plan field's suggestions
	DefaultBase             string
	Error                   string
}

// handleNewRun shows the start form, or says why there is none.
func (s *Server) handleNewRun(w http.ResponseWriter, r *http.Request, p person) {
	if !s.canStart(w, r, p) {
		return
	}
	q := r.URL.Query()
	s.startPage(w, r, p, http.StatusOK, startForm{Plan: q.Get("plan"), Text: q.Get("text"), Agent: q.Get("agent"), Base: q.Get("base")})
}

// canStart says, and reports, whether the view starts runs and this person may start them.
func (s *Server) canStart(w http.ResponseWriter, r *http.Request, p person) bool {
	switch {
	case s.cfg.Front == nil:
		s.message(w, r, p, http.StatusNotFound, "Runs are not started here",
			"This view follows and answers runs; it starts none. Start runs with orch run, Slack or the HTTP API.")
		return false
	case !s.mayAnswer(p):
		s.message(w, r, p, http.StatusForbidden, "Not allowed", "You are not allowed to start runs here (ORCH_ALLOWED_USERS).")
		return false
	}
	return true
}

func (s *Server) startPage(w http.ResponseWriter, r *http.Request, p person, status int, f startForm) {
	f.Agents = s.cfg.Front.AgentChoices()
	f.DefaultBase = s.cfg.Front.Git.Base
	if f.DefaultBase == "" {
		f.DefaultBase = "HEAD"
	}
	f.Plans = plansIn(s.cfg.Front.Workspace)
	s.render(w, r, status, "new", map[string]any{"Person": p, "Form": f})
}

// handleStart starts the run the form asks for and shows it. What the person got wrong is said on the form, kept as
// they wrote it; the server's own failures are logged and said in general words.
func (s *Server) handleStart(w http.ResponseWriter, r *http.Request, p person) {
	if !s.canStart(w, r, p) {
		return
	}
	f := startForm{Plan: strings.TrimSpace(r.PostFormValue("plan")), Text: r.PostFormValue("text"),
		Agent: r.PostFormValue("agent"), Base: strings.TrimSpace(r.PostFormValue("base"))}
	run, err := s.cfg.Front.Start(r.Context(), runs.Ask{Plan: f.Plan, Text: f.Text, Agent: f.Agent, Base: f.Base,
		Origin: jobs.Origin{Kind: originKind, User: p.Name}})
	if err != nil {
		f.Error = s.startError(err)
		s.startPage(w, r, p, startStatus(err), f)
		return
	}
	http.Redirect(w, r, "/runs/"+url.PathEscape(run.ID)+"?started=1", http.StatusSeeOther)
}

// startError is what a person is told of a run that did not start: the front's own words when the ask was at fault,
// general words (and a line in the log) otherwise.
func (s *Server) startError(err error) string {
	if errors.Is(err, runs.ErrInvalid) {
		return err.Error()
	}
	s.cfg.Log.Error("web: starting a run", "err", err)
	return "The run could not be started: the server failed (it is in orch's log). Try again in a moment."
}

func startStatus(err error) int {
	if errors.Is(err, runs.ErrInvalid) {
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}

// handleRerun starts a new run as the run was asked for: the same plan or words, agent and base.
func (s *Server) handleRerun(w http.ResponseWriter, r *http.Request, p person) {
	if !s.canStart(w, r, p) {
		return
	}
	run, ok := s.runOf(w, r, p)
	if !ok {
		return
	}
	ask, err := s.askAgain(run)
	if err == nil {
		ask.Origin = jobs.Origin{Kind: originKind, User: p.Name}
		var next *jobs.Run
		if next, err = s.cfg.Front.Start(r.Context(), ask); err == nil {
			http.Redirect(w, r, "/runs/"+url.PathEscape(next.ID)+"?started=1&again="+url.QueryEscape(run.ID), http.StatusSeeOther)
			return
		}
	}
	s.message(w, r, p, startStatus(err), "Not started again", s.startError(err))
}

// askAgain is the ask that started run, for the front of this view: its plan as a path in this view's workspace, or
// its words; its agent; its base.
func (s *Server) askAgain(run *jobs.Run) (runs.Ask, error) {
	ask := runs.Ask{Agent: run.Options.Agent}
	if run.Git != nil {
		ask.Base = run.Git.Base
	}
	switch {
	case run.PlanPath != "":
		plan, ok := planInWorkspace(s.cfg.Front.Workspace, run.Workspace, run.PlanPath)
		if !ok {
			return ask, refusal(fmt.Sprintf("the plan of run %s is not in this server's workspace", run.ID))
		}
		ask.Plan = plan
	case run.Request != "":
		ask.Text = run.Request
	default:
		return ask, refusal(fmt.Sprintf("run %s has neither a plan nor words to start again", run.ID))
	}
	return ask, nil
}

// refusal is an ask the view refuses before the front sees it, in words for the person: it is runs.ErrInvalid, as
// the front's own refusals are.
type refusal string

func (r refusal) Error() string        { return string(r) }
func (r refusal) Is(target error) bool { return target == runs.ErrInvalid }

// planInWorkspace is a run's plan as a path relative to the workspace ws, when it is in it: the run's plan path is
// relative to the run's own workspace (or absolute). A relative path goes to the front as it is, so that what the
// person is told never names a place on the server.
func planInWorkspace(ws, runWS, plan string) (string, bool) {
	abs := plan
	if !filepath.IsAbs(abs) {
		if runWS == "" {
			return plan, !strings.HasPrefix(filepath.Clean(plan), "..")
		}
		abs = filepath.Join(runWS, plan)
	}
	wsAbs, err := filepath.Abs(ws)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(wsAbs, filepath.Clean(abs))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// The plan files the start form suggests: a bounded walk of the workspace, so that a large checkout costs the page
// little.
const (
	maxPlansListed = 200
	maxPlanDepth   = 4
	maxPlanWalk    = 5000 // directory entries looked at
)

// plansIn lists the workspace's plan files (markdown and DOT), relative to it, skipping hidden directories and the
// usual dependency trees.
func plansIn(ws string) []string {
	if ws == "" {
		return nil
	}
	var out []string
	seen := 0
	root := filepath.Clean(ws)
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		seen++
		if err != nil || seen > maxPlanWalk || len(out) >= maxPlansListed {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || slices.Contains([]string{"node_modules", "vendor", "target"}, name) ||
				strings.Count(rel, string(filepath.Separator)) >= maxPlanDepth) {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); (ext == ".md" || ext == ".dot") && !strings.EqualFold(d.Name(), "README.md") {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// actions are what a person may do to a run from its page.
type actions struct {
	Cancel, Rerun, Diff bool
	ConfirmCancel       string
	// Change is the start form filled in as the run was asked for, to start it again with something changed.
	Change string
}

func (s *Server) actionsOf(run *jobs.Run, p person) actions {
	may := s.mayAnswer(p)
	a := actions{
		Cancel:        may && !run.Status.Terminal(),
		Rerun:         may && s.cfg.Front != nil && (run.PlanPath != "" || run.Request != ""),
		Diff:          s.cfg.Diffs != nil && run.Git != nil,
		ConfirmCancel: fmt.Sprintf("Cancel run %s? Its work so far is kept on its branch, but nothing more runs.", run.ID),
	}
	if a.Rerun {
		if ask, err := s.askAgain(run); err == nil {
			v := url.Values{}
			for k, x := range map[string]string{"plan": ask.Plan, "text": ask.Text, "agent": ask.Agent, "base": ask.Base} {
				if x != "" {
					v.Set(k, x)
				}
			}
			a.Change = "/runs/new?" + v.Encode()
		}
	}
	return a
}

// runOf reads the run the path names, or answers that it cannot.
func (s *Server) runOf(w http.ResponseWriter, r *http.Request, p person) (*jobs.Run, bool) {
	run, err := s.cfg.Store.Get(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, jobs.ErrRunNotFound):
		s.message(w, r, p, http.StatusNotFound, "No such run", fmt.Sprintf("There is no run %q here.", truncate(r.PathValue("id"), 80)))
		return nil, false
	case err != nil:
		s.cfg.Log.Error("web: reading a run", "run", r.PathValue("id"), "err", err)
		s.message(w, r, p, http.StatusServiceUnavailable, "The store does not answer", "The run could not be read; try again in a moment.")
		return nil, false
	}
	return run, true
}
