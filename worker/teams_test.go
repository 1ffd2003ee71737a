package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
)

// A run of a configured team has its steps on the team's queue, and one of no configured team on the default queue;
// a team's step whose worker died is found on the team's queue and rescued there, and a started worker serves the
// team's queue.
func TestTeamStepsAreQueuedRescuedAndServed(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			h := newHarness(t, rdb, script(t, `echo "Done. All tests pass."`), nil)
			team := "team-" + jobs.NewRunID()
			h.w.cfg.Teams = map[string]int{team: 3}
			theirs, other := h.newRun(t, "1.1"), h.newRun(t, "1.1")
			if _, err := h.store.Update(ctx, theirs.ID, func(r *jobs.Run, c *jobs.Change) error {
				r.Options.Team = team
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for _, r := range []*jobs.Run{theirs, other} {
				if err := h.process(t, queue.TypeStart, queue.Payload{RunID: r.ID}); err != nil {
					t.Fatal(err)
				}
			}
			insp := asynq.NewInspectorFromRedisClient(rdb)
			teamQueue := queue.TeamQueue(team)
			for _, tt := range []struct{ queue, id string }{{teamQueue, theirs.ID}, {queue.Steps, other.ID}} {
				if _, err := insp.GetTaskInfo(tt.queue, fmt.Sprintf("step:%s:1", tt.id)); err != nil {
					t.Fatalf("step of %s not on %s: %v", tt.id, tt.queue, err)
				}
			}
			// The team's step was taken by a worker that died: its lease on the team's queue ran out.
			step := fmt.Sprintf("step:%s:1", theirs.ID)
			leaseSet := "asynq:{" + teamQueue + "}:lease" // see TestRescueOrphans
			rdb.ZAdd(ctx, leaseSet, redis.Z{Score: float64(time.Now().Add(-time.Second).Unix()), Member: step})
			t.Cleanup(func() { rdb.ZRem(ctx, leaseSet, step) })
			if n, err := h.w.RescueOrphans(ctx); err != nil || n != 1 {
				t.Fatalf("rescued %d, %v; want the team's step", n, err)
			}
			if _, err := insp.GetTaskInfo(teamQueue, step+":rescue"); err != nil {
				t.Fatalf("the rescue is not on the team's queue: %v", err)
			}
			if err := h.w.Start(rdb); err != nil {
				t.Fatal(err)
			}
			defer h.w.Shutdown()
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if h.get(t, theirs.ID).Status == jobs.RunCompleted && h.get(t, other.ID).Status == jobs.RunCompleted {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the runs did not complete: %s, %s", h.get(t, theirs.ID).Status, h.get(t, other.ID).Status)
				}
			}
			if got := h.get(t, theirs.ID); got.Tasks[0].Started != 1 {
				t.Fatalf("the team's task started %d times, want once", got.Tasks[0].Started)
			}
		})
	}
}
