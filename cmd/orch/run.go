package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/localredis"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/pipeline"
	"github.com/orchrun/orch/runs"
	"github.com/orchrun/orch/worker"
)

// humanFlags are the flags that choose who answers questions here.
type humanFlags struct {
	autoApprove bool
	answers     string
	json        bool
	noNotify    bool
	detach      bool // queue the run and return: workers elsewhere run it (orch run only)
}

func (h *humanFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&h.autoApprove, "auto-approve", false, "answer questions and gates automatically (failures still stop the run)")
	cmd.Flags().StringVar(&h.answers, "answers", "", "read answers from FILE, one per line; when they run out the run parks")
	cmd.Flags().BoolVar(&h.json, "json", false, "print one JSON object per event")
	cmd.Flags().BoolVar(&h.noNotify, "no-notify", false, "no desktop notification or ORCH_NOTIFY_WEBHOOK message when the run needs you or ends")
}

func (a *app) runCmd() *cobra.Command {
	var h humanFlags
	cmd := &cobra.Command{
		Use:   "run PLAN",
		Short: "Run a plan headless (.md milestone or .dot pipeline)",
		Long: "Run a plan: split it into tasks, run the agent on each in a sandbox, and ask on this terminal when a\n" +
			"human is needed (or use --answers / --auto-approve). With no --redis, state lives in --state-dir.\n" +
			"With --detach the run is only queued and its id printed: the workers on the same Redis run it, and\n" +
			"'orch logs -f RUN_ID' follows it.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if h.detach && (h.autoApprove || h.answers != "") {
				return usageErr("--detach queues the run for workers elsewhere: nobody here answers, so --auto-approve and --answers do not apply")
			}
			return a.startRun(cmd, args[0], "", &h)
		},
	}
	a.runFlags(cmd)
	h.add(cmd)
	cmd.Flags().BoolVar(&h.detach, "detach", false, "queue the run on the configured Redis, print its id and return (workers elsewhere run it)")
	return cmd
}

func (a *app) taskCmd() *cobra.Command {
	var h humanFlags
	cmd := &cobra.Command{
		Use:   "task PLAN TASK_ID",
		Short: "Run one task of a plan",
		Args:  args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.startRun(cmd, args[0], args[1], &h)
		},
	}
	a.runFlags(cmd)
	h.add(cmd)
	return cmd
}

func (a *app) runFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("agent", "claude", "agent: claude, codex, sim or cmd:TEMPLATE (env ORCH_AGENT)")
	f.String("agent-model", "", "model for the agent (claude --model)")
	f.String("brain", "auto", "brain: auto, heuristic, claude or anthropic (env ORCH_BRAIN)")
	f.String("brain-model", "", "model of an LLM brain (default claude-haiku-4-5-20251001; env ORCH_BRAIN_MODEL)")
	// No flag default: orch run defaults to local, the services to docker (baseOptions).
	f.String("sandbox", "", "sandbox: local or docker (env ORCH_SANDBOX; default local for run, docker for serve and worker)")
	f.String("image", "", "sandbox image (docker)")
	f.String("workspace", ".", "the directory the agent works in (env ORCH_WORKSPACE)")
	f.Int("max-attempts", 3, "failed attempts of a task before orch stops and asks (env ORCH_MAX_ATTEMPTS)")
	f.String("sim-scenario", "", "scenario for --agent sim (default: the plan's path with .sim.yaml)")
	f.Bool("llm-only", false, "skip the explicit-marker fast path; always ask the brain (env ORCH_LLM_ONLY)")
	f.Float64("similarity-threshold", 0.8, "error similarity from which failures count as the same, for loop detection (env ORCH_SIMILARITY_THRESHOLD)")
	f.String("agent-timeout", "30m", "wall-clock limit of one agent invocation (env ORCH_AGENT_TIMEOUT)")
	f.Int("concurrency", 2, "agent processes run at once by this process's worker")
	f.Int("max-escalations", 5, "times one task may need a human before the run fails (env ORCH_MAX_ESCALATIONS)")
	f.String("escalation-timeout", "0", "how long a question waits for an answer; 0 waits forever (env ORCH_ESCALATION_TIMEOUT)")
	f.Bool("timeout-default", false, "when a question times out, take its recommended option")
	f.Int("max-e2e-fix-attempts", jobs.DefaultMaxE2EFixAttempts, "fix attempts of a milestone's end-to-end phase before orch asks (env ORCH_MAX_E2E_FIX_ATTEMPTS)")
	budgetFlags(cmd)
	gitFlags(cmd)
}

// options resolves a run's options from flags, env and orch.yaml, and validates them before anything starts.
func (a *app) options(cmd *cobra.Command) (jobs.Options, string, string, error) {
	return a.baseOptions(cmd, "local")
}

// baseOptions resolves the options every run of this process starts with; sandbox is the default sandbox (local for
// `orch run`, docker for the long-running commands).
func (a *app) baseOptions(cmd *cobra.Command, sandbox string) (jobs.Options, string, string, error) {
	s, fc := a.set, a.set.file
	var o jobs.Options
	o.Agent = s.str(cmd, "agent", "ORCH_AGENT", fc.Agent, "claude")
	o.AgentModel = s.str(cmd, "agent-model", "ORCH_AGENT_MODEL", fc.AgentModel, "")
	o.SimScenario = s.str(cmd, "sim-scenario", "ORCH_SIM_SCENARIO", "", "")
	o.Sandbox = s.str(cmd, "sandbox", "ORCH_SANDBOX", fc.Sandbox, sandbox)
	o.Image = s.str(cmd, "image", "ORCH_IMAGE", fc.Image, "")
	var err error
	if o.LLMOnly, o.SimilarityThreshold, err = a.brainTuning(cmd); err != nil {
		return o, "", "", err
	}
	// A task gets at least one attempt: 0 is refused from every layer rather than read as "unset" or "never".
	if o.MaxAttempts, err = s.atLeast(cmd, "max-attempts", "ORCH_MAX_ATTEMPTS", "max_attempts", fc.MaxAttempts, 3, 1); err != nil {
		return o, "", "", err
	}
	if o.MaxE2EFixAttempts, err = s.atLeast(cmd, "max-e2e-fix-attempts", "ORCH_MAX_E2E_FIX_ATTEMPTS", "", nil, jobs.DefaultMaxE2EFixAttempts, 1); err != nil {
		return o, "", "", err
	}
	if o.AgentTimeout, err = s.duration(cmd, "agent-timeout", "ORCH_AGENT_TIMEOUT", "agent_timeout", fc.AgentTimeout, 0); err != nil {
		return o, "", "", err
	}
	bc, err := a.chooseBrain(cmd)
	if err != nil {
		return o, "", "", err
	}
	o.Brain, o.BrainModel = bc.name, bc.model
	brainNote := bc.note
	switch o.Sandbox {
	case "local", "docker":
	default:
		return o, "", "", usageErr("--sandbox %q: want local or docker", o.Sandbox)
	}
	if o.Escalation, err = a.escalationPolicy(cmd); err != nil {
		return o, "", "", err
	}
	if o.Permissions, err = a.permissions(o.Sandbox); err != nil {
		return o, "", "", err
	}
	if o.Budget, err = a.budget(cmd); err != nil {
		return o, "", "", err
	}
	o.Team = strings.TrimSpace(s.str(cmd, "team", "ORCH_TEAM", "", ""))
	if err := jobs.CheckTeam(o.Team); err != nil {
		return o, "", "", usageErr("--team (or ORCH_TEAM): %v", err)
	}
	ws, err := absDir(s.str(cmd, "workspace", "ORCH_WORKSPACE", fc.Workspace, "."), "workspace")
	if err != nil {
		return o, "", "", err
	}
	return o, ws, brainNote, nil
}

// startRun creates a run of planPath (only task onlyTask when set) and drives it to its end or a park; with --detach
// it only queues it, for the workers that share the store.
func (a *app) startRun(cmd *cobra.Command, planPath, onlyTask string, h *humanFlags) error {
	ctx := cmd.Context()
	opts, ws, brainNote, err := a.options(cmd)
	if err != nil {
		return err
	}
	// Checked with --detach too, although no worker runs here: a bad value is refused wherever it would not apply.
	wk, err := a.workerSettings(cmd)
	if err != nil {
		return err
	}
	p, err := runs.Prepare(ctx, runs.Request{Plan: planPath, Task: onlyTask, Options: opts, Workspace: ws,
		Origin: jobs.Origin{Kind: "cli", User: whoami()}, Git: a.branchRequest(cmd)}, a.findTasks)
	if err != nil {
		return err
	}
	self, _ := os.Executable()
	if err := checkDocker(p.Run.Options, self); err != nil {
		return err
	}
	if p.Found != "" {
		fmt.Fprintln(a.stderr, p.Found)
	}
	var iv escalation.Interviewer
	if !h.detach {
		if iv, err = a.interviewer(h); err != nil {
			return err
		}
	}
	b, err := a.backend(cmd)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := runs.Start(ctx, b.Store, b.Queue, p); err != nil {
		return err
	}
	run := p.Run
	if err := a.saved(ctx, b, run.ID); err != nil {
		return err
	}
	if h.detach {
		return a.detached(cmd, b, run)
	}
	r := newRenderer(a.stdout, h.json)
	r.runID = run.ID
	size := jobs.Count(len(run.Tasks), "task")
	if p.Graph != nil {
		size = fmt.Sprintf("pipeline of %s, %s", jobs.Count(len(p.Graph.Nodes), "node"), jobs.Count(len(run.Tasks), "stage"))
	}
	r.note(fmt.Sprintf("Run %s: %s (%s) — agent %s, %s, sandbox %s, %s", run.ID, run.PlanTitle, size,
		run.Options.Agent, brainNote, run.Options.Sandbox, describeRedis(a.set.str(cmd, "redis", "ORCH_REDIS_URL", a.set.file.Redis, ""),
			a.set.str(cmd, "state-dir", "ORCH_STATE_DIR", a.set.file.StateDir, ".orch"))))
	if g := run.Git; g != nil {
		r.note("Working on " + describeBranch(g.Branch, g.Base, g.Push))
	}
	if p.EndToEnd != "" {
		r.note(p.EndToEnd)
	}
	return a.drive(cmd, b, wk, run.ID, "0", iv, h, r)
}

// findTasks asks the run's LLM brain, when it has one, for the tasks of a plan whose headings do not name them.
func (a *app) findTasks(ctx context.Context, opts jobs.Options, plan string) ([]pipeline.Task, jobs.BrainUsage, error) {
	bn, err := brains{apiKey: a.env("ANTHROPIC_API_KEY")}.forRun(opts)
	if err != nil {
		return nil, jobs.BrainUsage{}, err
	}
	list, err := bn.Tasks(ctx, plan)
	usage := worker.BrainUsage(list.Usage)
	if err != nil {
		return nil, usage, err
	}
	out := make([]pipeline.Task, len(list.Tasks))
	for i, t := range list.Tasks {
		out[i] = pipeline.Task{ID: t.ID, Title: t.Title, Description: t.Description}
	}
	return out, usage, nil
}

func (a *app) resumeCmd() *cobra.Command {
	var h humanFlags
	cmd := &cobra.Command{
		Use:   "resume RUN_ID",
		Short: "Continue a parked or interrupted run",
		Long: "Continue a run: ask its open question here (or apply the answer already given with\n" +
			"'orch escalation resolve'), or pick an interrupted run up where it stopped.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			wk, err := a.workerSettings(cmd)
			if err != nil {
				return err
			}
			iv, err := a.interviewer(&h)
			if err != nil {
				return err
			}
			b, err := a.backend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			ctx := cmd.Context()
			run, err := b.Store.Get(ctx, args[0])
			if err != nil {
				return err
			}
			r := newRenderer(a.stdout, h.json)
			r.runID = run.ID
			if run.Status.Terminal() {
				r.note(fmt.Sprintf("Run %s already ended: %s%s", run.ID, run.Status, reasonSuffix(run.Reason)))
				return terminalErr(run)
			}
			// Pick up from the end of the log: what happened before is in `orch status`.
			from, err := b.Store.LastEventID(ctx, run.ID)
			if err != nil {
				return err
			}
			r.note(fmt.Sprintf("Resuming run %s (%s, task %s)", run.ID, run.Status, currentID(run)))
			return a.drive(cmd, b, wk, run.ID, from, iv, &h, r)
		},
	}
	h.add(cmd)
	cmd.Flags().Int("concurrency", 2, "agent processes run at once by this process's worker")
	return cmd
}

func currentID(r *jobs.Run) string {
	if t := r.Current(); t != nil {
		return t.ID
	}
	return "-"
}

func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}

// interviewer is who answers questions in this process.
func (a *app) interviewer(h *humanFlags) (escalation.Interviewer, error) {
	switch {
	case h.autoApprove && h.answers != "":
		return nil, usageErr("--auto-approve and --answers are exclusive")
	case h.autoApprove:
		return escalation.AutoApprove{}, nil
	case h.answers != "":
		f, err := os.Open(h.answers)
		if err != nil {
			return nil, usageErr("answers file: %v", err)
		}
		defer f.Close()
		lines, err := escalation.ReadAnswers(f)
		if err != nil {
			return nil, usageErr("answers file %s: %v", h.answers, err)
		}
		out := a.stdout
		if h.json {
			out = nil
		}
		return escalation.NewQueue(lines, out), nil
	}
	out := a.stdout
	if h.json {
		out = a.stderr // keep stdout one JSON object per line
	}
	c := escalation.NewConsole(a.stdin, out)
	c.Echo = !isTerminal(a.stdin)
	return c, nil
}

// drive runs the worker in this process and follows the run's events until it ends or parks.
func (a *app) drive(cmd *cobra.Command, b *store.Backend, wk workerSettings, runID, from string, iv escalation.Interviewer,
	h *humanFlags, r *renderer) error {
	ctx := cmd.Context()
	w, err := a.startWorker(b, wk)
	if err != nil {
		return err
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			w.Shutdown()
			// A step still finishing as the run ended was interrupted by the shutdown and went back to the queue:
			// nothing of a run that is over stays queued in the store.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if _, err := b.Queue.Sweep(sctx, func(ctx context.Context, id string) (bool, error) {
				if id != runID {
					return false, nil
				}
				r, err := b.Store.Get(ctx, id)
				return err == nil && r.Status.Terminal(), err
			}); err != nil {
				a.log.Warn("removing the run's queued tasks", "run_id", runID, "err", err)
			}
		}
	}
	defer stop()
	// Whatever state the run was left in, make sure its next task is queued: an interrupted step, a resolution made
	// from another terminal.
	if _, err := w.Continue(ctx, runID); err != nil {
		return err
	}
	who := whoami()
	att := &runs.Attendant{Store: b.Store, Queue: b.Queue, By: who, Via: via(h), Show: r.update, Note: r.note,
		Interviewer: &escalation.Recording{Inner: iv, Store: b.Store, By: who, Via: via(h)}}
	n := a.notifier(h)
	if via(h) == "console" {
		// A question waiting long at the prompt taps the person on the shoulder.
		att.WaitingAfter = notifyAfter
		att.Waiting = func(q runs.Question) {
			n.notify(context.Background(), "orch: run "+runID+" asks you", safetext.OneLine(safetext.HeadLine(q.Escalation.Question), 300))
		}
	}
	if !h.json && isTerminal(a.stdout) {
		r.spin(a.stdout) // a person watches: show what runs between the event lines
	}
	r.outage = a.outage(cmd)
	status, err := att.Attend(ctx, runs.Follow(ctx, b.Store, runID, runs.FollowOptions{From: from, Patience: storePatience}))
	r.stopSpinning()
	stop()
	cctx, cancel := background()
	defer cancel()
	run, gerr := b.Store.Get(cctx, runID)
	if gerr == nil && (run.Status.Terminal() || run.Status == jobs.RunParked) {
		if rerr := w.ReleaseRun(cctx, run); rerr != nil {
			a.log.Warn("releasing the run's sandbox", "run_id", runID, "err", rerr)
		}
	}
	if serr := a.saved(cctx, b, runID); serr != nil {
		return serr
	}
	switch {
	case errors.Is(err, context.Canceled):
		r.note(fmt.Sprintf("Interrupted. Run %s is saved; continue it with: orch resume %s%s", runID, runID, a.stateHint(cmd)))
		return withCode(exitSignal, errSilent)
	case err != nil:
		return err
	case gerr != nil:
		return gerr
	}
	n.ended(cctx, run)
	switch status {
	case jobs.RunParked:
		r.parked(run, a.stateHint(cmd))
		return withCode(exitParked, errSilent)
	case jobs.RunPaused:
		r.note(fmt.Sprintf("%s; state saved; resume with: orch resume %s%s", run.Reason, run.ID, a.stateHint(cmd)))
		return withCode(exitParked, errSilent)
	}
	return terminalErr(run)
}

// saved makes sure that what the command is about to tell of run runID is on disk: when it is not, the command fails
// saying so, rather than report a run that the next orch would not find.
func (a *app) saved(ctx context.Context, b *store.Backend, runID string) error {
	err := b.Sync(ctx)
	if errors.Is(err, localredis.ErrMayBeLost) {
		// The process that served the store died (SIGKILL, a crash) and this one took over: what it had not saved
		// is gone, but what is saved from here on is whole.
		fmt.Fprintf(a.stderr, "orch: warning: run %s: %v\n", runID, err)
		err = b.Sync(ctx)
	}
	if err != nil {
		return fmt.Errorf("run %s is not saved: %w (free space where the state is kept, or fix its permissions, then "+
			"check it with: orch status %s)", runID, err, runID)
	}
	return nil
}

func terminalErr(run *jobs.Run) error {
	if run.Status == jobs.RunCompleted {
		return nil
	}
	return withCode(exitFailed, errSilent)
}

// isTerminal reports whether r is a character device (a terminal), where typed answers echo by themselves.
func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func via(h *humanFlags) string {
	switch {
	case h.autoApprove:
		return "auto-approve"
	case h.answers != "":
		return "answers-file"
	}
	return "console"
}

func whoami() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "terminal"
}
