package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// noopAgent is an agent that does nothing and says so: a shell that prints "Done." (the heuristic brain reads a
// completion in it; an agent that prints nothing has failed). The prompt is its $1, unused.
const noopAgent = `cmd:sh -c "echo Done." noop {prompt}`

type stepsResult struct {
	perSecond    float64
	agentMs      float64 // the agent process's own wall time per step, mean
	overheadMs   float64
	note         string
	overheadNote string
}

// measureSteps runs runs×tasks task steps through the queue, the step handler, the heuristic brain and the no-op
// agent with one worker, and derives orch's own time per step from the worker's busy time and the agent's.
func measureSteps(ctx context.Context, r *rig, runs, tasks int) (stepsResult, error) {
	ws, err := r.workspace("steps", map[string]string{"steps.md": stepPlan(tasks)})
	if err != nil {
		return stepsResult{}, err
	}
	store, queue, events := r.backend()
	inside := newStepClock()
	events.hook(inside.observe)
	opts := jobs.Options{Agent: noopAgent, Brain: "heuristic", Sandbox: "local", MaxAttempts: 3, AgentTimeout: time.Minute}
	// The runs exist before the clock starts: what is timed is the worker, not the starter.
	ids := make([]string, runs)
	for i := range ids {
		run, err := planRun(filepath.Join(ws, "steps.md"), ws, opts, jobs.Origin{Kind: "cli", User: "bench"})
		if err != nil {
			return stepsResult{}, err
		}
		if err := store.Create(ctx, run); err != nil {
			return stepsResult{}, err
		}
		ids[i] = run.ID
	}
	w, err := r.startWorker(store, queue, 0)
	if err != nil {
		return stepsResult{}, err
	}
	defer w.Shutdown()

	start := time.Now()
	for _, id := range ids {
		if err := queue.Start(ctx, id); err != nil {
			return stepsResult{}, err
		}
	}
	err = events.waitCount(ctx, jobs.RunCompletedEvent{}.Kind(), runs, time.Minute+time.Duration(runs*tasks)*50*time.Millisecond,
		[]string{jobs.EscalationEvent{}.Kind(), jobs.RunFailedEvent{}.Kind(), jobs.RetryingEvent{}.Kind()}, progress("runs completed", runs))
	if err != nil {
		return stepsResult{}, err
	}
	elapsed := events.lastAt(jobs.RunCompletedEvent{}.Kind()).Sub(start)
	w.Shutdown()

	agentTime, err := agentTimes(ctx, store, ids, tasks)
	if err != nil {
		return stepsResult{}, err
	}
	steps := runs * tasks
	agentMean := sumOf(slices.Collect(maps.Values(agentTime))) / time.Duration(steps)
	// Each of the worker's slots was busy (or waiting for work) for the whole elapsed time: a slot's wall time per step.
	slotPerStep := elapsed * workerConcurrency / time.Duration(steps)
	between := inside.mean(agentTime)
	res := stepsResult{perSecond: float64(steps) / elapsed.Seconds(), overheadMs: ms(slotPerStep - agentMean), agentMs: ms(agentMean)}
	res.note = fmt.Sprintf("%d runs × %d tasks = %d steps, each through the step queue, the step handler, the heuristic "+
		"brain and the no-op agent (`sh -c \"echo Done.\"` via the command template, local sandbox), one worker process "+
		"(concurrency %d, poll 20 ms); from queueing the runs' starts to the last run completing: %.2f s.",
		runs, tasks, steps, workerConcurrency, elapsed.Seconds())
	res.overheadNote = fmt.Sprintf("Wall time a worker slot spends per step (elapsed × %d slots / %d steps = %.2f ms) minus "+
		"the agent process's own time per step (its wall time from start to exit as the sandbox measures it, mean %.2f "+
		"ms). Of the %.2f ms, %.2f ms lie inside the step handler between its two commits (prompt, command, process "+
		"spawn and reaping, the brain, the outcome's transaction); the rest is the queue around it: dequeue, the "+
		"attempt's first transaction, enqueueing the next step, the start tasks, and any wait for work.",
		workerConcurrency, steps, ms(slotPerStep), ms(agentMean), ms(slotPerStep-agentMean), ms(between))
	return res, nil
}

// measureStepsAgainstAsynq measures orch's steps between two runs of the asynq anchor (measureAnchor) of the same
// size, so that the machine's load in those minutes falls on both, and compares them.
func measureStepsAgainstAsynq(ctx context.Context, r *rig, c counts, res *Results) error {
	var anchors [2]anchorResult
	var steps stepsResult
	for i, do := range []func() error{
		func() (err error) { anchors[0], err = measureAnchor(ctx, r, c.stepRuns, c.stepTasks); return err },
		func() (err error) { steps, err = measureSteps(ctx, r, c.stepRuns, c.stepTasks); return err },
		func() (err error) { anchors[1], err = measureAnchor(ctx, r, c.stepRuns, c.stepTasks); return err },
	} {
		if err := do(); err != nil {
			return fmt.Errorf("%s: %w", [...]string{"asynq before", "orch", "asynq after"}[i], err)
		}
	}
	asynqRate := (anchors[0].perSecond + anchors[1].perSecond) / 2
	shMs := (ms(anchors[0].shMean) + ms(anchors[1].shMean)) / 2
	res.StepsPerSecond, res.OverheadMsPerStep = roundTo(steps.perSecond, 1), roundTo(steps.overheadMs, 2)
	res.StepsPerSecondAsynq, res.AgentMsPerStep, res.ShMsPerStep = roundTo(asynqRate, 1), roundTo(steps.agentMs, 2), roundTo(shMs, 2)
	res.Notes.Steps = steps.note + fmt.Sprintf(" The anchor, in the same run before and after: asynq alone (v0.26, one "+
		"server of the same concurrency and poll interval, on the same Redis) running the same command with "+
		"os/exec in its handler for %d chains of %d tasks, each task queueing the next of its chain: %.1f and %.1f "+
		"tasks/s (orch %.2f× their mean); the command's own time there %.2f and %.2f ms, in orch's steps %.2f ms "+
		"(behind the sandbox's shim).", c.stepRuns, c.stepTasks, anchors[0].perSecond, anchors[1].perSecond,
		steps.perSecond/asynqRate, ms(anchors[0].shMean), ms(anchors[1].shMean), steps.agentMs)
	res.Notes.Overhead = steps.overheadNote
	return nil
}

// stepPlan is a milestone of n tasks.
func stepPlan(n int) string {
	var b strings.Builder
	b.WriteString("# Step throughput\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "\n## Task %d: Step %d\n\nNothing to do: say that it is done.\n", i, i)
	}
	return b.String()
}

// agentTimes is the agent process time of every step, keyed by run and task, read back from the runs; each task must
// have completed at its first attempt.
func agentTimes(ctx context.Context, store *store.Store, ids []string, tasks int) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for _, id := range ids {
		run, err := store.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if run.Status != jobs.RunCompleted || len(run.Tasks) != tasks {
			return nil, fmt.Errorf("run %s is %s with %d tasks", id, run.Status, len(run.Tasks))
		}
		for _, t := range run.Tasks {
			if len(t.Attempts) != 1 {
				return nil, fmt.Errorf("run %s task %s took %d attempts", id, t.ID, len(t.Attempts))
			}
			out[id+"/"+t.ID] = t.Attempts[0].Duration
		}
	}
	return out, nil
}

// stepClock notes when each step's task_started and task_completed were committed, to tell the time inside the step
// handler from the time around it.
type stepClock struct {
	mu      sync.Mutex
	started map[string]time.Time
	done    map[string]time.Time
}

func newStepClock() *stepClock {
	return &stepClock{started: map[string]time.Time{}, done: map[string]time.Time{}}
}

func (c *stepClock) observe(e jobs.Event, at time.Time) {
	key := e.RunID + "/" + e.TaskID
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.Body.(type) {
	case jobs.TaskStartedEvent:
		c.started[key] = at
	case jobs.TaskCompletedEvent:
		c.done[key] = at
	}
}

// mean is the mean time between a step's two commits that is not the agent's.
func (c *stepClock) mean(agent map[string]time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var sum time.Duration
	n := 0
	for key, d := range agent {
		s, ok1 := c.started[key]
		e, ok2 := c.done[key]
		if ok1 && ok2 {
			sum += e.Sub(s) - d
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / time.Duration(n)
}
