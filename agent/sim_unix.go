//go:build unix

package agent

import (
	"os/exec"
	"syscall"
)

// killGroupOnCancel puts sh in its own process group and kills the whole group on cancel: a reply's sh
// (go test, make) starts children that would otherwise outlive it and keep its output open.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
