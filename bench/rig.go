package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/pipeline"
	"github.com/orchrun/orch/sandbox"
	"github.com/orchrun/orch/worker"
)

// rig is what every measurement shares: the Redis, an orch binary for the sim agent, and a scratch directory.
type rig struct {
	redis   *redisServer
	orchBin string
	shim    []string // orch-shim, built beside orchBin: the local sandbox's shim, as `make build` installs it
	tmp     string
	log     *slog.Logger
	// claude is the claude binary of runs with the claude agent, and env the agents' environment (nil: the local
	// sandbox's allowlist of the bench's).
	claude string
	env    []string
}

// buildOrch builds the orch binary once, into dir, with orch-shim and orch-hook beside it as `make build` installs
// them: the sim agent is `orch sim-agent`, a real process, and claude's hook is orch-hook.
func buildOrch(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "orch")
	for _, b := range []struct{ out, pkg string }{{bin, "./cmd/orch"}, {filepath.Join(dir, "orch-shim"), "./cmd/orch-shim"},
		{filepath.Join(dir, "orch-hook"), "./cmd/orch-hook"}} {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", b.out, b.pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("building %s (run from the repository root): %v\n%s", b.pkg, err, out)
		}
	}
	return bin, nil
}

// backend is a store and a queue on the rig's Redis, with a tally of the events this process commits.
func (r *rig) backend() (*store.Store, *queue.Queue, *tally) {
	store := store.New(r.redis.Client, nil)
	t := newTally()
	store.Observe(t.observe)
	return store, queue.New(r.redis.Client), t
}

// workerConcurrency is how many steps (agent processes) the worker runs at once: orch's default (--concurrency).
const workerConcurrency = 2

// startWorker starts one worker, wired as `orch worker` wires it for local runs: the local sandbox, the heuristic
// brain (its production wrapper, without an LLM), the sim agent or a command template.
func (r *rig) startWorker(store *store.Store, queue *queue.Queue, poll time.Duration) (*worker.Worker, error) {
	return r.startTeamWorker(store, queue, poll, nil)
}

// startTeamWorker is startWorker with orch.yaml's teams (team → weight).
func (r *rig) startTeamWorker(store *store.Store, queue *queue.Queue, poll time.Duration, teams map[string]int) (*worker.Worker, error) {
	w, err := worker.New(worker.Config{
		Store:        store,
		Queue:        queue,
		Sandbox:      sandbox.NewLocal(sandbox.LocalConfig{Shim: r.shim, Env: r.env}),
		Brain:        func(jobs.Options) (worker.Brain, error) { return &brain.Fallback{}, nil },
		Agent:        r.agentFor,
		Log:          r.log,
		Concurrency:  workerConcurrency,
		PollInterval: poll,
		Teams:        teams,
	})
	if err != nil {
		return nil, err
	}
	if err := w.Start(r.redis.Client); err != nil {
		return nil, err
	}
	return w, nil
}

func (r *rig) agentFor(o jobs.Options) (agent.Adapter, error) {
	switch o.Agent {
	case "sim":
		return agent.NewSim(agent.SimConfig{Binary: r.orchBin, Scenario: o.SimScenario}), nil
	case "claude":
		// As `orch worker` runs it in the local sandbox: orch's permission hook is this orch binary.
		return agent.NewClaude(agent.ClaudeConfig{Binary: r.claude, Hook: filepath.Join(filepath.Dir(r.orchBin), "orch-hook")}), nil
	}
	t, err := agent.NewTemplate(o.Agent)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// workspace makes a fresh workspace holding the given files (name → content). It is outside any git repository, as
// a scratch workspace would be.
func (r *rig) workspace(name string, files map[string]string) (string, error) {
	dir, err := os.MkdirTemp(r.tmp, name+"-")
	if err != nil {
		return "", err
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// ambiguousWorkspace is a workspace with the ambiguous-task example: its sim agent asks which cache to build, then
// builds the one chosen.
func (r *rig) ambiguousWorkspace() (ws, plan string, err error) {
	files := map[string]string{}
	for _, f := range []string{"ambiguous_task.md", "ambiguous_task.sim.yaml"} {
		data, err := os.ReadFile(filepath.Join("examples", "plans", f))
		if err != nil {
			return "", "", fmt.Errorf("run from the repository root: %w", err)
		}
		files[f] = string(data)
	}
	ws, err = r.workspace("ambiguous", files)
	return ws, filepath.Join(ws, "ambiguous_task.md"), err
}

// simOptions are the options of a run with the sim agent and the heuristic brain, as `orch run --agent sim` sets them.
func simOptions(plan string) jobs.Options {
	return jobs.Options{Agent: "sim", SimScenario: strings.TrimSuffix(plan, filepath.Ext(plan)) + ".sim.yaml",
		Brain: "heuristic", Sandbox: "local", MaxAttempts: 3, AgentTimeout: time.Minute}
}

// planRun builds a queued run of a markdown plan, as `orch run` and the Slack starter do. Each run works in a
// directory of its own under ws: runs in one plain directory (not a git repository) take turns, and the measurements
// are of runs side by side.
func planRun(planPath, ws string, opts jobs.Options, origin jobs.Origin) (*jobs.Run, error) {
	plan, err := pipeline.Load(planPath)
	if err != nil {
		return nil, err
	}
	tasks, err := plan.Tasks()
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(ws, planPath)
	if err != nil {
		rel = planPath
	}
	run := &jobs.Run{ID: jobs.NewRunID(), PlanPath: rel, PlanTitle: plan.Title, Options: opts, Origin: origin,
		Status: jobs.RunQueued}
	run.Workspace = filepath.Join(ws, "runs", run.ID)
	if err := os.MkdirAll(run.Workspace, 0o755); err != nil {
		return nil, err
	}
	for _, t := range tasks {
		run.Tasks = append(run.Tasks, &jobs.Task{ID: t.ID, Title: safetext.Redact(t.Title),
			Description: safetext.Redact(t.Description), Status: jobs.TaskPending})
	}
	return run, nil
}

// startRun saves a run and queues its start: what a starter does.
func startRun(ctx context.Context, store *store.Store, queue *queue.Queue, run *jobs.Run) error {
	if err := store.Create(ctx, run); err != nil {
		return err
	}
	return queue.Start(ctx, run.ID)
}

// startRuns starts n runs of a plan, a few at a time, and returns their ids.
func startRuns(ctx context.Context, store *store.Store, queue *queue.Queue, n int, planPath, ws string,
	opts jobs.Options) ([]string, error) {
	ids := make([]string, n)
	err := parallel(ctx, n, 4, func(i int) error {
		run, err := planRun(planPath, ws, opts, jobs.Origin{Kind: "cli", User: "bench"})
		if err != nil {
			return err
		}
		ids[i] = run.ID
		return startRun(ctx, store, queue, run)
	})
	return ids, err
}

// parallel calls fn(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, fn func(i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return first
}

// orchQueues are orch's queues: the control queue and every step queue asynq knows (the teams' too).
func orchQueues(inspector *asynq.Inspector) ([]string, error) {
	all, err := inspector.Queues()
	if err != nil {
		return nil, err
	}
	names := []string{queue.Steps, queue.Control}
	for _, q := range all {
		if q != queue.Steps && queue.IsStepQueue(q) {
			names = append(names, q)
		}
	}
	return names, nil
}

// busySlots is how many tasks asynq holds as active in orch's queues: a worker slot each.
func busySlots(inspector *asynq.Inspector) (int, error) {
	names, err := orchQueues(inspector)
	if err != nil {
		return 0, err
	}
	busy := 0
	for _, q := range names {
		info, err := inspector.GetQueueInfo(q)
		if errors.Is(err, asynq.ErrQueueNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		busy += info.Active
	}
	return busy, nil
}

// queued is how many tasks wait in orch's queues (pending, scheduled or retrying).
func queued(inspector *asynq.Inspector) (int, error) {
	names, err := orchQueues(inspector)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, q := range names {
		info, err := inspector.GetQueueInfo(q)
		if errors.Is(err, asynq.ErrQueueNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		n += info.Pending + info.Scheduled + info.Retry
	}
	return n, nil
}
