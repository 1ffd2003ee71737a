//go:build unix

package flock

import (
	"os"
	"path/filepath"
	"testing"
)

// Two open files of one path exclude each other, in one process as between two: TryLock finds the lock held until
// its holder lets it go, and Lock then has it at once.
func TestOneHolderAtATime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	a, b := open(), open()
	if ok, err := TryLock(a); !ok || err != nil {
		t.Fatalf("the first: %v, %v", ok, err)
	}
	if ok, err := TryLock(b); ok || err != nil {
		t.Fatalf("the second, while the first holds it: %v, %v", ok, err)
	}
	Unlock(a)
	if err := Lock(b); err != nil {
		t.Fatal(err)
	}
	if ok, err := TryLock(a); ok || err != nil {
		t.Fatalf("the first, while the second holds it: %v, %v", ok, err)
	}
}
