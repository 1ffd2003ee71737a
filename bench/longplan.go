package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// longPlanResult is one long plan run by `orch run` on each store: the mean time between task completions over the
// first and the last tenth of the plan.
type longPlanResult struct {
	tasks                         int
	embeddedFirst, embeddedLast   float64 // ms a task
	redisFirst, redisLast         float64
	embeddedSeconds, redisSeconds float64
	note                          string
}

// measureLongPlan runs a plan of n no-op tasks with `orch run` (local sandbox, heuristic brain) once on the embedded
// store and once on the bench's Redis, and compares the time a task takes at the end of the plan with the time it
// takes at the start: a store whose writes grow with the run makes the last tasks slower than the first.
func measureLongPlan(ctx context.Context, r *rig, n int) (longPlanResult, error) {
	res := longPlanResult{tasks: n}
	ws, err := r.workspace("longplan", map[string]string{"plan.md": stepPlan(n)})
	if err != nil {
		return res, err
	}
	window := max(n/10, 1)
	for _, store := range []struct {
		name        string
		env         []string
		first, last *float64
		seconds     *float64
	}{
		{"embedded", []string{"ORCH_REDIS_URL=", "ORCH_STATE_DIR=" + filepath.Join(ws, "state")}, &res.embeddedFirst, &res.embeddedLast, &res.embeddedSeconds},
		{"redis", []string{"ORCH_REDIS_URL=" + r.redis.URL}, &res.redisFirst, &res.redisLast, &res.redisSeconds},
	} {
		step(fmt.Sprintf("long plan: %d tasks on the %s store", n, store.name))
		times, took, err := runLongPlan(ctx, r, ws, store.env)
		if err != nil {
			return res, fmt.Errorf("%s store: %w", store.name, err)
		}
		if len(times) != n {
			return res, fmt.Errorf("%s store: %d tasks completed, want %d", store.name, len(times), n)
		}
		gaps := make([]time.Duration, 0, n-1)
		for i := 1; i < n; i++ {
			gaps = append(gaps, times[i].Sub(times[i-1]))
		}
		*store.first = ms(sumOf(gaps[:window]) / time.Duration(window))
		*store.last = ms(sumOf(gaps[len(gaps)-window:]) / time.Duration(window))
		*store.seconds = took.Seconds()
	}
	res.note = fmt.Sprintf("A plan of %d no-op tasks (`sh -c \"echo Done.\"`, local sandbox, heuristic brain) run by `orch run "+
		"--json`, once on the embedded store (a state directory of its own) and once on the bench's Redis; the mean time "+
		"between two task completions over the first and the last %d: embedded %.1f and %.1f ms (%.2f×, %.0f s in all), "+
		"Redis %.1f and %.1f ms (%.2f×, %.0f s in all). Each task commits the run's whole document three times (its "+
		"claim, the agent's result kept, the outcome), so the cost of a commit grows with the tasks before it.", n, window, res.embeddedFirst, res.embeddedLast,
		res.embeddedLast/res.embeddedFirst, res.embeddedSeconds, res.redisFirst, res.redisLast, res.redisLast/res.redisFirst,
		res.redisSeconds)
	return res, nil
}

// runLongPlan runs plan.md of ws with orch run and returns when each task completed, by the events it printed.
func runLongPlan(ctx context.Context, r *rig, ws string, env []string) ([]time.Time, time.Duration, error) {
	cmd := exec.CommandContext(ctx, r.orchBin, "run", "--agent", noopAgent, "--workspace", ws, "--no-notify", "--json", "plan.md")
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), append([]string{"ORCH_SANDBOX=local", "ORCH_BRAIN=heuristic", "ANTHROPIC_API_KEY="}, env...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	var times []time.Time
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Type string    `json:"type"`
			Time time.Time `json:"time"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == "task_completed" {
			times = append(times, ev.Time)
		}
	}
	if err := cmd.Wait(); err != nil {
		return nil, 0, fmt.Errorf("orch run: %v\n%s", err, lastLines(stderr.String(), 20))
	}
	return times, time.Since(start), nil
}

// sumOf adds durations up.
func sumOf(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s
}
