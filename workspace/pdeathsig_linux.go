package workspace

import (
	"os/exec"
	"syscall"
)

// dieWithOrch has the kernel kill cmd when the thread that starts it exits: orch's end, SIGKILL included, as long as
// that thread stays locked to its goroutine until cmd has ended (a Go runtime thread otherwise may exit under it,
// golang/go#27505). A git command orch no longer waits for must not go on writing in a run's git directory, or
// pushing, by itself while another worker takes the run over. Go sets the signal after it changed the credentials
// (asOwner), which would otherwise clear it (prctl(2), PR_SET_PDEATHSIG).
func dieWithOrch(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
