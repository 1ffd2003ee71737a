//go:build !unix

// Package flock is orch's advisory file locks (flock(2)): exclusive, held by an open file, and dropped by the kernel
// when the process that holds them dies, so that a crashed orch never leaves anything locked. Where flock does not
// exist, nothing is locked: every lock is had at once.
package flock

import "os"

// Lock has no lock to wait for here.
func Lock(*os.File) error { return nil }

// TryLock has no lock to take here: it is had at once.
func TryLock(*os.File) (bool, error) { return true, nil }

// Unlock has nothing to let go here.
func Unlock(*os.File) {}
