package shim

import (
	"syscall"
	"time"
	"unsafe"
)

// setSubreaper makes the calling process the child subreaper of everything it starts (prctl(2),
// PR_SET_CHILD_SUBREAPER, Linux 3.4): a descendant whose parent dies is handed to it instead of to init.
func setSubreaper() error {
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0, 0, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// raise kills the process with sig. The Go runtime handles most signals itself (SIGUSR1 is ignored, SIGSEGV sent by
// kill is ignored, SIGABRT dumps goroutines and exits 2), so the signal's default action is restored behind its back
// first: the kernel then ends the process as it ended the agent.
func raise(sig syscall.Signal) {
	// struct sigaction with SIG_DFL (0) and nothing else set: all zeros, whatever the architecture's layout, and
	// larger than any of them.
	var dfl [4]uint64
	if sig != syscall.SIGKILL && sig != syscall.SIGSTOP { // whose action is the kernel's alone
		if _, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)),
			0, 8, 0, 0); errno != 0 {
			return
		}
	}
	_ = syscall.Kill(syscall.Getpid(), sig)
	time.Sleep(time.Second) // delivery is asynchronous; a signal that does not kill falls through
}

// DieWithParent has the kernel send sig to the process when the thread that started it exits: orch's death, as long
// as that thread stays locked to its goroutine until the process has ended (a Go runtime thread otherwise may exit
// under it, golang/go#27505).
func DieWithParent(a *syscall.SysProcAttr, sig syscall.Signal) { a.Pdeathsig = sig }
