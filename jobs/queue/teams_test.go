package queue

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
)

// A team's queue name is its name when that is safe and short; any other name is made safe, cut, and told apart by a
// hash, so that no '{' or '}' reaches asynq's hash tags and two names never share a queue.
func TestTeamQueue(t *testing.T) {
	long := strings.Repeat("a", 60)
	for team, want := range map[string]string{
		"payments":    "orch-steps:payments",
		"C0123ABCD":   "orch-steps:C0123ABCD",
		"team-a.v2_x": "orch-steps:team-a.v2_x",
		"{evil}":      "orch-steps:_evil_~",
		"a b":         "orch-steps:a_b~",
		"équipe":      "orch-steps:_quipe~",
		long:          "orch-steps:" + long[:40] + "~",
		"":            "orch-steps:~",
	} {
		got := TeamQueue(team)
		if strings.HasSuffix(want, "~") {
			if !strings.HasPrefix(got, want) || len(got) != len(want)+8 {
				t.Errorf("TeamQueue(%q) = %q, want %q and 8 hex digits", team, got, want)
			}
		} else if got != want {
			t.Errorf("TeamQueue(%q) = %q, want %q", team, got, want)
		}
		if strings.ContainsAny(got, "{} ") || len(got) > len(teamPrefix)+maxTeamName+9 {
			t.Errorf("TeamQueue(%q) = %q: unsafe or too long", team, got)
		}
		if TeamQueue(team) != got {
			t.Errorf("TeamQueue(%q) is not deterministic", team)
		}
	}
	if TeamQueue("a b") == TeamQueue("a_b") || TeamQueue(long) == TeamQueue(long+"b") {
		t.Error("two teams share a queue")
	}
}

// A configured team's steps go to its queue, every other run's to the default one; the default queue weighs 1 unless
// the teams name "default".
func TestWithTeams(t *testing.T) {
	rdb := jobstest.Clients(t)["miniredis"]
	base := New(rdb)
	q := base.WithTeams(map[string]int{"a": 3, "b": 1})
	for team, want := range map[string]string{"a": "orch-steps:a", "b": "orch-steps:b", "c": Steps, "": Steps} {
		if got := q.StepQueue(team); got != want {
			t.Errorf("StepQueue(%q) = %q, want %q", team, got, want)
		}
	}
	if got := base.StepQueue("a"); got != Steps {
		t.Errorf("WithTeams changed the queue it was called on: StepQueue(a) = %q", got)
	}
	if got, want := q.StepWeights(), map[string]int{"orch-steps:a": 3, "orch-steps:b": 1, Steps: 1}; !maps.Equal(got, want) {
		t.Errorf("StepWeights = %v, want %v", got, want)
	}
	if got := base.WithTeams(map[string]int{"a": 2, DefaultTeam: 5}).StepWeights(); got[Steps] != 5 || len(got) != 2 {
		t.Errorf("with a default weight: %v", got)
	}
}

// Everything that reads asynq's leases reads those of every step queue: a real asynq server working on a team's
// step shows in ExpiredSteps and Leased, and, when its worker no longer says it lives, in DeadDeliveries. A queue that
// is no longer configured but that asynq knows (an earlier configuration enqueued on it) is read as well.
func TestTeamStepLeasesAreRead(t *testing.T) {
	for name, rdb := range jobstest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			team := "team-" + jobs.NewRunID()
			q := New(rdb).WithTeams(map[string]int{team: 3})
			runID := jobs.NewRunID()
			id := fmt.Sprintf("step:%s:1", runID)
			working, release := make(chan struct{}), make(chan struct{})
			srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{Concurrency: 1, Queues: q.StepWeights(),
				TaskCheckInterval: 10 * time.Millisecond, LogLevel: asynq.FatalLevel})
			err := srv.Start(asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
				if got, _ := asynq.GetTaskID(ctx); got != id {
					return nil
				}
				if q, _ := asynq.GetQueueName(ctx); q != TeamQueue(team) {
					t.Errorf("the step came off %s, want its team's queue", q)
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

			if err := q.Step(ctx, team, runID, 1, time.Minute); err != nil {
				t.Fatal(err)
			}
			select {
			case <-working:
			case <-time.After(10 * time.Second):
				t.Fatal("the asynq server did not start the team's step")
			}
			now := time.Now()
			// Through the configured queue, and through one that knows no teams: asynq's set of queues names it.
			for qname, q := range map[string]*Queue{"configured": q, "unconfigured": New(rdb)} {
				if queues, err := q.StepQueues(); err != nil || !slices.Contains(queues, TeamQueue(team)) {
					t.Errorf("%s: StepQueues = %v, %v; want the team's among them", qname, queues, err)
				}
				if ids, err := q.ExpiredSteps(ctx, now.Add(time.Minute)); err != nil || !slices.Contains(ids, id) {
					t.Errorf("%s: expired steps a minute on: %v, %v; want %s among them", qname, ids, err, id)
				}
				if ids, err := q.ExpiredSteps(ctx, now); err != nil || slices.Contains(ids, id) {
					t.Errorf("%s: expired steps now: %v, %v; want no %s", qname, ids, err, id)
				}
				if leased, err := q.Leased(ctx, id, now); !leased || err != nil {
					t.Errorf("%s: Leased = %v, %v; want true", qname, leased, err)
				}
				if size := q.StepsSize(); size < 1 {
					t.Errorf("%s: StepsSize = %d with a step active", qname, size)
				}
			}
			// Its worker claimed it and stopped saying it lives.
			if err := q.Claim(ctx, id, "w-gone"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rdb.HDel(ctx, deliveriesKey, id) })
			dead, err := q.DeadDeliveries(ctx, now)
			if err != nil || !slices.Contains(dead, id) {
				t.Errorf("dead deliveries %v, %v; want %s among them", dead, err, id)
			}
		})
	}
}
