package jobs

import "testing"

func TestRunCosts(t *testing.T) {
	r := &Run{ID: "r-costs", Status: RunCompleted, Tasks: []*Task{
		{ID: "1.1", Attempts: []*Attempt{
			{N: 1, InputTokens: 100, OutputTokens: 10, CostUSD: 0.5, Model: "opus",
				Brain: BrainUsage{Calls: 2, InputTokens: 40, OutputTokens: 4, CostUSD: 0.25, Model: "haiku"}},
			{N: 2, InputTokens: 200, OutputTokens: 20, CostUSD: 1, Model: "opus"},
		}},
		{ID: "1.2", Attempts: []*Attempt{{N: 1, InputTokens: 7, OutputTokens: 1, CostUSD: 0.125}}},
		{ID: "1.3"},
	}}
	c := r.Costs()
	usd, in, out := r.Cost()
	if c.TotalUSD() != usd || c.Agent.InputTokens+c.Brain.InputTokens != in || c.Agent.OutputTokens+c.Brain.OutputTokens != out {
		t.Fatalf("totals %v (agent %+v, brain %+v), want %v, %d in, %d out", c.TotalUSD(), c.Agent, c.Brain, usd, in, out)
	}
	if len(c.Tasks) != 3 || c.Tasks[0].Attempts != 2 || c.Tasks[0].Agent.CostUSD != 1.5 || c.Tasks[0].Brain.Calls != 2 ||
		c.Tasks[1].Agent.InputTokens != 7 || c.Tasks[2].Attempts != 0 || c.Tasks[2].Agent.CostUSD != 0 {
		t.Fatalf("per task: %+v", c.Tasks)
	}
	var names []string
	for _, m := range c.Models {
		names = append(names, m.Scope)
	}
	if len(names) != 3 || names[0] != "(unknown)" || names[1] != "haiku" || names[2] != "opus" || c.Models[2].Calls != 2 ||
		c.Models[1].Calls != 2 {
		t.Fatalf("per model: %+v", c.Models)
	}
}
