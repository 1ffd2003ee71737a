package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"syscall"
	"time"
)

// LocalConfig configures the local backend. The zero value works.
type LocalConfig struct {
	// Env is the base environment of every process; nil inherits orch's own.
	Env []string
	// KillGrace is how long a process group gets between SIGTERM and SIGKILL. Default 3s.
	KillGrace time.Duration
	// Log, when set, hears about leftovers killed.
	Log *slog.Logger
}

// Local runs the agent as a child process in the workspace, in its own process group so that a timeout kills
// everything the agent started.
type Local struct {
	cfg LocalConfig
}

// NewLocal returns a local sandbox.
func NewLocal(cfg LocalConfig) *Local {
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = 3 * time.Second
	}
	return &Local{cfg: cfg}
}

// Exec runs spec and waits for it. onLine, if not nil, receives each stdout line as it is printed (the slice is only
// valid during the call). A process that ran and exited non-zero is not an error; an error means the process could
// not be run at all.
func (l *Local) Exec(ctx context.Context, spec Spec, onLine func([]byte)) (Result, error) {
	if len(spec.Args) == 0 || spec.Args[0] == "" {
		return Result{}, ErrNoCommand
	}
	runCtx := ctx
	var cancel context.CancelFunc = func() {}
	if spec.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, spec.Timeout)
	}
	defer cancel()

	if spec.Recovered {
		if n := killRunProcesses(spec.RunID); n > 0 && l.cfg.Log != nil {
			l.cfg.Log.Warn("killed what a dead worker's agent left running", "run_id", spec.RunID, "processes", n)
		}
	}
	cmd := exec.CommandContext(runCtx, spec.Args[0], spec.Args[1:]...)
	cmd.Dir = spec.Dir
	if l.cfg.Env != nil || len(spec.Env) > 0 {
		base := l.cfg.Env
		if base == nil {
			base = cmd.Environ()
		}
		cmd.Env = append(append([]string(nil), base...), spec.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	stdout := &lineWriter{fn: onLine}
	stderr := &tailBuffer{max: stderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	var killer *time.Timer
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		killer = time.AfterFunc(l.cfg.KillGrace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		return nil
	}
	// Children that keep stdout open must not keep orch waiting once the agent itself is gone.
	cmd.WaitDelay = l.cfg.KillGrace + time.Second

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("starting %s: %w", spec.Args[0], err)
	}
	waitErr := cmd.Wait()
	if killer != nil {
		killer.Stop() // the group dies just below; a late timer could hit a reused process group id
	}
	// Whatever the agent left running in its group goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	stdout.flush()

	res := Result{
		Stdout:   stdout.all,
		Stderr:   stderr.buf,
		Duration: time.Since(start),
		ExitCode: cmd.ProcessState.ExitCode(),
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = ws.Signal().String()
	}
	if errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		res.TimedOut = true
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) && !res.TimedOut {
		return res, fmt.Errorf("running %s: %w", spec.Args[0], waitErr)
	}
	return res, nil
}

// Release frees what the sandbox holds for a run. A local process holds nothing once it has exited.
func (l *Local) Release(ctx context.Context, runID string, final bool) error {
	if final {
		killRunProcesses(runID) // anything of the run's agents that outlived them (a crash, a daemon they forked)
	}
	return nil
}
