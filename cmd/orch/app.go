package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/sandbox"
	"github.com/orchrun/orch/telemetry"
	"github.com/orchrun/orch/worker"
	"github.com/orchrun/orch/workspace"
)

// app is one invocation of orch: its streams and what it resolved from flags, env and orch.yaml.
type app struct {
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	env     func(string) string
	environ func() []string
	started bool // a command's RunE was reached: errors after this are not command-line errors
	set     *settings
	log     *slog.Logger
	// redis knows whether Redis answers, from this process's commands; the one-shot commands' log and their outage
	// notes go by it.
	redis *redisWatch
	// stopTracing flushes and stops tracing, when OTEL_EXPORTER_OTLP_ENDPOINT turned it on.
	stopTracing func(context.Context) error
	// secrets are the credentials this process was given: no error or log line prints them.
	secrets secrets
	// redactor knows the same secrets, for what an agent says: it is redacted where it enters orch.
	redactor *safetext.Redactor
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr, env: os.Getenv, environ: os.Environ, redis: &redisWatch{}}
}

func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "orch",
		Short: "Run coding agents through plans, with a human in the loop",
		Long: "orch runs a coding agent on each task of a plan, inside a sandbox, and brings a human in exactly when\n" +
			"one is needed. Exit codes: 0 completed, 1 failed or aborted, 2 usage or configuration error,\n" +
			"3 parked (a human is needed; resolve and resume later).",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			a.started = true
			cfgPath, _ := cmd.Flags().GetString("config")
			set, err := loadSettings(cfgPath, a.env)
			if err != nil {
				return err
			}
			a.set = set
			a.secrets.loaded(set.file)
			a.redactor = a.secrets.redactor()
			if a.log, err = newLogger(a.stderr, cmd.Name(), a.env("ORCH_LOG_LEVEL"), a.env("ORCH_LOG_FORMAT"),
				isTerminal(a.stderr), a.redis); err != nil {
				return err
			}
			// The secrets orch was given are scrubbed before anything else sees a record, the summarizing included.
			a.log = slog.New(scrubHandler{a.log.Handler(), a.secrets})
			// go-redis logs dial failures on its own, many a second while Redis is away; orch reports them once, as
			// an error a person can act on, and its log summarizes the library's repeats.
			redis.SetLogger(redisLogger{a.log})
			if cmd.Name() == "sim-agent" {
				return nil // runs inside a sandbox, for an orch that checked its settings already
			}
			return a.checkEnvironment(cmd)
		},
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr("%v (see '%s --help')", err, c.CommandPath())
	})
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	pf := root.PersistentFlags()
	pf.String("config", "", "config file (default ./orch.yaml when present)")
	pf.String("redis", "", "Redis URL (env ORCH_REDIS_URL; default: the embedded store in --state-dir)")
	pf.String("state-dir", ".orch", "where the embedded store keeps its state (env ORCH_STATE_DIR)")
	root.AddCommand(a.runCmd(), a.resumeCmd(), a.taskCmd(), a.statusCmd(), a.historyCmd(),
		a.costsCmd(), a.logsCmd(), a.diffCmd(), a.escalationCmd(), a.brainCmd(), a.simAgentCmd(), a.serveCmd(), a.botCmd(), a.workerCmd(), a.webCmd(), a.mcpCmd(), a.healthCmd())
	return root
}

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.Debug(fmt.Sprintf(format, v...), "component", "redis")
}

// args wraps a cobra args check so that its error is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageErr("%v (see 'orch %s --help')", err, cmd.CommandPath()[len("orch "):])
		}
		return nil
	}
}

// backend opens the store and queue the command's flags name.
func (a *app) backend(cmd *cobra.Command) (*store.Backend, error) {
	url := a.set.str(cmd, "redis", "ORCH_REDIS_URL", a.set.file.Redis, "")
	dir := a.set.str(cmd, "state-dir", "ORCH_STATE_DIR", a.set.file.StateDir, ".orch")
	keep, err := a.historyKeep(cmd, "")
	if err != nil {
		return nil, err
	}
	b, err := store.Connect(cmd.Context(), store.ConnectConfig{URL: url, Password: a.env("ORCH_REDIS_PASSWORD"),
		StateDir: dir, Log: a.log, Keep: keep})
	if err != nil {
		if errors.Is(err, store.ErrRedisUnavailable) {
			return nil, withCode(exitUsage, fmt.Errorf("%w (is Redis running? check --redis / ORCH_REDIS_URL)", err))
		}
		return nil, withCode(exitUsage, err)
	}
	b.Redis.AddHook(a.redis)
	// Every process that changes runs keeps the teams' ledgers: an abort gives back what a running attempt held.
	budgets, err := a.teamBudgets()
	if err != nil {
		b.Close()
		return nil, err
	}
	b.Store.UseBudgets(budgets)
	// What this process commits is logged by the services, and by the one-shot commands when asked to
	// (ORCH_LOG_LEVEL=info or debug): at their default level their terminal output says it already.
	if a.log.Enabled(cmd.Context(), slog.LevelInfo) {
		b.Store.Observe(logEvents(a.log))
	}
	if telemetry.Enabled(a.env) {
		if a.stopTracing == nil {
			// The exporter's own complaints (an endpoint that does not answer, a setting it cannot read) go through
			// orch's log, which takes the credentials out, not straight to stderr.
			otel.SetLogger(logr.FromSlogHandler(a.log.Handler()))
			otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { a.log.Warn("tracing", "err", err) }))
			stop, err := telemetry.Setup(cmd.Context(), "orch")
			if err != nil {
				a.log.Warn("tracing is off", "err", err)
			} else {
				a.stopTracing = stop
			}
		}
		if a.stopTracing != nil {
			b.Store.Observe(telemetry.Observe)
		}
	}
	return b, nil
}

// stateHint is the flags another orch command needs to find the same state.
func (a *app) stateHint(cmd *cobra.Command) string {
	var parts []string
	if f := cmd.Flags().Lookup("redis"); f != nil && f.Changed {
		parts = append(parts, "--redis "+redactURL(f.Value.String()))
	}
	if f := cmd.Flags().Lookup("state-dir"); f != nil && f.Changed {
		parts = append(parts, "--state-dir "+f.Value.String())
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, " ")
}

// engine is a worker running in this process with the sandboxes it opened.
type engine struct {
	*worker.Worker
	dockers *dockers
	stop    chan struct{}
	once    sync.Once
}

// Shutdown stops the worker (running steps are requeued), then closes the sandboxes.
func (e *engine) Shutdown() {
	e.once.Do(func() {
		close(e.stop)
		e.Worker.Shutdown()
		e.dockers.close()
	})
}

// reapEvery runs the container reaper now and then every d until Shutdown: containers of runs that ended or that
// nobody knows (a worker killed mid-run) do not outlive their run for long.
func (e *engine) reapEvery(store *store.Store, d time.Duration) {
	go func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			e.dockers.reap(ctx, store)
			cancel()
			select {
			case <-e.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// workerSettings are what a worker of this process is started with: checked before anything is written.
type workerSettings struct {
	concurrency int
	poll        time.Duration
	trees       *workspace.Manager
	prs         func(ctx context.Context, r *jobs.Run) (string, error)
	docker      dockerSettings
	// agentPass names what agents are given of orch's environment besides the allowlist.
	agentPass []string
	// teams weighs the teams' share of the workers (teams.go).
	teams map[string]int
}

func (a *app) workerSettings(cmd *cobra.Command) (workerSettings, error) {
	var ws workerSettings
	var err error
	if ws.concurrency, err = a.set.atLeast(cmd, "concurrency", "ORCH_CONCURRENCY", "concurrency", a.set.file.Concurrency, 2, 1); err != nil {
		return ws, err
	}
	if v := a.env("ORCH_POLL_INTERVAL"); v != "" {
		if ws.poll, err = time.ParseDuration(v); err != nil || ws.poll <= 0 {
			return ws, usageErr("ORCH_POLL_INTERVAL: %q is not a positive duration", v)
		}
	}
	if ws.trees, err = a.worktrees(cmd); err != nil {
		return ws, err
	}
	if ws.prs, err = a.pullRequests(); err != nil {
		return ws, err
	}
	if ws.docker, err = a.dockerSettings(cmd); err != nil {
		return ws, err
	}
	if ws.agentPass, err = a.agentPass(cmd); err != nil {
		return ws, err
	}
	ws.docker.agentPass = ws.agentPass
	if ws.teams, err = a.teams(); err != nil {
		return ws, err
	}
	return ws, nil
}

// startWorker runs the worker in-process: `orch run` and `orch resume` are their own worker pool.
func (a *app) startWorker(b *store.Backend, ws workerSettings) (*engine, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locating the orch binary for the sim agent: %w", err)
	}
	dk := newDockers(a, self, ws.docker)
	// A local sandbox per agent CLI, each giving its agents the allowlist of orch's environment with that CLI's own
	// credential and settings; so local runs are served by SandboxFor too.
	local := newLocals(shimFor(self, a.log), a.environ, ws.agentPass)
	hook := hookProgram(self, a.log)
	// Runs in a plain directory keep what their agents said as they ended where the embedded store keeps its state
	// (a Redis server's deployment writes nothing there for them).
	var endings string
	if b.Embedded != nil && ws.trees != nil {
		endings = filepath.Join(ws.trees.Root, "ended")
	}
	w, err := worker.New(worker.Config{
		PollInterval: ws.poll,
		Store:        b.Store,
		Queue:        b.Queue,
		SandboxFor: func(opts jobs.Options) (worker.Sandbox, error) {
			if opts.Sandbox == "" || opts.Sandbox == "local" {
				return local.forRun(opts), nil
			}
			return dk.forRun(opts)
		},
		Brain: func(opts jobs.Options) (worker.Brain, error) {
			return brains{apiKey: a.env("ANTHROPIC_API_KEY")}.forRun(opts)
		},
		Agent:           func(opts jobs.Options) (agent.Adapter, error) { return newAgent(opts, self, hook) },
		Log:             a.log,
		Concurrency:     ws.concurrency,
		Workspaces:      ws.trees,
		Endings:         endings,
		PullRequests:    ws.prs,
		Secrets:         a.redactor,
		Teams:           ws.teams,
		BudgetOperators: a.set.file.Budgets.Operators,
	})
	if err != nil {
		return nil, err
	}
	if err := w.Start(b.Redis); err != nil {
		return nil, err
	}
	return &engine{Worker: w, dockers: dk, stop: make(chan struct{})}, nil
}

// newAgent returns the adapter a run asked for. self is the orch binary, which plays the sim agent; hook is the
// host's hook program (hookProgram).
func newAgent(opts jobs.Options, self, hookProg string) (agent.Adapter, error) {
	switch {
	case opts.Agent == "claude":
		hook := hookFor(opts, self, hookProg)
		return agent.NewClaude(agent.ClaudeConfig{Model: opts.AgentModel, Hook: hook,
			PromptTool: promptToolFor(hook, opts, self)}), nil
	case opts.Agent == "codex":
		// "-": the prompt is read from stdin (codex exec --help: "If not provided as an argument (or if `-` is used),
		// instructions are read from stdin"), where it may be of any size.
		return agent.NewTemplate("codex exec --skip-git-repo-check -")
	case opts.Agent == "sim":
		if opts.Sandbox == "docker" {
			self = sandbox.OrchPath // the static binary mounted into the container
		}
		return agent.NewSim(agent.SimConfig{Binary: self, Scenario: opts.SimScenario}), nil
	case strings.HasPrefix(opts.Agent, "cmd:"):
		return agent.NewTemplate(strings.TrimPrefix(opts.Agent, "cmd:"))
	}
	return nil, fmt.Errorf("unknown agent %q (want claude, codex, sim or cmd:TEMPLATE)", opts.Agent)
}

// hookFor is the command that runs orch's permission hook where a run's agent runs: on the host the hook program
// (hookProgram), the static orch binary mounted into the container in Docker; "" when there is none (a dynamically
// linked orch cannot run in an arbitrary image), and then Claude Code's own rules carry the policy.
func hookFor(opts jobs.Options, self, hookProg string) string {
	if opts.Sandbox == "docker" {
		if !isStatic(self) {
			return ""
		}
		return shellQuote(sandbox.OrchPath) + " " + hookCommand
	}
	return hookProg
}

// hookProgram is the command that runs orch's permission hook on the host: orch-hook when it stands beside the orch
// binary self and speaks this orch's hook protocol, which starts in two milliseconds where orch's own binary takes
// ten or more, before every tool call; else self with its hidden hook command, which decides the same.
func hookProgram(self string, log *slog.Logger) string {
	if small, ok := companion(self, hookProgramName, agent.HookProtocol, log); ok {
		return shellQuote(small)
	}
	return shellQuote(self) + " " + hookCommand
}

// shellQuote quotes s for a POSIX shell (Claude Code runs a hook's command with bash).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// outage is what a follower of a run says when the store the command's flags name stops answering.
func (a *app) outage(cmd *cobra.Command) outage {
	o := outage{patience: storePatience, held: a.redis.takeHeld}
	url := a.set.str(cmd, "redis", "ORCH_REDIS_URL", a.set.file.Redis, "")
	if url == "" {
		o.store = "The store in " + a.set.str(cmd, "state-dir", "ORCH_STATE_DIR", a.set.file.StateDir, ".orch")
	} else if u, err := store.ParseRedisURL(url); err == nil {
		o.store = "Redis at " + u.Where()
	}
	return o
}

// flushLog says what the log counted and did not say yet (repeats of an error), before the process ends.
func (a *app) flushLog() {
	if a.log == nil {
		return
	}
	if f, ok := a.log.Handler().(interface{ Flush() }); ok {
		f.Flush()
	}
}

// flushTracing sends the spans not sent yet: a command that ends right after a change (a resolution from the
// terminal) must not lose its span.
func (a *app) flushTracing() {
	if a.stopTracing == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.stopTracing(ctx); err != nil && a.log != nil {
		a.log.Warn("sending traces", "err", err)
	}
}

// background is a context for cleanup that must run even when the command's context was cancelled.
func background() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 15*time.Second)
}
