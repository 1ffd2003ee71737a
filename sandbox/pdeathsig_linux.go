package sandbox

import "syscall"

// dieWithParent has the kernel send sig to the process when the thread that started it exits: orch's death, as long
// as that thread stays locked to its goroutine until the process has ended (a Go runtime thread otherwise may exit
// under it, golang/go#27505).
func dieWithParent(a *syscall.SysProcAttr, sig syscall.Signal) { a.Pdeathsig = sig }
