package sandbox

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

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

// The directories a run's container mounts are the ones orch names, checked: never one that holds the workspace (it
// would show the agent what lies beside it), the root, a path through a symbolic link, or a file.
func TestNeedsOfChecksReadOnly(t *testing.T) {
	d := &Docker{cfg: DockerConfig{User: "1000:1000"}}
	top := t.TempDir()
	ws := filepath.Join(top, "state", "worktrees", "r-1")
	objects := filepath.Join(top, "repo", ".git", "objects")
	for _, dir := range []string{ws, objects} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(top, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(objects, filepath.Join(top, "link")); err != nil {
		t.Fatal(err)
	}
	n, err := d.needsOf(ws, []string{objects, objects + "/"})
	if err != nil || !slices.Equal(n.readOnly, []string{objects}) {
		t.Fatalf("the repository's objects: %v, %v", n.readOnly, err)
	}
	for name, p := range map[string]string{
		"relative":                   "repo/.git/objects",
		"the root":                   "/",
		"the directory of worktrees": filepath.Join(top, "state", "worktrees"),
		"the workspace itself":       ws,
		"a symbolic link":            filepath.Join(top, "link"),
		"a file":                     filepath.Join(top, "file"),
		"missing":                    filepath.Join(top, "nope"),
	} {
		if _, err := d.needsOf(ws, []string{p}); err == nil {
			t.Errorf("%s (%s) was accepted", name, p)
		}
	}
}

func TestPoolFits(t *testing.T) {
	root := t.TempDir()
	p := &pool{d: &Docker{cfg: DockerConfig{WorkspaceRoot: root}, poolAs: "1000:1000"}}
	for _, c := range []struct {
		name string
		dir  string
		n    needs
		want bool
	}{
		{"the root itself, its owner", root, needs{user: "1000:1000"}, true},
		{"inside the root: it would see the rest", filepath.Join(root, "ws"), needs{user: "1000:1000"}, false},
		{"outside", filepath.Join(t.TempDir(), "ws"), needs{user: "1000:1000"}, false},
		{"another owner", root, needs{user: "0:0"}, false},
		{"with a repository's objects to mount", root, needs{user: "1000:1000", readOnly: []string{"/srv/repo/.git/objects"}}, false},
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

// A run's container sees its worktree (read-write), the repository's objects (read-only) and nothing else of the
// host: not the repository's refs, hooks or config, not other runs' worktrees, not the state directory that holds
// them — whatever the worktree's .git says — so nothing the agent does there reaches the repository.
func TestDockerSeesItsRunOnly(t *testing.T) {
	top := t.TempDir()
	repo := filepath.Join(top, "repo", ".git")
	state := filepath.Join(top, "repo", ".orch")
	wt := filepath.Join(state, "worktrees", "r-1")
	other := filepath.Join(state, "worktrees", "r-2")
	for _, d := range []string{filepath.Join(repo, "objects", "ab"), filepath.Join(repo, "refs", "heads"),
		filepath.Join(repo, "hooks"), wt, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(repo, "objects", "ab", "cdef"):    "an object",
		filepath.Join(repo, "refs", "heads", "main"):    "1111111111111111111111111111111111111111\n",
		filepath.Join(repo, "config"):                   "[core]\n\tbare = false\n",
		filepath.Join(other, "secret.txt"):              "another run's work",
		filepath.Join(state, "journal"):                 "the store",
		filepath.Join(wt, ".git"):                       "gitdir: " + repo + "\n", // the agent's forged link
		filepath.Join(top, "repo", "user-file.txt"):     "the user's checkout",
		filepath.Join(top, "repo", ".orch", "lock"):     "",
		filepath.Join(top, "repo", ".git", "HEAD"):      "ref: refs/heads/main\n",
		filepath.Join(top, "repo", ".git", "commondir"): "",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	chownAll(t, top)
	d := newTestDocker(t, DockerConfig{Hide: []string{state}})
	res := execOK(t, d, Spec{RunID: newRunID(t, d), Dir: wt, ReadOnly: []string{filepath.Join(repo, "objects")}}, `
cat `+repo+`/objects/ab/cdef && echo
echo probe > `+repo+`/objects/probe 2>/dev/null || echo objects=ro
for f in refs hooks config HEAD commondir; do test -e `+repo+`/$f || echo no-$f; done
mkdir -p `+repo+`/hooks 2>/dev/null && echo '#!/bin/sh' > `+repo+`/hooks/post-checkout 2>/dev/null || echo hooks=unwritable
test -e `+other+` || echo no-other-run
test -e `+state+`/journal || echo no-journal
test -e `+filepath.Join(top, "repo", "user-file.txt")+` || echo no-checkout
echo work > file && echo ws=rw`)
	want := "an object\nobjects=ro\nno-refs\nno-hooks\nno-config\nno-HEAD\nno-commondir\nhooks=unwritable\n" +
		"no-other-run\nno-journal\nno-checkout\nws=rw\n"
	if got := string(res.Stdout); got != want {
		t.Errorf("got %q, want %q (stderr %q)", got, want, res.Stderr)
	}
	for p, c := range files {
		if data, err := os.ReadFile(p); err != nil || string(data) != c {
			t.Errorf("%s changed on the host: %q, %v", p, data, err)
		}
	}
	for _, p := range []string{filepath.Join(repo, "objects", "probe"), filepath.Join(repo, "hooks", "post-checkout")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written on the host", p)
		}
	}

	// A plain workspace that holds the state directory: the state directory is covered.
	plain := workspace(t, "")
	inside := filepath.Join(plain, ".orch")
	if err := os.MkdirAll(filepath.Join(inside, "worktrees", "r-9"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inside, "journal"), []byte("the store"), 0o600); err != nil {
		t.Fatal(err)
	}
	chownAll(t, plain)
	d2 := newTestDocker(t, DockerConfig{Hide: []string{inside}})
	res = execOK(t, d2, Spec{RunID: newRunID(t, d2), Dir: plain}, `ls -A `+inside+`; echo x > `+inside+`/journal 2>/dev/null || echo state=ro; echo ok > mine && echo ws=rw`)
	if got := string(res.Stdout); got != "state=ro\nws=rw\n" {
		t.Errorf("a plain workspace's state directory in the container: %q (stderr %q)", got, res.Stderr)
	}
	if data, _ := os.ReadFile(filepath.Join(inside, "journal")); string(data) != "the store" {
		t.Errorf("the journal changed: %q", data)
	}
}

// A run's container made for another workspace (the run's worktree moved) is made again, not refused.
func TestDockerRemakesAContainerForOtherDirectories(t *testing.T) {
	d := newTestDocker(t, DockerConfig{})
	run := newRunID(t, d)
	one, two := workspace(t, ""), workspace(t, "")
	execOK(t, d, Spec{RunID: run, Dir: one}, "true")
	first := inspectRun(t, d, run).ID
	if res := execOK(t, d, Spec{RunID: run, Dir: two}, "pwd; test -e "+one+" || echo no-old"); string(res.Stdout) != two+"\nno-old\n" {
		t.Errorf("got %q", res.Stdout)
	}
	if inspectRun(t, d, run).ID == first {
		t.Error("the container made for the other workspace was reused")
	}
}

// A run's container made with another orch binary (an upgrade while the run was parked) is made again: a file mount
// keeps the old binary, whose shim would not understand the new orch.
func TestDockerRemakesAContainerOfAnotherBinary(t *testing.T) {
	shim := staticShim(t)
	other := filepath.Join(t.TempDir(), "orch")
	data, err := os.ReadFile(shim)
	if err != nil {
		t.Fatal(err)
	}
	// The same program with a byte more at its end: another binary by its hash, one that still runs.
	if err := os.WriteFile(other, append(data, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	ws := workspace(t, "")
	one := newTestDocker(t, DockerConfig{OrchBinary: shim})
	run := newRunID(t, one)
	execOK(t, one, Spec{RunID: run, Dir: ws}, "true")
	first := inspectRun(t, one, run)
	two := newTestDocker(t, DockerConfig{OrchBinary: other})
	execOK(t, two, Spec{RunID: run, Dir: ws}, "true")
	second := inspectRun(t, two, run)
	if second.ID == first.ID || second.Config.Labels[LabelBinary] == first.Config.Labels[LabelBinary] {
		t.Fatalf("the container of the old binary was reused: %s %v", second.ID, second.Config.Labels)
	}
}
