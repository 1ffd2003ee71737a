package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/backoff"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/pipeline"
	"github.com/orchrun/orch/sandbox"
	"github.com/orchrun/orch/telemetry"
)

// errStale marks a task that arrived for a state the run has left: a redelivery, a double enqueue, a resume of a run
// that moved on. It is not a failure.
var errStale = errors.New("stale task")

// maxPending bounds the agent output kept for a later judgement.
const maxPending = 1 << 20

// maxErrorLen bounds each error kept in a task's history: enough for similarity, not a log file per attempt.
const maxErrorLen = 4 << 10

func (w *Worker) handleStart(ctx context.Context, t *asynq.Task) error {
	p, err := queue.DecodePayload(t)
	if err != nil {
		return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
	}
	run, err := w.cfg.Store.Update(ctx, p.RunID, func(r *jobs.Run, c *jobs.Change) error {
		if r.Status != jobs.RunQueued {
			return errStale
		}
		r.Status = jobs.RunRunning
		r.Seq = 0 // entering the first node makes it 1
		c.Emit(jobs.NewEvent(r.ID, "", jobs.RunStartedEvent{Plan: r.PlanPath, Title: r.PlanTitle,
			Tasks: len(r.Tasks), Agent: r.Options.Agent, Brain: r.Options.Brain, Sandbox: r.Options.Sandbox}))
		w.begin(r, c, w.cfg.Store.Now())
		return nil
	})
	return w.after(ctx, p.RunID, run, err)
}

// after finishes a handler: on success it enqueues what the run needs next; on a stale task it makes sure the run is
// not left without its next task (the enqueue after an earlier transition may have been lost in a crash).
func (w *Worker) after(ctx context.Context, runID string, run *jobs.Run, err error) error {
	switch {
	case errors.Is(err, errStale):
		run, err = w.cfg.Store.Get(ctx, runID)
		if err != nil {
			return skipIfMissing(err)
		}
		return w.Nudge(ctx, run)
	case err != nil:
		return skipIfMissing(err)
	}
	return w.Nudge(ctx, run)
}

// Continue moves a run on from wherever it stopped: a paused run (the brain was unavailable) runs again and its saved
// output is judged; any other run is nudged.
func (w *Worker) Continue(ctx context.Context, runID string) (*jobs.Run, error) {
	run, err := w.cfg.Store.Update(ctx, runID, func(r *jobs.Run, c *jobs.Change) error {
		if r.Status != jobs.RunPaused {
			return errStale
		}
		r.Status, r.Reason = jobs.RunRunning, ""
		c.Emit(jobs.NewEvent(r.ID, currentTaskID(r), jobs.ResumedEvent{Title: currentTitle(r), Resolution: jobs.ResumeContinue}))
		return nil
	})
	if errors.Is(err, errStale) {
		run, err = w.cfg.Store.Get(ctx, runID)
	}
	if err != nil {
		return nil, err
	}
	return run, w.Nudge(ctx, run)
}

func currentTaskID(r *jobs.Run) string {
	if t := r.Current(); t != nil {
		return t.ID
	}
	return ""
}

func currentTitle(r *jobs.Run) string {
	if t := r.Current(); t != nil {
		return t.Title
	}
	return ""
}

// Nudge enqueues the task that moves run on from its saved state: after a crash, an interrupted step, a resolution
// made while no worker ran. Enqueues are idempotent by task id, so nudging a run that is moving does nothing.
func (w *Worker) Nudge(ctx context.Context, run *jobs.Run) error {
	switch run.Status {
	case jobs.RunQueued:
		return w.cfg.Queue.Start(ctx, run.ID)
	case jobs.RunRunning:
		return w.cfg.Queue.StepAt(ctx, run.ID, run.Seq, run.AgentTimeout(run.Current()), run.RetryAt)
	case jobs.RunParked:
		if last := lastEscalation(run); last != nil && last.Resolution != nil && run.OpenEscalation() == nil {
			return w.cfg.Queue.Resume(ctx, run.ID, last.ID)
		}
		if err := w.scheduleTimeout(ctx, run); err != nil {
			return err
		}
		return w.release(ctx, run, false)
	case jobs.RunPaused:
		return nil // waits for `orch resume`
	default: // terminal
		return w.release(ctx, run, true)
	}
}

func lastEscalation(r *jobs.Run) *jobs.Escalation {
	if len(r.Escalations) == 0 {
		return nil
	}
	return r.Escalations[len(r.Escalations)-1]
}

func skipIfMissing(err error) error {
	if errors.Is(err, jobs.ErrRunNotFound) {
		return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
	}
	return err
}

// attempt is what a step knows while the agent runs.
type attempt struct {
	run     *jobs.Run
	task    jobs.Task
	n       int // ORCH_ATTEMPT
	started time.Time
	// rejudge is set when the agent already ran and only the brain's judgement is missing.
	rejudge bool
	// recovered is set when the task's previous attempt never finished: its worker died with the agent running.
	recovered bool
}

func (w *Worker) handleStep(ctx context.Context, t *asynq.Task) error {
	p, err := queue.DecodePayload(t)
	if err != nil {
		return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
	}
	now := w.cfg.Store.Now()
	var at attempt
	run, err := w.cfg.Store.Update(ctx, p.RunID, func(r *jobs.Run, c *jobs.Change) error {
		task := r.Current()
		if r.Status != jobs.RunRunning || r.Seq != p.Seq || task == nil {
			return errStale
		}
		if task.Pending != nil && len(task.Attempts) > 0 {
			at = attempt{run: r, task: *task, n: task.Started, started: now, rejudge: true}
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
		recovered := task.Status == jobs.TaskRunning
		task.Started++
		task.Status = jobs.TaskRunning
		task.Attempts = append(task.Attempts, &jobs.Attempt{N: task.Started, StartedAt: now.UTC()})
		started := jobs.TaskStartedEvent{Title: task.Title, Attempt: task.Failures + 1,
			MaxAttempts: r.MaxAttempts(task), Started: task.Started, Agent: r.Options.Agent}
		if task.Kind == jobs.KindChat {
			started.Turn = agentTurns(task) + 1
		}
		c.Emit(jobs.NewEvent(r.ID, task.ID, started))
		at = attempt{run: r, task: *task, n: task.Started, started: now, recovered: recovered}
		return nil
	})
	if err != nil || at.run == nil {
		return w.after(ctx, p.RunID, run, err)
	}
	actx, span := startAttempt(ctx, p, &at)
	out, err := w.execute(actx, &at)
	endAttempt(span, out, err)
	if err != nil {
		return err // interrupted: asynq runs the step again
	}
	ctx = actx // what follows (the next step's enqueue) carries the attempt's trace
	// The agent's work is done and cannot be taken back: Redis restarting (a deploy, a failover) must not make asynq run
	// it again. Keep trying to save it for a while; the step's sequence check keeps a late save from doing harm.
	save := settleRetry
	save.OnRetry = func(n int, err error, _ time.Duration) {
		if n == 1 {
			w.log.Warn("saving the outcome of a step; trying again until Redis answers", "run_id", p.RunID, "err", err)
		}
	}
	err = save.Do(ctx, func(ctx context.Context) error {
		run, err = w.cfg.Store.Update(ctx, p.RunID, func(r *jobs.Run, c *jobs.Change) error {
			task := r.Current()
			if r.Status != jobs.RunRunning || r.Seq != p.Seq || task == nil || task.ID != at.task.ID {
				return errStale // someone aborted the run while the agent worked
			}
			if task.Kind == jobs.KindChat {
				w.settleChat(r, task, c, out)
			} else {
				w.settle(r, task, c, out)
			}
			return nil
		})
		if errors.Is(err, errStale) || errors.Is(err, jobs.ErrRunNotFound) {
			return backoff.Permanent(err)
		}
		return err
	})
	return w.after(ctx, p.RunID, run, err)
}

// settleRetry is how a step keeps trying to save its outcome while Redis is away, before it gives the step back to
// the queue.
var settleRetry = backoff.Retry{Policy: backoff.Policy{Initial: 200 * time.Millisecond, Factor: 2, Max: 5 * time.Second},
	Patience: 2 * time.Minute}

// outcome is what one attempt produced and what orch decided about it.
type outcome struct {
	ran        bool // the agent ran in this step (not a re-judgement of saved output)
	said       jobs.Pending
	usage      agent.Result // the agent's tokens, cost, model and session, when it ran
	duration   time.Duration
	interp     brain.Interpretation
	decision   *brain.Decision // for failures
	secrets    []string
	execErr    error // the sandbox could not run the agent at all
	brainNote  string
	brainUsage jobs.BrainUsage
	// unavailable is set when the brain could not judge: the run stops with the output saved for later.
	unavailable error
	similarity  float64
	custom      []escalation.Spec // custom triggers that matched the output
	files       []string          // what the task changed in the workspace
	diff        string
}

// execute runs the agent (unless its output is waiting to be judged) and judges what it said. Only an interruption
// (shutdown) is returned as an error.
func (w *Worker) execute(ctx context.Context, at *attempt) (*outcome, error) {
	r, task := at.run, at.task
	out := &outcome{}
	if at.rejudge {
		out.said = *task.Pending
	} else {
		if err := w.runAgent(ctx, at, out); err != nil {
			return nil, err
		}
		if out.execErr != nil {
			return out, nil
		}
	}
	if task.Kind == jobs.KindChat {
		return out, nil // the human reads the reply and judges it: no brain
	}
	out.secrets = escalation.Secrets(out.said.Text)
	out.custom = customTriggers(r.Options.Escalation.Triggers, out.said.Text)
	bn, err := w.cfg.Brain(r.Options)
	if err != nil {
		out.execErr = fmt.Errorf("brain: %w", err)
		return out, nil
	}
	if err := w.judge(ctx, bn, r, &task, out); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		out.unavailable = err
	}
	if out.interp.Status != brain.StatusCompleted || len(out.secrets) > 0 || len(out.custom) > 0 {
		// A person will look: show them what the task changed.
		out.files, out.diff = workspaceChanges(ctx, r.Workspace)
	}
	return out, nil
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
	guidance := append([]string(nil), task.Guidance...)
	if task.RetryGuidance != "" {
		guidance = append(guidance, task.RetryGuidance)
	}
	pt := agent.PromptTask{ID: task.ID, Title: task.Title, Description: task.Description}
	req := agent.Request{RunID: r.ID, TaskID: task.ID, Attempt: at.n, SessionID: task.SessionID, Workspace: r.Workspace,
		Prompt: agent.BuildPrompt(pt, guidance)}
	if task.Kind == jobs.KindChat {
		req.Prompt = chatPrompt(ad, pt, guidance, &task)
		if len(task.Chat) == 0 {
			req.SessionID = "" // a new conversation
		}
	}
	cmd, err := ad.Command(req)
	if err != nil {
		out.execErr = fmt.Errorf("building the %s command: %w", ad.Name(), err)
		return nil
	}
	sb, err := w.sandboxFor(r.Options)
	if err != nil {
		out.execErr = err
		return nil
	}
	parser := ad.NewParser()
	ectx, span := telemetry.Tracer().Start(ctx, "orch.sandbox.exec", trace.WithAttributes(
		attribute.String("sandbox.kind", sandboxKind(r.Options)), attribute.String("agent", ad.Name())))
	res, err := sb.Exec(ectx, sandbox.Spec{RunID: r.ID, TaskID: task.ID, Args: cmd.Args, Env: cmd.Env,
		Dir: r.Workspace, Timeout: r.AgentTimeout(&task), Recovered: at.recovered}, parser.Line)
	endExec(span, res, err)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	out.duration = res.Duration
	out.said.ExitCode = res.ExitCode
	if err != nil {
		out.execErr = err
		return nil
	}
	result := parser.Finish(res.ExitCode, res.Stderr)
	out.usage = result
	out.said = jobs.Pending{Text: result.Text, Success: result.Success, Errors: result.Errors, ExitCode: res.ExitCode,
		Signal: res.Signal, Stderr: lastLines(strings.TrimSpace(string(res.Stderr)), 5), TimedOut: res.TimedOut,
		OOMKilled: res.OOMKilled}
	return nil
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
	default:
		bctx, span := telemetry.Tracer().Start(ctx, "orch.brain.interpret")
		in, err := bn.Interpret(bctx, said.Text)
		endBrain(span, in.Usage, string(in.Status), in.Fallback, err)
		out.brainUsage = out.brainUsage.Add(brainUsage(in.Usage))
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
			out.interp.Error = ""
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
	out.brainUsage = out.brainUsage.Add(brainUsage(d.Usage))
	if err != nil {
		return fmt.Errorf("deciding whether to retry: %w", err)
	}
	if d.Fallback != "" {
		out.brainNote = d.Fallback
	}
	out.decision = &d
	return nil
}

func brainUsage(u brain.Usage) jobs.BrainUsage {
	return jobs.BrainUsage{Backend: u.Backend, Model: u.Model, Calls: u.Calls, InputTokens: u.InputTokens,
		OutputTokens: u.OutputTokens, CostUSD: u.CostUSD}
}

// settle records an attempt's outcome on the run and moves it on: next task, retry, park or end.
func (w *Worker) settle(r *jobs.Run, t *jobs.Task, c *jobs.Change, out *outcome) {
	now := w.cfg.Store.Now()
	a := t.Attempts[len(t.Attempts)-1]
	if out.ran {
		a.Duration = out.duration
		a.ExitCode = out.said.ExitCode
		a.InputTokens, a.OutputTokens = out.usage.InputTokens, out.usage.OutputTokens
		a.CostUSD, a.Model = out.usage.CostUSD, out.usage.Model
		if out.usage.SessionID != "" {
			t.SessionID = out.usage.SessionID
		}
	}
	a.Brain = a.Brain.Add(out.brainUsage)
	if out.brainNote != "" {
		c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.BrainFallbackEvent{Reason: escalation.Redact(out.brainNote)}))
	}
	if out.unavailable != nil {
		// Nothing is decided without the brain, and nothing is lost: the output waits in the run for the resume.
		said := out.said
		said.Text = escalation.Bound(escalation.Redact(said.Text), maxPending)
		said.Stderr = escalation.Redact(said.Stderr)
		t.Pending = &said
		r.Status = jobs.RunPaused
		r.Reason = "Brain unavailable: " + escalation.Redact(out.unavailable.Error())
		c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.RunPausedEvent{Reason: r.Reason}))
		return
	}
	t.Pending = nil
	policy := r.Options.Escalation
	escalate := func(specs ...escalation.Spec) {
		for i := range specs {
			specs[i].MaxPerTask = policy.MaxPerTask
			specs[i].Files, specs[i].Diff = out.files, out.diff
		}
		escalation.Escalate(r, t, c, specs, now)
	}
	if out.execErr != nil {
		a.Status, a.Error = "error", escalation.Redact(out.execErr.Error())
		c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.SandboxErrorEvent{Error: a.Error}))
		escalate(escalation.Spec{Trigger: jobs.TriggerConfig, Source: "orch",
			Question: fmt.Sprintf("Task %s could not run: %s. Fix the configuration, then resume.", t.ID, a.Error),
			Error:    a.Error})
		return
	}
	// Triggers that stand beside the brain's judgement: they are asked first, by priority.
	var extra []escalation.Spec
	if len(out.secrets) > 0 {
		extra = append(extra, escalation.Spec{Trigger: jobs.TriggerSecurity, Source: "orch",
			Question: fmt.Sprintf("The agent's output on task %s contains what looks like a secret (%s). It was redacted "+
				"everywhere orch keeps or shows it. Rotate the credential, then decide whether to continue.", t.ID, strings.Join(out.secrets, ", ")),
			Output: out.said.Text})
	}
	extra = append(extra, out.custom...)
	in := out.interp
	a.Status, a.Summary, a.Error = string(in.Status), escalation.Redact(in.Summary), escalation.Redact(in.Error)
	if len(extra) > 0 && a.Status == string(brain.StatusCompleted) {
		a.Status = "held" // completed, but a trigger holds it for a human
	}
	switch in.Status {
	case brain.StatusCompleted:
		if len(extra) > 0 {
			for i := range extra {
				extra[i].Held = true
			}
			escalate(extra...)
			return
		}
		t.Status = jobs.TaskCompleted
		t.Summary = a.Summary
		t.RetryGuidance = ""
		c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.TaskCompletedEvent{Title: t.Title, Summary: a.Summary,
			CostUSD: a.CostUSD, DurationMS: a.Duration.Milliseconds()}))
		w.finish(r, t, c, agentOutcome(t, out.said.Text), now)
	case brain.StatusNeedsHelp:
		escalate(append(extra, escalation.Spec{Trigger: jobs.TriggerNeedsHelp, Source: "agent", Question: in.Question,
			Options: in.Options, Recommendation: in.Recommendation, Output: out.said.Text})...)
	default:
		t.Failures++
		t.Errors = append(t.Errors, bound(a.Error))
		maxAttempts := r.MaxAttempts(t)
		c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.TaskFailedEvent{Title: t.Title, Attempt: t.Failures,
			MaxAttempts: maxAttempts, Error: firstLines(a.Error, 3)}))
		similar := out.similarity >= w.cfg.SimilarityThreshold
		brainLoop := out.decision != nil && out.decision.Decision == brain.Escalate && !out.decision.Permanent && similar
		stop := t.Failures >= maxAttempts || out.decision != nil && out.decision.Decision == brain.Escalate
		if stop && len(extra) == 0 && w.failureRoute(r, t, a.Error) {
			note := ""
			if t.Kind == jobs.KindVerify {
				if w.e2eStops(r, t, c, a.Error, now) {
					return // the fixes are not converging: a person looks
				}
				note = fmt.Sprintf("fix attempt %d of %d", r.E2E.Failures, r.Options.E2EFixAttempts())
			}
			// The pipeline says where a failure of this stage goes: no human is needed.
			t.Status = jobs.TaskFailed
			w.finish(r, t, c, pipeline.Outcome{Status: pipeline.StatusFail, FailureReason: a.Error, Notes: note}, now)
			return
		}
		switch {
		case t.Failures >= maxAttempts || brainLoop:
			c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.LoopDetectedEvent{Failures: t.Failures,
				Similarity: out.similarity, Similar: similar}))
			q := fmt.Sprintf("Task %s failed %d times", t.ID, t.Failures)
			if similar {
				q += " with similar errors"
			}
			q += fmt.Sprintf(" (error similarity %.0f%%). Please investigate and provide guidance.", 100*out.similarity)
			if out.decision != nil && out.decision.Reason != "" {
				q += "\nBrain: " + out.decision.Reason
			}
			trig, src := jobs.TriggerAttemptCap, "orch"
			if t.Failures < maxAttempts {
				trig, src = jobs.TriggerBrain, "brain" // the brain saw the loop before the cap did
			}
			escalate(append(extra, escalation.Spec{Trigger: trig, Source: src, Question: q,
				Error: a.Error, Similarity: out.similarity, Output: out.said.Text})...)
		case out.decision != nil && out.decision.Decision == brain.Escalate:
			trig := jobs.TriggerBrain
			if out.decision.Permanent {
				trig = jobs.TriggerPermanent
			}
			escalate(append(extra, escalation.Spec{Trigger: trig, Source: "brain",
				Question: fmt.Sprintf("Task %s failed and should not be retried as is: %s", t.ID, out.decision.Reason),
				Error:    a.Error, Similarity: out.similarity, Output: out.said.Text})...)
		case len(extra) > 0:
			escalate(extra...)
		default:
			reason, guidance := "", ""
			if out.decision != nil {
				reason, guidance = out.decision.Reason, out.decision.GuidanceForRetry
			}
			t.RetryGuidance = escalation.Redact(guidance)
			t.Status = jobs.TaskPending
			r.Seq++
			delay := pipeline.RetryDelay(t.Backoff, t.Failures)
			r.RetryAt = now.Add(delay).UTC()
			c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.RetryingEvent{Title: t.Title, Reason: reason, Guidance: t.RetryGuidance,
				DelayMS: delay.Milliseconds()}))
			c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.StageRetryingEvent{Attempt: t.Failures + 1, DelayMS: delay.Milliseconds()}))
		}
	}
}

func (w *Worker) handleResume(ctx context.Context, t *asynq.Task) error {
	p, err := queue.DecodePayload(t)
	if err != nil {
		return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
	}
	now := w.cfg.Store.Now()
	run, err := w.cfg.Store.Update(ctx, p.RunID, func(r *jobs.Run, c *jobs.Change) error {
		e := r.Escalation(p.EscalationID)
		if r.Status != jobs.RunParked || e == nil || e.Resolution == nil || r.OpenEscalation() != nil {
			return errStale
		}
		task := r.Task(e.TaskID)
		if task == nil || r.Current() != task {
			return errStale
		}
		if e.Resolution.Type != jobs.ResolveAbort {
			// A human had a say: what the pipeline does next is no runaway loop.
			pipeline.ResetVisits(r.Pipeline)
		}
		switch e.Trigger {
		case jobs.TriggerGate:
			w.resumeGate(r, task, e, c, now)
			return nil
		case jobs.TriggerChat:
			w.resumeChat(r, task, e, c, now)
			return nil
		}
		if task.Kind == jobs.KindVerify && e.Resolution.Type != jobs.ResolveRetry {
			r.E2E = jobs.E2E{} // a person looked: the end-to-end phase counts afresh
		}
		if e.Resolution.Type == jobs.ResolveForce {
			escalation.DropQueued(r, task.ID)
			c.Emit(jobs.NewEvent(r.ID, task.ID, jobs.TaskForcedEvent{Title: task.Title, By: e.Resolution.By}))
			r.Status = jobs.RunRunning
			w.finish(r, task, c, pipeline.Outcome{Status: pipeline.StatusSuccess, Notes: "forced by " + e.Resolution.By}, now)
			return nil
		}
		// Triggers that fired together are asked one at a time: the next one before the task goes on.
		if escalation.Next(r, task, c, now) != nil {
			return nil
		}
		if e.Held && e.Resolution.Type != jobs.ResolveRetry {
			// The attempt had completed; the human let it through.
			task.Status = jobs.TaskCompleted
			task.RetryGuidance = ""
			c.Emit(jobs.NewEvent(r.ID, task.ID, jobs.TaskCompletedEvent{Title: task.Title,
				Summary: "accepted by " + e.Resolution.By + " after the " + string(e.Trigger) + " check"}))
			r.Status = jobs.RunRunning
			var said string
			if n := len(task.Attempts); n > 0 {
				said = task.Attempts[n-1].Summary
			}
			w.finish(r, task, c, agentOutcome(task, said), now)
			return nil
		}
		if problem := validate(r); problem != "" {
			escalation.Escalate(r, task, c, []escalation.Spec{{Trigger: jobs.TriggerValidation, Source: "orch",
				MaxPerTask: r.Options.Escalation.MaxPerTask,
				Question:   "The run's saved state did not pass validation on resume: " + problem + ". Fix it, then resume."}}, now)
			return nil
		}
		r.Status = jobs.RunRunning
		r.Seq++
		r.RetryAt = time.Time{}
		guidance := escalation.GuidanceFor(e, e.Resolution)
		c.Emit(jobs.NewEvent(r.ID, task.ID, jobs.ResumedEvent{Title: task.Title, Guidance: guidance,
			Resolution: string(e.Resolution.Type)}))
		if task.Kind == jobs.KindGate {
			// Let through after a loop stop: the gate asks its question now.
			if g, err := w.graphOf(r); err == nil && g.Nodes[task.ID] != nil {
				w.run(r, task, c, g, g.Nodes[task.ID], now)
			}
		}
		return nil
	})
	return w.after(ctx, p.RunID, run, err)
}

// validate checks that a run's saved state can be resumed: the cursor on a real task, the workspace still there.
// It returns what is wrong, or "".
func validate(r *jobs.Run) string {
	if r.Cursor < 0 || r.Cursor >= len(r.Tasks) {
		return fmt.Sprintf("the task cursor %d is outside the plan's %d tasks", r.Cursor, len(r.Tasks))
	}
	if r.Workspace == "" {
		return "the run has no workspace"
	}
	st, err := os.Stat(r.Workspace)
	if err != nil {
		return fmt.Sprintf("the workspace %s is not there (%v)", r.Workspace, err)
	}
	if !st.IsDir() {
		return fmt.Sprintf("the workspace %s is not a directory", r.Workspace)
	}
	return ""
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

func bound(s string) string { return escalation.Bound(s, maxErrorLen) }

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
