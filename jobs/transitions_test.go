package jobs

import (
	"slices"
	"testing"
)

// The tables of moves name only statuses that exist; an ended run goes nowhere; nothing goes back to queued.
func TestMoveTables(t *testing.T) {
	runs := []RunStatus{RunQueued, RunRunning, RunParked, RunPaused, RunCompleted, RunFailed, RunAborted}
	tasks := []TaskStatus{TaskPending, TaskRunning, TaskWaiting, TaskCompleted, TaskForced, TaskFailed}
	for from, tos := range runMoves {
		for _, to := range append(tos, from) {
			if !slices.Contains(runs, to) {
				t.Errorf("run move %s → %s names an unknown status", from, to)
			}
		}
	}
	for from, tos := range taskMoves {
		for _, to := range append(tos, from) {
			if !slices.Contains(tasks, to) {
				t.Errorf("task move %s → %s names an unknown status", from, to)
			}
		}
	}
	for _, from := range runs {
		for _, to := range runs {
			if from.Terminal() && from != to && from.CanMove(to) {
				t.Errorf("an ended run may go from %s to %s", from, to)
			}
			if to == RunQueued && from != to && from.CanMove(to) {
				t.Errorf("a run may go back from %s to queued", from)
			}
			if !from.Terminal() && to.Terminal() && to != RunCompleted && !from.CanMove(to) {
				t.Errorf("a run that has not ended cannot fail or be aborted from %s (to %s)", from, to)
			}
		}
		if !from.CanMove(from) {
			t.Errorf("a run cannot stay %s", from)
		}
	}
	for _, from := range tasks {
		if !from.CanMove(TaskPending) {
			t.Errorf("a task cannot go back to pending from %s (a pipeline's loop, a retry)", from)
		}
	}
}
