package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/worker"
)

// The fair share measurement: two teams weighted 3:1 (orch.yaml `teams: {a: 3, b: 1}`) share a pool of two workers,
// both with a backlog far larger than the pool can work through, and each team's share of the worker time is read
// back from the runs: the sum of its attempts' agent time within the measured window.

// fairTeams are the weights under measurement.
var fairTeams = map[string]int{"a": 3, "b": 1}

// fairWorkers is the pool: this many workers, each of workerConcurrency slots.
const fairWorkers = 2

// fairAgent is an agent whose every step takes about d: a shell that sleeps and says it is done.
func fairAgent(d time.Duration) string {
	return fmt.Sprintf(`cmd:sh -c "sleep %.3f; echo Done." fair {prompt}`, d.Seconds())
}

type fairResult struct {
	timeA, stepsA float64 // team a's percentage of the worker time and of the steps
	steps         int     // steps started in the window, both teams
	note          string
}

// measureFairShare runs the backlogs of the two teams for window (after warmup, which the starts take) with team a's
// steps taking stepA and team b's stepB, and returns team a's shares.
func measureFairShare(ctx context.Context, r *rig, runs, tasks int, stepA, stepB, warmup, window time.Duration) (fairResult, error) {
	ws, err := r.workspace("fair", map[string]string{"fair.md": stepPlan(tasks)})
	if err != nil {
		return fairResult{}, err
	}
	st, q, _ := r.backend()
	agents := map[string]string{"a": fairAgent(stepA), "b": fairAgent(stepB)}
	team := map[string]string{} // run id → team
	var ids []string
	// The runs of both teams exist before the clock starts, interleaved: neither team's starts come first.
	for i := 0; i < runs; i++ {
		for _, t := range []string{"a", "b"} {
			opts := jobs.Options{Agent: agents[t], Brain: "heuristic", Sandbox: "local", MaxAttempts: 3,
				AgentTimeout: time.Minute, Team: t}
			run, err := planRun(filepath.Join(ws, "fair.md"), ws, opts, jobs.Origin{Kind: "cli", User: "bench"})
			if err != nil {
				return fairResult{}, err
			}
			if err := st.Create(ctx, run); err != nil {
				return fairResult{}, err
			}
			ids = append(ids, run.ID)
			team[run.ID] = t
		}
	}
	var pool []*worker.Worker
	defer func() {
		for _, w := range pool {
			w.Shutdown()
		}
	}()
	for range fairWorkers {
		w, err := r.startTeamWorker(st, q, 0, fairTeams)
		if err != nil {
			return fairResult{}, err
		}
		pool = append(pool, w)
	}
	for _, id := range ids {
		if err := q.Start(ctx, id); err != nil {
			return fairResult{}, err
		}
	}
	from := time.Now().Add(warmup)
	to := from.Add(window)
	select {
	case <-time.After(time.Until(to)):
	case <-ctx.Done():
		return fairResult{}, ctx.Err()
	}
	for _, w := range pool {
		w.Shutdown()
	}
	busy, steps, mean, err := fairTimes(ctx, st, ids, team, from, to)
	if err != nil {
		return fairResult{}, err
	}
	total, n := busy["a"]+busy["b"], steps["a"]+steps["b"]
	if total <= 0 || n == 0 {
		return fairResult{}, fmt.Errorf("no step ran in the %v window", window)
	}
	res := fairResult{timeA: 100 * busy["a"].Seconds() / total.Seconds(), stepsA: 100 * float64(steps["a"]) / float64(n), steps: n}
	res.note = fmt.Sprintf("Teams a and b weighted 3:1 (orch.yaml `teams: {a: 3, b: 1}`), %d runs × %d tasks each, "+
		"started together (interleaved) on %d workers × %d slots; each step's agent sleeps %v (team a) and %v (team b) "+
		"then says done (command template, local sandbox, heuristic brain). Measured over %v after %v of warm-up: "+
		"worker time is the agents' time (each attempt's start to its agent's exit) falling inside the window, steps "+
		"those started in it. Team a: %.1f%% of the worker time (%.1f s of %.1f s), %.1f%% of the %d steps; team b: the "+
		"rest. Agent time per step (process start included): team a %.0f ms, team b %.0f ms.",
		runs, tasks, fairWorkers, workerConcurrency, stepA, stepB, window, warmup, res.timeA, busy["a"].Seconds(),
		total.Seconds(), res.stepsA, n, ms(mean["a"]), ms(mean["b"]))
	return res, nil
}

// fairTimes sums, by team, the agents' time inside [from, to], counts the attempts started in it, and gives the mean
// agent time of those that ended.
func fairTimes(ctx context.Context, st *store.Store, ids []string, team map[string]string, from, to time.Time) (
	busy map[string]time.Duration, steps map[string]int, mean map[string]time.Duration, err error) {
	busy, steps, mean = map[string]time.Duration{}, map[string]int{}, map[string]time.Duration{}
	ended := map[string]int{}
	for _, id := range ids {
		run, err := st.Get(ctx, id)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, t := range run.Tasks {
			for _, a := range t.Attempts {
				start, end := a.StartedAt, a.StartedAt.Add(a.Duration)
				if a.Duration == 0 { // still running when the pool stopped: cut at the window's end
					end = to
				}
				if !start.Before(from) && start.Before(to) {
					steps[team[id]]++
					if a.Duration > 0 {
						mean[team[id]] += a.Duration
						ended[team[id]]++
					}
				}
				start, end = later(start, from), earlier(end, to)
				if end.After(start) {
					busy[team[id]] += end.Sub(start)
				}
			}
		}
	}
	for t, n := range ended {
		mean[t] /= time.Duration(n)
	}
	return busy, steps, mean, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// measureFairShareInto makes both fair share measurements: steps of equal length (the target), and team b's three
// times as long (what asynq's weights do not correct).
func measureFairShareInto(ctx context.Context, r *rig, c counts, res *Results) error {
	equal, err := measureFairShare(ctx, r, c.fairRuns, c.fairTasks, 100*time.Millisecond, 100*time.Millisecond,
		c.fairWarmup, c.fairWindow)
	if err != nil {
		return err
	}
	if err := r.redis.Flush(ctx); err != nil {
		return err
	}
	unequal, err := measureFairShare(ctx, r, c.fairRuns, c.fairTasks, 100*time.Millisecond, 300*time.Millisecond,
		c.fairWarmup, c.fairWindow/2)
	if err != nil {
		return err
	}
	res.FairShareTimeAPct, res.FairShareStepsAPct = roundTo(equal.timeA, 1), roundTo(equal.stepsA, 1)
	res.FairShareSteps = equal.steps
	res.FairShareUnequalTimeAPct, res.FairShareUnequalStepsAPct = roundTo(unequal.timeA, 1), roundTo(unequal.stepsA, 1)
	res.Notes.FairShare, res.Notes.FairShareUnequal = equal.note, unequal.note
	return nil
}

// fairShareOK reports whether team a's share of the worker time is 75% ± 5.
func fairShareOK(pct float64) bool { return math.Abs(pct-75) <= 5 }
