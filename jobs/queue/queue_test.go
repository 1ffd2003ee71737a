package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
)

// A step whose retries ran out is archived and keeps its id; enqueueing it again must bring it back, or the run
// could never move again.
func TestArchivedStepIsEnqueuedAgain(t *testing.T) {
	for name, rdb := range jobstest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			q := New(rdb)
			runID := jobs.NewRunID()
			if err := q.Step(ctx, runID, 1, time.Minute); err != nil {
				t.Fatal(err)
			}
			id := fmt.Sprintf("step:%s:1", runID)
			insp := asynq.NewInspectorFromRedisClient(rdb)
			if err := insp.ArchiveTask(Steps, id); err != nil {
				t.Fatal(err)
			}
			if err := q.Step(ctx, runID, 1, time.Minute); err != nil {
				t.Fatal(err)
			}
			info, err := insp.GetTaskInfo(Steps, id)
			if err != nil || info.State != asynq.TaskStatePending {
				t.Fatalf("after re-enqueue: %+v, %v", info, err)
			}
			if info.Timeout != time.Minute+5*time.Minute {
				t.Fatalf("step timeout %v, want the agent's timeout plus the margin", info.Timeout)
			}
			// A pending one is left alone.
			if err := q.Step(ctx, runID, 1, time.Minute); err != nil {
				t.Fatal(err)
			}
			insp.DeleteTask(Steps, id)
		})
	}
}
