//go:build !unix

package localredis

import "os"

// tryLock has no advisory locks to use here: the state directory is assumed to be used by one orch at a time.
func tryLock(f *os.File) (bool, error) { return true, nil }

func unlock(f *os.File) {}
