//go:build !linux

package workspace

import "os/exec"

// dieWithOrch has no kernel support here: a git command outlives an orch that died while it ran.
func dieWithOrch(*exec.Cmd) {}
