package main

import (
	"os"
	"os/exec"
	"syscall"
)

// stopWithParent has the kernel stop the Redis this program started if the program dies without stopping it.
func stopWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// peakRSS is the peak resident set size of an exited process, in bytes: ru_maxrss, which Linux gives in KiB.
func peakRSS(ps *os.ProcessState) (int64, bool) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, false
	}
	return ru.Maxrss << 10, true
}
