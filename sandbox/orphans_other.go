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
