package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// Attendant puts a followed run's questions to a person through an Interviewer (a terminal, an answers file,
// auto-approval) and applies the answers through the same atomic resolution as every other surface: the first answer
// wins, wherever it comes from, and a question answered elsewhere stops being asked here.
type Attendant struct {
	Store       *store.Store
	Queue       escalation.Enqueuer
	Interviewer escalation.Interviewer
	By, Via     string // who answers here, and through what (console, answers-file, auto-approve)
	// Show is given every update, in order, before Attend acts on it.
	Show func(Update)
	// Note is told what the person should know that is no event ("Already answered elsewhere: …").
	Note func(string)
	// Waiting, when set, is called once a question has waited WaitingAfter at the prompt without an answer.
	Waiting      func(q Question)
	WaitingAfter time.Duration
}

type answered struct {
	q   Question
	ans escalation.Answer
	err error
}

// Attend follows updates until the run ends (its status), pauses (RunPaused), or parks with nobody here to answer
// (RunParked: the interviewer had no answer). An error is the store's, or the interviewer's.
func (a *Attendant) Attend(ctx context.Context, updates <-chan Update) (jobs.RunStatus, error) {
	ans := make(chan answered, 1)
	var asking string // the escalation being asked, "" for none
	cancelAsk := func() {}
	defer func() { cancelAsk() }()
	ask := func(q Question, wait time.Duration) {
		cancelAsk()
		asking = q.Escalation.ID
		actx, cancel := context.WithCancel(ctx)
		cancelAsk = cancel
		go a.ask(actx, q, wait, ans)
	}
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case u, ok := <-updates:
			if !ok {
				return "", ctx.Err()
			}
			if a.Show != nil {
				a.Show(u)
			}
			switch {
			case u.Err != nil:
				return "", u.Err
			case u.Question != nil:
				ask(*u.Question, overdueWait(u.Question.Run, u.Question.Escalation, a.Store.Now()))
			case u.Event != nil:
				if status, end := u.Event.Stops(); end {
					return status, nil
				}
				if b, ok := u.Event.Body.(jobs.ResolutionEvent); ok && b.EscalationID == asking {
					cancelAsk() // answered elsewhere
					asking = ""
				}
			}
		case got := <-ans:
			asking = ""
			if got.err != nil {
				return "", got.err
			}
			again, parked, err := a.apply(ctx, got)
			switch {
			case err != nil:
				return "", err
			case parked:
				return jobs.RunParked, nil
			case again != nil:
				ask(*again, 0)
			}
		}
	}
}

// ask waits out an overdue question's timeout, then asks; an answer is sent unless the question was settled elsewhere
// meanwhile (ctx cancelled).
func (a *Attendant) ask(ctx context.Context, q Question, wait time.Duration, out chan<- answered) {
	t := time.NewTimer(wait)
	select {
	case <-ctx.Done():
		t.Stop()
		return
	case <-t.C:
	}
	eq := escalation.QuestionFor(q.Escalation)
	eq.RunID = q.Run.ID
	if a.Waiting != nil && a.WaitingAfter > 0 {
		tap := time.AfterFunc(a.WaitingAfter, func() { a.Waiting(q) })
		defer tap.Stop()
	}
	got, err := a.Interviewer.Ask(ctx, eq)
	if ctx.Err() != nil {
		return
	}
	out <- answered{q: q, ans: got, err: err}
}

// apply resolves the question with the answer. parked is true when the answer resolves nothing (nobody here could
// answer): the run waits for someone elsewhere. again is the question to ask again after an answer that does not
// fit it.
func (a *Attendant) apply(ctx context.Context, got answered) (again *Question, parked bool, err error) {
	e, runID := got.q.Escalation, got.q.Run.ID
	if got.ans.Value == escalation.AnswerDeclined {
		// Automation that must not answer this question ends the run as failed (the run_failed event ends the attendance).
		if err := escalation.Decline(ctx, a.Store, runID, e.ID, a.By, a.Via, got.ans.Text); err != nil {
			a.note("could not end the run: " + err.Error())
		}
		return nil, false, nil
	}
	req, ok := escalation.RequestFor(e, runID, got.ans, a.By, a.Via)
	if !ok && answersItself(e, a.Store.Now()) {
		// Nobody here can answer, and no one needs to: the question's timer goes on at a provider's reset or a team's
		// next period, and the worker here fires it. Waiting costs nothing; leaving would stop that worker.
		at := e.CreatedAt.Add(time.Duration(e.Timeouts+1) * e.Timeout)
		a.note(fmt.Sprintf("Nobody here answered: the run goes on by itself at %s, when its question's timer takes %q. "+
			"Waiting for it (Ctrl-C leaves the run parked; `orch resume %s` goes on later).",
			at.Local().Format("2006-01-02 15:04:05 MST"), e.Default, runID))
		return nil, false, nil
	}
	if !ok {
		return nil, true, nil
	}
	_, _, err = escalation.Resolve(ctx, a.Store, a.Queue, req)
	switch {
	case errors.Is(err, escalation.ErrAlreadyResolved), errors.Is(err, escalation.ErrNoOpenEscalation):
		a.note("Already answered elsewhere: " + err.Error())
	case errors.Is(err, escalation.ErrInvalid):
		a.note(err.Error())
		run, err := a.Store.Get(ctx, runID)
		if err != nil {
			return nil, false, err
		}
		if open := run.OpenEscalation(); open != nil {
			return &Question{Run: run, Escalation: open}, false, nil // the same question (or the one after it)
		}
	case err != nil:
		return nil, false, err
	}
	return nil, false, nil
}

func (a *Attendant) note(msg string) {
	if a.Note != nil {
		a.Note(msg)
	}
}

// answersItself reports a question that its own timer answers with its default soon (within waitItself of now),
// because what it waits for comes by itself: a provider's limit that resets, a team's budget that renews with the
// period. A longer wait parks `orch run` as any question does (a CI job is not held for hours; a worker or `orch
// resume` takes the timer later), and so do other questions with a timer: their default is a person's to take.
func answersItself(e *jobs.Escalation, now time.Time) bool {
	if (e.Trigger != jobs.TriggerLimit && e.Trigger != jobs.TriggerBudget) || e.Timeout <= 0 || e.Default == "" {
		return false
	}
	return e.CreatedAt.Add(time.Duration(e.Timeouts+1)*e.Timeout).Sub(now) <= waitItself
}

// waitItself bounds how long a headless `orch run` waits for a question that answers itself.
const waitItself = 15 * time.Minute

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
