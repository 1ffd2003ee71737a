package escalation_test

import (
	"context"
	"testing"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// A run that ends because its question was declined tells the work on its branch, as every end of a run does.
func TestDeclineTellsTheBranchsWork(t *testing.T) {
	ctx := context.Background()
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			r := &jobs.Run{ID: jobs.NewRunID(), Status: jobs.RunRunning, Options: jobs.Options{MaxAttempts: 3},
				Git:   &jobs.Git{Branch: "orch/x", Base: "main", Commits: 2, FilesChanged: 3, Insertions: 7},
				Tasks: []*jobs.Task{{ID: "1", Title: "t", Status: jobs.TaskRunning}}}
			if err := sc.store.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			if _, err := sc.store.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
				escalation.Open(r, r.Tasks[0], c, escalation.Spec{Trigger: jobs.TriggerSecurity, Source: "orch", Question: "q"}, time.Now())
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := escalation.Decline(ctx, sc.store, r.ID, "e1", "orch", "auto-approve", "not for automation"); err != nil {
				t.Fatal(err)
			}
			evs, err := sc.store.Events(ctx, r.ID, "0", 0)
			if err != nil {
				t.Fatal(err)
			}
			last := evs[len(evs)-1]
			b, ok := last.Body.(jobs.RunFailedEvent)
			if !ok || b.Work.Branch != "orch/x" || b.Work.Commits != 2 || b.Work.FilesChanged != 3 {
				t.Fatalf("the run's end: %#v", last.Body)
			}
		})
	}
}
