//go:build !linux

package shim

import (
	"errors"
	"os/signal"
	"syscall"
	"time"
)

// setSubreaper fails where the kernel has no child subreapers: the shim then ends its agent alone, and the agent's
// process group goes with sandbox.Local.Exec's kill.
func setSubreaper() error { return errors.New("no child subreaper on this platform") }

// raise kills the process with sig where the Go runtime lets it (SIGTERM, SIGINT, SIGHUP, SIGKILL); for other
// signals the shim exits with 128+sig, as a shell reports them.
func raise(sig syscall.Signal) {
	signal.Reset(sig)
	_ = syscall.Kill(syscall.Getpid(), sig)
	time.Sleep(time.Second)
}

// DieWithParent has no kernel support here: the shim's check of its parent, and the Docker backend's reaper, cover
// crashed workers.
func DieWithParent(a *syscall.SysProcAttr, sig syscall.Signal) {}
