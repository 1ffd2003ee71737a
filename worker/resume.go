package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/pipeline"
)

// handleResume applies a person's answer to the run's task and moves the run on: a gate routes, a conversation takes
// its next turn, anything else goes on as the answer says.
func (w *Worker) handleResume(ctx context.Context, t *asynq.Task) error {
	p, err := queue.DecodePayload(t)
	if err != nil {
		return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
	}
	finishing := func(r *jobs.Run) bool { return answerFinishes(r, p.EscalationID) }
	run, err := w.transition(ctx, p.RunID, finishing, w.applyAnswer(p.EscalationID))
	if err == nil {
		w.cancelTimer(ctx, run, p.EscalationID)
	}
	return w.after(ctx, p.RunID, run, err)
}

// cancelTimer takes the timer of escalation escID of run off the queue once a person's answer was applied: a limit's
// reset or a team's next period, hours or days ahead, need not wait there to do nothing. Failing to is no error: the
// timer, when it fires, finds the question answered.
func (w *Worker) cancelTimer(ctx context.Context, run *jobs.Run, escID string) {
	e := run.Escalation(escID)
	if e == nil || e.Resolution == nil || e.Resolution.Via == "timeout" {
		return
	}
	if err := w.cfg.Queue.CancelTimeout(ctx, run.ID, e.ID, e.Timeouts+1); err != nil {
		w.log.Debug("the question's timer stays queued; it will find the question answered", "run_id", run.ID, "err", err)
	}
}

// resumeHere applies an answer queued in this process at once, in the background (queue.Queue.ResumeHere), so that
// the run goes on without waiting for the control queue's next poll: the resume task, when a worker takes it, finds
// it applied and only nudges the run. An answer that may finish the task or the run is left to the resume task: its
// work is delivered first (commits, a push), and one delivery at a time is what keeps a push from happening twice.
func (w *Worker) resumeHere(runID, escID string) {
	w.here.run(func() {
		defer func() {
			// A panic here would take the whole process down, the surfaces it serves with it: the resume task, which
			// runs under the handlers' guard, applies the answer (or parks the run for a person) instead.
			if p := recover(); p != nil {
				w.log.Error("applying an answer here panicked; the resume task applies it", "run_id", runID, "panic", p,
					"stack", string(debug.Stack()))
			}
		}()
		ctx, cancel := context.WithTimeout(w.base, time.Minute)
		defer cancel()
		// What delivers work first (errDeliver, found before or once applied) is the resume task's to do.
		run, err := w.saveUnlessDelivering(ctx, runID, func(r *jobs.Run, c *jobs.Change) error {
			if r.Git != nil && answerFinishes(r, escID) {
				return errDeliver
			}
			return w.applyAnswer(escID)(r, c)
		})
		if err == nil {
			w.cancelTimer(ctx, run, escID)
			err = w.Nudge(ctx, run)
		}
		if err != nil && !errors.Is(err, errStale) && !errors.Is(err, errDeliver) {
			w.log.Debug("an answer applied here failed; the resume task applies it", "run_id", runID, "err", err)
		}
	})
}

// answersHere runs resumeHere's work until the worker stops: once stopped, an answer waits for the resume task, and
// Shutdown waits for what runs.
type answersHere struct {
	mu         sync.Mutex
	stopped    bool
	unregister func()
	wg         sync.WaitGroup
}

func (h *answersHere) start(unregister func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unregister = unregister
}

func (h *answersHere) run(fn func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	h.wg.Go(fn)
}

func (h *answersHere) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	if h.unregister != nil {
		h.unregister()
	}
}

func (h *answersHere) wait() { h.wg.Wait() }

// applyAnswer is the transition that applies the answer to escalation escID to the task it is about, when the run
// still waits on it.
func (w *Worker) applyAnswer(escID string) func(*jobs.Run, *jobs.Change) error {
	return func(r *jobs.Run, c *jobs.Change) error {
		e := r.Escalation(escID)
		if r.Status != jobs.RunParked || e == nil || e.Resolution == nil || r.OpenEscalation() != nil {
			return errStale
		}
		task := r.Task(e.TaskID)
		if task == nil || r.Current() != task {
			return errStale
		}
		w.resume(r, task, e, c, w.cfg.Store.Now())
		return nil
	}
}

// resume applies the answer to escalation e about task t.
func (w *Worker) resume(r *jobs.Run, t *jobs.Task, e *jobs.Escalation, c *jobs.Change, now time.Time) {
	res := e.Resolution
	if res.Type != jobs.ResolveAbort {
		// A human had a say: what the pipeline does next is no runaway loop.
		pipeline.ResetVisits(r.Pipeline)
	}
	switch e.Trigger {
	case jobs.TriggerGate:
		w.resumeGate(r, t, e, c, now)
		return
	case jobs.TriggerChat:
		w.resumeChat(r, t, e, c, now)
		return
	case jobs.TriggerBudget:
		w.resumeBudget(r, t, e, c, now)
		return
	}
	if t.Kind == jobs.KindVerify && res.Type != jobs.ResolveRetry {
		r.E2E = jobs.E2E{} // a person looked: the end-to-end phase counts afresh
	}
	if p := t.Paused; p != nil && p.EscalationID == e.ID && p.Decision == nil &&
		(res.Type == jobs.ResolveChoose || res.Type == jobs.ResolveAnswer) && w.nextQuestion(r, t, c, now) {
		return // Claude asked several questions: the next one before the agent goes on
	}
	w.proceed(r, t, e, c, now)
}

// proceed applies the answer to escalation e about task t, the question it asked settled: the task is forced on,
// accepted or run again, unless another question about it comes first.
func (w *Worker) proceed(r *jobs.Run, t *jobs.Task, e *jobs.Escalation, c *jobs.Change, now time.Time) {
	res := e.Resolution
	switch {
	case res.Type == jobs.ResolveForce:
		escalation.DropQueued(r, t.ID)
		c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.TaskForcedEvent{Title: t.Title, By: res.By}))
		r.Resume(c)
		w.finish(r, t, c, pipeline.Outcome{Status: pipeline.StatusSuccess, Notes: "forced by " + res.By}, now)
	case escalation.Next(r, t, c, now) != nil:
		// Triggers that fired together are asked one at a time: the next one before the task goes on.
	case escalation.Accepts(e, res):
		w.accept(r, t, e, c, now)
	default:
		if problem := validate(r); problem != "" {
			escalation.Escalate(r, t, c, []escalation.Spec{{Trigger: jobs.TriggerValidation, Source: "orch",
				MaxPerTask: r.Options.Escalation.MaxPerTask,
				Question:   "The run's saved state did not pass validation on resume: " + problem + ". Fix it, then resume."}}, now)
			return
		}
		w.goOn(r, t, e, c, now)
	}
}

// accept lets through an attempt that had completed and that only a trigger held for a person.
func (w *Worker) accept(r *jobs.Run, t *jobs.Task, e *jobs.Escalation, c *jobs.Change, now time.Time) {
	t.RetryGuidance = ""
	why := "accepted by " + e.Resolution.By + " after the " + string(e.Trigger) + " check"
	if e.Unclear {
		why = "accepted by " + e.Resolution.By + ", who read what the brain could not tell"
	}
	t.Complete(c, why, nil)
	r.Resume(c)
	var said string
	if n := len(t.Attempts); n > 0 {
		said = t.Attempts[n-1].Summary
	}
	w.finish(r, t, c, agentOutcome(t, said), now)
}

// goOn runs the task again with what the answer said: the next step starts its next attempt.
func (w *Worker) goOn(r *jobs.Run, t *jobs.Task, e *jobs.Escalation, c *jobs.Change, now time.Time) {
	r.Resume(c)
	r.Seq++
	r.RetryAt = time.Time{}
	c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.ResumedEvent{Title: t.Title, Guidance: escalation.GuidanceFor(e, e.Resolution),
		Resolution: string(e.Resolution.Type)}))
	if t.Kind == jobs.KindGate {
		// Let through after a loop stop: the gate asks its question now.
		if g, err := w.graphOf(r); err == nil && g.Nodes[t.ID] != nil {
			w.run(r, t, c, g, g.Nodes[t.ID], now)
		}
	}
}

// validate checks that a run's saved state can be resumed: the cursor on a real task, the workspace still there.
// It returns what is wrong, or "".
func validate(r *jobs.Run) string {
	if r.Cursor < 0 || r.Cursor >= len(r.Tasks) {
		return fmt.Sprintf("the task cursor %d is outside the plan's %d tasks", r.Cursor, len(r.Tasks))
	}
	if r.Git != nil && r.Git.URL != "" {
		return "" // the worker that runs it clones the repository
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
