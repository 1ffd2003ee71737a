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
	"sync"
	"syscall"
	"time"
)

// LocalConfig configures the local backend. The zero value works.
type LocalConfig struct {
	// Env is the base environment of every process (AgentEnv makes it). nil gives what AgentEnv gives any agent on
	// the host from orch's own environment, never the whole of it: orch's credentials are there.
	Env []string
	// KillGrace is how long an agent stopped by a timeout or a cancel gets between SIGTERM and SIGKILL: its process
	// group, or with the shim everything it started. Default 3s.
	KillGrace time.Duration
	// Log, when set, hears about leftovers killed.
	Log *slog.Logger
	// Shim is the command that runs RunShim with the arguments that follow it (orch: its own binary and
	// ShimCommand). With one, everything the agent starts — in its process group or not, in a session of its own,
	// with a cleared environment, behind a double fork — ends when the agent ends, and within moments of orch's
	// death, SIGKILL included (see RunShim). Without (the zero value), the agent's process group and the processes
	// that kept the attempt's mark in their environment are killed when it ends, the kernel kills the agent alone
	// when orch dies, and a process that left both the group and the mark runs on.
	Shim []string
}

// Local runs the agent as a child process in the workspace, in its own process group so that a timeout reaches
// everything the agent started. When orch runs as root and the workspace belongs to another user, the agent runs as
// that user (see agentUser).
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
	as, err := agentUser(spec.Dir)
	if err != nil {
		return Result{}, fmt.Errorf("starting %s: %w", spec.Args[0], err)
	}
	// Every process of the attempt carries the mark in its environment, and its descendants inherit it unless they
	// clear it. It is the backstop, not the mechanism: the shim finds everything the agent started through the
	// process tree, whatever it did to its environment, session or group. The mark finds what kept it when there is
	// no shim (LocalConfig.Shim unset), or when the shim itself was killed (by the agent, which runs as the same
	// user unless orch is root); ORCH_RUN_ID does the same for Recovered and Release, after a worker died with its
	// shim.
	mark := markVar + "=" + randomHex(8)
	var report *os.File   // the shim's report of a program it could not start
	var lifeline *os.File // orch's end of the shim's stdin: open while orch waits for the agent
	closeLifeline := func() {}
	if len(l.cfg.Shim) > 0 {
		// The program is found as it would be without the shim (orch's PATH), and run by it.
		args := append([]string(nil), l.cfg.Shim[1:]...)
		args = append(args, "-stdin", strconv.Itoa(len(spec.Stdin)), "-report")
		if as != nil {
			// The shim stays orch's user (root), so the agent cannot kill it; it runs the agent as the owner.
			args = append(args, "-user", as.String())
		}
		args = append(append(args, "--", cmd.Path), spec.Args...)
		cmd = exec.CommandContext(runCtx, l.cfg.Shim[0], args...)
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
		in, out, err := os.Pipe()
		if err != nil {
			return Result{}, fmt.Errorf("starting %s: %w", spec.Args[0], err)
		}
		defer in.Close()
		// Only orch holds the write end (close-on-exec keeps it from every other child), so the kernel closes it
		// when orch dies, however it dies: the shim reads the end of its lifeline and kills everything below it.
		lifeline = out
		var once sync.Once
		closeLifeline = func() { once.Do(func() { out.Close() }) }
		defer closeLifeline()
		cmd.Stdin = in
	}
	cmd.Dir = spec.Dir
	base := l.cfg.Env
	if base == nil {
		base = AgentEnv(os.Environ(), EnvPolicy{})
	}
	cmd.Env = append(append(append([]string(nil), base...), spec.Env...), mark)
	if as != nil {
		cmd.Env = append(cmd.Env, as.env...) // last: os/exec keeps the last value of a key
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if lifeline == nil {
		// No shim: the kernel kills the agent when orch dies; what it started lives on (see LocalConfig.Shim).
		dieWithParent(cmd.SysProcAttr, syscall.SIGKILL)
		if as != nil {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: as.uid, Gid: as.gid, Groups: []uint32{}}
		}
	}
	stdout := newOutput(onLine)
	stderr := &tailBuffer{max: stderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if spec.Stdin != nil && lifeline == nil {
		// Copied by os/exec while the process runs: a process that exits without reading it all is not an error
		// (EPIPE is ignored).
		cmd.Stdin = bytes.NewReader(spec.Stdin)
	}
	var killer, lastResort *time.Timer
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		if lifeline == nil {
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			killer = time.AfterFunc(l.cfg.KillGrace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
			return nil
		}
		// The shim passes SIGTERM on to everything below it; after the grace, the end of its lifeline makes it kill
		// all of it. Only a shim that cannot act (stopped) needs its group killed, the shim with it.
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		killer = time.AfterFunc(l.cfg.KillGrace, closeLifeline)
		lastResort = time.AfterFunc(2*l.cfg.KillGrace+shimKillWait, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		return nil
	}
	// Children that keep stdout open must not keep orch waiting once the agent itself is gone.
	cmd.WaitDelay = l.cfg.KillGrace + time.Second

	// The parent-death signal (no shim) is sent when the thread that started the process exits, which is not always
	// orch's death: the Go runtime ends a thread whose goroutine exits locked to it (golang/go#27505). Holding the
	// thread until the process has ended makes orch's death the only way it exits. Waiting holds a thread anyway.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("starting %s: %w", spec.Args[0], err)
	}
	var wrote chan struct{}
	if lifeline != nil {
		cmd.ExtraFiles[0].Close() // orch's copy of the write end
		cmd.Stdin.(*os.File).Close()
		// The agent's input goes down the lifeline while the agent runs (the shim reads it whole); the lifeline then
		// stays open until the agent has ended.
		wrote = make(chan struct{})
		go func() {
			defer close(wrote)
			_, _ = lifeline.Write(spec.Stdin)
		}()
		// EOF once the agent runs (the shim closes its end), or the shim's reason it could not start it.
		if msg, _ := io.ReadAll(report); len(msg) > 0 {
			_ = cmd.Wait()
			closeLifeline()
			<-wrote
			return Result{}, fmt.Errorf("starting %s: %s", spec.Args[0], msg)
		}
	}
	waitErr := cmd.Wait()
	for _, t := range []*time.Timer{killer, lastResort} {
		if t != nil {
			t.Stop() // the group dies just below; a late timer could hit a reused process group id
		}
	}
	closeLifeline()
	if wrote != nil {
		<-wrote
	}
	// Backstops: the shim has killed everything below it, unless it was killed itself. Without one, this is all
	// there is: the agent's process group, and what carries the attempt's mark.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	killMarked(mark)
	stdout.flush()

	res := Result{
		Stderr:      stderr.buf,
		StderrBytes: stderr.total,
		Duration:    time.Since(start),
		ExitCode:    cmd.ProcessState.ExitCode(),
	}
	stdout.fill(&res)
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
