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
// could never move again. So on a team's queue as on the default one.
func TestArchivedStepIsEnqueuedAgain(t *testing.T) {
	for name, rdb := range jobstest.Clients(t) {
		for _, team := range []string{"", "payments"} {
			t.Run(name+"/"+team, func(t *testing.T) {
				ctx := context.Background()
				q := New(rdb).WithTeams(map[string]int{"payments": 2})
				qname := q.StepQueue(team)
				runID := jobs.NewRunID()
				if err := q.Step(ctx, team, runID, 1, time.Minute); err != nil {
					t.Fatal(err)
				}
				id := fmt.Sprintf("step:%s:1", runID)
				insp := asynq.NewInspectorFromRedisClient(rdb)
				if err := insp.ArchiveTask(qname, id); err != nil {
					t.Fatal(err)
				}
				if err := q.Step(ctx, team, runID, 1, time.Minute); err != nil {
					t.Fatal(err)
				}
				info, err := insp.GetTaskInfo(qname, id)
				if err != nil || info.State != asynq.TaskStatePending {
					t.Fatalf("after re-enqueue: %+v, %v", info, err)
				}
				if info.Timeout != time.Minute+5*time.Minute {
					t.Fatalf("step timeout %v, want the agent's timeout plus the margin", info.Timeout)
				}
				// A pending one is left alone.
				if err := q.Step(ctx, team, runID, 1, time.Minute); err != nil {
					t.Fatal(err)
				}
				insp.DeleteTask(qname, id)
			})
		}
	}
}

// A sweep deletes the queued tasks of runs that are over, in whatever state asynq keeps them, and nothing of a run
// that lives or that it cannot judge.
func TestSweepTakesOnlyWhatIsOver(t *testing.T) {
	for name, rdb := range jobstest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			q := New(rdb)
			insp := asynq.NewInspectorFromRedisClient(rdb)
			over, live, unsure := jobs.NewRunID(), jobs.NewRunID(), jobs.NewRunID()
			later := time.Now().Add(time.Hour)
			for _, id := range []string{over, live, unsure} {
				if err := q.Start(ctx, id); err != nil { // pending
					t.Fatal(err)
				}
				if err := q.StepAt(ctx, "", id, 2, time.Minute, later); err != nil { // scheduled
					t.Fatal(err)
				}
				if err := q.Step(ctx, "", id, 1, time.Minute); err != nil {
					t.Fatal(err)
				}
				if err := insp.ArchiveTask(Steps, fmt.Sprintf("step:%s:1", id)); err != nil { // archived
					t.Fatal(err)
				}
			}
			n, err := q.Sweep(ctx, func(_ context.Context, id string) (bool, error) {
				if id == unsure {
					return false, fmt.Errorf("redis away")
				}
				return id == over, nil
			})
			if err != nil || n != 3 {
				t.Fatalf("swept %d, %v; want the over run's 3 tasks", n, err)
			}
			for _, id := range []string{over, live, unsure} {
				for _, task := range []struct{ queue, id string }{{Control, "start:" + id}, {Steps, fmt.Sprintf("step:%s:2", id)},
					{Steps, fmt.Sprintf("step:%s:1", id)}} {
					_, err := insp.GetTaskInfo(task.queue, task.id)
					if gone := err != nil; gone != (id == over) {
						t.Errorf("%s: gone %v (%v)", task.id, gone, err)
					}
				}
			}
		})
	}
}

// A worker that forgets its claim on a delivery leaves alone the claim of the worker that holds the delivery now:
// asynq may have handed it on after the first one's lease ran out.
func TestUnclaimForgetsOnlyItsOwnClaim(t *testing.T) {
	for name, rdb := range jobstest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			q := New(rdb)
			delivery := "step:" + jobs.NewRunID() + ":1"
			t.Cleanup(func() { rdb.HDel(ctx, deliveriesKey, delivery) })
			if err := q.Claim(ctx, delivery, "host:1:a"); err != nil {
				t.Fatal(err)
			}
			if err := q.Claim(ctx, delivery, "host:2:b"); err != nil {
				t.Fatal(err)
			}
			if err := q.Unclaim(ctx, delivery, "host:1:a"); err != nil {
				t.Fatal(err)
			}
			if got := rdb.HGet(ctx, deliveriesKey, delivery).Val(); got != "host:2:b" {
				t.Fatalf("the delivery's claim is %q after the first worker forgot its own, want the second worker's", got)
			}
			if err := q.Unclaim(ctx, delivery, "host:2:b"); err != nil {
				t.Fatal(err)
			}
			if n := rdb.HExists(ctx, deliveriesKey, delivery).Val(); n {
				t.Fatal("the holder's own claim is still there after it forgot it")
			}
		})
	}
}
