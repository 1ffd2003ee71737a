//go:build !linux

package main

import (
	"os"
	"os/exec"
)

// stopWithParent has no kernel support here: an interrupted run may leave its Redis behind.
func stopWithParent(cmd *exec.Cmd) {}

// peakRSS is not measured here: ru_maxrss has another unit on each system, and none on some.
func peakRSS(ps *os.ProcessState) (int64, bool) { return 0, false }
