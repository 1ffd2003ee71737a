package main

// budgetsConfig is orch.yaml's budgets: the operator's bounds on what runs spend.
//
//	budgets:
//	  per_run: "$5"          # or {cost: "$5", duration: 2h}
//	  per_task: "$2"
//	  step: "$2"             # what one "extend" adds
//	  per_team: {C0123ABCD: "$50/day", acme/api: "$200/week"}
type budgetsConfig struct {
	PerRun  string            `yaml:"per_run"`
	PerTask string            `yaml:"per_task"`
	Step    string            `yaml:"step"`
	PerTeam map[string]string `yaml:"per_team"`
}
