package jobs

import "sort"

// CostLine is the tokens and dollars of one scope: a task, a run, a model.
type CostLine struct {
	Scope        string  `json:"scope"`
	Calls        int     `json:"calls"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

func (c *CostLine) add(calls int, in, out int64, usd float64) {
	c.Calls += calls
	c.InputTokens += in
	c.OutputTokens += out
	c.CostUSD += usd
}

// RunCosts is what one run cost: per task (the agent and the brain apart) and per model.
type RunCosts struct {
	RunID  string     `json:"run_id"`
	Status string     `json:"status"`
	Agent  CostLine   `json:"agent"`
	Brain  CostLine   `json:"brain"`
	Tasks  []TaskCost `json:"tasks"`
	Models []CostLine `json:"models"`
}

// TotalUSD is what the run cost in all: the agent and the brain.
func (c RunCosts) TotalUSD() float64 { return c.Agent.CostUSD + c.Brain.CostUSD }

// TaskCost is what one task cost over its attempts.
type TaskCost struct {
	TaskID   string   `json:"task_id"`
	Attempts int      `json:"attempts"`
	Agent    CostLine `json:"agent"`
	Brain    CostLine `json:"brain"`
}

// Costs breaks down what the run cost, per task and per model (sorted by name; "(unknown)" for attempts that did not
// say). Its totals are those of Cost.
func (r *Run) Costs() RunCosts {
	rc := RunCosts{RunID: r.ID, Status: string(r.Status), Agent: CostLine{Scope: "agent"}, Brain: CostLine{Scope: "brain"}}
	models := map[string]*CostLine{}
	model := func(name string) *CostLine {
		if name == "" {
			name = "(unknown)"
		}
		if models[name] == nil {
			models[name] = &CostLine{Scope: name}
		}
		return models[name]
	}
	for _, t := range r.Tasks {
		tc := TaskCost{TaskID: t.ID, Attempts: len(t.Attempts), Agent: CostLine{Scope: "agent"}, Brain: CostLine{Scope: "brain"}}
		for _, a := range t.Attempts {
			tc.Agent.add(1, a.InputTokens, a.OutputTokens, a.CostUSD)
			model(a.Model).add(1, a.InputTokens, a.OutputTokens, a.CostUSD)
			if a.Brain.Calls > 0 {
				tc.Brain.add(a.Brain.Calls, a.Brain.InputTokens, a.Brain.OutputTokens, a.Brain.CostUSD)
				model(a.Brain.Model).add(a.Brain.Calls, a.Brain.InputTokens, a.Brain.OutputTokens, a.Brain.CostUSD)
			}
		}
		rc.Agent.add(tc.Agent.Calls, tc.Agent.InputTokens, tc.Agent.OutputTokens, tc.Agent.CostUSD)
		rc.Brain.add(tc.Brain.Calls, tc.Brain.InputTokens, tc.Brain.OutputTokens, tc.Brain.CostUSD)
		rc.Tasks = append(rc.Tasks, tc)
	}
	if u := r.PlanBrain; u.Calls > 0 {
		rc.Brain.add(u.Calls, u.InputTokens, u.OutputTokens, u.CostUSD)
		model(u.Model).add(u.Calls, u.InputTokens, u.OutputTokens, u.CostUSD)
	}
	for _, m := range models {
		rc.Models = append(rc.Models, *m)
	}
	sort.Slice(rc.Models, func(i, j int) bool { return rc.Models[i].Scope < rc.Models[j].Scope })
	return rc
}
