//go:build unix

package store

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/orchrun/orch/jobs"
)

// someone is the uid and gid of the user whose repository a root orch works in, in these tests.
const someone = 12345

// someonesStateDir is a state directory, not made yet, in a directory of someone's (a user's repository). It skips
// the test unless it runs as root: only root can give files away.
func someonesStateDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("giving files away needs root")
	}
	repo := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(repo, someone, someone); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(repo, ".orch")
}

// rootsFiles lists what under dir does not belong to someone, and everything there is.
func rootsFiles(t *testing.T, dir string) (wrong, all []string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, path)
		all = append(all, rel)
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != someone || st.Gid != someone {
			wrong = append(wrong, rel)
		}
		return nil
	})
	return wrong, all
}

// archiveSome finishes three runs in the store of dir, archives them, and prunes one, so that the archive's
// directories, lock, index (appended to, then rewritten) and run files are all made.
func archiveSome(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	b, err := Connect(ctx, ConnectConfig{StateDir: dir, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		finish(t, b.Store, jobs.RunCompleted)
		c.add(time.Hour)
	}
	if n, err := b.Store.ArchiveFinished(ctx, 0); err != nil || n != 3 {
		t.Fatalf("archived %d runs, %v", n, err)
	}
	if gone, err := b.Store.Prune(ctx, Keep{Count: 2}); err != nil || len(gone) != 1 {
		t.Fatalf("pruned %v, %v", gone, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTheArchiveIsTheOwners: a root orch on someone's repository leaves them the state directory with its history.
func TestTheArchiveIsTheOwners(t *testing.T) {
	dir := someonesStateDir(t)
	archiveSome(t, dir)
	wrong, all := rootsFiles(t, dir)
	if len(wrong) > 0 {
		t.Errorf("not someone's: %v (of %v)", wrong, all)
	}
	for _, name := range []string{"history", "history/lock", "history/index", "history/runs"} {
		if !slices.Contains(all, name) {
			t.Errorf("no %s: %v", name, all)
		}
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "history", "runs", "*.json.gz"))
	if len(runs) != 2 {
		t.Errorf("run files: %v", runs)
	}
}

// TestTheOwnersLinksLeadNowhere: the history directory is the owner's, who can put links in it. The ones that lead
// out of the state directory lead a root orch nowhere: archiving fails, and nothing is written where they point.
func TestTheOwnersLinksLeadNowhere(t *testing.T) {
	dir := someonesStateDir(t)
	archiveSome(t, dir)
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	history := filepath.Join(dir, "history")
	for name, to := range map[string]string{"index": victim, "runs": outside} {
		os.RemoveAll(filepath.Join(history, name))
		if err := os.Symlink(to, filepath.Join(history, name)); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(filepath.Join(history, name), someone, someone); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	b, err := Connect(ctx, ConnectConfig{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	finish(t, b.Store, jobs.RunCompleted)
	if n, err := b.Store.ArchiveFinished(ctx, 0); err == nil && n > 0 {
		t.Errorf("a run was archived through links out of the state dir")
	}
	b.Store.Prune(ctx, Keep{Count: 1})
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("written outside the state dir: %v", entries)
	}
	if data, _ := os.ReadFile(victim); string(data) != "root's\n" {
		t.Errorf("the index's target was written: %q", data)
	}
}
