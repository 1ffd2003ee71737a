package main

import (
	"os/exec"
	"syscall"
)

// stopWithParent has the kernel stop the Redis this program started if the program dies without stopping it.
func stopWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
