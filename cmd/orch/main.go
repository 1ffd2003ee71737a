// Command orch runs coding agents through plans, on a worker pool, with a human in the loop.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/pipeline"
	"github.com/orchrun/orch/runs"
	"github.com/orchrun/orch/sandbox"
)

// Exit codes (DESIGN §3).
const (
	exitOK     = 0
	exitFailed = 1 // failed or aborted
	exitUsage  = 2 // usage or configuration error
	exitParked = 3 // a human is needed and nobody can be asked here
	exitSignal = 130
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == shimCommand {
		// The sandbox's shim between a worker and its agent: no command line, signals or exit codes of orch's.
		os.Exit(sandbox.RunShim(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == hookCommand {
		os.Exit(runHook(os.Stdin, os.Stdout, os.Stderr))
	}
	if len(os.Args) == 3 && os.Args[1] == "mcp" && os.Args[2] == promptCommand {
		os.Exit(runPromptTool(os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// shimCommand is the hidden first argument that makes orch the sandbox's shim (sandbox.RunShim): between a local
// worker and its agent (sandbox.LocalConfig.Shim), and between the engine and every agent in a Docker container.
const shimCommand = sandbox.ShimCommand

// hookCommand is the hidden first argument that makes orch Claude Code's PreToolUse hook (agent.RunHook): Claude
// Code runs it for every tool call, so it starts without the command line's machinery.
const hookCommand = "claude-hook"

// runHook answers one tool call. Exit 2 is Claude Code's blocking error: a hook that cannot decide blocks the call
// and says why (code.claude.com/docs/en/hooks, "Exit code 2").
func runHook(stdin io.Reader, stdout, stderr io.Writer) int {
	home, _ := os.UserHomeDir()
	if err := agent.RunHook(stdin, stdout, os.Getenv(agent.HookEnv), home); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	return 0
}

// run is main without the process: testable end to end.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// A closed terminal (SIGHUP) is an interruption like Ctrl-C: stop the agent and save the run. A closed pipe on
	// stdout (orch run | head) must not kill orch between a change and its snapshot: writes just fail.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// Notify, not Ignore: an ignored SIGPIPE would be inherited by the agents orch starts.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	app := newApp(stdin, stdout, stderr)
	app.secrets = collectSecrets(app.env, app.environ(), args)
	err := app.root().ExecuteContext(ctx)
	app.flushLog()
	app.flushTracing()
	code := exitCode(err, app.started)
	if err != nil && !errors.Is(err, errSilent) {
		// Whatever the error quotes (a library's included), the credentials orch was given are not printed.
		fmt.Fprintln(stderr, "orch: "+app.secrets.scrub(err.Error()))
	}
	return code
}

// exitError carries an exit code with an error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// errSilent ends a command with a code whose message was already printed.
var errSilent = errors.New("")

func usageErr(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// exitCode maps an error to the process's exit code, in one place.
func exitCode(err error, started bool) int {
	var ee *exitError
	var pe *pipeline.PlanError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &pe):
		return exitUsage
	case errors.Is(err, jobs.ErrRunNotFound), errors.Is(err, escalation.ErrInvalid), errors.Is(err, runs.ErrInvalid),
		errors.Is(err, escalation.ErrNoOpenEscalation), errors.Is(err, escalation.ErrAlreadyResolved):
		return exitUsage
	case errors.Is(err, context.Canceled):
		return exitSignal
	case !started:
		// cobra rejected the command line before any command ran: unknown command, flag or argument count.
		return exitUsage
	}
	return exitFailed
}
