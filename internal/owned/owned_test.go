//go:build unix

package owned

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// The uid and gid the tests give files to: nobody's on this machine, which is what a user's repository looks like
// to a root orch in a container (it knows the numbers, not the name).
const someone = 12345

func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("giving files away needs root")
	}
}

func idsOf(t *testing.T, path string) (uid, gid int) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid)
}

// someonesDir is a directory of someone's, as a user's repository is.
func someonesDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, someone, someone+1); err != nil {
		t.Fatal(err)
	}
	return dir
}

func openDir(t *testing.T, path string) *Dir {
	t.Helper()
	d, err := OpenDir(path, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestEverythingMadeIsTheOwners opens a state directory, not made yet, in someone's directory and makes all a Dir
// can make in it: all of it is someone's, with the modes asked for, and nothing is left under another name.
func TestEverythingMadeIsTheOwners(t *testing.T) {
	asRoot(t)
	repo := someonesDir(t)
	d := openDir(t, filepath.Join(repo, ".orch", "state"))
	if d2 := openDir(t, filepath.Join(repo, ".orch", "state")); d2 == nil {
		t.Fatal("a second open of the directory failed")
	}
	steps := []func() error{
		func() error { return d.MkdirAll("history/runs", 0o700) },
		func() error { return d.MkdirAll("history/runs", 0o700) },
		func() error { return d.Mkdir("spare", 0o700) },
		func() error {
			f, err := d.OpenFile("lock", os.O_CREATE|os.O_RDWR, 0o600)
			if err == nil {
				f.Close()
			}
			return err
		},
		func() error {
			f, err := d.OpenFile("history/index", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
			if err == nil {
				f.Close()
			}
			return err
		},
		func() error {
			f, err := d.OpenFile("excl", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err == nil {
				f.Close()
			}
			return err
		},
		func() error {
			f, name, err := d.CreateTemp("history/runs", "r1.json.gz.tmp*")
			if err != nil {
				return err
			}
			f.Close()
			return d.Rename(name, "history/runs/r1.json.gz")
		},
		func() error {
			f, err := d.Create("created")
			if err == nil {
				f.Close()
			}
			return err
		},
		func() error { return d.WriteFile("written", []byte("x"), 0o600) },
		func() error { return d.Symlink("written", "link") },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}

	var seen []string
	filepath.WalkDir(filepath.Join(repo, ".orch"), func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repo, path)
		seen = append(seen, rel)
		if uid, gid := idsOf(t, path); uid != someone || gid != someone+1 {
			t.Errorf("%s belongs to %d:%d, want %d:%d", rel, uid, gid, someone, someone+1)
		}
		return nil
	})
	want := ".orch .orch/state .orch/state/created .orch/state/excl .orch/state/history .orch/state/history/index " +
		".orch/state/history/runs .orch/state/history/runs/r1.json.gz .orch/state/link .orch/state/lock " +
		".orch/state/spare .orch/state/written"
	if got := strings.Join(seen, " "); got != want {
		t.Errorf("made %s\nwant %s", got, want)
	}
	for name, mode := range map[string]os.FileMode{".orch": 0o700, ".orch/state": 0o700, ".orch/state/lock": 0o600} {
		if fi, _ := os.Stat(filepath.Join(repo, name)); fi.Mode().Perm()&^mode != 0 {
			t.Errorf("%s has mode %v, want at most %v", name, fi.Mode().Perm(), mode)
		}
	}
	// A file that is there is opened as it is, not replaced, whoever's it is.
	roots := filepath.Join(repo, ".orch", "state", "roots")
	if err := os.WriteFile(roots, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := d.OpenFile("roots", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if data, _ := os.ReadFile(roots); string(data) != "kept" {
		t.Errorf("an existing file was replaced: %q", data)
	}
	if uid, _ := idsOf(t, roots); uid != 0 {
		t.Errorf("OpenFile gave away a file it did not make")
	}
}

// TestADirectoryOfRootsStaysRoots: a state directory made in a directory of root's is root's, and so is what is in it.
func TestADirectoryOfRootsStaysRoots(t *testing.T) {
	asRoot(t)
	dir := filepath.Join(t.TempDir(), "state")
	d := openDir(t, dir)
	if err := d.WriteFile("lock", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "lock")} {
		if uid, gid := idsOf(t, p); uid != 0 || gid != 0 {
			t.Errorf("%s belongs to %d:%d", p, uid, gid)
		}
	}
	// And a directory of root's in someone's stays root's, with all in it.
	repo := someonesDir(t)
	if err := os.Mkdir(filepath.Join(repo, "roots"), 0o700); err != nil {
		t.Fatal(err)
	}
	d = openDir(t, filepath.Join(repo, "roots"))
	if err := d.WriteFile("lock", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if uid, _ := idsOf(t, filepath.Join(repo, "roots", "lock")); uid != 0 {
		t.Errorf("a file in root's directory was given to %d", uid)
	}
}

// TestOpenFileNeverReplaces opens one new file from many goroutines at once: every one of them gets the same file,
// as os.OpenFile with O_CREATE gives (a lock file two processes open must be one file).
func TestOpenFileNeverReplaces(t *testing.T) {
	asRoot(t)
	d := openDir(t, filepath.Join(someonesDir(t), ".orch"))
	var wg sync.WaitGroup
	inodes := make([]uint64, 16)
	for i := range inodes {
		wg.Go(func() {
			f, err := d.OpenFile("lock", os.O_CREATE|os.O_RDWR, 0o600)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			fi, _ := f.Stat()
			inodes[i] = fi.Sys().(*syscall.Stat_t).Ino
		})
	}
	wg.Wait()
	fi, err := d.Stat("lock")
	if err != nil {
		t.Fatal(err)
	}
	for i, ino := range inodes {
		if ino != fi.Sys().(*syscall.Stat_t).Ino {
			t.Fatalf("opener %d got a file that is no longer the lock", i)
		}
	}
	if entries, _ := os.ReadDir(d.Path(".")); len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}

// TestNothingLeavesTheDir plants links in the directory, as its owner could, that point out of it: nothing made or
// opened through the Dir follows them.
func TestNothingLeavesTheDir(t *testing.T) {
	state, outside := filepath.Join(t.TempDir(), "state"), t.TempDir()
	d := openDir(t, state)
	for link, to := range map[string]string{"history": outside, "up": "..", "index": filepath.Join(outside, "index")} {
		if err := os.Symlink(to, filepath.Join(state, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "index"), []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	tries := map[string]func() error{
		"MkdirAll history/runs": func() error { return d.MkdirAll("history/runs", 0o700) },
		"OpenFile up/lock":      func() error { _, err := d.OpenFile("up/lock", os.O_CREATE|os.O_RDWR, 0o600); return err },
		"OpenFile index":        func() error { _, err := d.OpenFile("index", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); return err },
		"CreateTemp in history": func() error { _, _, err := d.CreateTemp("history", "x*"); return err },
		"WriteFile history/x":   func() error { return d.WriteFile("history/x", nil, 0o600) },
	}
	for what, try := range tries {
		if err := try(); err == nil {
			t.Errorf("%s went through a link out of the directory", what)
		}
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("made outside the directory: %v", entries)
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "index")); string(data) != "outside" {
		t.Errorf("a file outside was written: %q", data)
	}
}

// TestALinkSomeoneMadeIsNotFollowed: as root, a state directory that is a link its owner made is refused (it could
// point at any directory of root's); a link root made is followed.
func TestALinkSomeoneMadeIsNotFollowed(t *testing.T) {
	asRoot(t)
	repo, target := someonesDir(t), t.TempDir()
	link := filepath.Join(repo, ".orch")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, someone, someone); err != nil {
		t.Fatal(err)
	}
	_, err := OpenDir(link, 0o700)
	if err == nil || !strings.Contains(err.Error(), "symbolic link that uid 12345 made") {
		t.Fatalf("open of someone's link: %v", err)
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Errorf("made in the link's target: %v", entries)
	}
	if err := os.Lchown(link, 0, 0); err != nil {
		t.Fatal(err)
	}
	d := openDir(t, link)
	if err := d.WriteFile("lock", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(target, "lock")); err != nil {
		t.Errorf("root's link was not followed: %v", err)
	}
}

// TestNotRoot: run as anyone else, a Dir makes files as the os package does.
func TestNotRoot(t *testing.T) {
	d := openDir(t, filepath.Join(t.TempDir(), "a", "b"))
	if err := d.MkdirAll("c/d", 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := d.OpenFile("c/d/lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if uid, _ := idsOf(t, d.Path("c/d/lock")); uid != os.Geteuid() {
		t.Errorf("the lock belongs to %d", uid)
	}
	if err := d.Mkdir("c", 0o700); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Mkdir of a directory that exists: %v", err)
	}
}
