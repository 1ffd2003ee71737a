package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/jobs"
)

// The spend page shows what each team spent over the week, and where a team's budget stands this period.
func TestSpendPage(t *testing.T) {
	for name, f := range serve(t, "") {
		t.Run(name, func(t *testing.T) {
			team := "web-spend-" + name
			f.store.UseBudgets(map[string]jobs.TeamBudget{team: {USD: 10, Period: jobs.Day}})
			ctx := context.Background()
			r := &jobs.Run{ID: jobs.NewRunID(), PlanTitle: "Spend", Status: jobs.RunRunning,
				Options: jobs.Options{Team: team}, Tasks: []*jobs.Task{{ID: "1.1", Status: jobs.TaskRunning}}}
			if err := f.store.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			if _, err := f.store.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
				r.Tasks[0].Attempts = append(r.Tasks[0].Attempts, &jobs.Attempt{N: 1, CostUSD: 0.8, StartedAt: time.Now()})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			_, page, _ := get(t, browser(t), f.srv.URL+"/spend")
			for _, want := range []string{team, "$0.80", "$0.80 of $10.00 this day"} {
				if !strings.Contains(page, want) {
					t.Errorf("the spend page lacks %q:\n%s", want, page)
				}
			}
		})
	}
}
