package queue

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Fair share. The steps of each team named in the worker's configuration (orch.yaml `teams:`) go to a queue of their
// own, and every worker serves all of them with asynq's weighted (non-strict) priorities: each time a worker slot is
// free, asynq shuffles a list holding every queue as often as its weight and takes the first task of the first
// queue in that order that has one (asynq v0.26.0, processor.go, queues() and rdb.Dequeue). With every queue
// backlogged, a team is picked with probability weight/sum of weights, dequeue by dequeue. The steps of runs whose
// team is not named share the default queue, Steps, of weight 1 unless `teams:` names DefaultTeam.
//
// What asynq cannot do: its weights share dequeues, not worker time. A team whose steps run ten times as long gets
// ten times the worker time per dequeue; weights are fixed for the life of a server (no reweighing by time used);
// and a queue is picked at random each time, so the shares hold over many dequeues, not over any few. Group
// aggregation (asynq's Group option) batches tasks of a group into one task for a handler: it shares nothing out,
// and a step cannot be batched. Parked runs have no step queued, so they take no share.

// DefaultTeam names, in a worker's teams, the weight of the default step queue: the steps of every run whose team
// the configuration does not name.
const DefaultTeam = "default"

// teamPrefix begins the name of every team's step queue; the rest is the team's name made safe (TeamQueue).
const teamPrefix = Steps + ":"

// maxTeamName bounds how much of a team's name a queue name keeps; a longer name is cut and told apart by its hash.
const maxTeamName = 40

// TeamQueue is the name of team's step queue: "orch-steps:" and the team's name, when it is made only of ASCII
// letters, digits, '.', '_' and '-' and is at most 40 bytes long. Any other name keeps its safe characters (the
// others become '_'), at most 40 of them, and gets '~' and 8 hex digits of its SHA-256 after them, so that two names
// never share a queue. No '{' or '}' ever reaches the name: asynq puts the queue name inside a Redis hash tag.
func TeamQueue(team string) string {
	var b strings.Builder
	changed := len(team) > maxTeamName
	for i, r := range team {
		if i >= maxTeamName {
			break
		}
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			b.WriteRune(r)
			continue
		}
		b.WriteByte('_')
		changed = true
	}
	if changed || team == "" {
		sum := sha256.Sum256([]byte(team))
		b.WriteString("~" + hex.EncodeToString(sum[:4]))
	}
	return teamPrefix + b.String()
}

// IsStepQueue reports whether an asynq queue holds steps: the default queue or a team's.
func IsStepQueue(name string) bool { return name == Steps || strings.HasPrefix(name, teamPrefix) }

// WithTeams returns a queue on the same Redis that puts the steps of the teams named in teams (name → weight, at least
// 1) on queues of their own; DefaultTeam's weight is the default queue's. q is unchanged.
func (q *Queue) WithTeams(teams map[string]int) *Queue {
	c := *q
	c.teams = map[string]string{}
	c.weights = map[string]int{Steps: 1}
	for team, weight := range teams {
		weight = max(weight, 1)
		if team == DefaultTeam {
			c.weights[Steps] = weight
			continue
		}
		c.teams[team] = TeamQueue(team)
		c.weights[TeamQueue(team)] = weight
	}
	return &c
}

// StepQueue is the queue of the steps of a run of team: the team's own when it is configured, else the default one.
func (q *Queue) StepQueue(team string) string {
	if name, ok := q.teams[team]; ok {
		return name
	}
	return Steps
}

// StepWeights are the configured step queues and their weights: asynq.Config.Queues of a step server.
func (q *Queue) StepWeights() map[string]int {
	if q.weights == nil {
		return map[string]int{Steps: 1}
	}
	return maps.Clone(q.weights)
}

// StepQueues are every step queue there is: the configured ones and every other step queue asynq knows (a team's
// queue that a worker configured differently, or an earlier configuration, enqueued on), sorted. What reads asynq's
// leases must look at all of them, or a dead worker's step on a team's queue would never be rescued.
func (q *Queue) StepQueues() ([]string, error) {
	names := map[string]bool{Steps: true}
	for name := range q.weights {
		names[name] = true
	}
	// asynq's set of queues, which every enqueue adds its queue to.
	all, err := q.inspector.Queues()
	if err != nil {
		return nil, fmt.Errorf("listing asynq's queues: %w", err)
	}
	for _, name := range all {
		if IsStepQueue(name) {
			names[name] = true
		}
	}
	return slices.Sorted(maps.Keys(names)), nil
}

// StepsSize is how many steps all the step queues hold (Size of each, summed); 0 when it is unknown.
func (q *Queue) StepsSize() int {
	names, err := q.StepQueues()
	if err != nil {
		return 0
	}
	n := 0
	for _, name := range names {
		n += q.Size(name)
	}
	return n
}
