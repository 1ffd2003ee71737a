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
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/pipeline"
)

// humanFlags are the flags that choose who answers questions here.
type humanFlags struct {
	autoApprove bool
	answers     string
	json        bool
	noNotify    bool
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
			"human is needed (or use --answers / --auto-approve). With no --redis, state lives in --state-dir.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.startRun(cmd, args[0], "", &h)
		},
	}
	a.runFlags(cmd)
	h.add(cmd)
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
	f.Bool("llm-only", false, "skip the explicit-marker fast path; always ask the brain")
	f.String("agent-timeout", "30m", "wall-clock limit of one agent invocation (env ORCH_AGENT_TIMEOUT)")
	f.Int("concurrency", 2, "agent processes run at once by this process's worker")
	f.Int("max-escalations", 5, "times one task may need a human before the run fails (env ORCH_MAX_ESCALATIONS)")
	f.String("escalation-timeout", "0", "how long a question waits for an answer; 0 waits forever (env ORCH_ESCALATION_TIMEOUT)")
	f.Bool("timeout-default", false, "when a question times out, take its recommended option")
	f.Int("max-e2e-fix-attempts", jobs.DefaultMaxE2EFixAttempts, "fix attempts of a milestone's end-to-end phase before orch asks (env ORCH_MAX_E2E_FIX_ATTEMPTS)")
}

// options resolves a run's options from flags, env and orch.yaml, and validates them before anything starts.
func (a *app) options(cmd *cobra.Command, planPath string) (jobs.Options, string, string, error) {
	o, ws, note, err := a.baseOptions(cmd, "local")
	if err != nil {
		return o, "", "", err
	}
	if err := checkAgent(&o, planPath); err != nil {
		return o, "", "", err
	}
	self, _ := os.Executable()
	if err := checkDocker(o, self); err != nil {
		return o, "", "", err
	}
	return o, ws, note, nil
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
	o.LLMOnly, _ = cmd.Flags().GetBool("llm-only")
	var err error
	if o.MaxAttempts, err = s.int(cmd, "max-attempts", "ORCH_MAX_ATTEMPTS", fc.MaxAttempts, 3); err != nil {
		return o, "", "", err
	}
	if o.MaxAttempts < 1 {
		return o, "", "", usageErr("--max-attempts must be at least 1, got %d", o.MaxAttempts)
	}
	if o.MaxE2EFixAttempts, err = s.int(cmd, "max-e2e-fix-attempts", "ORCH_MAX_E2E_FIX_ATTEMPTS", 0, jobs.DefaultMaxE2EFixAttempts); err != nil {
		return o, "", "", err
	}
	if o.MaxE2EFixAttempts < 1 {
		return o, "", "", usageErr("--max-e2e-fix-attempts must be at least 1, got %d", o.MaxE2EFixAttempts)
	}
	if o.AgentTimeout, err = s.duration(cmd, "agent-timeout", "ORCH_AGENT_TIMEOUT", fc.AgentTimeout, 0); err != nil {
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
	ws, err := absDir(s.str(cmd, "workspace", "ORCH_WORKSPACE", fc.Workspace, "."), "workspace")
	if err != nil {
		return o, "", "", err
	}
	return o, ws, brainNote, nil
}

// startRun creates a run of planPath (only task onlyTask when set) and drives it to its end or a park.
func (a *app) startRun(cmd *cobra.Command, planPath, onlyTask string, h *humanFlags) error {
	plan, err := pipeline.Load(planPath)
	if err != nil {
		return err
	}
	graph, err := loadGraph(plan)
	if err != nil {
		return err
	}
	opts, ws, brainNote, err := a.options(cmd, planPath)
	if err != nil {
		return err
	}
	var tasks []pipeline.Task
	if graph != nil {
		tasks = graph.Tasks()
	} else if tasks, err = a.planTasks(cmd, plan, opts); err != nil {
		return err
	}
	source := plan.Content
	if onlyTask != "" {
		var keep []pipeline.Task
		for _, t := range tasks {
			if t.ID == onlyTask {
				keep = append(keep, t)
			}
		}
		if len(keep) == 0 {
			return usageErr("plan %s has no task %q (tasks: %s)", planPath, onlyTask, taskIDs(tasks))
		}
		if keep[0].Kind != jobs.KindAgent {
			return usageErr("plan %s: %s is not an agent task but a %s; orch task runs one agent task", planPath, onlyTask,
				map[string]string{jobs.KindGate: "human gate", jobs.KindChat: "conversation"}[keep[0].Kind])
		}
		// One node alone is a pipeline of one task.
		tasks, source = keep, ""
	}
	e2eNote := ""
	if graph == nil && onlyTask == "" {
		tasks, e2eNote = withVerification(plan, tasks, opts.E2EFixAttempts())
	}
	iv, err := a.interviewer(h)
	if err != nil {
		return err
	}
	b, err := a.backend(cmd)
	if err != nil {
		return err
	}
	defer b.Close()

	run := newRun(planPath, plan.Title, tasks, opts, ws, jobs.Origin{Kind: "cli", User: whoami()})
	if graph != nil {
		run.Graph = source
	}
	if err := b.Store.Create(cmd.Context(), run); err != nil {
		return err
	}
	r := newRenderer(a.stdout, h.json)
	r.runID = run.ID
	size := plural(len(tasks), "task")
	if run.Graph != "" {
		size = fmt.Sprintf("pipeline of %s, %s", plural(len(graph.Nodes), "node"), plural(len(tasks), "stage"))
	}
	r.note(fmt.Sprintf("Run %s: %s (%s) — agent %s, %s, sandbox %s, %s", run.ID, plan.Title, size,
		opts.Agent, brainNote, opts.Sandbox, describeRedis(a.set.str(cmd, "redis", "ORCH_REDIS_URL", a.set.file.Redis, ""),
			a.set.str(cmd, "state-dir", "ORCH_STATE_DIR", a.set.file.StateDir, ".orch"))))
	if e2eNote != "" {
		r.note(e2eNote)
	}
	if err := b.Queue.Start(cmd.Context(), run.ID); err != nil {
		return err
	}
	return a.drive(cmd, b, run.ID, "0", iv, h, r)
}

// newRun is a queued run of a plan's tasks. Task descriptions are redacted: a plan must not smuggle a secret into
// orch's state.
func newRun(planPath, title string, tasks []pipeline.Task, opts jobs.Options, ws string, origin jobs.Origin) *jobs.Run {
	run := &jobs.Run{ID: jobs.NewRunID(), PlanPath: planPath, PlanTitle: title, Workspace: ws, Options: opts,
		Origin: origin, Status: jobs.RunQueued}
	for _, t := range tasks {
		run.Tasks = append(run.Tasks, &jobs.Task{ID: t.ID, Title: escalation.Redact(t.Title),
			Description: escalation.Redact(t.Description), Status: jobs.TaskPending, Kind: t.Kind, Timeout: t.Timeout,
			MaxAttempts: t.MaxAttempts, Backoff: t.Backoff})
	}
	return run
}

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
			Description: "All the milestone's tasks are done. Verify the milestone end to end: run the checks below in the " +
				"workspace and report whether each one passes. Change no code in this step; if a check fails, say which and " +
				"show its output.\n\n" + v.Text},
		pipeline.Task{ID: jobs.FixTaskID, Title: "Fix the end-to-end failures", Kind: jobs.KindFix, Line: v.Line,
			Description: "The milestone's end-to-end verification failed: the failures are in the guidance below. Fix the " +
				"code so that the verification passes, keeping every task's work intact. The verification:\n\n" + v.Text})
	return tasks, fmt.Sprintf("End-to-end phase: the verification on line %d (%s); up to %d fix attempts.", v.Line,
		plural(len(v.Commands), "command block"), fixes)
}

// loadGraph parses and checks a DOT plan; it returns nil for a markdown plan. A pipeline orch cannot run is a usage
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
		return nil, usageErr("%v", err)
	}
	if redacted := escalation.Redact(plan.Content); redacted != plan.Content {
		if g, err = pipeline.ParseDOT(plan.Path, redacted); err != nil {
			return nil, usageErr("plan %s holds a secret, and the pipeline does not parse with it redacted: %v", plan.Path, err)
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

func kindName(kind string) string {
	switch kind {
	case jobs.KindGate:
		return "human gate"
	case jobs.KindChat:
		return "interactive"
	}
	return "agent"
}

// planTasks splits a milestone into its tasks. A plan whose headings do not follow the "Task <id>: <title>" form
// is given to an LLM brain, when there is one, to find its tasks.
func (a *app) planTasks(cmd *cobra.Command, plan *pipeline.Plan, opts jobs.Options) ([]pipeline.Task, error) {
	tasks, err := plan.Tasks()
	if err == nil || !errors.Is(err, pipeline.ErrNoTasks) || opts.Brain == "heuristic" {
		return tasks, err
	}
	bn, berr := brains{apiKey: a.env("ANTHROPIC_API_KEY")}.forRun(opts)
	if berr != nil {
		return nil, err
	}
	list, berr := bn.Tasks(cmd.Context(), plan.Content)
	if berr != nil || len(list.Tasks) == 0 {
		return nil, err
	}
	fmt.Fprintf(a.stderr, "plan %s: no \"Task <id>: <title>\" headings; the %s brain found %d tasks\n", plan.Path, opts.Brain, len(list.Tasks))
	out := make([]pipeline.Task, len(list.Tasks))
	for i, t := range list.Tasks {
		out[i] = pipeline.Task{ID: t.ID, Title: t.Title, Description: t.Description}
	}
	return out, nil
}

func taskIDs(tasks []pipeline.Task) string {
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	return strings.Join(ids, ", ")
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
			return a.drive(cmd, b, run.ID, from, iv, &h, r)
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
func (a *app) drive(cmd *cobra.Command, b *store.Backend, runID, from string, iv escalation.Interviewer, h *humanFlags, r *renderer) error {
	ctx := cmd.Context()
	w, err := a.startWorker(cmd, b)
	if err != nil {
		return err
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			w.Shutdown()
		}
	}
	defer stop()
	// Whatever state the run was left in, make sure its next task is queued: an interrupted step, a resolution made
	// from another terminal.
	if _, err := w.Continue(ctx, runID); err != nil {
		return err
	}
	rec := &escalation.Recording{Inner: iv, Store: b.Store, By: whoami(), Via: via(h)}
	n := a.notifier(h)
	f := &follower{store: b.Store, queue: b.Queue, runID: runID, iv: rec, r: r, autoApprove: h.autoApprove,
		by: whoami(), via: via(h)}
	if via(h) == "console" {
		f.notify = n // a question waiting long at the prompt taps the person on the shoulder
	}
	if !h.json && isTerminal(a.stdout) {
		r.spin(a.stdout) // a person watches: show what runs between the event lines
	}
	status, err := f.follow(ctx, from)
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
	case jobs.RunCompleted:
		return nil
	}
	return terminalErr(run)
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

// follower follows one run's events, prints them, and puts questions to the interviewer.
type follower struct {
	store       *store.Store
	queue       *queue.Queue
	runID       string
	iv          escalation.Interviewer
	r           *renderer
	autoApprove bool
	by, via     string
	// notify, when set, is told of a question nobody answered at the prompt for notifyAfter.
	notify *notifier
}

type asked struct {
	esc *jobs.Escalation
	ans escalation.Answer
	err error
}

// redisPatience is how long a follower waits for Redis to come back before it gives up (the run stays saved).
const redisPatience = 2 * time.Minute

// follow returns when the run ends (its terminal status) or parks with nobody to answer (RunParked).
func (f *follower) follow(ctx context.Context, from string) (jobs.RunStatus, error) {
	events := make(chan jobs.Event, 64)
	readErr := make(chan error, 1)
	rctx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	go func() {
		after := from
		var downSince time.Time // when Redis stopped answering; zero while it answers
		for rctx.Err() == nil {
			evs, err := f.store.Events(rctx, f.runID, after, 500*time.Millisecond)
			if err != nil {
				if rctx.Err() != nil {
					return
				}
				// Redis restarting (a deploy, a failover) is no reason to give up the run: the state is in Redis and
				// comes back with it. Keep trying for a while, saying so once.
				if downSince.IsZero() {
					downSince = time.Now()
					f.r.note(fmt.Sprintf("Redis does not answer (%v); waiting for it to come back…", err))
				}
				if time.Since(downSince) > redisPatience {
					readErr <- fmt.Errorf("redis did not come back in %s: %w", redisPatience, err)
					return
				}
				if sleepCtx(rctx, time.Second) != nil {
					return
				}
				continue
			}
			if !downSince.IsZero() {
				f.r.note(fmt.Sprintf("Redis is back after %s.", time.Since(downSince).Round(time.Second)))
				downSince = time.Time{}
			}
			for _, e := range evs {
				after = e.ID
				select {
				case events <- e:
				case <-rctx.Done():
					return
				}
			}
		}
	}()

	answers := make(chan asked, 1)
	var askingID string
	var cancelAsk context.CancelFunc = func() {}
	defer func() { cancelAsk() }()
	shown := map[string]bool{} // questions whose block is on the screen already
	ask := func(e *jobs.Escalation, wait time.Duration) {
		if askingID == e.ID {
			return
		}
		askingID = e.ID
		actx, cancel := context.WithCancel(ctx)
		cancelAsk = cancel
		q := escalation.QuestionFor(e)
		q.RunID = f.runID
		go func() {
			// A question whose timeout came due while nobody ran is the timeout's to settle first.
			if sleepCtx(actx, wait) != nil {
				return
			}
			if f.notify != nil {
				tap := time.AfterFunc(notifyAfter, func() {
					f.notify.notify(context.Background(), "orch: run "+f.runID+" asks you", firstLine(q.Text))
				})
				defer tap.Stop()
			}
			ans, err := f.iv.Ask(actx, q)
			if actx.Err() != nil {
				return // settled elsewhere
			}
			answers <- asked{esc: e, ans: ans, err: err}
		}()
	}
	// A run that is parked already (resume) gets its question at once.
	if run, err := f.store.Get(ctx, f.runID); err == nil {
		if e := run.OpenEscalation(); e != nil && run.Status == jobs.RunParked {
			f.r.escalation(e, taskTitle(run, e.TaskID), run.ID)
			shown[e.ID] = true
			f.present(ctx, run, e, ask)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case err := <-readErr:
			return "", err
		case ev := <-events:
			if b, ok := ev.Body.(jobs.EscalationEvent); !ok || !shown[b.EscalationID] {
				f.r.event(ev)
			}
			switch b := ev.Body.(type) {
			case jobs.EscalationEvent:
				run, err := f.store.Get(ctx, f.runID)
				if err != nil {
					return "", err
				}
				e := run.Escalation(b.EscalationID)
				if e == nil || e.Resolution != nil {
					continue // answered already (we are replaying the log)
				}
				shown[e.ID] = true
				f.present(ctx, run, e, ask)
			case jobs.ResolutionEvent:
				if b.EscalationID == askingID {
					cancelAsk()
					askingID = ""
				}
			case jobs.RunCompletedEvent:
				return jobs.RunCompleted, nil
			case jobs.RunFailedEvent:
				return jobs.RunFailed, nil
			case jobs.RunAbortedEvent:
				return jobs.RunAborted, nil
			case jobs.RunPausedEvent:
				return jobs.RunPaused, nil
			}
		case a := <-answers:
			askingID = ""
			if a.err != nil {
				return "", a.err
			}
			req, ok := escalation.RequestFor(a.esc, f.runID, a.ans, f.by, f.via)
			if !ok {
				return jobs.RunParked, nil
			}
			_, _, err := escalation.Resolve(ctx, f.store, f.queue, req)
			switch {
			case errors.Is(err, escalation.ErrAlreadyResolved), errors.Is(err, escalation.ErrNoOpenEscalation):
				f.r.note("Already answered elsewhere: " + err.Error())
			case errors.Is(err, escalation.ErrInvalid):
				f.r.note(err.Error())
				run, gerr := f.store.Get(ctx, f.runID)
				if gerr != nil {
					return "", gerr
				}
				if e := run.OpenEscalation(); e != nil {
					ask(e, 0)
				}
			case err != nil:
				return "", err
			}
		}
	}
}

// present asks the human about e, unless this process may not answer it: auto-approval never resolves failures or
// security escalations, which end the run as failed (the run_failed event then ends the follow).
func (f *follower) present(ctx context.Context, run *jobs.Run, e *jobs.Escalation, ask func(*jobs.Escalation, time.Duration)) {
	if f.autoApprove && e.Trigger != jobs.TriggerNeedsHelp && !e.Trigger.Conversational() {
		reason := fmt.Sprintf("%s escalation on task %s cannot be auto-approved", e.Trigger, e.TaskID)
		if err := escalation.Decline(ctx, f.store, run.ID, e.ID, f.by, f.via, reason); err != nil {
			f.r.note("could not end the run: " + err.Error())
		}
		return
	}
	ask(e, overdueWait(run, e, f.store.Now()))
}

// overdueWait is how long to hold a question back because its timeout is already due (it came due while no orch
// process ran): the worker settles it within a moment, and asking first would race it.
func overdueWait(run *jobs.Run, e *jobs.Escalation, now time.Time) time.Duration {
	d := run.Options.Escalation.Timeout
	if e.Timeout > 0 {
		d = e.Timeout
	}
	if d <= 0 || now.Before(e.CreatedAt.Add(time.Duration(e.Timeouts+1)*d)) {
		return 0
	}
	return 5 * time.Second
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func taskTitle(r *jobs.Run, id string) string {
	if t := r.Task(id); t != nil {
		return t.Title
	}
	return ""
}
