// Package runs is the one way to start a run and to follow it: the terminal, Slack, the web view and
// `orch run --detach` all turn a request into a run with Prepare and Start, and watch it with Follow.
package runs

import (
	"context"
	"errors"
	"fmt"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/pipeline"
)

// ErrInvalid marks a request that cannot become a run — a plan that does not parse, a task it does not have, an
// agent that cannot run — said in the error's own words. Nothing was written.
var ErrInvalid = errors.New("invalid run request")

type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, a ...any) error { return &invalidError{fmt.Sprintf(format, a...)} }

// Request is a run someone asks for.
type Request struct {
	// Plan is the plan file: a markdown milestone or a DOT pipeline.
	Plan string
	// Text, instead of a plan, is a task in a person's own words (Slack's `/orch do`, a mention of the bot): the run
	// has one agent task whose description is Text, with Context after it (the conversation it was asked in, the run it
	// follows up). FollowUpOf names that run.
	Text, Context, FollowUpOf string
	// Tasks, with Text, are the run's tasks as the surface it was asked on found them (a review's threads, one task
	// each): Text is what the run as a whole is asked, and Context follows every task's description.
	Tasks []pipeline.Task
	// PlanName is how the run names its plan (a path relative to the workspace, as Slack shows it); "": Plan.
	PlanName string
	// Task, when set, runs only this agent task of the plan (`orch task`), with no end-to-end phase.
	Task      string
	Options   jobs.Options
	Workspace string
	Origin    jobs.Origin
	// Confined refuses a simulated agent's scenario outside Workspace (symlinks resolved): a request from a chat must
	// not make a worker read files elsewhere.
	Confined bool
	// Git says how the run's branch is made, when the workspace is a git repository or the run clones one.
	Git Git
}

// Git is how a run's branch is made.
type Git struct {
	// URL, when set, is a repository (any git URL, a local bare repository's path included) that the worker running
	// the run clones, instead of working in Workspace: workers then share nothing but Redis and the repository.
	URL string
	// Base is the ref the run's branch starts from; "" for the workspace's HEAD (the remote's, for URL).
	Base string
	// Push is the remote the branch is pushed to after every committed task; "" for none ("origin" for URL, where
	// the branch would otherwise live on one worker only).
	Push string
	// Continue, when set, is a branch of orch's that the run goes on with instead of making its own: a pull request's,
	// after a review or a red check. It needs URL, as the branch is what the remote holds.
	Continue *Continuation
}

// Continuation is an existing branch of orch's that a run goes on with.
type Continuation struct {
	// Branch is the branch (orch/…: orch pushes to no branch but its own), At the commit it is at on the remote. The
	// run starts from At, counts its work from there, and pushes only over At: commits someone else pushes to the
	// branch while the run works are not lost (the push is refused and says so).
	Branch, At string
	// PullRequest is the branch's pull request: the run opens none of its own.
	PullRequest string
}

// TaskFinder finds the tasks of a milestone whose headings do not name them (an LLM brain reading the plan), and
// says what asking cost: the run counts it as it counts its brain's other calls.
type TaskFinder func(ctx context.Context, opts jobs.Options, plan string) ([]pipeline.Task, jobs.BrainUsage, error)

// Prepared is a run ready to be created: checked in full, nothing written yet.
type Prepared struct {
	Run *jobs.Run
	// Graph is a DOT pipeline's graph; nil for a milestone.
	Graph *pipeline.Graph
	// Found says how the tasks were found when the headings did not name them ("" when they did).
	Found string
	// EndToEnd says whether the run ends with an end-to-end phase, and why (a milestone run in full only).
	EndToEnd string
}

// Prepare turns a request into a run: it loads the plan, finds its tasks (asking find, when set, about a milestone
// without task headings — unless the run's brain is the heuristic one), adds a milestone's end-to-end phase, and
// checks the agent. An error wraps ErrInvalid or is a *pipeline.PlanError; either way nothing was written.
func Prepare(ctx context.Context, req Request, find TaskFinder) (*Prepared, error) {
	if req.Plan == "" && (req.Text != "" || req.Context != "") {
		return prepareRequest(ctx, req)
	}
	plan, err := pipeline.Load(req.Plan)
	if err != nil {
		return nil, err
	}
	graph, err := loadGraph(plan)
	if err != nil {
		return nil, err
	}
	opts := req.Options
	if err := checkAgent(&opts, req.Plan, req.Workspace, req.Confined); err != nil {
		return nil, err
	}
	p := &Prepared{Graph: graph}
	var tasks []pipeline.Task
	var finding jobs.BrainUsage
	if graph != nil {
		tasks = graph.Tasks()
	} else if tasks, finding, p.Found, err = milestoneTasks(ctx, plan, opts, find); err != nil {
		return nil, err
	}
	source := plan.Content
	switch {
	case req.Task != "":
		if tasks, err = onlyTask(req.Plan, tasks, req.Task); err != nil {
			return nil, err
		}
		source = "" // one node alone is a pipeline of one task
	case graph == nil:
		tasks, p.EndToEnd = withVerification(plan, tasks, opts.E2EFixAttempts())
	}
	name := req.PlanName
	if name == "" {
		name = req.Plan
	}
	p.Run = newRun(name, plan.Title, tasks, opts, req.Workspace, req.Origin)
	p.Run.PlanBrain = finding
	if p.Run.Git, err = branch(ctx, req.Workspace, req.Git, p.Run.ID); err != nil {
		return nil, err
	}
	if graph != nil && req.Task == "" {
		p.Run.Graph = source
	}
	return p, nil
}

// Store is what Start needs of the store.
type Store interface {
	Create(ctx context.Context, r *jobs.Run, events ...jobs.Event) error
}

// Enqueuer is what Start needs of the queue.
type Enqueuer interface {
	Start(ctx context.Context, runID string) error
}

// Start creates a prepared run and queues it: a worker, here or elsewhere, picks it up.
func Start(ctx context.Context, st Store, q Enqueuer, p *Prepared) error {
	if err := st.Create(ctx, p.Run); err != nil {
		return err
	}
	return q.Start(ctx, p.Run.ID)
}

// Starter prepares and starts runs for a front end that has no terminal to show notes on (Slack, the web).
type Starter struct {
	Store     Store
	Queue     Enqueuer
	FindTasks TaskFinder
}

// Start prepares the request and starts the run.
func (s *Starter) Start(ctx context.Context, req Request) (*jobs.Run, error) {
	p, err := Prepare(ctx, req, s.FindTasks)
	if err != nil {
		return nil, err
	}
	if err := Start(ctx, s.Store, s.Queue, p); err != nil {
		return nil, err
	}
	return p.Run, nil
}

// newRun is a queued run of a plan's tasks. Task titles and descriptions are redacted: a plan must not smuggle a
// secret into orch's state.
func newRun(planPath, title string, tasks []pipeline.Task, opts jobs.Options, ws string, origin jobs.Origin) *jobs.Run {
	run := &jobs.Run{ID: jobs.NewRunID(), PlanPath: planPath, PlanTitle: title, Workspace: ws, Options: opts,
		Origin: origin, Status: jobs.RunQueued}
	for _, t := range tasks {
		run.Tasks = append(run.Tasks, &jobs.Task{ID: t.ID, Title: safetext.Redact(t.Title),
			Description: safetext.Redact(t.Description), Status: jobs.TaskPending, Kind: t.Kind, Timeout: t.Timeout,
			MaxAttempts: t.MaxAttempts, Backoff: t.Backoff})
	}
	return run
}
