//go:build unix

package store

import (
	"os"
	"syscall"
)

// lockFile waits for an exclusive advisory lock on f; the kernel drops it when the holder dies.
func lockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }

func unlockFile(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
