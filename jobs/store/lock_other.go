//go:build !unix

package store

import "os"

// lockFile does nothing where flock does not exist: one orch process at a time writes a state dir's archive.
func lockFile(*os.File) error { return nil }

func unlockFile(*os.File) {}
