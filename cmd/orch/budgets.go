package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// budgetsConfig is orch.yaml's budgets: the operator's bounds on what runs spend, under the flags and env of each run.
//
//	budgets:
//	  per_run: "$5"          # --max-cost-usd, ORCH_MAX_COST_USD
//	  duration: 2h           # --max-duration, ORCH_MAX_DURATION: the agents' working time over a run
//	  per_task: "$2"         # --max-task-cost-usd, ORCH_MAX_TASK_COST_USD
//	  step: "$2"             # what one "extend" adds (default: half the bound reached)
//	  step_duration: 30m
//	  per_team: {C0123ABCD: "$50/day", acme/api: "$200/week"}
//	  operators: [U024BE7LH, alice]   # who may extend a team's budget from its question
type budgetsConfig struct {
	PerRun       string            `yaml:"per_run"`
	Duration     string            `yaml:"duration"`
	PerTask      string            `yaml:"per_task"`
	Step         string            `yaml:"step"`
	StepDuration string            `yaml:"step_duration"`
	PerTeam      map[string]string `yaml:"per_team"`
	// Operators may extend a team's budget from its question (Slack user ids, API token names, logins); with none,
	// only orch.yaml does.
	Operators []string `yaml:"operators"`
}

func budgetFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("max-cost-usd", "", "stop and ask once the run has cost this much, agent and brain (e.g. 5 or $5; env ORCH_MAX_COST_USD)")
	f.String("max-duration", "", "stop and ask once the run's agents have worked this long (e.g. 2h; env ORCH_MAX_DURATION)")
	f.String("max-task-cost-usd", "", "stop and ask once one task has cost this much over its attempts (env ORCH_MAX_TASK_COST_USD)")
	f.String("team", "", "the team the run's spend and worker time count for (env ORCH_TEAM; default: its Slack channel, GitHub repository or API person)")
}

// budget resolves a run's budget from flags, env and orch.yaml.
func (a *app) budget(cmd *cobra.Command) (jobs.Budget, error) {
	s, fc := a.set, a.set.file.Budgets
	var b jobs.Budget
	var err error
	money := func(flag, env, key, file string) (float64, error) {
		v := s.lookup(cmd, flag, env, "budgets."+key, file, "")
		if strings.TrimSpace(v.v) == "" {
			return 0, nil
		}
		usd, err := parseUSD(v.v)
		if err != nil {
			return 0, usageErr("--%s: %v%s", flag, err, v.suffix())
		}
		return usd, nil
	}
	span := func(flag, env, key, file string) (time.Duration, error) {
		v := s.lookup(cmd, flag, env, "budgets."+key, file, "")
		if strings.TrimSpace(v.v) == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(strings.TrimSpace(v.v))
		if err != nil || d <= 0 {
			return 0, usageErr("--%s: %q is not a positive duration (e.g. 2h)%s", flag, safetext.OneLine(v.v, 40), v.suffix())
		}
		return d, nil
	}
	if b.CostUSD, err = money("max-cost-usd", "ORCH_MAX_COST_USD", "per_run", fc.PerRun); err != nil {
		return b, err
	}
	if b.TaskCostUSD, err = money("max-task-cost-usd", "ORCH_MAX_TASK_COST_USD", "per_task", fc.PerTask); err != nil {
		return b, err
	}
	if b.Duration, err = span("max-duration", "ORCH_MAX_DURATION", "duration", fc.Duration); err != nil {
		return b, err
	}
	if fc.Step != "" {
		if b.StepUSD, err = parseUSD(fc.Step); err != nil {
			return b, usageErr("orch.yaml budgets.step: %v", err)
		}
	}
	if fc.StepDuration != "" {
		if b.StepDuration, err = time.ParseDuration(fc.StepDuration); err != nil || b.StepDuration <= 0 {
			return b, usageErr("orch.yaml budgets.step_duration: %q is not a positive duration", fc.StepDuration)
		}
	}
	return b, nil
}

// teamBudgets reads orch.yaml budgets.per_team.
func (a *app) teamBudgets() (map[string]jobs.TeamBudget, error) {
	out := map[string]jobs.TeamBudget{}
	for team, v := range a.set.file.Budgets.PerTeam {
		if strings.TrimSpace(team) == "" {
			return nil, usageErr("orch.yaml budgets.per_team: a team needs a name")
		}
		tb, err := parseTeamBudget(v)
		if err != nil {
			return nil, usageErr("orch.yaml budgets.per_team %s: %v", team, err)
		}
		out[team] = tb
	}
	return out, nil
}

// parseUSD reads a sum of dollars: "5", "5.50", "$5", "5 USD".
func parseUSD(s string) (float64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(t, "USD"), "usd"))
	t = strings.TrimPrefix(t, "$")
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > 1e9 {
		return 0, fmt.Errorf("%q is not a positive sum of dollars (e.g. 5 or $5.50)", safetext.OneLine(s, 40))
	}
	return v, nil
}

// parseTeamBudget reads "$50/day", "$200/week" or "$1000/month".
func parseTeamBudget(s string) (jobs.TeamBudget, error) {
	sum, per, ok := strings.Cut(s, "/")
	if !ok {
		return jobs.TeamBudget{}, fmt.Errorf("%q: want a sum per period, e.g. $50/day, $200/week or $1000/month", safetext.OneLine(s, 40))
	}
	usd, err := parseUSD(sum)
	if err != nil {
		return jobs.TeamBudget{}, err
	}
	p := jobs.Period(strings.ToLower(strings.TrimSpace(per)))
	switch p {
	case jobs.Day, jobs.Week, jobs.Month:
	default:
		return jobs.TeamBudget{}, fmt.Errorf("period %q: want day, week or month", safetext.OneLine(per, 20))
	}
	return jobs.TeamBudget{USD: usd, Period: p}, nil
}
