//go:build !linux

package sandbox

import (
	"os/signal"
	"syscall"
	"time"
)

// raise kills the process with sig where the Go runtime lets it (SIGTERM, SIGINT, SIGHUP, SIGKILL); for other
// signals the shim exits with 128+sig, as a shell reports them.
func raise(sig syscall.Signal) {
	signal.Reset(sig)
	_ = syscall.Kill(syscall.Getpid(), sig)
	time.Sleep(time.Second)
}
