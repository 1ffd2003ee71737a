package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// The shim stands between orch and a local agent (LocalConfig.Shim). It leads the agent's process group and ends with
// the agent, and as soon as the orch process that started it dies, it kills everything the agent started: every
// process that carries the attempt's mark (markVar, in the environment, which descendants inherit), those that made a
// process group or a session of their own too, and its process group. Without it the kernel's parent-death signal
// reaches the agent alone, and the agent's children (a test suite, a build, a shell's background job) go on working
// in the workspace unsupervised while another worker takes the step over.
//
// How it learns of orch's death: orch starts it with SIGTERM as its parent-death signal and holds the thread that
// started it until it ends (Local.Exec), and the shim checks its parent on that signal and every shimPoll besides
// (where there is no parent-death signal, and in case one is lost). A SIGTERM while orch lives is orch's own, sent to
// the whole group to stop the agent (a timeout, a cancel): the agent hears it directly, and the shim waits for it.
//
// Its command line is the shim prefix followed by what Local.Exec appends: orch's pid, the attempt's mark
// (KEY=VALUE), the program's resolved path, then the agent's argv. It reports a failure to start the program on file
// descriptor 3, which it closes once the program runs: Local.Exec reads it to tell "could not run" (an error) from
// "ran and failed" (an exit status).

// shimPoll is how often the shim checks that orch is still its parent.
const shimPoll = 250 * time.Millisecond

// shimReport is the file descriptor on which the shim reports a failure to start the program.
const shimReport = 3

// Exit statuses of the shim itself, when there is no agent's status to pass on.
const (
	shimUsage    = 125 // a command line Local.Exec did not write
	shimOrphaned = 126 // orch was already gone: nothing was started
)

// RunShim runs the shim with the arguments that follow the shim prefix, and returns the exit status to end with. It
// does not return when the agent was killed by a signal: the shim dies of the same signal, so that orch sees how the
// agent ended. cmd/orch runs it for its hidden command `orch sandbox-shim`.
func RunShim(args []string) int {
	// Before anything else: from here on, orch's death cannot kill the shim before it has killed the group.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	report := os.NewFile(shimReport, "shim report")
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(report, format, a...)
		return code
	}
	if len(args) < 4 {
		return fail(shimUsage, "sandbox shim: want PARENT_PID MARK PATH ARGV0 [ARG...], got %q", args)
	}
	parent, err := strconv.Atoi(args[0])
	if err != nil {
		return fail(shimUsage, "sandbox shim: parent pid %q: %v", args[0], err)
	}
	// The attempt's mark is in the environment the shim and the agent got; the agent's descendants inherit it.
	mark := args[1]
	syscall.CloseOnExec(shimReport) // the agent must not hold it open
	if os.Getppid() != parent {
		return shimOrphaned
	}
	if syscall.Getpgrp() != os.Getpid() {
		// Local.Exec starts the shim as the leader of a new group; run any other way, it makes one, so that what it
		// kills is the agent's group and never its caller's.
		if err := syscall.Setpgid(0, 0); err != nil {
			return fail(shimUsage, "sandbox shim: making a process group: %v", err)
		}
	}
	cmd := &exec.Cmd{Path: args[2], Args: args[3:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{}}
	// The agent dies with the shim too, should the shim be killed on its own; the thread that starts it stays
	// locked for the same reason as in Local.Exec.
	dieWithParent(cmd.SysProcAttr, syscall.SIGKILL)
	runtime.LockOSThread()
	if err := cmd.Start(); err != nil {
		return fail(127, "%v", err) // what os/exec says: "fork/exec PATH: no such file or directory"
	}
	report.Close() // Local.Exec reads EOF: the program runs
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait() // its output goes straight to orch's pipes: only the status is left to collect
		close(done)
	}()
	tick := time.NewTicker(shimPoll)
	defer tick.Stop()
	for {
		select {
		case <-sigs:
		case <-tick.C:
		case <-done:
			runtime.UnlockOSThread()
			// What the agent left running goes with it (Local.Exec makes sure): now, before it keeps orch's pipes
			// open and orch waiting.
			killMarked(mark)
			return passOn(cmd.ProcessState)
		}
		if os.Getppid() != parent {
			// orch died: nothing supervises the agent any more. Everything marked goes, then the group with the
			// shim (and whatever in it cleared its environment).
			killMarked(mark)
			_ = syscall.Kill(-os.Getpid(), syscall.SIGKILL)
		}
	}
}

// passOn ends the shim as the agent ended: with its exit status, or killed by its signal.
func passOn(ps *os.ProcessState) int {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		// No core dump of the shim besides the agent's own.
		_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
		raise(ws.Signal())
		// Still here: a signal whose default action does not end a process (it cannot have ended the agent).
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
