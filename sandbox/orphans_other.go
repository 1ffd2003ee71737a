//go:build !linux

package sandbox

import (
	"syscall"
	"time"
)

// killRunProcesses finds nothing where there is no /proc: an agent whose orch died keeps running there until it ends.
func killRunProcesses(runID string) int { return 0 }

// killMarked finds nothing where there is no /proc.
func killMarked(mark string) int { return 0 }

// killDescendants finds nothing where there is no /proc: the shim's agent ends alone, and what it started goes
// with the process group Local.Exec kills.
func killDescendants(reap func() (children bool), wait time.Duration) (killed, left int) {
	reap()
	return 0, 0
}

// signalDescendants finds nothing where there is no /proc.
func signalDescendants(sig syscall.Signal) {}
