//go:build !linux

package sandbox

import "syscall"

// dieWithParent has no kernel support here: the shim's check of its parent, and the Docker backend's reaper, cover
// crashed workers.
func dieWithParent(a *syscall.SysProcAttr, sig syscall.Signal) {}
