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

	"github.com/orchrun/orch/sandbox/shim"
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
	// Every process of the attempt carries the mark in its environment, and its descendants inherit it unless they
	// clear it. It is the backstop, not the mechanism: the shim finds everything the agent started through the
	// process tree, whatever it did to its environment, session or group. The mark finds what kept it when there is
	// no shim (LocalConfig.Shim unset), or when the shim itself was killed (by the agent, which runs as the same
	// user unless orch is root); ORCH_RUN_ID does the same for Recovered and Release, after a worker died with its
	// shim.
	mark := markVar + "=" + randomHex(8)
	cmd, pipes, err := l.command(runCtx, spec, mark)
	if err != nil {
		return Result{}, err
	}
	defer pipes.close()
	stdout := newOutput(onLine)
	stderr := &tailBuffer{max: stderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	stopTimers := l.cancelling(cmd, pipes)
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
	if err := pipes.started(cmd, spec); err != nil {
		return Result{}, err
	}
	waitErr := cmd.Wait()
	stopTimers() // the group dies just below; a late timer could hit a reused process group id
	pipes.ended()
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

// command is the process of spec, under the shim when there is one (then shim holds orch's ends of its pipes; nil
// without one), as the workspace's owner when orch is root, its environment marked with mark.
func (l *Local) command(runCtx context.Context, spec Spec, mark string) (*exec.Cmd, *shimPipes, error) {
	cmd := exec.CommandContext(runCtx, spec.Args[0], spec.Args[1:]...)
	if cmd.Err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w", spec.Args[0], cmd.Err)
	}
	as, err := agentUser(spec.Dir)
	if err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w", spec.Args[0], err)
	}
	var pipes *shimPipes
	if len(l.cfg.Shim) > 0 {
		if cmd, pipes, err = l.underShim(runCtx, spec, cmd.Path, as); err != nil {
			return nil, nil, err
		}
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
	if pipes == nil {
		// No shim: the kernel kills the agent when orch dies; what it started lives on (see LocalConfig.Shim).
		shim.DieWithParent(cmd.SysProcAttr, syscall.SIGKILL)
		if as != nil {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: as.uid, Gid: as.gid, Groups: []uint32{}}
		}
		if spec.Stdin != nil {
			// Copied by os/exec while the process runs: a process that exits without reading it all is not an error
			// (EPIPE is ignored).
			cmd.Stdin = bytes.NewReader(spec.Stdin)
		}
	}
	return cmd, pipes, nil
}

// shimPipes are orch's ends of the shim's pipes: the report of a program it could not start (its descriptor 3), and
// its stdin, the lifeline, open while orch waits for the agent.
type shimPipes struct {
	report, reportW *os.File // the report's read end, and the pipes's write end (orch's copy closes once started)
	in, lifeline    *os.File // the pipes's stdin (orch's copy closes once started), and orch's end of it
	once            sync.Once
	wrote           chan struct{} // closed when the agent's input is written
}

// underShim is the process of the program at path run by the shim, as the user as (nil: orch's own).
func (l *Local) underShim(runCtx context.Context, spec Spec, path string, as *runAs) (*exec.Cmd, *shimPipes, error) {
	// The program is found as it would be without the shim (orch's PATH), and run by it.
	args := append([]string(nil), l.cfg.Shim[1:]...)
	args = append(args, "-stdin", strconv.Itoa(len(spec.Stdin)), "-report")
	if as != nil {
		// The shim stays orch's user (root), so the agent cannot kill it; it runs the agent as the owner.
		args = append(args, "-user", as.String())
	}
	args = append(append(args, "--", path), spec.Args...)
	cmd := exec.CommandContext(runCtx, l.cfg.Shim[0], args...)
	if cmd.Err != nil {
		return nil, nil, fmt.Errorf("starting the sandbox pipes %s: %w", l.cfg.Shim[0], cmd.Err)
	}
	p := &shimPipes{}
	var err error
	if p.report, p.reportW, err = os.Pipe(); err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w", spec.Args[0], err)
	}
	if p.in, p.lifeline, err = os.Pipe(); err != nil {
		p.close()
		return nil, nil, fmt.Errorf("starting %s: %w", spec.Args[0], err)
	}
	// Only orch holds the lifeline's write end (close-on-exec keeps it from every other child), so the kernel closes
	// it when orch dies, however it dies: the shim reads the end of its lifeline and kills everything below it.
	cmd.ExtraFiles = []*os.File{p.reportW} // the pipes's descriptor 3 (pipes.ReportFD)
	cmd.Stdin = p.in
	return cmd, p, nil
}

// closeLifeline ends the shim's lifeline: the shim kills everything below it.
func (p *shimPipes) closeLifeline() {
	if p != nil && p.lifeline != nil {
		p.once.Do(func() { p.lifeline.Close() })
	}
}

// close closes what orch still holds of the pipes.
func (p *shimPipes) close() {
	if p == nil {
		return
	}
	for _, f := range []*os.File{p.report, p.reportW, p.in} {
		if f != nil {
			f.Close()
		}
	}
	p.closeLifeline()
}

// started sends the agent's input down the lifeline once the shim runs (the shim reads it whole), and waits for the
// shim's report: EOF once the agent runs (the shim closes its end), or its reason it could not start it. The
// lifeline then stays open until the agent has ended.
func (p *shimPipes) started(cmd *exec.Cmd, spec Spec) error {
	if p == nil {
		return nil
	}
	p.reportW.Close() // orch's copy of the write end
	p.in.Close()
	p.wrote = make(chan struct{})
	go func() {
		defer close(p.wrote)
		_, _ = p.lifeline.Write(spec.Stdin)
	}()
	if msg, _ := io.ReadAll(p.report); len(msg) > 0 {
		_ = cmd.Wait()
		p.ended()
		return fmt.Errorf("starting %s: %s", spec.Args[0], msg)
	}
	return nil
}

// ended closes the lifeline once the agent has ended, and waits for the write of its input to give up.
func (p *shimPipes) ended() {
	if p == nil {
		return
	}
	p.closeLifeline()
	if p.wrote != nil {
		<-p.wrote
	}
}

// cancelling makes the process's cancellation (its context's end) kill it: without the shim, its group gets SIGTERM
// and after the grace SIGKILL; under the shim, the shim gets SIGTERM, which it passes on, and after the grace the end
// of its lifeline. The returned func stops the timers that follow.
func (l *Local) cancelling(cmd *exec.Cmd, pipes *shimPipes) (stop func()) {
	var killer, lastResort *time.Timer
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		if pipes == nil {
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			killer = time.AfterFunc(l.cfg.KillGrace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
			return nil
		}
		// The shim passes SIGTERM on to everything below it; after the grace, the end of its lifeline makes it kill
		// all of it. Only a shim that cannot act (stopped) needs its group killed, the shim with it.
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		killer = time.AfterFunc(l.cfg.KillGrace, pipes.closeLifeline)
		lastResort = time.AfterFunc(2*l.cfg.KillGrace+shim.KillWait, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		return nil
	}
	// Cancel runs on os/exec's goroutine, which Wait waits for: after Wait, the timers are read safely.
	return func() {
		for _, t := range []*time.Timer{killer, lastResort} {
			if t != nil {
				t.Stop()
			}
		}
	}
}

// Release frees what the sandbox holds for a run. A local process holds nothing once it has exited.
func (l *Local) Release(ctx context.Context, runID string, final bool) error {
	if final {
		killRunProcesses(runID) // anything of the run's agents that outlived them (a crash, a daemon they forked)
	}
	return nil
}
