package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// LocalConfig configures the local backend. The zero value works.
type LocalConfig struct {
	// Env is the base environment of every process (AgentEnv makes it). nil gives what AgentEnv gives any agent on
	// the host from orch's own environment, never the whole of it: orch's credentials are there.
	Env []string
	// KillGrace is how long a process group gets between SIGTERM and SIGKILL. Default 3s.
	KillGrace time.Duration
	// Log, when set, hears about leftovers killed.
	Log *slog.Logger
	// Shim is the command that runs RunShim with the arguments that follow it (orch: its own binary and
	// "sandbox-shim"). With one, the agent and everything it started die within a second of orch's death, SIGKILL
	// included; without, the kernel kills the agent alone, and what it started runs on until a recovered attempt or
	// the run's release kills it.
	Shim []string
}

// Local runs the agent as a child process in the workspace, in its own process group so that a timeout kills
// everything the agent started.
type Local struct {
	cfg LocalConfig
}

// markVar names the environment variable that marks the processes of one agent run, a value of its own per Exec:
// what kills by it kills that attempt's processes and never another's of the same run.
const markVar = "ORCH_SANDBOX_MARK"

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
	if err := checkSpec(spec); err != nil {
		return Result{}, err
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
	if cmd.Err != nil {
		return Result{}, fmt.Errorf("starting %s: %w", spec.Args[0], cmd.Err)
	}
	// Every process of the attempt carries the mark in its environment, and its descendants inherit it, whatever
	// process group or session they make: it is how what the agent left running is found.
	mark := markVar + "=" + randomHex(8)
	deathSignal := syscall.SIGKILL
	var report *os.File // the shim's report of a program it could not start
	if len(l.cfg.Shim) > 0 {
		// The program is found as it would be without the shim (orch's PATH), and run by it.
		args := append(append([]string(nil), l.cfg.Shim[1:]...), strconv.Itoa(os.Getpid()), mark, cmd.Path)
		cmd = exec.CommandContext(runCtx, l.cfg.Shim[0], append(args, spec.Args...)...)
		if cmd.Err != nil {
			return Result{}, fmt.Errorf("starting the sandbox shim %s: %w", l.cfg.Shim[0], cmd.Err)
		}
		r, w, err := os.Pipe()
		if err != nil {
			return Result{}, fmt.Errorf("starting %s: %w", spec.Args[0], err)
		}
		defer r.Close()
		defer w.Close()
		report = r
		cmd.ExtraFiles = []*os.File{w} // the shim's descriptor 3 (shimReport)
		deathSignal = syscall.SIGTERM  // the shim catches it and kills the group
	}
	cmd.Dir = spec.Dir
	base := l.cfg.Env
	if base == nil {
		base = AgentEnv(os.Environ(), EnvPolicy{})
	}
	cmd.Env = append(append(append([]string(nil), base...), spec.Env...), mark)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr, deathSignal)
	stdout := &lineWriter{fn: onLine}
	stderr := &tailBuffer{max: stderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if spec.Stdin != nil {
		// Copied by os/exec while the process runs (the shim passes its stdin on): a process that exits without
		// reading it all is not an error (EPIPE is ignored).
		cmd.Stdin = bytes.NewReader(spec.Stdin)
	}
	var killer *time.Timer
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		killer = time.AfterFunc(l.cfg.KillGrace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		return nil
	}
	// Children that keep stdout open must not keep orch waiting once the agent itself is gone.
	cmd.WaitDelay = l.cfg.KillGrace + time.Second

	// The parent-death signal is sent when the thread that started the process exits, which is not always orch's
	// death: the Go runtime ends a thread whose goroutine exits locked to it (golang/go#27505). Holding the thread
	// until the process has ended makes orch's death the only way it exits. Waiting holds a thread anyway.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("starting %s: %w", spec.Args[0], err)
	}
	if report != nil {
		cmd.ExtraFiles[0].Close() // orch's copy of the write end
		// EOF once the agent runs (the shim closes its end), or the shim's reason it could not start it.
		if msg, _ := io.ReadAll(report); len(msg) > 0 {
			_ = cmd.Wait()
			return Result{}, fmt.Errorf("starting %s: %s", spec.Args[0], msg)
		}
	}
	waitErr := cmd.Wait()
	if killer != nil {
		killer.Stop() // the group dies just below; a late timer could hit a reused process group id
	}
	// Whatever the agent left running goes with it: in its group, and elsewhere.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	killMarked(mark)
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
