//go:build !linux

package shim

import (
	"syscall"
	"time"
)

// killDescendants finds nothing where there is no /proc: the shim's agent ends alone, and what it started goes
// with the process group Local.Exec kills.
func killDescendants(reap func() (children bool), wait time.Duration) (killed, left int) {
	reap()
	return 0, 0
}

// signalDescendants finds nothing where there is no /proc.
func signalDescendants(sig syscall.Signal) {}

// Running reports whether process pid exists (without /proc, a zombie counts as running).
func Running(pid int) bool { return syscall.Kill(pid, 0) == nil }
