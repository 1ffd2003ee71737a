package jobs

import (
	"fmt"
	"slices"
)

// The moves a run and its tasks may make, written once. A status changes only through the methods of moves.go
// (Run.Start, Run.Park, Task.Complete, …), each of which checks its move against these tables. A move they do not
// allow changes nothing — not the status, not the fields that go with the move, no event — and is noted on the
// update's Change as an *IllegalMove (Change.Err): the store then refuses the whole change with that error, and
// nothing of it is saved. The store checks the statuses themselves too (States.Check, on every update), so that a
// status set by any other means is refused the same way; a test of this package fails on such an assignment outside
// it.
//
// A run goes from queued to running, and then between running, parked (waiting for a person) and paused (waiting
// for the brain) until it ends: completed, failed or aborted, for good. Its start may park it at once (a plan that
// opens on a question) or end it (a plan with nothing to do); a person's answer may finish its last task.
var runMoves = map[RunStatus][]RunStatus{
	RunQueued:  {RunRunning, RunParked, RunCompleted, RunFailed, RunAborted},
	RunRunning: {RunParked, RunPaused, RunCompleted, RunFailed, RunAborted},
	RunParked:  {RunRunning, RunCompleted, RunFailed, RunAborted},
	RunPaused:  {RunRunning, RunParked, RunFailed, RunAborted},
}

// A task is pending until an attempt runs it; an attempt ends it completed or failed, or sends it back to pending
// for a retry, or leaves it waiting on a question, which a person's answer settles (forced, among others). A task
// may also be settled without running (a gate with nowhere to go fails). A pipeline that comes back to a node sends
// its task, whatever it ended as, back to pending, or straight to waiting for a gate that asks again: a task is never
// over for good while its run goes on.
var taskMoves = map[TaskStatus][]TaskStatus{
	TaskPending:   {TaskRunning, TaskWaiting, TaskCompleted, TaskFailed},
	TaskRunning:   {TaskPending, TaskWaiting, TaskCompleted, TaskFailed},
	TaskWaiting:   {TaskPending, TaskRunning, TaskCompleted, TaskForced, TaskFailed},
	TaskCompleted: {TaskPending, TaskWaiting},
	TaskForced:    {TaskPending, TaskWaiting},
	TaskFailed:    {TaskPending, TaskWaiting, TaskForced},
}

// CanMove reports whether a run may go from one status to another; staying where it is is always allowed.
func (s RunStatus) CanMove(to RunStatus) bool { return s == to || slices.Contains(runMoves[s], to) }

// CanMove reports whether a task may go from one status to another; staying where it is is always allowed.
func (s TaskStatus) CanMove(to TaskStatus) bool { return s == to || slices.Contains(taskMoves[s], to) }

// IllegalMove is the error of a change that moves a run or a task where it may not go.
type IllegalMove struct {
	RunID, TaskID string // TaskID is "" for the run's own status
	From, To      string
}

func (e *IllegalMove) Error() string {
	what := "run " + e.RunID
	if e.TaskID != "" {
		what = "task " + e.TaskID + " of run " + e.RunID
	}
	return fmt.Sprintf("%s cannot go from %s to %s; the change was not saved", what, e.From, e.To)
}

// States is where a run and its tasks are: taken before a change, it checks the change's moves.
type States struct {
	runID string
	run   RunStatus
	tasks map[string]TaskStatus
}

// StatesOf notes where r and its tasks are now.
func StatesOf(r *Run) States {
	s := States{runID: r.ID, run: r.Status, tasks: make(map[string]TaskStatus, len(r.Tasks))}
	for _, t := range r.Tasks {
		s.tasks[t.ID] = t.Status
	}
	return s
}

// Check reports the first move from s to r that the tables above do not allow, as an *IllegalMove. A task that was
// not there before (a plan grown by a follow-up) may start anywhere.
func (s States) Check(r *Run) error {
	if !s.run.CanMove(r.Status) {
		return &IllegalMove{RunID: s.runID, From: string(s.run), To: string(r.Status)}
	}
	for _, t := range r.Tasks {
		from, ok := s.tasks[t.ID]
		if !ok {
			continue
		}
		if !from.CanMove(t.Status) {
			return &IllegalMove{RunID: s.runID, TaskID: t.ID, From: string(from), To: string(t.Status)}
		}
	}
	return nil
}
