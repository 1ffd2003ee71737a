package localredis

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A full disk makes Sync and Close fail with an error naming the file they could not write; once there is room
// again, Sync works, and what was acknowledged is there.
func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("filling a disk needs a small file system of its own, and mounting one needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("unmounting %s: %v: %s", mnt, err, out)
		}
	})
	dir := filepath.Join(mnt, "state")
	filler := filepath.Join(mnt, "filler")
	fill := func() {
		t.Helper()
		f, err := os.Create(filler)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, chunk := range []int{64 << 10, 4 << 10, 512, 1} {
			for {
				if _, err := f.Write(make([]byte, chunk)); err != nil {
					if !errors.Is(err, syscall.ENOSPC) {
						t.Fatal(err)
					}
					break
				}
			}
		}
	}
	ctx := context.Background()
	big := strings.Repeat("x", 32<<10)
	journal := filepath.Join(dir, journalFile)

	e, logs := open(t, dir)
	defer e.Close()
	c := clientOf(t, e)
	c.Set(ctx, "before", "1", 0)
	mustSync(t, e)

	fill()
	if err := c.Set(ctx, "big1", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		err := e.Sync(ctx)
		if i == 0 {
			t.Logf("Sync: %v", err)
		}
		if err == nil || !strings.Contains(err.Error(), journal) || !strings.Contains(err.Error(), "no space left") {
			t.Fatalf("Sync on a full disk: %v", err)
		}
	}
	if n := strings.Count(logs.String(), "saving failed"); n != 1 {
		t.Errorf("the failure was logged %d times:\n%s", n, logs)
	}

	os.Remove(filler)
	mustSync(t, e)
	if !strings.Contains(logs.String(), "saving works again") {
		t.Errorf("log: %s", logs)
	}

	fill()
	c.Set(ctx, "big2", big, 0)
	c.Close()
	if err := e.Close(); err == nil || !strings.Contains(err.Error(), journal) {
		t.Fatalf("Close on a full disk: %v", err)
	} else {
		t.Logf("Close: %v", err)
	}
	os.Remove(filler)

	e, _ = open(t, dir)
	defer e.Close()
	c = clientOf(t, e)
	if c.Get(ctx, "before").Val() != "1" || c.Get(ctx, "big1").Val() != big {
		t.Fatal("acknowledged writes lost")
	}
	if len(e.Warnings()) != 0 {
		t.Fatalf("warnings: %q", e.Warnings())
	}
	mustClose(t, e)
}
