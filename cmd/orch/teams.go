package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs/queue"
)

// maxTeamWeight bounds a team's weight: asynq lists a queue once per unit of weight on every dequeue, and a share
// finer than 1 in 100 is not one anybody asks for.
const maxTeamWeight = 100

// teams reads orch.yaml `teams:` (team → weight), the fair share of the worker pool between the teams whose runs it
// works on (jobs/queue/teams.go): every name non-empty, every weight 1 to 100. "default" weighs the runs of every team
// it does not name. nil when there is none.
func (a *app) teams() (map[string]int, error) {
	if len(a.set.file.Teams) == 0 {
		return nil, nil
	}
	out := make(map[string]int, len(a.set.file.Teams))
	for _, team := range slices.Sorted(maps.Keys(a.set.file.Teams)) {
		weight := a.set.file.Teams[team]
		if strings.TrimSpace(team) == "" {
			return nil, usageErr("orch.yaml teams: a team needs a name")
		}
		if weight < 1 || weight > maxTeamWeight {
			return nil, usageErr("orch.yaml teams.%s: weight %d is not between 1 and %d", safetext.OneLine(team, 60),
				weight, maxTeamWeight)
		}
		out[team] = weight
	}
	return out, nil
}

// checkTeams is `orch health`'s line about the fair share: the teams this configuration weighs and their queues,
// which every worker of the deployment must share.
func (a *app) checkTeams(cmd *cobra.Command) check {
	teams, err := a.teams()
	if err != nil {
		return check{part: "teams", detail: err.Error()}
	}
	if len(teams) == 0 {
		return check{part: "teams", ok: true, detail: "none configured: every run's steps share one queue"}
	}
	var parts []string
	for _, team := range slices.Sorted(maps.Keys(teams)) {
		name := queue.TeamQueue(team)
		if team == queue.DefaultTeam {
			name = queue.Steps
		}
		parts = append(parts, fmt.Sprintf("%s=%d (%s)", team, teams[team], name))
	}
	detail := strings.Join(parts, ", ") + "; every worker must have the same teams"
	// A step queue asynq knows that this configuration does not: a worker configured otherwise, or teams that changed.
	if b, err := a.backend(cmd); err == nil {
		defer b.Close()
		if known, err := b.Queue.WithTeams(teams).StepQueues(); err == nil {
			weights := b.Queue.WithTeams(teams).StepWeights()
			var other []string
			for _, name := range known {
				if _, ok := weights[name]; !ok {
					other = append(other, name)
				}
			}
			if len(other) > 0 {
				detail += "; queues not configured here (served at weight 1): " + strings.Join(other, ", ")
			}
		}
	}
	return check{part: "teams", ok: true, detail: detail}
}
