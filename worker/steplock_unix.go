//go:build unix

package worker

import (
	"errors"
	"os"
	"syscall"
)

// tryLockStep takes an exclusive advisory lock on f without waiting; false means another open file holds it (in this
// process or another). The kernel drops the lock when its holder dies.
func tryLockStep(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

func unlockStep(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
