//go:build unix

package localredis

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// someone is the uid and gid of the user whose repository a root orch works in, in these tests.
const someone = 12345

// someonesRepo is a directory of someone's, as a user's repository is, in which the state directory does not exist
// yet. It skips the test unless it runs as root: only root can give files away.
func someonesRepo(t *testing.T) (repo, stateDir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("giving files away needs root")
	}
	repo = filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(repo, someone, someone); err != nil {
		t.Fatal(err)
	}
	return repo, filepath.Join(repo, ".orch")
}

// notOwned lists what under dir does not belong to someone, and everything there is.
func notOwned(t *testing.T, dir string) (wrong, all []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		all = append(all, rel)
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != someone || st.Gid != someone {
			wrong = append(wrong, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return wrong, all
}

// TestEveryFileIsTheOwners has a root process make every file the store makes, in a state directory that does not
// exist yet in someone's repository: the directory, its lock, the snapshot and journal and the pair they replace,
// the address and owners files, a damaged file moved aside and what replaces it. All of them are someone's, with
// the modes they always had.
func TestEveryFileIsTheOwners(t *testing.T) {
	repo, dir := someonesRepo(t)
	e, _ := open(t, dir)
	c := clientOf(t, e)
	writeEveryType(t, e, c)
	mustSync(t, e)
	compactNow(t, e) // the first pair becomes redis.prev.*
	if err := c.Set(context.Background(), "after", "compaction", 0).Err(); err != nil {
		t.Fatal(err)
	}
	mustSync(t, e)
	// A second process on the directory connects to the first, and serves the store once the first has gone.
	e2, _ := open(t, dir)
	mustClose(t, e)
	if err := clientOf(t, e2).Set(context.Background(), "second", "process", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if !e2.Owner() {
		t.Fatal("the second process did not take the store over")
	}
	wrongWhileServing, _ := notOwned(t, dir) // redis.addr exists while a process serves
	mustClose(t, e2)

	// A damaged journal (changed in place, as a disk does) is moved aside and replaced.
	f, err := os.OpenFile(filepath.Join(dir, journalFile), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("garbage!"), 0)
	f.Close()
	e, _ = open(t, dir)
	if len(e.Warnings()) == 0 {
		t.Fatal("the damaged journal went unnoticed")
	}
	checkEveryType(t, clientOf(t, e))
	mustClose(t, e)

	wrong, all := notOwned(t, dir)
	if wrong = append(wrong, wrongWhileServing...); len(wrong) > 0 {
		t.Errorf("not someone's: %v (of %v)", wrong, all)
	}
	for _, name := range []string{".", lockFile, snapshotFile, journalFile, prevSnapshotFile, prevJournalFile, ownersFile} {
		if !slices.Contains(all, name) {
			t.Errorf("the store made no %s: %v", name, all)
		}
	}
	if !slices.ContainsFunc(all, func(n string) bool { return strings.HasPrefix(n, journalFile+".damaged-") }) {
		t.Errorf("no journal moved aside: %v", all)
	}
	for _, name := range all {
		if strings.Contains(name, ".tmp") {
			t.Errorf("left behind: %s", name)
		}
	}
	for _, name := range []string{".", lockFile, snapshotFile, journalFile} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v: it was the owner's alone", name, fi.Mode().Perm())
		}
	}
	if st, _ := os.Stat(repo); st.Sys().(*syscall.Stat_t).Uid != someone {
		t.Error("the repository changed hands")
	}
}

// TestTheOwnersLinksLeadNowhere: the owner of the state directory can put anything in it, links included. A root
// orch follows none out of it: a store file that is a link out is an error, and what it points to is untouched.
func TestTheOwnersLinksLeadNowhere(t *testing.T) {
	_, dir := someonesRepo(t)
	e, _ := open(t, dir)
	mustClose(t, e)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{snapshotFile, lockFile} {
		os.Remove(filepath.Join(dir, name))
		if err := os.Symlink(victim, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(filepath.Join(dir, name), someone, someone); err != nil {
			t.Fatal(err)
		}
		if e, err := Open(dir, slog.New(slog.DiscardHandler)); err == nil {
			e.Close()
			t.Errorf("a %s that links out of the state dir was used", name)
		}
		os.Remove(filepath.Join(dir, name))
	}
	if data, _ := os.ReadFile(victim); string(data) != "root's" {
		t.Errorf("the link's target was written: %q", data)
	}
	if fi, _ := os.Stat(victim); fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Error("the link's target was given away")
	}
}
