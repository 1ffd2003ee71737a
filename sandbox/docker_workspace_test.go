package sandbox

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// gitRepo makes a repository with one commit in a new directory and a linked worktree of it at wt (branch b1),
// with the host's git, and returns the repository's git directory.
func gitRepo(t *testing.T, wt string) (common string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	repo := filepath.Join(t.TempDir(), "repo")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com",
			"-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git(repo, "init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(repo, "add", "README")
	git(repo, "commit", "-q", "-m", "first")
	if err := os.MkdirAll(filepath.Dir(wt), 0o755); err != nil {
		t.Fatal(err)
	}
	git(repo, "worktree", "add", "-q", wt, "-b", "b1")
	return filepath.Join(repo, ".git")
}

// chownAll gives everything under the directories to testOwner, as if that user had made them.
func chownAll(t *testing.T, dirs ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, testUID, testGID)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestGitDirs(t *testing.T) {
	wt := filepath.Join(t.TempDir(), "state", "worktrees", "run-1")
	common := gitRepo(t, wt)
	admin := filepath.Join(common, "worktrees", "run-1")
	write := func(path, s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if got := gitDirs(wt); !slices.Equal(got, []string{common}) {
		t.Errorf("linked worktree: %v, want [%s]", got, common)
	}
	if got := gitDirs(filepath.Dir(common)); got != nil {
		t.Errorf("the repository itself (.git a directory): %v", got)
	}
	if got := gitDirs(t.TempDir()); got != nil {
		t.Errorf("no repository: %v", got)
	}

	// Relative paths, as `git worktree add --relative-paths` writes them.
	rel, err := filepath.Rel(wt, admin)
	if err != nil {
		t.Fatal(err)
	}
	back, err := filepath.Rel(admin, filepath.Join(wt, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(wt, ".git"), "gitdir: "+rel+"\n")
	write(filepath.Join(admin, "gitdir"), back+"\n")
	if got := gitDirs(wt); !slices.Equal(got, []string{common}) {
		t.Errorf("relative paths: %v, want [%s]", got, common)
	}

	// What the agent could write instead: none of it is mounted.
	t.Run("forged", func(t *testing.T) {
		other := t.TempDir()
		for name, setup := range map[string]func(){
			"another worktree's admin directory": func() { write(filepath.Join(other, ".git"), "gitdir: "+admin+"\n") },
			"the host's root":                    func() { write(filepath.Join(other, ".git"), "gitdir: /\n") },
			"a directory of a real repository": func() {
				write(filepath.Join(other, ".git"), "gitdir: "+filepath.Join(common, "objects")+"\n")
			},
			"an admin directory inside the workspace": func() {
				// other/x/worktrees/w names other/.git back and calls ../.. (other/x) its common dir.
				a := filepath.Join(other, "x", "worktrees", "w")
				if err := os.MkdirAll(a, 0o755); err != nil {
					t.Fatal(err)
				}
				write(filepath.Join(a, "commondir"), "../..\n")
				write(filepath.Join(a, "gitdir"), filepath.Join(other, ".git")+"\n")
				for _, d := range []string{"objects", "refs"} {
					if err := os.MkdirAll(filepath.Join(other, "x", d), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				write(filepath.Join(other, "x", "HEAD"), "ref: refs/heads/main\n")
				write(filepath.Join(other, ".git"), "gitdir: "+a+"\n")
			},
			"a FIFO": func() {
				if err := syscall.Mkfifo(filepath.Join(other, ".git"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
		} {
			_ = os.RemoveAll(filepath.Join(other, ".git"))
			setup()
			if got := gitDirs(other); got != nil {
				t.Errorf("%s: mounts %v", name, got)
			}
		}
	})
}

func TestPoolFits(t *testing.T) {
	root := t.TempDir()
	p := &pool{d: &Docker{cfg: DockerConfig{WorkspaceRoot: root}, poolAs: "1000:1000"}}
	in, out := filepath.Join(root, "ws"), filepath.Join(t.TempDir(), "ws")
	for _, c := range []struct {
		name string
		dir  string
		n    needs
		want bool
	}{
		{"inside, same owner", in, needs{user: "1000:1000"}, true},
		{"outside", out, needs{user: "1000:1000"}, false},
		{"another owner", in, needs{user: "0:0"}, false},
		{"worktree of a repository inside", in, needs{user: "1000:1000", gitDirs: []string{filepath.Join(root, "repo", ".git")}}, true},
		{"worktree of a repository elsewhere", in, needs{user: "1000:1000", gitDirs: []string{"/srv/repo/.git"}}, false},
	} {
		if got := p.fits(c.dir, c.n); got != c.want {
			t.Errorf("%s: fits = %v", c.name, got)
		}
	}
}

func TestDockerRunsAsWorkspaceOwner(t *testing.T) {
	needRoot(t)
	d := newTestDocker(t, DockerConfig{})
	for _, c := range []struct {
		name     string
		uid, gid int
		mode     os.FileMode
	}{
		{"a user's, 0755", 1000, 1000, 0o755},
		{"root's, 0700", 0, 0, 0o700},
		{"another user's, 0700", 1234, 5678, 0o700},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			if err := os.Chown(ws, c.uid, c.gid); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(ws, c.mode); err != nil {
				t.Fatal(err)
			}
			res := execOK(t, d, Spec{RunID: newRunID(t, d), Dir: ws},
				"echo $(id -u):$(id -g); echo x > made && echo wrote; stat -c %u:%g /tmp; grep -E '^Cap(Eff|Bnd)' /proc/self/status")
			want := strconv.Itoa(c.uid) + ":" + strconv.Itoa(c.gid)
			if got := string(res.Stdout); got != want+"\nwrote\n"+want+"\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n" {
				t.Errorf("got %q (stderr %q)", got, res.Stderr)
			}
			if got := fileOwner(t, filepath.Join(ws, "made")); got != want {
				t.Errorf("the agent's file belongs to %s, want %s", got, want)
			}
		})
	}
}

func TestDockerUserOverride(t *testing.T) {
	d := newTestDocker(t, DockerConfig{User: "2345:2346"})
	ws := workspace(t, "")
	if err := os.Chmod(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	res := execOK(t, d, Spec{RunID: newRunID(t, d), Dir: ws}, "echo $(id -u):$(id -g); touch made")
	if got := string(res.Stdout); got != "2345:2346\n" {
		t.Errorf("runs as %q, want 2345:2346", got)
	}
	if got := fileOwner(t, filepath.Join(ws, "made")); got != "2345:2346" {
		t.Errorf("the agent's file belongs to %s", got)
	}
	if _, err := NewDocker(context.Background(), DockerConfig{User: "agent"}); err == nil || !strings.Contains(err.Error(), "numeric uid:gid") {
		t.Errorf("a user by name: %v", err)
	}
}

// A linked worktree outside its repository: git in the container needs the repository's git directory, mounted at
// its own path and writable, all but its configuration, which names programs the host's git would run.
func TestDockerLinkedWorktree(t *testing.T) {
	wt := filepath.Join(t.TempDir(), "state", "worktrees", "run-1")
	common := gitRepo(t, wt)
	chownAll(t, filepath.Dir(common), wt)
	d := newTestDocker(t, DockerConfig{})
	res := execOK(t, d, Spec{RunID: newRunID(t, d), Dir: wt}, `
cat .git
cat `+common+`/worktrees/run-1/HEAD
echo probe > `+common+`/probe && echo common=rw
echo work > file && echo ws=rw
echo '[core] fsmonitor = evil' >> `+common+`/config 2>/dev/null || echo config=ro`)
	want := "gitdir: " + common + "/worktrees/run-1\nref: refs/heads/b1\ncommon=rw\nws=rw\nconfig=ro\n"
	if got := string(res.Stdout); got != want {
		t.Errorf("got %q, want %q (stderr %q)", got, want, res.Stderr)
	}
	if got := fileOwner(t, filepath.Join(common, "probe")); got != testOwner() {
		t.Errorf("the file written in the git directory belongs to %s, want %s", got, testOwner())
	}
}
