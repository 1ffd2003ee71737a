package worker

import (
	"context"
	"fmt"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
)

// An answer queued in a process that runs a worker is applied there at once, without waiting for the control queue:
// here no server takes the resume task at all, and the run goes on, its next step queued. An answer that may finish
// a run with a branch is left to the resume task, which delivers the work first.
func TestAnAnswerHereGoesOnWithoutTheQueue(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, rdb, script(t, asksThenDone), nil)
			stop := h.queue.ResumeHere(h.w.resumeHere)
			defer stop()
			inspector := asynq.NewInspectorFromRedisClient(rdb)

			r := h.newRun(t, "1.1")
			parked := drive(t, h, r.ID)
			if parked.OpenEscalation() == nil {
				t.Fatalf("the run did not ask: %s", parked.Status)
			}
			resolve(t, h, r.ID, escalation.Request{Type: jobs.ResolveChoose, Key: "B", By: "ann"})
			h.w.here.wait()
			got := h.get(t, r.ID)
			if got.Status != jobs.RunRunning || got.Seq <= parked.Seq {
				t.Fatalf("after the answer: %s at step %d (parked at %d): the answer was not applied here", got.Status, got.Seq, parked.Seq)
			}
			if _, err := inspector.GetTaskInfo(queue.Steps, fmt.Sprintf("step:%s:%d", r.ID, got.Seq)); err != nil {
				t.Fatalf("the next step is not queued: %v", err)
			}
			// The resume task, when a worker takes it, finds the answer applied and changes nothing.
			if err := h.process(t, queue.TypeResume, queue.Payload{RunID: r.ID, EscalationID: "e1"}); err != nil {
				t.Fatal(err)
			}
			if again := h.get(t, r.ID); again.Version != got.Version {
				t.Fatalf("the resume task changed the run again: version %d → %d", got.Version, again.Version)
			}
			if got = drive(t, h, r.ID); got.Status != jobs.RunCompleted {
				t.Fatalf("the run ended %s", got.Status)
			}

			// A run with a branch, answered so that its task is done: the resume task commits and delivers first.
			r = h.newRun(t, "1.1")
			drive(t, h, r.ID)
			if _, err := h.store.Update(context.Background(), r.ID, func(r *jobs.Run, c *jobs.Change) error {
				r.Git = &jobs.Git{Repo: t.TempDir(), Base: "main", Branch: jobs.BranchPrefix + r.ID}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			resolve(t, h, r.ID, escalation.Request{Type: jobs.ResolveForce, Reason: "done by hand", AcknowledgeRisk: true, By: "ann"})
			h.w.here.wait()
			if got := h.get(t, r.ID); got.Status != jobs.RunParked || got.Escalations[0].Resolution == nil {
				t.Fatalf("a run with a branch went on without its resume task: %s", got.Status)
			}
		})
	}
}
