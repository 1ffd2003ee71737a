//go:build !linux

package main

import "os/exec"

// stopWithParent has no kernel support here: an interrupted run may leave its Redis behind.
func stopWithParent(cmd *exec.Cmd) {}
