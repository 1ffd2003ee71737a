package runs

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/pipeline"
)

// loadGraph parses and checks a DOT plan; it returns nil for a markdown plan. A pipeline orch cannot run is an
// error that says where and why. A secret in the pipeline is redacted, as in a milestone's tasks, before the run
// keeps its source: plan.Content becomes the redacted source, which is what is parsed.
func loadGraph(plan *pipeline.Plan) (*pipeline.Graph, error) {
	if plan.Kind != pipeline.KindDOT {
		return nil, nil
	}
	g, err := pipeline.ParseDOT(plan.Path, plan.Content)
	if err == nil {
		err = pipeline.Runnable(g)
	}
	if err != nil {
		return nil, invalidf("%v", err)
	}
	if redacted := safetext.Redact(plan.Content); redacted != plan.Content {
		if g, err = pipeline.ParseDOT(plan.Path, redacted); err != nil {
			return nil, invalidf("plan %s holds a secret, and the pipeline does not parse with it redacted: %v", plan.Path, err)
		}
		plan.Content = redacted
	}
	if label := strings.TrimSpace(g.Attrs["label"]); label != "" {
		plan.Title = label
	} else if g.Name != "" {
		plan.Title = g.Name
	}
	return g, nil
}

// milestoneTasks splits a milestone into its tasks. A plan whose headings do not follow the "Task <id>: <title>"
// form is given to find, when there is one and the run's brain is not the heuristic one; found then says so, and
// usage is what the brain's reading cost.
func milestoneTasks(ctx context.Context, plan *pipeline.Plan, opts jobs.Options, find TaskFinder) (tasks []pipeline.Task, usage jobs.BrainUsage, found string, err error) {
	tasks, err = plan.Tasks()
	if err == nil || !errors.Is(err, pipeline.ErrNoTasks) || opts.Brain == "heuristic" || find == nil {
		return tasks, usage, "", err
	}
	list, usage, ferr := find(ctx, opts, plan.Content)
	if ferr != nil || len(list) == 0 {
		return nil, usage, "", err
	}
	return list, usage, fmt.Sprintf("plan %s: no \"Task <id>: <title>\" headings; the %s brain found %d tasks", plan.Path,
		opts.Brain, len(list)), nil
}

// onlyTask keeps the one agent task `orch task` asked for.
func onlyTask(planPath string, tasks []pipeline.Task, id string) ([]pipeline.Task, error) {
	for _, t := range tasks {
		if t.ID != id {
			continue
		}
		if t.Kind != jobs.KindAgent {
			return nil, invalidf("plan %s: %s is not an agent task but a %s; orch task runs one agent task", planPath, id,
				map[string]string{jobs.KindGate: "human gate", jobs.KindChat: "conversation"}[t.Kind])
		}
		return []pipeline.Task{t}, nil
	}
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	return nil, invalidf("plan %s has no task %q (tasks: %s)", planPath, id, strings.Join(ids, ", "))
}

// The descriptions of the end-to-end phase's two tasks; the plan's verification section follows each.
var (
	//go:embed prompts/verify.md
	verifyPrompt string
	//go:embed prompts/fix.md
	fixPrompt string
)

// withVerification adds a milestone's end-to-end phase to its tasks when the plan has a verification section: a
// verification task (no retries: a failure goes to the fix) and a fix task. It says what it did, or that the plan has
// no verification.
func withVerification(plan *pipeline.Plan, tasks []pipeline.Task, fixes int) ([]pipeline.Task, string) {
	v, ok := pipeline.ExtractVerification(plan.Content)
	if !ok {
		return tasks, "No verification section in the plan (E2E Test Scenario, Milestone Verification, …): no end-to-end phase."
	}
	for _, t := range tasks {
		if t.ID == jobs.VerifyTaskID || t.ID == jobs.FixTaskID {
			return tasks, fmt.Sprintf("The plan has a task %q, the id of the end-to-end phase: no end-to-end phase.", t.ID)
		}
	}
	tasks = append(tasks,
		pipeline.Task{ID: jobs.VerifyTaskID, Title: "End-to-end verification", Kind: jobs.KindVerify, MaxAttempts: 1, Line: v.Line,
			Description: strings.TrimSpace(verifyPrompt) + "\n\n" + v.Text},
		pipeline.Task{ID: jobs.FixTaskID, Title: "Fix the end-to-end failures", Kind: jobs.KindFix, Line: v.Line,
			Description: strings.TrimSpace(fixPrompt) + "\n\n" + v.Text})
	commands := fmt.Sprintf("%d command blocks", len(v.Commands))
	if len(v.Commands) == 1 {
		commands = "1 command block"
	}
	return tasks, fmt.Sprintf("End-to-end phase: the verification on line %d (%s); up to %d fix attempts.", v.Line,
		commands, fixes)
}

// checkAgent checks the run's agent before the run exists, so that a typo is an error now and not a parked run:
// the agent is known, a simulated agent's scenario parses (by default the plan's path with .sim.yaml), a CLI agent
// run here is on PATH, a command template parses. confined keeps the scenario inside workspace.
func checkAgent(opts *jobs.Options, planPath, workspace string, confined bool) error {
	switch {
	case opts.Agent == "sim":
		if opts.SimScenario == "" {
			opts.SimScenario = strings.TrimSuffix(planPath, filepath.Ext(planPath)) + ".sim.yaml"
		}
		abs, err := filepath.Abs(opts.SimScenario)
		if err != nil {
			return invalidf("scenario %s: %v", opts.SimScenario, err)
		}
		if confined {
			// The scenario beside the plan is chosen by orch, not checked by the front end: it must not lead out either.
			real, err := filepath.EvalSymlinks(abs)
			ws, werr := filepath.EvalSymlinks(workspace)
			if err != nil || werr != nil || !within(ws, real) {
				return invalidf("scenario %s is outside the workspace", filepath.Base(opts.SimScenario))
			}
			abs = real
		}
		if _, err := agent.LoadScenario(abs); err != nil {
			return invalidf("%v", err)
		}
		opts.SimScenario = abs
	case opts.Agent == "claude" || opts.Agent == "codex":
		if opts.Sandbox == "docker" {
			break // it runs in the sandbox image, not here
		}
		if _, err := exec.LookPath(opts.Agent); err != nil {
			return invalidf("--agent %s: %s is not on PATH (install it, or use --agent sim or --agent cmd:TEMPLATE)", opts.Agent, opts.Agent)
		}
	case strings.HasPrefix(opts.Agent, "cmd:"):
		if _, err := agent.NewTemplate(strings.TrimPrefix(opts.Agent, "cmd:")); err != nil {
			return invalidf("--agent %s: %v", opts.Agent, err)
		}
	default:
		return invalidf("--agent %q: want claude, codex, sim or cmd:TEMPLATE", opts.Agent)
	}
	return nil
}

// within reports whether path is inside dir.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
