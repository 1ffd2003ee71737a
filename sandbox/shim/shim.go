// Package shim is the sandbox's shim: the process between orch and an agent below which everything the agent starts
// stays, and which kills all of it when the agent ends and when orch dies. It imports the standard library alone, so
// that the program that is nothing but the shim (cmd/orch-shim) starts at the cost of a small Go program.
package shim

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Command is the hidden first argument that makes the orch binary the sandbox shim (Run). The command orch-shim is
// the shim alone, without it: a small program that starts in about a millisecond where the orch binary takes tens.
const Command = "sandbox-shim"

// Protocol is the version of the shim's command line and of what it says on its report pipe and exit statuses. orch
// runs an orch-shim only if it prints the same (orch-shim -protocol): one installed from another release of orch
// might read its command line otherwise.
const Protocol = "orch-shim 1"

// The shim stands between orch and an agent process, in both sandboxes, so that everything the agent starts ends
// with it. One mechanism, two ends:
//
//   - Everything the agent starts stays below the shim. The shim is a child subreaper (prctl PR_SET_CHILD_SUBREAPER):
//     a process whose parent dies is handed to the shim, not to init, so a double fork, a new session (setsid), a
//     new process group or a cleared environment changes nothing; all of them are still the shim's descendants,
//     found through /proc.
//   - When the agent exits, the shim kills every descendant it has (killDescendants: SIGKILL, looked for again until
//     none is left), then ends as the agent ended. When orch goes first, it does the same at once.
//
// How it learns that orch is gone: its standard input is a lifeline. orch writes the agent's input (sandbox.Spec.Stdin,
// announced by -stdin N) and then keeps its end open, writing nothing more, for as long as it waits for the agent;
// the shim hands those N bytes to the agent on a pipe of its own and reads on. End of file or an error there means
// the other end was closed: by the kernel, when the worker died (any death, SIGKILL included: the kernel closes a
// dead process's descriptors, and in Docker the engine closes an exec's stdin when the connection that attached it
// drops); or by orch on purpose, to stop the agent. Either way the shim kills everything below it. The lifeline
// needs no parent-death signal, no poll of the parent, and works where the shim's parent is in another PID namespace
// (an exec's parent is the engine's, outside the container).
//
// Signals: SIGTERM, SIGINT and SIGHUP sent to the shim are passed on to every descendant (a timeout's polite stop,
// with a grace before the lifeline is closed), and the shim waits for the agent as before.
//
// Its command line is the shim prefix followed by
//
//	-stdin N [-user UID:GID] [-report] -- PATH ARGV0 [ARG...]
//
// PATH is the program (looked up in PATH when it has no slash), run with ARGV0 and the arguments. -user (the local
// sandbox when orch runs as root) runs the agent as that uid:gid with no supplementary groups, while the shim stays
// orch's user: the agent cannot kill the process that will kill what it leaves. -report says that file descriptor 3
// is a pipe to report a failure to start the program on, closed once the program runs; without it the failure is
// written to stdout after StartFailed. Either way the shim then exits CannotStart, and orch tells "could not
// run" (an error) from "ran and failed" (an exit status).
//
// What the shim does not catch: a process that asks something outside the agent's tree to run it (a daemon it
// talks to, a service manager, cron, a container engine) is that daemon's descendant, not the shim's; a shim that
// is killed hands its descendants to init, and one that is stopped kills nothing. sandbox.Local.Exec and the Docker backend
// each have a backstop for those two (see there).

// ReportFD is the file descriptor on which the shim reports a failure to start the program (-report).
const ReportFD = 3

// StartFailed starts what the shim writes on stdout when it cannot start the program and has no report pipe.
const StartFailed = "orch sandbox-shim: cannot start "

// Exit statuses of the shim itself, when there is no agent's status to pass on.
const (
	Usage       = 125 // a command line orch did not write
	CannotStart = 127 // as a shell says of a command it cannot run
)

// KillWait bounds how long the shim keeps killing: past it, what is left is stuck in the kernel, and the shim
// ends anyway rather than keep orch waiting for ever.
const KillWait = 10 * time.Second

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (linux/prctl.h), which package syscall does not name.
const prSetChildSubreaper = 36

// Run runs the shim with the arguments that follow the shim prefix, and returns the exit status to end with. It
// does not return when the agent was killed by a signal: the shim dies of the same signal, so that orch sees how the
// agent ended. cmd/orch runs it for its hidden command Command, and cmd/orch-shim for any arguments.
func Run(args []string) int {
	// Before anything else: from here on a polite stop reaches the agent's whole tree, not the shim alone.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// Children end: the agent, and the orphans handed to the shim, which it must collect.
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)

	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	stdinLen := fs.Int64("stdin", 0, "")
	user := fs.String("user", "", "")
	reportFD := fs.Bool("report", false, "")
	parseErr := fs.Parse(args)
	var report *os.File // -report: the pipe on which orch reads why the program could not be started
	if *reportFD {
		report = os.NewFile(ReportFD, "shim report")
		syscall.CloseOnExec(ReportFD) // the agent must not hold it open
	}
	fail := func(format string, a ...any) int {
		w := io.Writer(os.Stderr)
		if report != nil {
			w = report
		}
		fmt.Fprintf(w, format, a...)
		return Usage
	}
	failStart := func(err error) int {
		if report != nil {
			fmt.Fprint(report, err)
		} else {
			fmt.Fprint(os.Stdout, StartFailed, err)
		}
		return CannotStart
	}
	rest := fs.Args()
	if parseErr != nil || len(rest) < 2 || *stdinLen < 0 {
		return fail("sandbox shim: want -stdin N [-user UID:GID] [-report] -- PATH ARGV0 [ARG...], got %q", args)
	}
	attr := &syscall.SysProcAttr{}
	if *user != "" {
		cred, err := parseCredential(*user)
		if err != nil {
			return fail("sandbox shim: -user: %v", err)
		}
		attr.Credential = cred
	}
	// Everything the agent starts is handed to the shim when its parent dies. Without it (a kernel before 3.4, or
	// not Linux) only the agent's process group can be killed, by orch.
	subreaper := setSubreaper() == nil

	path := rest[0]
	if !strings.Contains(path, "/") {
		p, err := exec.LookPath(path)
		if err != nil {
			return failStart(err)
		}
		path = p
	}
	in, toAgent, err := os.Pipe()
	if err != nil {
		return failStart(err)
	}
	// The agent dies with the shim, should the shim be killed on its own: the thread that starts it stays locked
	// until the end (the parent-death signal follows the thread, golang/go#27505).
	DieWithParent(attr, syscall.SIGKILL)
	runtime.LockOSThread()
	agent, err := os.StartProcess(path, rest[1:], &os.ProcAttr{Files: []*os.File{in, os.Stdout, os.Stderr}, Sys: attr})
	in.Close()
	if err != nil {
		// What os/exec would say: "fork/exec PATH: no such file or directory".
		return failStart(err)
	}
	if report != nil {
		report.Close() // orch reads EOF: the program runs
	}

	gone := make(chan struct{}) // the lifeline ended
	go readLifeline(os.Stdin, *stdinLen, toAgent, gone)

	var status syscall.WaitStatus
	ended := false
	// reap collects every child that has ended, and says whether the shim has children left.
	reap := func() (children bool) {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			switch {
			case err == syscall.EINTR:
				continue
			case err != nil: // ECHILD: none at all
				return false
			case pid == 0: // some, all running
				return true
			case pid == agent.Pid:
				status, ended = ws, true
			}
		}
	}
	for !ended {
		select {
		case sig := <-sigs:
			if subreaper {
				signalDescendants(sig.(syscall.Signal))
			} else {
				_ = agent.Signal(sig)
			}
		case <-chld:
			reap()
		case <-gone:
			// orch is gone, or stops the agent: nothing supervises what runs below any more.
			gone = nil
			killDescendants(reap, KillWait)
		}
	}
	// What the agent left running goes with it, now: before it keeps orch's pipes open and orch waiting.
	killDescendants(reap, KillWait)
	runtime.UnlockOSThread()
	return passOn(status)
}

// readLifeline hands the first n bytes of the shim's stdin to the agent, closes the agent's stdin, and reads on
// until the stream ends, which it reports by closing gone. The input is read whole before it is written, so that
// the end of the lifeline is seen even while an agent that does not read its input keeps the write blocked.
func readLifeline(stdin io.Reader, n int64, toAgent *os.File, gone chan<- struct{}) {
	defer close(gone)
	input := make([]byte, n)
	if _, err := io.ReadFull(stdin, input); err != nil {
		toAgent.Close()
		return // orch went while it was writing
	}
	go func() {
		// An agent that exits without reading it all ends this with EPIPE, which means nothing.
		_, _ = toAgent.Write(input)
		toAgent.Close()
	}()
	// Nothing more is written: anything that comes is read and dropped, until the end.
	_, _ = io.Copy(io.Discard, stdin)
}

// parseCredential reads "uid:gid" into a credential with no supplementary groups.
func parseCredential(s string) (*syscall.Credential, error) {
	u, g, ok := strings.Cut(s, ":")
	uid, uerr := strconv.ParseUint(u, 10, 32)
	gid, gerr := strconv.ParseUint(g, 10, 32)
	if !ok || uerr != nil || gerr != nil {
		return nil, fmt.Errorf("%q: want a numeric uid:gid", s)
	}
	// An empty Groups with NoSetGroups false drops every supplementary group orch's user had.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// passOn ends the shim as the agent ended: with its exit status, or killed by its signal.
func passOn(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		// No core dump of the shim besides the agent's own.
		_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
		raise(ws.Signal())
		// Still here: a signal whose default action does not end a process (it cannot have ended the agent).
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
