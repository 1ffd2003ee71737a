//go:build unix

// Package flock is orch's advisory file locks (flock(2)): exclusive, held by an open file, and dropped by the kernel
// when the process that holds them dies, so that a crashed orch never leaves anything locked. Where flock does not
// exist, nothing is locked: every lock is had at once.
package flock

import (
	"errors"
	"os"
	"syscall"
)

// Lock waits for the exclusive lock on f.
func Lock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }

// TryLock takes the exclusive lock on f without waiting; false means another open file holds it (in this process or
// another).
func TryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// Unlock lets the lock on f go.
func Unlock(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
