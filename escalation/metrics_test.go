package escalation_test

import (
	"context"
	"testing"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

func TestMetricsCountCommittedChangesOnce(t *testing.T) {
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			m := escalation.NewMetrics()
			sc.store.Observe(m.Observe)
			run := newRun(t, sc)
			// A change that is rejected counts nothing.
			sc.store.Update(ctx, run.ID, func(r *jobs.Run, c *jobs.Change) error {
				c.Emit(jobs.NewEvent(r.ID, "T1", jobs.LoopDetectedEvent{}))
				return context.Canceled
			})
			if _, err := sc.store.Update(ctx, run.ID, func(r *jobs.Run, c *jobs.Change) error {
				c.Emit(jobs.NewEvent(r.ID, "T1", jobs.LoopDetectedEvent{}))
				escalation.Open(r, r.Task("T1"), c, escalation.Spec{Trigger: jobs.TriggerAttemptCap, Source: "orch"}, sc.clock.Now())
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			sc.clock.Advance(90 * time.Second)
			if _, _, err := escalation.Resolve(ctx, sc.store, &fakeQueue{}, escalation.Request{RunID: run.ID,
				Type: jobs.ResolveRetry, By: "alice"}); err != nil {
				t.Fatal(err)
			}
			s := m.Snapshot()
			if s.Escalations["attempt_cap"] != 1 || s.Loops["task"] != 1 || s.Resolutions["retry"] != 1 {
				t.Fatalf("counters %+v", s)
			}
			if len(s.Waits) != 1 || s.Waits[0] != 90*time.Second {
				t.Fatalf("waits %v", s.Waits)
			}
		})
	}
}
