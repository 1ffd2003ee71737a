package jobs

import "time"

// The moves of a run and of its tasks. Every change of a status outside this package is one of these methods: each
// checks its move against the tables of transitions.go and records the event that is the move's own on the change.
// A move the tables do not allow changes nothing and is recorded on the change instead (Change.Err), which the store
// then refuses whole.

// Start puts a queued run to work. Its steps are numbered afresh (entering the first node makes Seq 1). run_started
// records it, with permissions, the policy the agent works under ("" when there is none to tell).
func (r *Run) Start(c *Change, permissions string) {
	if !c.allowRun(r, RunRunning) {
		return
	}
	r.Status = RunRunning
	r.Seq = 0
	started := RunStartedEvent{Plan: r.PlanPath, Title: r.PlanTitle, Tasks: len(r.Tasks), Unit: r.Unit(),
		Agent: r.Options.Agent, Brain: r.Options.Brain, Sandbox: r.Options.Sandbox, Permissions: permissions}
	if r.Git != nil {
		started.Branch, started.Base = r.Git.Branch, r.Git.Base
		if started.Base == "" {
			started.Base = "HEAD"
		}
	}
	c.Emit(NewEvent(r.ID, "", started))
}

// Pause stops the run for want of the brain, for reason, until `orch resume` continues it (Continue); run_paused
// records it about task taskID.
func (r *Run) Pause(c *Change, taskID, reason string) {
	if !c.allowRun(r, RunPaused) {
		return
	}
	r.Status, r.Reason = RunPaused, reason
	c.Emit(NewEvent(r.ID, taskID, RunPausedEvent{Reason: reason}))
}

// Continue has a paused run work again; a resumed event ("continue") about its current task records it.
func (r *Run) Continue(c *Change) {
	if !c.allowRun(r, RunRunning) {
		return
	}
	r.Status, r.Reason = RunRunning, ""
	id, title := "", ""
	if t := r.Current(); t != nil {
		id, title = t.ID, t.Title
	}
	c.Emit(NewEvent(r.ID, id, ResumedEvent{Title: title, Resolution: ResumeContinue}))
}

// Resume has the run work again, or go on working: after a person's answer, or as the pipeline enters a node. It
// records no event: what made it go on (the answer, the node entered) is recorded by whoever applies it.
func (r *Run) Resume(c *Change) {
	if c.allowRun(r, RunRunning) {
		r.Status = RunRunning
	}
}

// Park has the run wait for a person on escalation e about task t: the run is parked and holds no worker, the task
// waits on the question, e joins the run's escalations and points at the escalation event that records it.
func (r *Run) Park(c *Change, t *Task, e *Escalation) {
	if !c.allowRun(r, RunParked) || !c.allowTask(r.ID, t, TaskWaiting) {
		return
	}
	r.Escalations = append(r.Escalations, e)
	r.Status = RunParked
	t.Status = TaskWaiting
	e.EventRef = c.Emit(NewEvent(r.ID, t.ID, NewEscalationEvent(e, t.Title)))
}

// Complete ends the run as completed at now; run_completed records how far it got, what it cost, the work on its
// branch and its pull request.
func (r *Run) Complete(c *Change, now time.Time) {
	if !c.allowRun(r, RunCompleted) {
		return
	}
	r.Status, r.EndedAt = RunCompleted, now.UTC()
	usd, in, out := r.Cost()
	tally := r.Tally()
	pr := ""
	if r.Git != nil {
		pr = r.Git.PullRequest
	}
	c.Emit(NewEvent(r.ID, "", RunCompletedEvent{Tasks: tally.Done, Total: tally.Total, Unit: tally.Unit,
		DurationMS: r.ElapsedMS(), CostUSD: usd, InputTokens: in, OutputTokens: out, Work: WorkOf(r), PullRequest: pr,
		Unfinished: r.Unfinished}))
}

// Fail ends the run as failed at now for reason; run_failed records it about task taskID ("" for the run as a whole),
// with work, what the run's branch holds as its event tells it (WorkOf(r); the zero Work where the event has never
// told it).
func (r *Run) Fail(c *Change, taskID, reason string, work Work, now time.Time) {
	if !c.allowRun(r, RunFailed) {
		return
	}
	r.Status, r.Reason, r.EndedAt = RunFailed, reason, now.UTC()
	c.Emit(NewEvent(r.ID, taskID, RunFailedEvent{Reason: reason, DurationMS: r.ElapsedMS(), Work: work}))
}

// Abort ends the run as aborted by by at now for reason, its queued questions dropped; run_aborted records it about
// task taskID ("" for the run as a whole), with the work on the run's branch.
func (r *Run) Abort(c *Change, taskID, reason, by string, now time.Time) {
	if !c.allowRun(r, RunAborted) {
		return
	}
	r.Status, r.Reason, r.EndedAt, r.Queued = RunAborted, reason, now.UTC(), nil
	c.Emit(NewEvent(r.ID, taskID, RunAbortedEvent{Reason: reason, By: by, DurationMS: r.ElapsedMS(), Work: WorkOf(r)}))
}

// StartAttempt starts the next attempt at task t, owned by the step that runs it (owner, the queue's id of it, and
// delivery, the one handling of it that does), and returns it; task_started records it. Nil when the task may not
// start.
func (r *Run) StartAttempt(c *Change, t *Task, owner, delivery string, now time.Time) *Attempt {
	if !c.allowTask(r.ID, t, TaskRunning) {
		return nil
	}
	t.Started++
	t.Status = TaskRunning
	a := &Attempt{N: t.Started, StartedAt: now.UTC(), Owner: owner, Delivery: delivery}
	t.Attempts = append(t.Attempts, a)
	started := TaskStartedEvent{Title: t.Title, Attempt: t.Failures + 1, MaxAttempts: r.MaxAttempts(t),
		Started: t.Started, Agent: r.Options.Agent, Budget: r.BudgetText(now)}
	if t.Kind == KindChat {
		started.Turn = t.Replies() + 1
	}
	c.Emit(NewEvent(r.ID, t.ID, started))
	return a
}

// Retry sends task t back to pending for another attempt with the brain's guidance, after delay: the run's next step
// (Seq) starts it at RetryAt. retrying and stage_retrying record it, for reason.
func (r *Run) Retry(c *Change, t *Task, reason, guidance string, delay time.Duration, now time.Time) {
	if !c.allowTask(r.ID, t, TaskPending) {
		return
	}
	t.Status, t.RetryGuidance = TaskPending, guidance
	r.Seq++
	r.RetryAt = now.Add(delay).UTC()
	c.Emit(NewEvent(r.ID, t.ID, RetryingEvent{Title: t.Title, Reason: reason, Guidance: guidance,
		DelayMS: delay.Milliseconds()}))
	c.Emit(NewEvent(r.ID, t.ID, StageRetryingEvent{Attempt: t.Failures + 1, DelayMS: delay.Milliseconds()}))
}

// Complete marks the task done; task_completed records it, saying summary, with what attempt a cost and how long it
// took (a nil: a task a person ended, nothing of an attempt told).
func (t *Task) Complete(c *Change, summary string, a *Attempt) {
	if !c.allowTask(c.runID(), t, TaskCompleted) {
		return
	}
	t.Status = TaskCompleted
	done := TaskCompletedEvent{Title: t.Title, Summary: summary, Commit: shortCommit(t.Commit)}
	if a != nil {
		done.CostUSD, done.DurationMS = a.CostUSD, a.Duration.Milliseconds()
	}
	c.Emit(NewEvent(c.runID(), t.ID, done))
}

// Pass marks the task done with no event of its own: a gate a person chose the way on from, whose record is the
// interview's answer.
func (t *Task) Pass(c *Change) { t.move(c, TaskCompleted) }

// Fail marks the task failed. It records no event of its own: task_failed is an attempt's (a failed attempt that is
// retried records it too), and the run's end or the pipeline's route records the rest.
func (t *Task) Fail(c *Change) { t.move(c, TaskFailed) }

// Force marks the task done despite its error, as a person decided; the run records task_forced as it goes on with
// it.
func (t *Task) Force(c *Change) { t.move(c, TaskForced) }

// Reopen sends the task back to pending, to be worked on by the run's next step: a question answered, a paused call
// decided, a conversation's next turn, its node entered again.
func (t *Task) Reopen(c *Change) { t.move(c, TaskPending) }

func (t *Task) move(c *Change, to TaskStatus) {
	if c.allowTask(c.runID(), t, to) {
		t.Status = to
	}
}

// Replies counts the agent's replies in the task's conversation.
func (t *Task) Replies() int {
	n := 0
	for _, turn := range t.Chat {
		if turn.Role == "agent" {
			n++
		}
	}
	return n
}

// shortCommit is the abbreviated form of a commit's hash that events show.
func shortCommit(sha string) string { return sha[:min(len(sha), 12)] }
