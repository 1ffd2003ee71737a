package queue

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
)

// ExpiredSteps and Leased read asynq's private lease set: a real asynq server working on a step must show in it with a
// lease that has not expired now and has an hour from now. This fails if an asynq upgrade moves the set or changes how it
// scores leases, and then the rescue of dead workers' steps would silently stop.
func TestExpiredStepsSeesAsynqLeases(t *testing.T) {
	for name, rdb := range jobstest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			// jobstest gives this test process a database of its own: the worker's tests, which run asynq servers on
			// the steps queue at the same time, cannot take this test's step (nor this server theirs).
			ctx := context.Background()
			q := New(rdb)
			runID := jobs.NewRunID()
			id := fmt.Sprintf("step:%s:1", runID)
			working, release := make(chan struct{}), make(chan struct{})
			srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{Concurrency: 1, Queues: map[string]int{Steps: 1},
				TaskCheckInterval: 10 * time.Millisecond, LogLevel: asynq.FatalLevel})
			err := srv.Start(asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
				if got, _ := asynq.GetTaskID(ctx); got != id {
					return nil // left by an earlier run of this test
				}
				close(working)
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Shutdown()
			defer close(release)

			if err := q.Step(ctx, "", runID, 1, time.Minute); err != nil {
				t.Fatal(err)
			}
			select {
			case <-working:
			case <-time.After(10 * time.Second):
				t.Fatal("the asynq server did not start the step")
			}
			now := time.Now()
			if leased, err := q.Leased(ctx, fmt.Sprintf("step:%s:2", runID), now); leased || err != nil {
				t.Errorf("a step nobody works on: Leased = %v, %v", leased, err)
			}
			for _, tt := range []struct {
				at      time.Time
				expired bool
			}{{now, false}, {now.Add(time.Minute), true}, {now.Add(time.Hour), true}} {
				ids, err := q.ExpiredSteps(ctx, tt.at)
				if err != nil {
					t.Fatal(err)
				}
				if slices.Contains(ids, id) != tt.expired {
					t.Errorf("at now+%v: expired steps %v; want %s among them: %v", tt.at.Sub(now), ids, id, tt.expired)
				}
				leased, err := q.Leased(ctx, id, tt.at)
				if err != nil || leased == tt.expired {
					t.Errorf("at now+%v: Leased = %v, %v; want %v", tt.at.Sub(now), leased, err, !tt.expired)
				}
			}
		})
	}
}
