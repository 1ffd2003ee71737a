//go:build !linux

package sandbox

import "syscall"

// dieWithParent has no kernel support here; the reaper of the Docker backend covers crashed workers there.
func dieWithParent(a *syscall.SysProcAttr) {}
