package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/orchrun/orch/sandbox/shim"
)

const (
	// setupTimeout bounds what comes before an exec: finding the run's container, creating, claiming, starting it.
	// No image is pulled here (the image was checked at start), so a minute covers a loaded engine.
	setupTimeout = time.Minute
	// killTimeout bounds a kill or an inspect made after the caller's context is gone.
	killTimeout = 15 * time.Second
	// streamGrace is how long the output stream may stay open after a timeout killed the container.
	streamGrace = 5 * time.Second
	// ociExecFailed starts what the engine writes instead of the process's output when it cannot start it.
	ociExecFailed = "OCI runtime exec failed"
)

// target is a started container to exec into.
type target struct {
	id, name string
	// fresh means the container was created, claimed or (re)started for this Exec: nothing has run yet in its
	// memory cgroup, whose OOM-kill counter is therefore 0.
	fresh bool
}

// Exec runs spec in the run's container, creating, claiming from the pool or restarting it first when needed, and
// waits for it. The process works in Spec.Dir, the workspace, bind-mounted at the same path, as the user the
// container was created with: DockerConfig.User, or the owner of the workspace at the run's first Exec. When the
// workspace is a linked git worktree, the repository's git directory is mounted too (see gitDirs). onLine, if not
// nil, receives each stdout line as it is printed (the slice is only valid during the call).
//
// A process that ran and exited non-zero is not an error; an error means it could not be run at all. A timeout
// (Spec.Timeout) or a cancelled ctx kills the run's container, and with it whatever else runs in it; the next Exec
// of the run starts it again. The first is reported as Result.TimedOut, the second as ctx's error.
//
// With DockerConfig.OrchBinary (a static orch, mounted at OrchPath), the process runs under the shim (RunShim):
// everything it starts, however it detaches, is killed when it exits, and when the worker dies (the engine closes
// the exec's stdin when the connection that attached it drops, and the shim reads that as the worker's death). An
// exec that ends by a signal has its container killed as well, since the agent may have killed its shim. Without
// the binary (a dynamically linked orch cannot run in an arbitrary image) there is no shim: what the agent leaves
// running in the background lives on in the run's container, beside the run's next tasks, until the run is parked
// or ends, or a timeout kills the container; and the exec of a worker that died runs on until the run is taken up
// again (Spec.Recovered removes the container) or Reap removes it.
func (d *Docker) Exec(ctx context.Context, spec Spec, onLine func([]byte)) (Result, error) {
	if err := checkSpec(spec); err != nil {
		return Result{}, err
	}
	if err := checkRunID(spec.RunID); err != nil {
		return Result{}, err
	}
	if !filepath.IsAbs(spec.Dir) {
		return Result{}, fmt.Errorf("sandbox: docker needs the workspace as an absolute path, got %q", spec.Dir)
	}
	dir := filepath.Clean(spec.Dir)
	if spec.Recovered {
		// The dead worker's exec may still run in the run's container, or in its task's own: start from a new one
		// (the workspace is mounted, nothing of the run's work is in the container).
		if err := d.Release(ctx, spec.RunID, true); err != nil {
			return Result{}, fmt.Errorf("removing the container a dead worker left: %w", err)
		}
	}
	if d.cfg.PerTask {
		return d.execPerTask(ctx, spec, dir, onLine)
	}
	t, err := d.runContainer(ctx, spec, dir)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Result{}, err
	}
	return d.execIn(ctx, t, spec, dir, onLine)
}

// runContainer returns the run's container, started. It looks the container up by name on every call, so a run
// resumed by another worker finds the container the first one made.
func (d *Docker) runContainer(ctx context.Context, spec Spec, dir string) (target, error) {
	runID := spec.RunID
	unlock, err := d.runs.lock(ctx, runID)
	if err != nil {
		return target{}, err
	}
	defer unlock()
	// Finding, making or starting the container is not the task's work: an engine that stops answering is an error
	// within setupTimeout, not after the task's timeout.
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	name := runContainerName(runID)
	fresh := false
	for range 4 {
		info, err := d.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
		n, nerr := d.needsOf(dir, spec.ReadOnly)
		if nerr != nil {
			return target{}, nerr
		}
		if cerrdefs.IsNotFound(err) {
			made, err := d.makeRunContainer(ctx, spec, dir, name, n)
			if err != nil {
				return target{}, err
			}
			fresh = made
			continue
		}
		if err != nil {
			return target{}, fmt.Errorf("inspecting container %s: %w", name, err)
		}
		c := info.Container
		if c.Config == nil || !d.mine(c.Config.Labels) {
			// Run ids are unique within a deployment: this is a container left by the same deployment before it had
			// its instance (an upgrade), or a foreign one by chance. Neither is this backend's to take or remove.
			return target{}, fmt.Errorf("sandbox: container %s is not this deployment's (its %s is not %q); remove it (docker rm -f %s) to let the run go on", name, LabelInstance, d.cfg.Instance, name)
		}
		if !d.mountsAsMade(c.Mounts, dir, n) || c.Config.Labels[LabelBinary] != d.binary {
			// Made for other directories (the run's workspace moved), by an older orch that mounted more, or with
			// another orch binary: the workspace is on the host, so a container made now loses nothing of the run's
			// work.
			d.log.Warn("docker: the run's container does not mount what the run needs now; making it again", "name", name)
			if err := d.remove(ctx, c.ID); err != nil {
				return target{}, err
			}
			continue
		}
		running, started, err := d.bringUp(ctx, &c, name)
		switch {
		case err != nil:
			return target{}, err
		case running:
			return target{id: c.ID, name: name, fresh: fresh}, nil
		case started:
			fresh = true
		}
	}
	return target{}, fmt.Errorf("sandbox: container %s keeps changing under us (another worker running the same run?)", name)
}

// makeRunContainer makes the run's container, which is not there: claimed from the warm pool when one fits, else
// created. made is false when another worker made it meanwhile (the name is taken), or the pool's claim failed and
// nothing was made: the caller looks again.
func (d *Docker) makeRunContainer(ctx context.Context, spec Spec, dir, name string, n needs) (made bool, err error) {
	if d.pool != nil && d.pool.fits(dir, n) {
		id, err := d.pool.claim(ctx, name)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("docker: claiming a pool container failed; creating one", "run_id", spec.RunID, "err", err)
		}
		if id != "" || errors.Is(err, errNameTaken) {
			return id != "", nil
		}
	}
	_, err = d.create(ctx, createSpec{name: name, workspace: dir, needs: n,
		labels: map[string]string{LabelRunID: spec.RunID, LabelTaskID: spec.TaskID}})
	if err != nil && !cerrdefs.IsConflict(err) { // a conflict: another worker made it meanwhile
		return false, err
	}
	return err == nil, nil
}

// bringUp moves the run's container c towards running: running says it runs now; started, that it was started here
// (look again); neither, that it was unpaused or removed (look again).
func (d *Docker) bringUp(ctx context.Context, c *container.InspectResponse, name string) (running, started bool, err error) {
	switch {
	case c.State == nil:
		return false, false, fmt.Errorf("inspecting container %s: no state", name)
	case c.State.Paused: // by hand: an exec into a paused container fails
		if _, err := d.cli.ContainerUnpause(ctx, c.ID, client.ContainerUnpauseOptions{}); err != nil {
			return false, false, fmt.Errorf("unpausing container %s: %w", name, err)
		}
	case c.State.Running:
		return true, false, nil
	case c.State.Dead || c.State.Status == "removing":
		if err := d.remove(ctx, c.ID); err != nil {
			return false, false, err
		}
	default: // created or exited: a parked run, or a timeout killed it
		if _, err := d.cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
			return false, false, fmt.Errorf("starting container %s: %w", name, err)
		}
		return false, true, nil
	}
	return false, false, nil
}

// within reports whether dir is root or inside it.
func within(root, dir string) bool {
	return root != "" && (dir == root || strings.HasPrefix(dir, root+string(filepath.Separator)))
}

func (d *Docker) execPerTask(ctx context.Context, spec Spec, dir string, onLine func([]byte)) (Result, error) {
	n, err := d.needsOf(dir, spec.ReadOnly)
	if err != nil {
		return Result{}, err
	}
	name := fmt.Sprintf("%s%s-t%s-%s", namePrefix, spec.RunID, nameSafe(spec.TaskID), randomHex(3))
	cctx, cancel := context.WithTimeout(ctx, setupTimeout)
	id, err := d.create(cctx, createSpec{name: name, workspace: dir, needs: n,
		labels: map[string]string{LabelRunID: spec.RunID, LabelTaskID: spec.TaskID}})
	cancel()
	defer func() {
		// By name: a create cut short by ctx may still have made the container.
		d.ooms.forget(id)
		if err := d.remove(context.WithoutCancel(ctx), name); err != nil {
			d.log.Warn("docker: removing a task's container", "name", name, "err", err)
		}
	}()
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Result{}, err
	}
	return d.execIn(ctx, target{id: id, name: name, fresh: true}, spec, dir, onLine)
}

// nameSafe turns a task id into something a container name may hold.
func nameSafe(s string) string {
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
	if len(s) > 40 {
		s = s[:40]
	}
	if s == "" {
		s = "_"
	}
	return s
}

// execIn runs the process in a started container: the exec is created and attached, watched for its deadline and
// its context, fed its input while its output is read, and judged from how it ended.
func (d *Docker) execIn(ctx context.Context, t target, spec Spec, dir string, onLine func([]byte)) (Result, error) {
	oomBase := int64(0)
	if !t.fresh {
		oomBase = d.oomCount(ctx, t.id)
	}
	// With orch's binary in the container, the agent runs under the shim (RunShim): everything it starts ends with
	// the exec, and with the worker, whose connection holds the shim's lifeline (its stdin, so always attached).
	// Without it, see Exec.
	shimmed := d.cfg.OrchBinary != ""
	execID, att, start, err := d.attachExec(ctx, t, spec, dir, shimmed)
	if err != nil {
		return Result{}, err
	}
	defer att.Close()
	w := d.watchExec(ctx, t, spec.Timeout, att)
	wrote := feedExec(att, spec.Stdin, shimmed)
	stdout := newOutput(onLine)
	stderr := &tailBuffer{max: stderrTail}
	_, copyErr := stdcopy.StdCopy(stdout, stderr, att.Reader)
	w.stop()
	select {
	case <-wrote:
	default:
		att.Close() // the output has ended: so has the process, and a write it never read ends here
		<-wrote
	}
	stdout.flush()

	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
	defer cancel()
	res := Result{
		Stderr:      stderr.buf,
		StderrBytes: stderr.total,
		Duration:    time.Since(start),
		ExitCode:    d.execExitCode(ictx, execID),
		TimedOut:    w.timedOut.Load(),
	}
	stdout.fill(&res)
	if w.cancelled.Load() || ctx.Err() != nil {
		return res, ctx.Err()
	}
	if res.TimedOut {
		res.Signal = "killed"
		return res, nil
	}
	if copyErr = outputEnd(copyErr, res.ExitCode); copyErr != nil {
		return res, fmt.Errorf("reading the output of %s: %w", spec.Args[0], copyErr)
	}
	return d.judgeExec(ictx, t, spec, shimmed, execID, oomBase, start, res)
}

// outputEnd is what the end of an exec's output stream means, given the exit code the engine reported (-1 when it
// could not tell). The engine closes the attached connection when the process ends; when the process never read all
// of its input, Linux reports that close to the reader as a reset (the engine's side still held bytes orch had
// written), after delivering every byte of output that came before it. With the exec ended, that reset is the end
// of a whole output; with no exit code, it is an engine that went away, and an error.
func outputEnd(copyErr error, exitCode int) error {
	if errors.Is(copyErr, syscall.ECONNRESET) && exitCode >= 0 {
		return nil
	}
	return copyErr
}

// attachExec creates the exec of spec in t and attaches to it; start is when the process may have started.
func (d *Docker) attachExec(ctx context.Context, t target, spec Spec, dir string, shimmed bool) (
	execID string, att client.ExecAttachResult, start time.Time, err error) {
	cmd := spec.Args
	if shimmed {
		cmd = append([]string{OrchPath, ShimCommand, "-stdin", strconv.Itoa(len(spec.Stdin)), "--", spec.Args[0]},
			spec.Args...)
	}
	// No User: an exec runs as the container's, the one it was created for (the workspace's owner, or cfg.User).
	ex, err := d.cli.ExecCreate(ctx, t.id, client.ExecCreateOptions{
		AttachStdin:  shimmed || spec.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
		Env:          mergeEnv(d.cfg.Env, spec.Env),
		WorkingDir:   dir,
		Cmd:          cmd,
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", att, start, ctx.Err()
		}
		return "", att, start, fmt.Errorf("creating exec in %s: %w", t.name, err)
	}
	start = time.Now()
	att, err = d.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		if ctx.Err() != nil {
			// The engine may have started the process before the handshake was cut short.
			d.kill(context.WithoutCancel(ctx), t)
			return "", att, start, ctx.Err()
		}
		return "", att, start, fmt.Errorf("starting exec in %s: %w", t.name, err)
	}
	return ex.ID, att, start, nil
}

// execWatch stops an exec that outlives its deadline or its context.
type execWatch struct {
	done                chan struct{}
	wg                  sync.WaitGroup
	timedOut, cancelled atomic.Bool
}

// watchExec watches the attached exec until stop: past timeout (0: none), or when ctx ends, it kills the container.
func (d *Docker) watchExec(ctx context.Context, t target, timeout time.Duration, att client.ExecAttachResult) *execWatch {
	w := &execWatch{done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				d.log.Error("docker: panic watching an exec", "panic", r)
				att.Close() // the exec can no longer be stopped on time: do not wait for it
			}
		}()
		var deadline <-chan time.Time
		if timeout > 0 {
			tm := time.NewTimer(timeout)
			defer tm.Stop()
			deadline = tm.C
		}
		select {
		case <-w.done:
			return
		case <-deadline:
			w.timedOut.Store(true)
		case <-ctx.Done():
			w.cancelled.Store(true)
		}
		// The engine cannot signal one exec's process tree, only the container: killing it is the one sure way to
		// stop everything the agent started. The next Exec of the run starts it again.
		d.kill(context.WithoutCancel(ctx), t)
		if w.cancelled.Load() {
			att.Close()
			return
		}
		select {
		case <-w.done:
		case <-time.After(streamGrace):
			att.Close()
		}
	}()
	return w
}

// stop ends the watch once the exec's output has ended, and waits for the watcher.
func (w *execWatch) stop() {
	close(w.done)
	w.wg.Wait()
}

// feedExec writes the exec's input while its output is read (either may fill a pipe and wait for the other); the
// channel is closed when the write is over. Without the shim the write side is then closed: the engine closes the
// process's stdin, which reads EOF. With it, the shim ends the agent's input itself after the announced length, and
// the write side stays open until the exec has ended: its end (this process dying, or the connection dropping) is
// the end of the shim's lifeline. A process that exits without reading it all ends the write with an error that
// means nothing.
func feedExec(att client.ExecAttachResult, stdin []byte, shimmed bool) <-chan struct{} {
	wrote := make(chan struct{})
	if stdin == nil && !shimmed {
		close(wrote)
		return wrote
	}
	go func() {
		defer close(wrote)
		if _, err := att.Conn.Write(stdin); err == nil && !shimmed {
			_ = att.CloseWrite()
		}
	}()
	return wrote
}

// judgeExec tells what the end of an exec that ran to its end means: a program that could not start, a process the
// OOM killer killed, or one killed by a signal under the shim (then the container goes).
func (d *Docker) judgeExec(ctx context.Context, t target, spec Spec, shimmed bool, execID string, oomBase int64,
	start time.Time, res Result) (Result, error) {
	// A program that cannot be started (missing, not executable) is not a process that ran: the engine says so on
	// the output stream and exits 126 or 127.
	if (res.ExitCode == 126 || res.ExitCode == 127) && bytes.HasPrefix(res.Stdout, []byte(ociExecFailed)) {
		return res, fmt.Errorf("starting %s: %s", spec.Args[0], bytes.TrimSpace(res.Stdout))
	}
	if shimmed && res.ExitCode == shim.CannotStart && bytes.HasPrefix(res.Stdout, []byte(shim.StartFailed)) {
		return res, fmt.Errorf("starting %s: %s", spec.Args[0], bytes.TrimSpace(res.Stdout[len(shim.StartFailed):]))
	}
	// 137 is 128+SIGKILL, what the kernel's OOM killer sends; -1 is a process whose end the engine missed.
	if res.ExitCode == 137 || res.ExitCode == -1 {
		if d.oomKilled(ctx, t, execID, oomBase, start) {
			res.OOMKilled = true
			res.Signal = "killed"
		}
	}
	if shimmed && (res.ExitCode > 128 || res.ExitCode == -1) {
		// Killed by a signal, as the engine tells it: the agent (the shim passes that on, having killed everything
		// below it), or the shim itself, which the agent can do (it runs as the same user). Nothing then killed what
		// the agent left, and nothing tells the two apart: the container goes, with everything in it; the run's next
		// Exec starts it again.
		d.kill(ctx, t)
	}
	return res, nil
}

// mergeEnv returns base with over applied: a key in over replaces the same key in base.
func mergeEnv(base, over []string) []string {
	out := make([]string, 0, len(base)+len(over))
	at := make(map[string]int, len(base)+len(over))
	for _, kv := range append(append([]string(nil), base...), over...) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := at[k]; ok {
			out[i] = kv
			continue
		}
		at[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// kill kills the container's processes; the container stays, stopped.
func (d *Docker) kill(ctx context.Context, t target) {
	ctx, cancel := context.WithTimeout(ctx, killTimeout)
	defer cancel()
	if _, err := d.cli.ContainerKill(ctx, t.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil &&
		!cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) { // conflict: it is not running any more
		d.log.Warn("docker: killing container", "name", t.name, "err", err)
	}
}

// execExitCode waits briefly for the engine to record the exit: it does so just before it closes the streams, but
// not always for the processes of a container that was killed under them.
func (d *Docker) execExitCode(ctx context.Context, execID string) int {
	deadline := time.Now().Add(2 * time.Second)
	for {
		r, err := d.cli.ExecInspect(ctx, execID, client.ExecInspectOptions{})
		if err != nil {
			return -1
		}
		if !r.Running {
			return r.ExitCode
		}
		if time.Now().After(deadline) {
			return -1
		}
		select {
		case <-ctx.Done():
			return -1
		case <-time.After(20 * time.Millisecond):
		}
	}
}
