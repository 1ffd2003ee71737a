//go:build !unix

package workspace

import (
	"os/exec"
	"syscall"
)

func asOwner(string) *syscall.SysProcAttr { return nil }

func giveTo(string, string) error { return nil }

const oNoFollow = 0

func inGroup(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
