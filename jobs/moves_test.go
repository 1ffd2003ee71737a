package jobs

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

var (
	movesCreated = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	movesNow     = movesCreated.Add(90 * time.Second)
)

// movesRun is a run at run status rs whose one task is at task status ts, with a branch and an attempt that cost
// something.
func movesRun(rs RunStatus, ts TaskStatus) *Run {
	return &Run{ID: "r-1", PlanPath: "plans/p.md", PlanTitle: "Plan", Status: rs, Seq: 4, CreatedAt: movesCreated,
		Options: Options{Agent: "sim", Brain: "heuristic", Sandbox: "local", MaxAttempts: 3},
		Git: &Git{Base: "main", BaseCommit: "abc", Branch: "orch/r-1", Commits: 2, FilesChanged: 1, Insertions: 5,
			PullRequest: "https://example.test/pr/1"},
		Tasks: []*Task{{ID: "1.1", Title: "First", Status: ts, Started: 1, Failures: 1, Commit: "0123456789abcdef01",
			Attempts: []*Attempt{{N: 1, CostUSD: 0.5, Duration: 2 * time.Second}}}},
		Queued: []*Escalation{{ID: "q", TaskID: "1.1"}}}
}

func movesWork() Work {
	return Work{Branch: "orch/r-1", Base: "main", Commits: 2, FilesChanged: 1, Insertions: 5}
}

// Every move does what it says, and records the event that is its own (or none).
func TestLegalMoves(t *testing.T) {
	for _, c := range []struct {
		name     string
		run      RunStatus
		task     TaskStatus
		move     func(r *Run, c *Change)
		wantRun  RunStatus
		wantTask TaskStatus
		check    func(t *testing.T, r *Run)
		events   []Event
	}{
		{name: "a run starts", run: RunQueued, task: TaskPending, wantRun: RunRunning, wantTask: TaskPending,
			move:  func(r *Run, c *Change) { r.Start(c, "default policy") },
			check: func(t *testing.T, r *Run) { want(t, "seq", r.Seq, int64(0)) },
			events: []Event{NewEvent("r-1", "", RunStartedEvent{Branch: "orch/r-1", Base: "main", Plan: "plans/p.md",
				Title: "Plan", Tasks: 1, Unit: "task", Agent: "sim", Brain: "heuristic", Sandbox: "local",
				Permissions: "default policy"})}},
		{name: "a run pauses", run: RunRunning, task: TaskRunning, wantRun: RunPaused, wantTask: TaskRunning,
			move:   func(r *Run, c *Change) { r.Pause(c, "1.1", "Brain unavailable: down") },
			check:  func(t *testing.T, r *Run) { want(t, "reason", r.Reason, "Brain unavailable: down") },
			events: []Event{NewEvent("r-1", "1.1", RunPausedEvent{Reason: "Brain unavailable: down"})}},
		{name: "a paused run continues", run: RunPaused, task: TaskRunning, wantRun: RunRunning, wantTask: TaskRunning,
			move:   func(r *Run, c *Change) { r.Reason = "Brain unavailable"; r.Continue(c) },
			check:  func(t *testing.T, r *Run) { want(t, "reason", r.Reason, "") },
			events: []Event{NewEvent("r-1", "1.1", ResumedEvent{Title: "First", Resolution: ResumeContinue})}},
		{name: "a parked run resumes", run: RunParked, task: TaskPending, wantRun: RunRunning, wantTask: TaskPending,
			move: func(r *Run, c *Change) { r.Resume(c) }},
		{name: "a running run goes on", run: RunRunning, task: TaskPending, wantRun: RunRunning, wantTask: TaskPending,
			move: func(r *Run, c *Change) { r.Resume(c) }},
		{name: "a run parks", run: RunRunning, task: TaskRunning, wantRun: RunParked, wantTask: TaskWaiting,
			move: func(r *Run, c *Change) {
				r.Park(c, r.Tasks[0], &Escalation{ID: "e1", TaskID: "1.1", Question: "Which?"})
			},
			check: func(t *testing.T, r *Run) {
				if len(r.Escalations) != 1 || r.OpenEscalation() == nil || r.Escalations[0].EventRef != movesEventID(1) {
					t.Errorf("escalations %+v", r.Escalations)
				}
			},
			events: []Event{NewEvent("r-1", "1.1", EscalationEvent{EscalationID: "e1", Question: "Which?", Title: "First"})}},
		{name: "a run completes", run: RunRunning, task: TaskCompleted, wantRun: RunCompleted, wantTask: TaskCompleted,
			move:  func(r *Run, c *Change) { r.Complete(c, movesNow) },
			check: func(t *testing.T, r *Run) { want(t, "ended", r.EndedAt, movesNow) },
			events: []Event{NewEvent("r-1", "", RunCompletedEvent{Tasks: 1, Total: 1, Unit: "task", DurationMS: 90000,
				CostUSD: 0.5, Work: movesWork(), PullRequest: "https://example.test/pr/1"})}},
		{name: "a run fails", run: RunParked, task: TaskFailed, wantRun: RunFailed, wantTask: TaskFailed,
			move: func(r *Run, c *Change) { r.Fail(c, "1.1", "stage failed", WorkOf(r), movesNow.In(time.Local)) },
			check: func(t *testing.T, r *Run) {
				want(t, "reason", r.Reason, "stage failed")
				want(t, "ended", r.EndedAt.Location(), time.UTC)
			},
			events: []Event{NewEvent("r-1", "1.1", RunFailedEvent{Reason: "stage failed", DurationMS: 90000, Work: movesWork()})}},
		{name: "a run fails untold", run: RunRunning, task: TaskFailed, wantRun: RunFailed, wantTask: TaskFailed,
			move:   func(r *Run, c *Change) { r.Fail(c, "1.1", "escalation loop", Work{}, movesNow) },
			events: []Event{NewEvent("r-1", "1.1", RunFailedEvent{Reason: "escalation loop", DurationMS: 90000})}},
		{name: "a run is aborted", run: RunParked, task: TaskWaiting, wantRun: RunAborted, wantTask: TaskWaiting,
			move: func(r *Run, c *Change) { r.Abort(c, "1.1", "wrong plan", "alice", movesNow) },
			check: func(t *testing.T, r *Run) {
				want(t, "reason", r.Reason, "wrong plan")
				want(t, "queued", len(r.Queued), 0)
			},
			events: []Event{NewEvent("r-1", "1.1", RunAbortedEvent{Reason: "wrong plan", By: "alice", DurationMS: 90000,
				Work: movesWork()})}},
		{name: "an attempt starts", run: RunRunning, task: TaskPending, wantRun: RunRunning, wantTask: TaskRunning,
			move: func(r *Run, c *Change) { r.StartAttempt(c, r.Tasks[0], "delivery-2", "", movesNow) },
			check: func(t *testing.T, r *Run) {
				task := r.Tasks[0]
				want(t, "started", task.Started, 2)
				want(t, "attempt", *task.Attempts[1], Attempt{N: 2, StartedAt: movesNow, Owner: "delivery-2"})
			},
			events: []Event{NewEvent("r-1", "1.1", TaskStartedEvent{Title: "First", Attempt: 2, MaxAttempts: 3, Started: 2,
				Agent: "sim"})}},
		{name: "a conversation's turn starts", run: RunRunning, task: TaskPending, wantRun: RunRunning, wantTask: TaskRunning,
			move: func(r *Run, c *Change) {
				r.Tasks[0].Kind = KindChat
				r.Tasks[0].Chat = []Turn{{Role: "agent"}, {Role: "human"}, {Role: "agent"}, {Role: "human"}}
				r.StartAttempt(c, r.Tasks[0], "d", "", movesNow)
			},
			events: []Event{NewEvent("r-1", "1.1", TaskStartedEvent{Title: "First", Attempt: 2, MaxAttempts: 3, Started: 2,
				Agent: "sim", Turn: 3})}},
		{name: "a task is retried", run: RunRunning, task: TaskRunning, wantRun: RunRunning, wantTask: TaskPending,
			move: func(r *Run, c *Change) { r.Retry(c, r.Tasks[0], "flaky", "try again", 3*time.Second, movesNow) },
			check: func(t *testing.T, r *Run) {
				want(t, "guidance", r.Tasks[0].RetryGuidance, "try again")
				want(t, "seq", r.Seq, int64(5))
				want(t, "retry at", r.RetryAt, movesNow.Add(3*time.Second))
			},
			events: []Event{NewEvent("r-1", "1.1", RetryingEvent{Title: "First", Reason: "flaky", Guidance: "try again", DelayMS: 3000}),
				NewEvent("r-1", "1.1", StageRetryingEvent{Attempt: 2, DelayMS: 3000})}},
		{name: "a task completes", run: RunRunning, task: TaskRunning, wantRun: RunRunning, wantTask: TaskCompleted,
			move: func(r *Run, c *Change) { r.Tasks[0].Complete(c, "done it", r.Tasks[0].Attempts[0]) },
			events: []Event{NewEvent("r-1", "1.1", TaskCompletedEvent{Title: "First", Summary: "done it", CostUSD: 0.5,
				DurationMS: 2000, Commit: "0123456789ab"})}},
		{name: "a person ends a task", run: RunParked, task: TaskWaiting, wantRun: RunParked, wantTask: TaskCompleted,
			move:   func(r *Run, c *Change) { r.Tasks[0].Complete(c, "accepted by alice", nil) },
			events: []Event{NewEvent("r-1", "1.1", TaskCompletedEvent{Title: "First", Summary: "accepted by alice", Commit: "0123456789ab"})}},
		{name: "a gate passes", run: RunRunning, task: TaskWaiting, wantRun: RunRunning, wantTask: TaskCompleted,
			move: func(r *Run, c *Change) { r.Tasks[0].Pass(c) }},
		{name: "a task fails", run: RunRunning, task: TaskRunning, wantRun: RunRunning, wantTask: TaskFailed,
			move: func(r *Run, c *Change) { r.Tasks[0].Fail(c) }},
		{name: "a task is forced", run: RunParked, task: TaskWaiting, wantRun: RunParked, wantTask: TaskForced,
			move: func(r *Run, c *Change) { r.Tasks[0].Force(c) }},
		{name: "a failed task is forced", run: RunParked, task: TaskFailed, wantRun: RunParked, wantTask: TaskForced,
			move: func(r *Run, c *Change) { r.Tasks[0].Force(c) }},
		{name: "an answered task reopens", run: RunParked, task: TaskWaiting, wantRun: RunParked, wantTask: TaskPending,
			move: func(r *Run, c *Change) { r.Tasks[0].Reopen(c) }},
		{name: "a completed task is entered again", run: RunRunning, task: TaskCompleted, wantRun: RunRunning, wantTask: TaskPending,
			move: func(r *Run, c *Change) { r.Tasks[0].Reopen(c) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := movesRun(c.run, c.task)
			ch := NewChange(r)
			c.move(r, ch)
			if err := ch.Err(); err != nil {
				t.Fatalf("a legal move was refused: %v", err)
			}
			if r.Status != c.wantRun || r.Tasks[0].Status != c.wantTask {
				t.Fatalf("run %s, task %s; want %s, %s", r.Status, r.Tasks[0].Status, c.wantRun, c.wantTask)
			}
			if c.check != nil {
				c.check(t, r)
			}
			for i := range c.events {
				c.events[i].ID = movesEventID(int64(i + 1))
			}
			if got := ch.Events; !reflect.DeepEqual(got, c.events) && !(len(got) == 0 && len(c.events) == 0) {
				t.Fatalf("events\n got %s\nwant %s", eventsJSON(t, got), eventsJSON(t, c.events))
			}
		})
	}
}

// A move the tables do not allow changes nothing of the run — its status, the fields of the move, its events — and
// is noted on the change, which the store then refuses (jobs/store's TestUpdateRefusesIllegalMovesMadeByMethods).
func TestIllegalMovesChangeNothing(t *testing.T) {
	for _, c := range []struct {
		name string
		run  RunStatus
		task TaskStatus
		move func(r *Run, c *Change)
		want IllegalMove
	}{
		{"a completed run starts again", RunCompleted, TaskCompleted, func(r *Run, c *Change) { r.Start(c, "") },
			IllegalMove{RunID: "r-1", From: "completed", To: "running"}},
		{"a parked run pauses", RunParked, TaskWaiting, func(r *Run, c *Change) { r.Pause(c, "1.1", "down") },
			IllegalMove{RunID: "r-1", From: "parked", To: "paused"}},
		{"an aborted run continues", RunAborted, TaskFailed, func(r *Run, c *Change) { r.Continue(c) },
			IllegalMove{RunID: "r-1", From: "aborted", To: "running"}},
		{"a failed run resumes", RunFailed, TaskFailed, func(r *Run, c *Change) { r.Resume(c) },
			IllegalMove{RunID: "r-1", From: "failed", To: "running"}},
		{"a completed run parks", RunCompleted, TaskCompleted,
			func(r *Run, c *Change) { r.Park(c, r.Tasks[0], &Escalation{ID: "e1", TaskID: "1.1"}) },
			IllegalMove{RunID: "r-1", From: "completed", To: "parked"}},
		{"a paused run completes", RunPaused, TaskCompleted, func(r *Run, c *Change) { r.Complete(c, movesNow) },
			IllegalMove{RunID: "r-1", From: "paused", To: "completed"}},
		{"an aborted run fails", RunAborted, TaskFailed, func(r *Run, c *Change) { r.Fail(c, "", "x", WorkOf(r), movesNow) },
			IllegalMove{RunID: "r-1", From: "aborted", To: "failed"}},
		{"a failed run is aborted", RunFailed, TaskFailed, func(r *Run, c *Change) { r.Abort(c, "", "x", "bob", movesNow) },
			IllegalMove{RunID: "r-1", From: "failed", To: "aborted"}},
		{"a completed task starts", RunRunning, TaskCompleted,
			func(r *Run, c *Change) { r.StartAttempt(c, r.Tasks[0], "d", "", movesNow) },
			IllegalMove{RunID: "r-1", TaskID: "1.1", From: "completed", To: "running"}},
		{"a failed task completes", RunRunning, TaskFailed, func(r *Run, c *Change) { r.Tasks[0].Complete(c, "s", nil) },
			IllegalMove{RunID: "r-1", TaskID: "1.1", From: "failed", To: "completed"}},
		{"a forced task passes", RunRunning, TaskForced, func(r *Run, c *Change) { r.Tasks[0].Pass(c) },
			IllegalMove{RunID: "r-1", TaskID: "1.1", From: "forced", To: "completed"}},
		{"a completed task fails", RunRunning, TaskCompleted, func(r *Run, c *Change) { r.Tasks[0].Fail(c) },
			IllegalMove{RunID: "r-1", TaskID: "1.1", From: "completed", To: "failed"}},
		{"a running task is forced", RunRunning, TaskRunning, func(r *Run, c *Change) { r.Tasks[0].Force(c) },
			IllegalMove{RunID: "r-1", TaskID: "1.1", From: "running", To: "forced"}},
		{"the first illegal move is the one told", RunCompleted, TaskCompleted, func(r *Run, c *Change) {
			r.Tasks[0].Fail(c)
			r.Abort(c, "", "x", "bob", movesNow)
		}, IllegalMove{RunID: "r-1", TaskID: "1.1", From: "completed", To: "failed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := movesRun(c.run, c.task)
			before := cloneRun(t, r)
			ch := NewChange(r)
			c.move(r, ch)
			var illegal *IllegalMove
			if err := ch.Err(); !errors.As(err, &illegal) || *illegal != c.want {
				t.Fatalf("err = %v, want %+v", err, c.want)
			}
			if !reflect.DeepEqual(r, before) || len(ch.Events) != 0 {
				t.Fatalf("the illegal move changed the run or emitted %d events:\n%+v", len(ch.Events), r)
			}
		})
	}
	if err := NewChange(movesRun(RunRunning, TaskPending)).Err(); err != nil {
		t.Fatalf("a change with no move: %v", err) // a nil error, not a nil *IllegalMove in one
	}
}

func movesEventID(n int64) string {
	return NewChange(&Run{CreatedAt: movesCreated, EventSeq: n - 1}).Emit(Event{})
}

func want[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func cloneRun(t *testing.T, r *Run) *Run {
	t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var cp Run
	if err := json.Unmarshal(data, &cp); err != nil {
		t.Fatal(err)
	}
	return &cp
}

func eventsJSON(t *testing.T, evs []Event) string {
	t.Helper()
	data, err := json.Marshal(evs)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
