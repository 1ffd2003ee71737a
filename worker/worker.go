// Package worker drives runs step by step: it takes orch's tasks off the queue, runs the agent in a sandbox, asks the
// brain what the output means, and moves the run on, parks it for a human, or ends it.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/sandbox"
	"github.com/orchrun/orch/workspace"
)

// Sandbox is where agents run.
type Sandbox interface {
	// Exec runs one agent process to its end; a non-zero exit is a result, not an error.
	Exec(ctx context.Context, spec sandbox.Spec, onLine func([]byte)) (sandbox.Result, error)
	// Release frees what the sandbox holds for a run: while it is parked (final=false) or for good (final=true).
	Release(ctx context.Context, runID string, final bool) error
}

// Brain judges agent output.
type Brain interface {
	Interpret(ctx context.Context, output string) (brain.Interpretation, error)
	Decide(ctx context.Context, in brain.DecideInput) (brain.Decision, error)
}

// Config wires a worker. Store, Queue, Sandbox, Brain and Agent are required.
type Config struct {
	Store *store.Store
	Queue *queue.Queue
	// Sandbox is where runs with Options.Sandbox "local" (or unset) run their agents.
	Sandbox Sandbox
	// SandboxFor, when set, picks the sandbox of runs with another Options.Sandbox (e.g. "docker", with their
	// image); an error parks the run with a configuration escalation that says it.
	SandboxFor func(opts jobs.Options) (Sandbox, error)
	// Brain returns the brain for a run's options.
	Brain func(opts jobs.Options) (Brain, error)
	// Agent returns the agent adapter for a run's options.
	Agent func(opts jobs.Options) (agent.Adapter, error)
	Log   *slog.Logger
	// Concurrency is how many steps (agent processes) run at once. Default 2.
	Concurrency int
	// SimilarityThreshold above which two errors count as the same, for runs that do not set their own. Default 0.8.
	SimilarityThreshold float64
	// PollInterval is how often an idle worker looks for work: the delay between a click and the resume.
	// Default 20ms (asynq's own default of 1s is too slow for a click).
	PollInterval time.Duration
	// ShutdownTimeout is how long shutdown lets the steps whose agents have ended settle before they are requeued (their
	// agents are stopped at once). Default 8s: within the 10 s a container's stop allows before it kills.
	ShutdownTimeout time.Duration
	// Workspaces keeps the worktrees of runs that work on a branch of their own; required by such runs.
	Workspaces *workspace.Manager
	// Endings is the directory where what an agent said is written the moment it ends (ended.go), for the runs that
	// work in a plain directory. Runs with a worktree keep theirs beside it, under Workspaces.Root/ended, whatever
	// this says. "": plain runs keep none.
	Endings string
	// PullRequests, when set, opens the draft pull request of a completed run whose branch was pushed, and returns its
	// URL.
	PullRequests func(ctx context.Context, r *jobs.Run) (string, error)
	// Host names this machine in the holds on plain workspaces (a directory is the same one only on one host).
	// Default: the host name.
	Host string
	// Secrets knows the secrets orch holds by value. What the agent says is checked against them (a find is a
	// security escalation) and has them taken out where it enters orch, before anything judges, keeps or shows it.
	// nil: secrets are found and taken out by pattern alone.
	Secrets *safetext.Redactor
	// Teams weighs the worker time of the teams that share this pool (name → weight, 1 to 100): each named team's
	// steps have a queue of their own, served in proportion to its weight; every other run's steps share the default
	// queue, of weight 1 unless Teams names queue.DefaultTeam. asynq shares dequeues, not time: see
	// jobs/queue/teams.go. Every worker of a deployment must have the same Teams.
	Teams map[string]int
	// BudgetOperators are the people (as answers name them: a Slack user id, an API token's name, a login) who may
	// extend a team's budget from a question; with none, a team's budget is extended by the operator alone, in
	// orch.yaml, and its question offers waiting, finishing or aborting.
	BudgetOperators []string
}

// Worker processes orch's tasks. Start it, then Shutdown.
type Worker struct {
	cfg     Config
	log     *slog.Logger
	steps   *asynq.Server
	control *asynq.Server
	// base ends as Shutdown begins: the worker's loops stop, and its agents, which could otherwise run out their half
	// hour (agentContext).
	base   context.Context
	cancel context.CancelFunc
	// handlers is the parent of every handler's context (asynq's BaseContext). It outlives the start of a shutdown by
	// a grace (settleGrace), in which a step whose agent has ended settles: judges what the agent said, commits,
	// pushes and saves. Cut off there, the step would go back to the queue without that work, and a worker on another
	// machine would run the task again.
	handlers    context.Context
	endHandlers context.CancelFunc
	once        sync.Once
	graphs      graphs
	host        string
	// id names this worker process in the deployment: its word that it lives, and its claims on step deliveries
	// (alive.go).
	id    string
	alive aliveness
	// beating is closed once aliveLoop has returned: its last word is said before Shutdown says the worker is gone.
	beating chan struct{}
	running steps
	// defers learns whether the agent CLI can pause a tool call.
	defers deferSupport
	// here applies the answers queued in this process (resumeHere).
	here answersHere
	// testEnded, set by a test, runs as an agent's ending has been noted: the test kills the delivery there.
	testEnded func()
	// testStepWaits, set by a test, runs as a delivery waits for its run's step lock (steplock.go); testLockOpened
	// runs as a delivery has opened the lock's directory, before it locks it.
	testStepWaits, testLockOpened func()
}

// New returns a worker.
func New(cfg Config) (*Worker, error) {
	if cfg.Store == nil || cfg.Queue == nil || cfg.Brain == nil || cfg.Agent == nil {
		return nil, errors.New("worker: Store, Queue, Brain and Agent are required")
	}
	if cfg.Sandbox == nil && cfg.SandboxFor == nil {
		return nil, errors.New("worker: a Sandbox is required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 2
	}
	if cfg.SimilarityThreshold <= 0 {
		cfg.SimilarityThreshold = 0.8
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 20 * time.Millisecond
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 8 * time.Second
	}
	if cfg.Host == "" {
		cfg.Host, _ = os.Hostname()
	}
	w := &Worker{cfg: cfg, log: cfg.Log, host: cfg.Host, id: workerID(cfg.Host)}
	w.base, w.cancel = context.WithCancel(context.Background())
	w.handlers, w.endHandlers = context.WithCancel(context.Background())
	return w, nil
}

// settleMargin is how long before asynq gives a running step back (ShutdownTimeout) the shutdown's grace ends: a step
// still settling then stops, rather than go on beside the delivery that takes its place.
const settleMargin = 1500 * time.Millisecond

// settleGrace is how long a shutdown lets the steps whose agents have ended settle.
func (w *Worker) settleGrace() time.Duration {
	return max(w.cfg.ShutdownTimeout-settleMargin, w.cfg.ShutdownTimeout/2)
}

// threshold is the error similarity from which run r counts two failures as the same: its own, else the worker's.
func (w *Worker) threshold(r *jobs.Run) float64 {
	if r.Options.SimilarityThreshold > 0 {
		return r.Options.SimilarityThreshold
	}
	return w.cfg.SimilarityThreshold
}

// sandboxFor is the sandbox a run's agents run in.
func (w *Worker) sandboxFor(opts jobs.Options) (Sandbox, error) {
	kind := opts.Sandbox
	if (kind == "" || kind == "local") && w.cfg.Sandbox != nil {
		return w.cfg.Sandbox, nil
	}
	if w.cfg.SandboxFor == nil {
		return nil, fmt.Errorf("this worker has no %s sandbox (start it with ORCH_SANDBOX=%s, or run with --sandbox local)", kind, kind)
	}
	return w.cfg.SandboxFor(opts)
}

// release frees what a run holds in its sandbox.
func (w *Worker) release(ctx context.Context, run *jobs.Run, final bool) error {
	var err error
	if sb, serr := w.sandboxFor(run.Options); serr == nil { // else nothing was ever started there
		err = sb.Release(ctx, run.ID, final)
	}
	return errors.Join(err, w.letGo(ctx, run, final))
}

// ReleaseRun frees what a run holds in its sandbox as its state says: everything when it ended, the running
// container while it waits. Callers that stop a worker right after a run parks or ends call it so that nothing is
// left behind by a shutdown racing the worker's own release.
func (w *Worker) ReleaseRun(ctx context.Context, run *jobs.Run) error {
	return w.release(ctx, run, run.Status.Terminal())
}

// Handler routes orch's task types; Start serves it, tests may call it directly.
func (w *Worker) Handler() asynq.Handler {
	mux := asynq.NewServeMux()
	mux.Use(w.guard)
	mux.HandleFunc(queue.TypeStart, w.handleStart)
	mux.HandleFunc(queue.TypeStep, w.handleStep)
	mux.HandleFunc(queue.TypeResume, w.handleResume)
	mux.HandleFunc(queue.TypeTimeout, w.handleTimeout)
	return mux
}

// Start begins processing on rdb: one server for steps (agent work, long) and one for control tasks (starts and
// resumes, short), so that a resume never waits behind running agents.
func (w *Worker) Start(rdb redis.UniversalClient) error {
	common := asynq.Config{
		BaseContext:              func() context.Context { return w.handlers },
		TaskCheckInterval:        w.cfg.PollInterval,
		DelayedTaskCheckInterval: time.Second,
		ShutdownTimeout:          w.cfg.ShutdownTimeout,
		Logger:                   asynqLogger{w.log},
		LogLevel:                 asynq.WarnLevel,
		IsFailure:                isFailure,
		RetryDelayFunc:           retryDelay,
	}
	// Fair share between teams: each configured team's steps have a queue of their own, weighted (teams.go).
	known, err := w.cfg.Queue.StepQueues()
	if err != nil {
		return fmt.Errorf("starting step worker: %w", err)
	}
	steps := common
	steps.Concurrency = w.cfg.Concurrency
	steps.Queues = stepServerQueues(w.stepQueue(), known)
	control := common
	control.Concurrency = 4
	control.Queues = map[string]int{queue.Control: 1}
	w.steps = asynq.NewServerFromRedisClient(rdb, steps)
	w.control = asynq.NewServerFromRedisClient(rdb, control)
	h := w.Handler()
	if err := w.control.Start(h); err != nil {
		return fmt.Errorf("starting control worker: %w", err)
	}
	if err := w.steps.Start(h); err != nil {
		w.control.Shutdown()
		return fmt.Errorf("starting step worker: %w", err)
	}
	w.beating = make(chan struct{})
	go func() { defer close(w.beating); w.aliveLoop() }()
	go w.rescueLoop()
	w.here.start(w.cfg.Queue.ResumeHere(w.resumeHere))
	return nil
}

// Shutdown stops taking work, interrupts running agents (their steps are requeued and run again later), lets the steps
// whose agents had ended settle within a grace (settleGrace), and waits for the handlers to return.
func (w *Worker) Shutdown() {
	w.once.Do(func() {
		defer w.endHandlers()
		if w.steps == nil {
			w.cancel()
			return
		}
		grace := time.AfterFunc(w.settleGrace(), w.endHandlers)
		defer grace.Stop()
		w.here.stop() // answers queued from now on wait for a worker on the queue
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); w.steps.Shutdown() }()
		go func() { defer wg.Done(); w.control.Shutdown() }()
		// Agents are killed rather than waited for: an agent can run for half an hour.
		w.cancel()
		w.running.stopAll(errShutdown)
		wg.Wait()
		w.here.wait()
		w.endHandlers()
		if w.beating != nil {
			<-w.beating
		}
		// Every step it had is back on the queue: nothing of it needs rescuing.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = w.cfg.Queue.Gone(ctx, w.id)
	})
}

// isFailure tells asynq which handler errors count against a task's retries: an interrupted step, or one whose worker
// died (its lease expired), was not the task's fault.
func isFailure(err error) bool {
	return !errors.Is(err, context.Canceled) && !errors.Is(err, asynq.ErrLeaseExpired)
}

// retryDelay runs an interrupted or orphaned step again at once: it has waited for its lease to expire already.
func retryDelay(n int, err error, t *asynq.Task) time.Duration {
	if errors.Is(err, context.Canceled) || errors.Is(err, asynq.ErrLeaseExpired) {
		return 0
	}
	return asynq.DefaultRetryDelayFunc(n, err, t)
}

// guard turns a panic in a handler into an error, so one bad run cannot take the worker down, and parks a run whose
// step failed for good (a panic, retries run out), so that it waits for a human instead of hanging in `running`.
func (w *Worker) guard(h asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) (err error) {
		defer func() {
			if r := recover(); r != nil {
				w.log.Error("handler panic", "type", t.Type(), "panic", r, "stack", string(debug.Stack()))
				err = fmt.Errorf("panic in %s: %v: %w", t.Type(), r, asynq.SkipRetry)
			}
			if err != nil && finalTry(ctx, err) {
				w.giveUp(t, err)
			}
		}()
		return h.ProcessTask(ctx, t)
	})
}

// finalTry reports whether asynq will not run the task again after err.
func finalTry(ctx context.Context, err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, jobs.ErrRunNotFound) {
		return false
	}
	if errors.Is(err, asynq.SkipRetry) {
		return true
	}
	n, ok1 := asynq.GetRetryCount(ctx)
	m, ok2 := asynq.GetMaxRetry(ctx)
	return ok1 && ok2 && n >= m
}

// giveUp parks the run a task failed for: orch itself could not move it on, and a person must look.
func (w *Worker) giveUp(t *asynq.Task, cause error) {
	p, err := queue.DecodePayload(t)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = w.cfg.Store.Update(ctx, p.RunID, func(r *jobs.Run, c *jobs.Change) error {
		task := r.Current()
		if r.Status != jobs.RunRunning || task == nil || r.OpenEscalation() != nil {
			return errStale
		}
		msg := safetext.Redact(cause.Error())
		c.Emit(jobs.NewEvent(r.ID, task.ID, jobs.SandboxErrorEvent{Error: msg}))
		escalation.Open(r, task, c, escalation.Spec{Trigger: jobs.TriggerConfig, Source: "orch", Error: msg,
			Question: fmt.Sprintf("orch could not run task %s: %s. Fix the cause, then resume.", task.ID, msg)}, w.cfg.Store.Now())
		return nil
	})
	if err != nil && !errors.Is(err, errStale) {
		w.log.Error("parking a run after a failed step", "run_id", p.RunID, "err", err, "cause", cause)
	}
}

type asynqLogger struct{ log *slog.Logger }

func (l asynqLogger) Debug(args ...any) { l.log.Debug(fmt.Sprint(args...), "component", "asynq") }
func (l asynqLogger) Info(args ...any)  { l.log.Info(fmt.Sprint(args...), "component", "asynq") }
func (l asynqLogger) Warn(args ...any)  { l.log.Warn(fmt.Sprint(args...), "component", "asynq") }
func (l asynqLogger) Error(args ...any) { l.log.Error(fmt.Sprint(args...), "component", "asynq") }
func (l asynqLogger) Fatal(args ...any) { l.log.Error(fmt.Sprint(args...), "component", "asynq") }
