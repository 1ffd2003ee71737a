package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sync"
	"time"

	"github.com/hibiken/asynq"
)

// anchorResult is asynq alone running the no-op agent's command once per task: what a step could cost with nothing of
// orch around the command.
type anchorResult struct {
	perSecond float64       // tasks per second, from queueing the first task to the last one done
	shMean    time.Duration // the command's own wall time per task, from its start to its exit
}

// anchorTask is the anchor's one task type: task Task of chain Chain.
type anchorTask struct {
	Chain, Task int
}

// measureAnchor runs chains×tasks asynq tasks on the bench's Redis, each running `sh -c "echo Done."` as orch runs the
// no-op agent, with one server of orch's worker's concurrency and poll interval. Each chain's tasks run in order (a
// task's handler queues the next one), as a run's steps do: the same shape of work as measureSteps, with asynq's own
// dequeue, handler and completion, and nothing else.
func measureAnchor(ctx context.Context, r *rig, chains, tasks int) (anchorResult, error) {
	const queue = "anchor"
	client := asynq.NewClientFromRedisClient(r.redis.Client)
	var (
		mu      sync.Mutex
		shTotal time.Duration
		left    = chains
		done    = make(chan struct{})
		failed  error
	)
	enqueue := func(t anchorTask) error {
		payload, err := json.Marshal(t)
		if err != nil {
			return err
		}
		_, err = client.EnqueueContext(ctx, asynq.NewTask("anchor:step", payload), asynq.Queue(queue), asynq.MaxRetry(0))
		return err
	}
	handler := asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		var t anchorTask
		if err := json.Unmarshal(task.Payload(), &t); err != nil {
			return err
		}
		start := time.Now()
		out, err := exec.CommandContext(ctx, "sh", "-c", "echo Done.", "noop", "the task's prompt").Output()
		took := time.Since(start)
		if err == nil && string(out) != "Done.\n" {
			err = fmt.Errorf("stdout %q", out)
		}
		if err == nil && t.Task < tasks {
			err = enqueue(anchorTask{Chain: t.Chain, Task: t.Task + 1})
		}
		mu.Lock()
		defer mu.Unlock()
		shTotal += took
		if err != nil && failed == nil {
			failed = err
			close(done)
		}
		if err == nil && t.Task == tasks {
			if left--; left == 0 && failed == nil {
				close(done)
			}
		}
		return err
	})
	srv := asynq.NewServerFromRedisClient(r.redis.Client, asynq.Config{
		Concurrency:       workerConcurrency,
		Queues:            map[string]int{queue: 1},
		TaskCheckInterval: 20 * time.Millisecond,
		LogLevel:          asynq.FatalLevel,
	})
	if err := srv.Start(handler); err != nil {
		return anchorResult{}, err
	}
	defer srv.Shutdown()

	start := time.Now()
	for c := range chains {
		if err := enqueue(anchorTask{Chain: c, Task: 1}); err != nil {
			return anchorResult{}, err
		}
	}
	select {
	case <-done:
	case <-ctx.Done():
		return anchorResult{}, ctx.Err()
	case <-time.After(time.Minute + time.Duration(chains*tasks)*50*time.Millisecond):
		return anchorResult{}, fmt.Errorf("asynq ran fewer than %d tasks in time", chains*tasks)
	}
	elapsed := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		return anchorResult{}, failed
	}
	n := chains * tasks
	return anchorResult{perSecond: float64(n) / elapsed.Seconds(), shMean: shTotal / time.Duration(n)}, nil
}
