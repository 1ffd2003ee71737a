package sandbox

import "syscall"

// dieWithParent has the kernel kill the agent if orch itself dies without cleaning up (SIGKILL, a crash): the agent
// runs in its own process group, so nothing else would stop it.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
