package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/backoff"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/sandbox"
	"github.com/orchrun/orch/telemetry"
	"github.com/orchrun/orch/workspace"
)

// errStale marks a task that arrived for a state the run has left: a redelivery, a double enqueue, a resume of a run
// that moved on. It is not a failure.
var errStale = errors.New("stale task")

// maxPending bounds the agent output kept for a later judgement when it did not come through keep (fence.go).
const maxPending = 1 << 20

// maxErrorLen bounds each error kept in a task's history: enough for similarity, not a log file per attempt.
const maxErrorLen = 4 << 10

// attempt is what a step knows while the agent runs.
type attempt struct {
	run     *jobs.Run
	task    jobs.Task
	n       int // ORCH_ATTEMPT
	started time.Time
	// rejudge is set when the agent already ran and only the brain's judgement is missing: what it said is on the
	// task (Task.Pending), or in end, noted on this machine as it ended.
	rejudge bool
	end     *ending
	// recovered is set when the task's previous attempt never finished: its worker died with the agent running.
	recovered bool
	// wt is the run's worktree, when the run has a branch; dir is where the agent works.
	wt  *workspace.Worktree
	dir string
	// owner is the delivery that runs the attempt and seq the run's step: together with n they fence everything the
	// attempt saves (fence.go).
	owner owner
	seq   int64
	// found is the task as the delivery's claim found it (fence.go); log is the worker's.
	found claim
	log   *slog.Logger
}

// handleStep runs one attempt of the run's current task: it marks the attempt started, runs the agent and judges
// its output outside any transaction, then saves the outcome.
func (w *Worker) handleStep(ctx context.Context, t *asynq.Task) error {
	p, err := queue.DecodePayload(t)
	if err != nil {
		return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
	}
	self, _ := asynq.GetTaskID(ctx)
	delivery := newDelivery()
	defer w.claim(ctx, self)()
	var lock stepLock // steplock.go
	defer lock.release()
	// Twice at most: a delivery that took over a finished attempt whose work stayed on a lost machine starts the task's
	// next attempt itself.
	for range 2 {
		var at attempt
		var holder string
		claim := func(r *jobs.Run, c *jobs.Change) error {
			h, herr := w.mayStart(ctx, r, p.Seq)
			if herr != nil {
				return herr
			}
			if holder = h; holder != "" {
				return errWait
			}
			return w.beginAttempt(ctx, r, c, p.Seq, owner{self, delivery}, &at, &lock)
		}
		run, err := w.cfg.Store.Update(ctx, p.RunID, claim)
		if errors.Is(err, errHeld) {
			if err := lock.wait(ctx, w, p.RunID, p.Seq); err != nil {
				return err
			}
			at, holder = attempt{}, ""
			run, err = w.cfg.Store.Update(ctx, p.RunID, claim) // the lock is this delivery's now
		}
		if errors.Is(err, errWait) {
			return w.waitForWorkspace(ctx, p.RunID, p.Seq, holder)
		}
		if errors.Is(err, errBudgetWait) {
			return w.waitForMoney(ctx, p.RunID, p.Seq)
		}
		if errors.Is(err, errOwned) {
			w.log.Info("step already running under another delivery; leaving it to that one", "run_id", p.RunID,
				"seq", p.Seq, "delivery", self)
			return nil
		}
		if err != nil || at.run == nil {
			return w.after(ctx, p.RunID, run, err)
		}
		actx, span := startAttempt(ctx, p, &at)
		out, err := w.execute(actx, &at)
		endAttempt(span, out, err)
		if errors.Is(err, errWorkGone) {
			if err := w.redo(ctx, &at); err != nil {
				return w.ended(ctx, &at, nil, err)
			}
			continue
		}
		if err == nil {
			// What follows (the next step's enqueue) carries the attempt's trace.
			run, err = w.saveOutcome(actx, &at, out)
			ctx = actx
		}
		return w.ended(ctx, &at, run, err)
	}
	return fmt.Errorf("step %d of run %s: the task's work was lost twice in one delivery", p.Seq, p.RunID)
}

// ended finishes a delivery whose attempt ran: a delivery that lost its step says so and changes nothing more; an
// interruption (shutdown) goes back to asynq, which runs the step again.
func (w *Worker) ended(ctx context.Context, at *attempt, run *jobs.Run, err error) error {
	switch {
	case errors.Is(err, errLost):
		w.dropLost(ctx, at)
		return nil
	case err != nil && !errors.Is(err, errStale) && !errors.Is(err, jobs.ErrRunNotFound):
		return err
	}
	return w.after(ctx, at.run.ID, run, err)
}

// errBudgetWait ends a step's first transaction, changing nothing, when what is left of the team's budget is held by
// its running attempts: the step looks again shortly (waitForMoney).
var errBudgetWait = errors.New("the team's money left is held by its running attempts")

// errWait ends a step's first transaction, changing nothing, when the run must wait for its workspace.
var errWait = errors.New("the workspace is held by another run")

// mayStart returns the run that step seq of r must wait for, "" for none: a run in a plain directory holds it while
// it works there. It runs in the step's first transaction, which it keeps from starting an attempt when it must wait.
func (w *Worker) mayStart(ctx context.Context, r *jobs.Run, seq int64) (string, error) {
	if r.Status != jobs.RunRunning || r.Seq != seq || r.Git != nil {
		return "", nil // the transaction says what is wrong
	}
	if t := r.Current(); t == nil || t.Kind == jobs.KindGate {
		return "", nil
	}
	return w.holdWorkspace(ctx, r)
}

// beginAttempt starts an attempt of step seq's task in the step's first transaction, and fills at with what the
// agent needs; at stays empty when the step has no agent to run (a gate found running asks its question instead).
// self is the delivery at hand: it owns the attempt, and a task found running under another delivery that lives is
// errOwned (owner.go); before it starts or takes over the attempt, it holds the run's step lock on this machine
// (steplock.go).
func (w *Worker) beginAttempt(ctx context.Context, r *jobs.Run, c *jobs.Change, seq int64, self owner, at *attempt,
	lock *stepLock) error {
	now := w.cfg.Store.Now()
	task := r.Current()
	if r.Status != jobs.RunRunning || r.Seq != seq || task == nil {
		return errStale
	}
	recovered := task.Status == jobs.TaskRunning
	if recovered || task.Pending != nil {
		gone, err := w.ownerGone(ctx, task, self.id)
		if err != nil {
			return err
		}
		if !gone {
			return errOwned
		}
	}
	if err := lock.try(w, r, seq); err != nil {
		return err // errHeld: the delivery waits for it, then reads the run again
	}
	found := claimOf(task)
	if last, end := w.finished(r, task, recovered); last != nil {
		// The agent of the last attempt finished and what it said was kept: the attempt is settled, not run again.
		last.Owner, last.Delivery = self.id, self.delivery
		*at = attempt{run: r, task: *task, n: last.N, started: now, rejudge: true, end: end, owner: self, seq: seq,
			found: found, log: w.log}
		return nil
	}
	if task.Kind == jobs.KindGate {
		// A gate asks a human and has no step; a run found running at one (a crash between transitions) asks now.
		if g, err := w.graphOf(r); err == nil && g.Nodes[task.ID] != nil && r.OpenEscalation() == nil {
			w.run(r, task, c, g, g.Nodes[task.ID], now)
			return nil
		}
		return errStale
	}
	for _, a := range task.Attempts {
		a.Reserved = 0 // an attempt that never settled (its worker died) holds nothing of its team's budget any more
	}
	if c.Ledger != nil {
		if tb, ok := w.cfg.Store.Budget(c.Ledger.Team); ok && teamWaits(r, c, tb) {
			return errBudgetWait
		}
	}
	if w.stopForBudget(r, task, c, now) {
		return nil // the run waits for a person (or its team's next period): no agent runs
	}
	r.Waiting = ""
	// Where the team stands as this attempt starts (what it spent and its running attempts hold), for every surface
	// that shows the run at work, this attempt's start line first.
	r.TeamStanding = nil
	if c.Ledger != nil {
		if tb, ok := w.cfg.Store.Budget(c.Ledger.Team); ok {
			r.TeamStanding = jobs.StandingOf(projected(r, c), tb)
		}
	}
	hold(r, c, r.StartAttempt(c, task, self.id, self.delivery, now))
	*at = attempt{run: r, task: *task, n: task.Started, started: now, recovered: recovered, owner: self, seq: seq,
		found: found, log: w.log}
	return nil
}

// finished returns the task's last attempt when its agent finished and what it said was kept: on the task
// (Task.Pending), or in an ending noted on this machine as the agent ended, its worker killed before the task held it
// (returned with it). nil when the task must run.
func (w *Worker) finished(r *jobs.Run, task *jobs.Task, recovered bool) (*jobs.Attempt, *ending) {
	if len(task.Attempts) == 0 {
		return nil, nil
	}
	last := task.Attempts[len(task.Attempts)-1]
	switch {
	case task.Pending != nil:
		return last, nil
	case !recovered:
		return nil, nil
	}
	end, err := w.endingOf(r, task.ID, last.N, last.Owner)
	if err != nil {
		w.log.Warn("reading the ending of a dead worker's attempt", "run_id", r.ID, "task_id", task.ID, "err", err)
	}
	if end == nil {
		return nil, nil
	}
	return last, end
}

// saveOutcome settles the attempt's outcome on the run, with what it did to the run's branch. The agent's work is done
// and cannot be taken back: Redis restarting (a deploy, a failover) must not make asynq run it again, so the save
// keeps trying for a while (Worker.save); the attempt's fence keeps a late or stale save from doing harm.
func (w *Worker) saveOutcome(ctx context.Context, at *attempt, out *outcome) (*jobs.Run, error) {
	settle := w.settlement(at, out)
	// What the step leaves of the run: played on a copy when the verdict may finish the task or the run of a run with a
	// branch, for the commit and the push; else the run as the step found it, whose task goes on or waits (a run
	// without a branch has nothing to deliver: copying the whole run for nothing is the cost of a long plan's step).
	after := at.run
	if at.wt != nil && at.run.Git != nil && w.settleFinishes(at.run, out) {
		after = preview(at.run, settle)
	}
	d, err := w.deliver(ctx, at.wt, at.run, after, at.fence)
	if err != nil {
		return nil, err
	}
	if d != nil && d.elsewhere != "" && !out.security() {
		// Someone moved the run's branch while the brain judged (after Examine looked): the attempt is held on the
		// same question as a move while the agent worked, rather than completed without its commit.
		out.tampered = append(out.tampered, d.elsewhere)
	}
	return w.save(ctx, at.run.ID, recorded(d, settle))
}

// settlement is the transition that saves the outcome of attempt at: fenced, then settled on the run's current task.
func (w *Worker) settlement(at *attempt, out *outcome) func(*jobs.Run, *jobs.Change) error {
	return func(r *jobs.Run, c *jobs.Change) error {
		if err := at.fence(r, c); err != nil {
			return err // someone aborted the run while the agent worked, or the step is another delivery's now
		}
		task := r.Current()
		if task.Kind == jobs.KindChat {
			w.settleChat(r, task, c, out)
		} else {
			w.settle(r, task, c, out)
		}
		return nil
	}
}

// settleRetry is how a step keeps trying to save what it did while Redis is away, before it gives the step back to
// the queue.
var settleRetry = backoff.Retry{Policy: backoff.Policy{Initial: 200 * time.Millisecond, Factor: 2, Max: 5 * time.Second},
	Patience: 2 * time.Minute}

// outcome is what one attempt produced and what orch decided about it.
type outcome struct {
	ran      bool // the agent ran in this step (not a re-judgement of saved output)
	said     jobs.Pending
	own      string       // said's text without the copies of the prompt it holds (brain.WithoutEcho)
	echoed   bool         // said's text held such copies
	usage    agent.Result // the agent's tokens, cost, model and session, when it ran
	duration time.Duration
	interp   brain.Interpretation
	decision *brain.Decision // for failures
	secrets  []string
	// tampered lists what the agent changed that would point orch's git elsewhere; leaked the kinds of secret the
	// work adds to the repository (workspace.Examination).
	tampered, leaked []string
	execErr          error // the sandbox could not run the agent at all
	// inputErr says execErr is about what the agent was to be given (agent.ErrInput, sandbox.ErrInput): a prompt no
	// argument can hold, a NUL byte. Nothing is misconfigured and no retry can help.
	inputErr   bool
	brainNote  string
	brainUsage jobs.BrainUsage
	// unavailable is set when the brain could not judge: the run stops with the output saved for later.
	unavailable error
	similarity  float64
	custom      []escalation.Spec // custom triggers that matched the output
	files       []string          // what the task changed in the workspace
	diff        string
	// paused is the tool call the agent stopped at for a person (or the calls it was refused): no brain judges it.
	paused *jobs.Paused
	// budgetCut is set when the agent was stopped at the run's time budget rather than its own timeout.
	budgetCut bool
	// jitter is the draw, in [0, 1), of the backoff before a retry: drawn once with the outcome, so that settling it is
	// the same however often it is played.
	jitter float64
}

// execute runs the agent (unless its output is waiting to be judged) and judges what it said. Only an interruption
// (shutdown) is returned as an error.
func (w *Worker) execute(ctx context.Context, at *attempt) (*outcome, error) {
	r, task := at.run, at.task
	out := &outcome{jitter: rand.Float64()}
	learns := r.Git != nil && r.Git.BaseCommit == ""
	wt, err := w.worktree(ctx, r)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		out.execErr = err
		return out, nil
	}
	if learns {
		if err := w.recordBase(ctx, at); err != nil {
			return nil, err
		}
	}
	at.wt, at.dir = wt, workdir(r, wt)
	if err := w.gather(ctx, at, out); err != nil {
		return nil, err
	}
	switch {
	case out.execErr != nil:
		return out, nil
	case task.Kind == jobs.KindChat:
		return out, nil // the human reads the reply and judges it: no brain
	case out.paused != nil && !out.security():
		return out, nil // a person decides the call: there is nothing to judge yet
	case out.limited() != nil:
		return out, nil // the provider said why it stopped and until when: there is nothing to judge
	}
	if err := w.judgeOutput(ctx, at, out); err != nil {
		return nil, err
	}
	return out, nil
}

// gather gets what the attempt's agent said into out: from a dead worker's attempt taken back, from its ending, or
// from the agent run now; what it said is then examined and kept before anything is decided on it.
func (w *Worker) gather(ctx context.Context, at *attempt, out *outcome) error {
	if at.rejudge && at.end == nil {
		return w.takeBack(ctx, at, out)
	}
	if at.end != nil {
		w.takeEnding(at.end, out)
		w.log.Info("settling the attempt of a worker that died as its agent ended", "run_id", at.run.ID,
			"task_id", at.task.ID, "attempt", at.n)
	} else if err := w.runAgent(ctx, at, out); err != nil {
		return err
	}
	if out.execErr != nil {
		return nil
	}
	// The secrets in what the agent said were found as it entered orch (runAgent).
	w.examine(ctx, at, out)
	return w.keep(ctx, at, out)
}

// judgeOutput has the brain read what the agent said in its own words, and lists what changed in a workspace used in
// place when a person will look at it. A brain that cannot answer leaves out.unavailable set, not an error.
func (w *Worker) judgeOutput(ctx context.Context, at *attempt, out *outcome) error {
	r, task := at.run, at.task
	// What the agent said in its own words: an agent may send orch's prompt back (a CLI that echoes its input),
	// and the prompt's closing form would read as a question the agent asks.
	out.own, out.echoed = brain.WithoutEcho(out.said.Text, agent.BuildPrompt(promptOf(&task)))
	out.custom = customTriggers(r.Options.Escalation.Triggers, out.own)
	bn, err := w.cfg.Brain(r.Options)
	if err != nil {
		out.execErr = fmt.Errorf("brain: %w", err)
		return nil
	}
	if err := w.judge(ctx, bn, r, &task, out); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		out.unavailable = err
	}
	if at.wt == nil && (out.interp.Status != brain.StatusCompleted || out.security() || len(out.custom) > 0) {
		// A person will look at a workspace used in place: show them what git sees changed there.
		for _, f := range workspace.PlainChanges(ctx, at.dir) {
			out.files = append(out.files, w.cfg.Secrets.Redact(f))
		}
	}
	return nil
}

// recordBase saves the base commit the run's worktree was just made from, before any agent works on it: a run that
// clones learns its base on the first worker that runs it, and a later attempt on another worker must start from the
// same commit, not from wherever the remote's HEAD is by then, nor from a commit a lost attempt left.
func (w *Worker) recordBase(ctx context.Context, at *attempt) error {
	base := at.run.Git.BaseCommit
	_, err := w.save(ctx, at.run.ID, func(r *jobs.Run, c *jobs.Change) error {
		if err := at.fence(r, c); err != nil {
			return err
		}
		if r.Git == nil || r.Git.BaseCommit != "" {
			return errStale // recorded already
		}
		r.Git.BaseCommit = base
		return nil
	})
	if errors.Is(err, errStale) {
		if r, gerr := w.cfg.Store.Get(ctx, at.run.ID); gerr == nil && r.Git != nil && r.Git.BaseCommit == base {
			return nil
		}
	}
	return err
}

// takeBack makes out what the finished attempt at took over had: what its agent said and what was found in it, its
// work in the worktree. errWorkGone says the work is not on this worker (it stayed on a machine that is gone).
func (w *Worker) takeBack(ctx context.Context, at *attempt, out *outcome) error {
	kept := *at.task.Pending
	out.said, out.secrets, out.paused = kept, kept.Secrets, kept.Paused
	if at.wt != nil && kept.Work == "" {
		// The work was not recorded as the agent ended: this worktree cannot be known to hold it.
		return errWorkGone
	}
	if at.wt != nil {
		ok, err := w.cfg.Workspaces.Recover(ctx, *at.wt, kept.Work)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			w.log.Warn("taking back the work of a finished attempt", "run_id", at.run.ID, "err", err)
		}
		if !ok {
			return errWorkGone
		}
	}
	w.examine(ctx, at, out)
	// What was found when the agent ended stands: a change made to orch's git before this delivery came is not seen by
	// its own look.
	out.tampered = union(kept.Tampered, out.tampered)
	out.leaked = union(kept.Leaked, out.leaked)
	return nil
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// runAgent runs one agent process and records what it said.
func (w *Worker) runAgent(ctx context.Context, at *attempt, out *outcome) error {
	r, task := at.run, at.task
	out.ran = true
	ad, err := w.cfg.Agent(r.Options)
	if err != nil {
		out.execErr = fmt.Errorf("agent %q: %w", r.Options.Agent, err)
		return nil
	}
	pt, guidance := promptOf(&task)
	req := agent.Request{RunID: r.ID, TaskID: task.ID, Attempt: at.n, SessionID: task.SessionID, Workspace: at.dir,
		Prompt: agent.BuildPrompt(pt, guidance), MaxBudgetUSD: moneyLeft(r, &task)}
	if task.Kind == jobs.KindChat {
		req.Prompt = chatPrompt(ad, pt, guidance, &task)
		if len(task.Chat) == 0 {
			req.SessionID = "" // a new conversation
		}
	}
	var perms *agent.HookState
	if ad.Name() == "claude" {
		perms = w.hookState(r, &task, at.dir)
		if task.Kind == jobs.KindChat {
			perms.Defer = false // a conversation's turns are judged by the person reading them
		}
		req.Permissions = perms
		if p := task.Paused; p != nil && !p.Denied && p.Decision != nil && p.Session != "" {
			req.ResumePaused, req.SessionID = true, p.Session
		}
	}
	cmd, err := ad.Command(req)
	if err != nil {
		out.execErr = fmt.Errorf("building the %s command: %w", ad.Name(), err)
		out.inputErr = errors.Is(err, agent.ErrInput)
		return nil
	}
	sb, err := w.sandboxFor(r.Options)
	if err != nil {
		out.execErr = err
		return nil
	}
	parser := ad.NewParser()
	in := &intake{w: w}
	if tw, ok := parser.(agent.ToolWatcher); ok {
		watch, stop := w.watchTools(ctx, r.ID, task.ID)
		defer stop()
		tw.WatchTools(in.watch(watch))
	}
	ectx, span := telemetry.Tracer().Start(ctx, "orch.sandbox.exec", trace.WithAttributes(
		attribute.String("sandbox.kind", sandboxKind(r.Options)), attribute.String("agent", ad.Name())))
	var stdin []byte
	if cmd.Stdin != "" {
		stdin = []byte(cmd.Stdin)
	}
	var readOnly []string
	if at.wt != nil {
		readOnly = at.wt.ReadOnly
	}
	timeout, budgetCut := timeLeft(r, &task, at.started)
	actx, done := w.agentContext(ectx)
	res, err := sb.Exec(actx, sandbox.Spec{RunID: r.ID, TaskID: task.ID, Args: cmd.Args, Env: cmd.Env, Stdin: stdin,
		Dir: at.dir, ReadOnly: readOnly, Timeout: timeout, Recovered: at.recovered}, parser.Line)
	cut := context.Cause(actx)
	done()
	endExec(span, res, err)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(cut, errCutOff) || errors.Is(cut, errShutdown) {
		return cut // stopped, not finished: the step goes back to the queue
	}
	out.duration = res.Duration
	out.said.ExitCode = res.ExitCode
	out.budgetCut = budgetCut && res.TimedOut
	if err != nil {
		out.execErr = err
		out.inputErr = errors.Is(err, sandbox.ErrInput)
		return nil
	}
	// What the agent said becomes orch's here, with the secrets it holds named (a security escalation) and taken out.
	result, stderr := in.result(w.withOutputNote(r.ID, task.ID, parser.Finish(res.ExitCode, res.Stderr), res), lastLines(strings.TrimSpace(string(res.Stderr)), 5))
	out.secrets = in.secrets()
	out.usage = result
	out.budgetCut = out.budgetCut || result.Subtype == agent.SubtypeMaxBudget && req.MaxBudgetUSD > 0
	w.defers.saw(result.Version)
	out.paused = pausedCalls(result, perms, homeDir())
	out.said = jobs.Pending{Text: result.Text, Success: result.Success, Errors: result.Errors, ExitCode: res.ExitCode,
		Signal: res.Signal, Stderr: stderr, TimedOut: res.TimedOut, OOMKilled: res.OOMKilled,
		Effects: effectsOf(perms, &task, in.made(), result)}
	w.noteEnd(at, out)
	if w.testEnded != nil {
		w.testEnded()
	}
	return nil
}

// effectsOf says, a line each, the calls of the attempt with effects beyond the worktree that ran with a person's
// leave: those the agent made, and the paused call a person allowed that the resumed session ran.
func effectsOf(perms *agent.HookState, task *jobs.Task, made []agent.Call, res agent.Result) []string {
	if perms == nil {
		return nil
	}
	var calls []agent.Call
	if p := task.Paused; p != nil && !p.Denied && p.Decision != nil && p.Decision.Allow {
		for _, c := range p.Calls {
			if !slices.ContainsFunc(made, func(m agent.Call) bool { return m.ID == c.ID }) {
				calls = append(calls, agent.Call{ID: c.ID, Tool: c.Tool, Input: c.Input})
			}
		}
	}
	var out []string
	for _, e := range perms.Effects(append(calls, made...), res, homeDir()) {
		out = append(out, e.String())
	}
	return out
}

// promptOf is what an attempt at task is told: the task and the guidance it was given.
func promptOf(task *jobs.Task) (agent.PromptTask, []string) {
	guidance := append([]string(nil), task.Guidance...)
	if task.RetryGuidance != "" {
		guidance = append(guidance, task.RetryGuidance)
	}
	return agent.PromptTask{ID: task.ID, Title: task.Title, Description: task.Description}, guidance
}

// judge asks the brain what the agent's output means and, for a failure under the cap, what to do. The error is
// the brain's unavailability; any other trouble with the brain's replies has been handled by its fallback.
func (w *Worker) judge(ctx context.Context, bn Brain, r *jobs.Run, task *jobs.Task, out *outcome) error {
	said := &out.said
	switch {
	case said.TimedOut:
		out.interp = brain.Interpretation{Status: brain.StatusFailed, Summary: "timed out",
			Error: fmt.Sprintf("the agent timed out after %s", r.AgentTimeout(task))}
	case said.OOMKilled:
		out.interp = brain.Interpretation{Status: brain.StatusFailed, Summary: "out of memory",
			Error: "the agent was killed for running out of memory"}
	case out.echoed && strings.TrimSpace(out.own) == "":
		out.interp = brain.Echoed()
	default:
		bctx, span := telemetry.Tracer().Start(ctx, "orch.brain.interpret")
		in, err := bn.Interpret(bctx, out.own)
		endBrain(span, in.Usage, string(in.Status), in.Fallback, err)
		out.brainUsage = out.brainUsage.Add(BrainUsage(in.Usage))
		if err != nil {
			return fmt.Errorf("interpreting the agent's output: %w", err)
		}
		out.interp = in
		if in.Fallback != "" {
			out.brainNote = in.Fallback
		}
		if out.interp.Status == brain.StatusCompleted && !said.Success {
			// The brain read success into the text, but the process says otherwise: trust the process.
			out.interp.Status = brain.StatusFailed
			out.interp.Error = brain.FailureOf(out.own)
		}
		if out.interp.Status == brain.StatusFailed && !said.Success {
			// What the agent CLI itself reported ("authentication_failed: Not logged in") is what tells a
			// retryable failure from a permanent one: it goes with the error the brain picked out.
			out.interp.Error = withAgentErrors(out.interp.Error, failureParts(said))
		}
		if out.interp.Status == brain.StatusFailed && out.interp.Error == "" {
			out.interp.Error = strings.Join(failureParts(said), "; ")
		}
	}
	if out.interp.Status != brain.StatusFailed {
		return nil
	}
	errs := append(append([]string(nil), task.Errors...), bound(out.interp.Error))
	out.similarity = brain.MeanSimilarity(lastN(errs, max(r.MaxAttempts(task), 2)))
	// The brain is asked at the cap too: the cap stops the task whatever the brain says, and the person then sees
	// the brain's reason beside the similarity.
	bctx, span := telemetry.Tracer().Start(ctx, "orch.brain.decide")
	d, err := bn.Decide(bctx, brain.DecideInput{TaskID: task.ID, TaskTitle: task.Title, AttemptHistory: history(errs)})
	endBrain(span, d.Usage, string(d.Decision), d.Fallback, err)
	out.brainUsage = out.brainUsage.Add(BrainUsage(d.Usage))
	if err != nil {
		return fmt.Errorf("deciding whether to retry: %w", err)
	}
	if d.Fallback != "" {
		out.brainNote = d.Fallback
	}
	out.decision = &d
	return nil
}

// BrainUsage is what a brain call cost, as a run records it.
func BrainUsage(u brain.Usage) jobs.BrainUsage {
	return jobs.BrainUsage{Backend: u.Backend, Model: u.Model, Calls: u.Calls, InputTokens: u.InputTokens,
		OutputTokens: u.OutputTokens, CostUSD: u.CostUSD}
}

// failureParts says why an agent process did not succeed, from what it and the sandbox reported.
func failureParts(said *jobs.Pending) []string {
	parts := append([]string(nil), said.Errors...)
	if said.ExitCode != 0 {
		parts = append(parts, fmt.Sprintf("the agent exited with code %d", said.ExitCode))
	}
	if said.Signal != "" {
		parts = append(parts, "killed by "+said.Signal)
	}
	if len(parts) == 0 {
		parts = append(parts, "the agent did not report success")
	}
	if said.Stderr != "" {
		parts = append(parts, "stderr: "+said.Stderr)
	}
	return parts
}

// withAgentErrors appends to msg the parts it does not already say.
func withAgentErrors(msg string, parts []string) string {
	for _, p := range parts {
		if p == "" || strings.Contains(msg, p) {
			continue
		}
		if msg != "" {
			msg += "; "
		}
		msg += p
	}
	return msg
}

func history(errs []string) []string {
	h := make([]string, len(errs))
	for i, e := range errs {
		h[i] = "Failed: " + e
	}
	return h
}

func bound(s string) string { return safetext.Bound(s, maxErrorLen) }

func lastN(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
