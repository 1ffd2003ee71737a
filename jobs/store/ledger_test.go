package store

import (
	"context"
	"testing"
	"time"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
)

// holdOn starts an attempt of run id that holds usd of its team's current ledger, as the worker's start does.
func holdOn(t *testing.T, s *Store, id string, usd float64) {
	t.Helper()
	if _, err := s.Update(context.Background(), id, func(r *jobs.Run, c *jobs.Change) error {
		if c.Ledger == nil {
			t.Fatal("no ledger for a team with a budget")
		}
		tk := r.Tasks[0]
		tk.Attempts = append(tk.Attempts, &jobs.Attempt{N: len(tk.Attempts) + 1, Reserved: usd, ReservedKey: c.Ledger.Key})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// settle records what run id's last attempt cost and lets go of its hold, as the worker's settlement does.
func settle(t *testing.T, s *Store, id string, usd float64) {
	t.Helper()
	if _, err := s.Update(context.Background(), id, func(r *jobs.Run, c *jobs.Change) error {
		a := r.Tasks[0].Attempts[len(r.Tasks[0].Attempts)-1]
		a.CostUSD, a.Reserved = usd, 0
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func teamRun(t *testing.T, s *Store, team string) *jobs.Run {
	t.Helper()
	r := &jobs.Run{ID: jobs.NewRunID(), Status: jobs.RunRunning, Options: jobs.Options{Team: team},
		Tasks: []*jobs.Task{{ID: "1.1", Status: jobs.TaskRunning}}}
	if err := s.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

// A hold is given back to the ledger it was taken from, though the period turned meanwhile: the new period's holds
// are not wiped by an attempt of the old one settling, and its cost counts in the period it was known in.
func TestAHoldIsGivenBackWhereItWasTaken(t *testing.T) {
	for name, rdb := range jobstest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			day := time.Now().UTC().Add(48 * time.Hour).Truncate(24 * time.Hour)
			c := &clock{t: day.Add(24*time.Hour - time.Minute)} // a minute before midnight
			s := New(rdb, c.now)
			team := "ledger-" + jobs.NewRunID()
			s.UseBudgets(map[string]jobs.TeamBudget{team: {USD: 10, Period: jobs.Day}})
			ctx := context.Background()
			a, b := teamRun(t, s, team), teamRun(t, s, team)
			holdOn(t, s, a.ID, 0.5)
			c.add(2 * time.Minute) // the next day
			holdOn(t, s, b.ID, 0.9)
			settle(t, s, a.ID, 0.4)
			old, _, _, _ := s.LedgerOf(ctx, team, day)
			cur, _, _, err := s.LedgerOf(ctx, team, c.now())
			if err != nil {
				t.Fatal(err)
			}
			if old.Running != 0 || old.ReservedUSD != 0 || old.Attempts != 1 {
				t.Errorf("the old day's ledger: %+v", old)
			}
			if cur.Running != 1 || cur.ReservedUSD < 0.89 || cur.ReservedUSD > 0.91 || cur.SpentUSD < 0.39 || cur.SpentUSD > 0.41 {
				t.Errorf("the new day's ledger: %+v (b's hold kept, a's cost counted)", cur)
			}
			// An abort while b's attempt runs gives its hold back.
			if _, err := s.Update(ctx, b.ID, func(r *jobs.Run, c *jobs.Change) error {
				r.Abort(c, "", "stop", "ann", s.Now())
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if cur, _, _, _ = s.LedgerOf(ctx, team, c.now()); cur.Running != 0 || cur.ReservedUSD != 0 {
				t.Errorf("after the abort: %+v", cur)
			}
			// A plain append of events reads no ledger and changes none.
			if err := s.Append(ctx, a.ID, jobs.NewEvent(a.ID, "", jobs.SandboxErrorEvent{Error: "x"})); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A team without a budget has its attempts counted with its spend, as one with a budget does, though an attempt's
// cost and its outcome are saved apart.
func TestAnUnbudgetedTeamsAttemptsAreCounted(t *testing.T) {
	s := New(jobstest.Clients(t)["miniredis"], nil)
	r := teamRun(t, s, "ops")
	for _, usd := range []float64{0.25, 0.5} {
		if _, err := s.Update(context.Background(), r.ID, func(r *jobs.Run, c *jobs.Change) error {
			tk := r.Tasks[0]
			tk.Attempts = append(tk.Attempts, &jobs.Attempt{N: len(tk.Attempts) + 1})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// The cost is saved as the agent ends, the outcome after the brain read it: two updates, as the worker makes them.
		for _, fn := range []func(a *jobs.Attempt){func(a *jobs.Attempt) { a.CostUSD = usd }, func(a *jobs.Attempt) { a.Status = "failed" }} {
			if _, err := s.Update(context.Background(), r.ID, func(r *jobs.Run, c *jobs.Change) error {
				fn(r.Tasks[0].Attempts[len(r.Tasks[0].Attempts)-1])
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	days, err := s.TeamSpend(context.Background(), "ops", time.Now().Add(-time.Hour), time.Now())
	if err != nil || len(days) != 1 || days[0].Attempts != 2 || days[0].USD != 0.75 {
		t.Fatalf("days %+v, %v", days, err)
	}
}
