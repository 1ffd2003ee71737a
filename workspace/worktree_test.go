package workspace

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orchrun/orch/jobs"
)

// run runs a git command for a test, as a user would.
func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=User", "GIT_AUTHOR_EMAIL=user@example.com",
		"GIT_COMMITTER_NAME=User", "GIT_COMMITTER_EMAIL=user@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// userRepo is a user's checkout with a commit, a staged change, an unstaged one and an untracked file.
func userRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	run(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "shared.txt", "base\n")
	write(t, dir, "README", "hello\n")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "first")
	write(t, dir, "README", "hello, staged\n")
	run(t, dir, "add", "README")
	write(t, dir, "shared.txt", "the user's own edit\n")
	write(t, dir, "notes.txt", "untracked\n")
	return dir
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// state is what a user sees of their checkout: HEAD, the index, the files' status and contents.
func state(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{{"rev-parse", "HEAD"}, {"symbolic-ref", "HEAD"}, {"ls-files", "-s"},
		{"status", "--porcelain", "--untracked-files=all"}, {"diff"}, {"diff", "--cached"}} {
		b.WriteString(run(t, dir, args...))
		b.WriteString("\n--\n")
	}
	for _, f := range []string{"shared.txt", "README", "notes.txt"} {
		data, _ := os.ReadFile(filepath.Join(dir, f))
		b.Write(data)
	}
	return b.String()
}

func newGit(t *testing.T, repo, runID string) *jobs.Git {
	t.Helper()
	base, err := Resolve(context.Background(), repo, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	return &jobs.Git{Repo: repo, Base: "main", BaseCommit: base, Branch: jobs.BranchPrefix + runID}
}

// firstRun is a user's repository and run r-1 of it, its worktree checked out by a manager of its own.
func firstRun(t *testing.T) (repo string, m *Manager, g *jobs.Git, wt Worktree) {
	t.Helper()
	repo = userRepo(t)
	m = &Manager{Root: t.TempDir()}
	g = newGit(t, repo, "r-1")
	wt, err := m.Checkout(context.Background(), "r-1", g)
	if err != nil {
		t.Fatal(err)
	}
	return repo, m, g, wt
}

func TestRunsWorkApartAndTheUserCheckoutStaysAsItWas(t *testing.T) {
	ctx := context.Background()
	repo := userRepo(t)
	before := state(t, repo)
	m := &Manager{Root: filepath.Join(repo, ".orch")} // the default: the state directory inside the checkout
	const n = 4
	var wg sync.WaitGroup
	commits := make([]string, n)
	for i := range n {
		wg.Go(func() {
			id := "r-" + string(rune('a'+i))
			g := newGit(t, repo, id)
			wt, err := m.Checkout(ctx, id, g)
			if err != nil {
				t.Error(err)
				return
			}
			if err := os.WriteFile(filepath.Join(wt.Dir, "shared.txt"), []byte("run "+id+"\n"), 0o644); err != nil {
				t.Error(err)
				return
			}
			commits[i], err = commitTask(ctx, m, wt, id, "1", "Write the shared file", "wrote it")
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := m.Remove(ctx, id, g); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range n {
		id := "r-" + string(rune('a'+i))
		if commits[i] == "" {
			t.Fatalf("run %s committed nothing", id)
		}
		if got := run(t, repo, "show", jobs.BranchPrefix+id+":shared.txt"); got != "run "+id {
			t.Errorf("branch of %s holds %q", id, got)
		}
		msg := run(t, repo, "log", "-1", "--format=%an <%ae>%n%B", jobs.BranchPrefix+id)
		for _, want := range []string{"orch <orch@localhost>", "Task 1: Write the shared file", "wrote it",
			"Orch-Run: " + id, "Orch-Task: 1"} {
			if !strings.Contains(msg, want) {
				t.Errorf("commit of %s lacks %q:\n%s", id, want, msg)
			}
		}
	}
	if after := state(t, repo); after != before {
		t.Fatalf("the user's checkout changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if out := run(t, repo, "worktree", "list"); strings.Count(out, "\n") != 0 {
		t.Fatalf("worktrees left behind:\n%s", out)
	}
}

func TestNothingToCommitMakesNoCommit(t *testing.T) {
	ctx := context.Background()
	_, m, g, wt := firstRun(t)
	sha, err := commitTask(ctx, m, wt, "r-1", "1", "t", "")
	if err != nil || sha != "" {
		t.Fatalf("commit of nothing: %q, %v", sha, err)
	}
	st, err := m.Stat(ctx, wt, g.BaseCommit)
	if err != nil || st.Commits != 0 || st.FilesChanged != 0 {
		t.Fatalf("stat %+v, %v", st, err)
	}
	// The agent's own commits count, and what the branch changed adds up.
	write(t, wt.Dir, "a.txt", "one\ntwo\n")
	run(t, wt.Dir, "add", "a.txt")
	run(t, wt.Dir, "commit", "-q", "-m", "agent's own")
	write(t, wt.Dir, "shared.txt", "changed\n")
	if _, err := commitTask(ctx, m, wt, "r-1", "1", "t", ""); err != nil {
		t.Fatal(err)
	}
	st, err = m.Stat(ctx, wt, g.BaseCommit)
	if err != nil || st.Commits != 2 || st.FilesChanged != 2 || st.Insertions != 3 || st.Deletions != 1 {
		t.Fatalf("stat %+v, %v", st, err)
	}
}

func TestRemoveKeepsUnfinishedWork(t *testing.T) {
	ctx := context.Background()
	repo, m, g, wt := firstRun(t)
	write(t, wt.Dir, "half.txt", "half done\n")
	ref, err := m.Remove(ctx, "r-1", g)
	if err != nil || ref != "refs/orch/unfinished/r-1" {
		t.Fatalf("remove: %q, %v", ref, err)
	}
	if got := run(t, repo, "show", ref+":half.txt"); got != "half done" {
		t.Fatalf("unfinished ref holds %q", got)
	}
	if got := run(t, repo, "rev-parse", g.Branch); got != g.BaseCommit {
		t.Fatalf("the branch moved to %s", got)
	}
	if _, err := os.Stat(wt.Top); !os.IsNotExist(err) {
		t.Fatalf("worktree still there: %v", err)
	}
}

func TestCheckoutGoesWhereTheRunIs(t *testing.T) {
	ctx := context.Background()
	_, m, g, wt := firstRun(t)
	write(t, wt.Dir, "first.txt", "1\n")
	first, err := commitTask(ctx, m, wt, "r-1", "1", "t", "")
	if err != nil {
		t.Fatal(err)
	}
	g.Head = first
	// A commit the run never recorded (its worker died before saving), and leftovers of that step.
	write(t, wt.Dir, "second.txt", "2\n")
	if _, err := commitTask(ctx, m, wt, "r-1", "2", "t", ""); err != nil {
		t.Fatal(err)
	}
	write(t, wt.Dir, "stray.txt", "x\n")
	if _, err := m.Checkout(ctx, "r-1", g); err != nil {
		t.Fatal(err)
	}
	if head := run(t, wt.Dir, "rev-parse", "HEAD"); head != first {
		t.Fatalf("worktree at %s, the run at %s", head, first)
	}
	for _, f := range []string{"second.txt", "stray.txt"} {
		if _, err := os.Stat(filepath.Join(wt.Dir, f)); !os.IsNotExist(err) {
			t.Fatalf("%s survived the alignment", f)
		}
	}
	// Removed and checked out again, the worktree comes back at the run's head.
	if _, err := m.Remove(ctx, "r-1", g); err != nil {
		t.Fatal(err)
	}
	wt, err = m.Checkout(ctx, "r-1", g)
	if err != nil {
		t.Fatal(err)
	}
	if head := run(t, wt.Dir, "rev-parse", "HEAD"); head != first {
		t.Fatalf("worktree at %s, the run at %s", head, first)
	}
}

// Two workers that share nothing but the remote: one starts the run's branch and pushes it, the other picks the
// run up from its recorded head.
func TestAClonedRunMovesBetweenWorkers(t *testing.T) {
	ctx := context.Background()
	src := userRepo(t)
	remote := bareClone(t, src)
	g := &jobs.Git{URL: remote, Branch: "orch/r-1", Push: "origin"}
	one := &Manager{Root: t.TempDir()}
	wt, err := one.Checkout(ctx, "r-1", g)
	if err != nil {
		t.Fatal(err)
	}
	if want := run(t, src, "rev-parse", "HEAD"); g.BaseCommit != want {
		t.Fatalf("base %s, want the remote's HEAD %s", g.BaseCommit, want)
	}
	write(t, wt.Dir, "work.txt", "from worker one\n")
	sha, err := commitTask(ctx, one, wt, "r-1", "1", "t", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := one.Push(ctx, wt, "origin", g.Branch, "", nil); err != nil {
		t.Fatal(err)
	}
	g.Head = sha
	two := &Manager{Root: t.TempDir()}
	wt2, err := two.Checkout(ctx, "r-1", g)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(wt2.Dir, "work.txt")); err != nil || string(data) != "from worker one\n" {
		t.Fatalf("worker two sees %q, %v", data, err)
	}
	// A head that was never pushed is an error that says so, not a silent restart from the base.
	g.Head = strings.Repeat("ab", 20)
	three := &Manager{Root: t.TempDir()}
	if _, err := three.Checkout(ctx, "r-1", g); err == nil || !strings.Contains(err.Error(), "not pushed") {
		t.Fatalf("checkout of an unpushed head: %v", err)
	}
}

func TestResolveRefusesWhatIsNoCommit(t *testing.T) {
	repo := userRepo(t)
	for _, ref := range []string{"no-such-branch", "--output=/tmp/x", ""} {
		if _, err := Resolve(context.Background(), repo, ref); err == nil {
			t.Errorf("Resolve(%q) succeeded", ref)
		}
	}
	if _, err := Toplevel(context.Background(), t.TempDir()); err != ErrNotRepository {
		t.Fatalf("a plain directory: %v", err)
	}
}

func TestParseShortstat(t *testing.T) {
	for in, want := range map[string][3]int{
		" 3 files changed, 10 insertions(+), 2 deletions(-)": {3, 10, 2},
		" 1 file changed, 1 insertion(+)":                    {1, 1, 0},
		" 1 file changed, 4 deletions(-)":                    {1, 0, 4},
		"":                                                   {0, 0, 0},
	} {
		f, i, d := parseShortstat(in)
		if [3]int{f, i, d} != want {
			t.Errorf("%q: %d %d %d, want %v", in, f, i, d, want)
		}
	}
}

// orch running as root on a user's repository (a service in a container) leaves everything it makes there to the
// user: their own git must keep working after any number of runs.
func TestWhatOrchMakesBelongsToTheRepositorysOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to own files as another user")
	}
	ctx := context.Background()
	repo := userRepo(t)
	// The test's temporary directories are root's, mode 0700: the user must reach their repository.
	for d := filepath.Dir(repo); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"chown", "-R", "1000:1000", repo}} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	m := &Manager{Root: filepath.Join(repo, ".orch")}
	g := newGit(t, repo, "r-1")
	wt, err := m.Checkout(ctx, "r-1", g)
	if err != nil {
		t.Fatal(err)
	}
	write(t, wt.Dir, "new/file.txt", "made by the agent\n")
	if err := os.Chown(filepath.Join(wt.Dir, "new"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(wt.Dir, "new", "file.txt"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := commitTask(ctx, m, wt, "r-1", "1", "t", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Remove(ctx, "r-1", g); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("find", repo, "-not", "-user", "1000").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(out)) != "" {
		t.Fatalf("orch left files the repository's owner does not own:\n%s", out)
	}
}

// A run picked up by another worker of the same machine whose worktrees live elsewhere, and back: each worker's
// worktree is brought to the run's head when the run comes to it, with the other's work in it.
func TestAnotherWorkerOnTheMachineTakesTheBranch(t *testing.T) {
	ctx := context.Background()
	repo := userRepo(t)
	g := newGit(t, repo, "r-1")
	one, two := &Manager{Root: t.TempDir()}, &Manager{Root: t.TempDir()}
	wt, err := one.Checkout(ctx, "r-1", g)
	if err != nil {
		t.Fatal(err)
	}
	write(t, wt.Dir, "a.txt", "a\n")
	if g.Head, err = commitTask(ctx, one, wt, "r-1", "1", "t", ""); err != nil {
		t.Fatal(err)
	}
	wt2, err := two.Checkout(ctx, "r-1", g)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wt2.Dir, "a.txt")); err != nil {
		t.Fatalf("the second worktree lacks the run's work: %v", err)
	}
	write(t, wt2.Dir, "b.txt", "b\n")
	if g.Head, err = commitTask(ctx, two, wt2, "r-1", "2", "t", ""); err != nil {
		t.Fatal(err)
	}
	wt, err = one.Checkout(ctx, "r-1", g)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wt.Dir, "b.txt")); err != nil {
		t.Fatalf("the first worktree, back in use, lacks the second worker's work: %v", err)
	}
	if head := run(t, wt.Dir, "rev-parse", "HEAD"); head != g.Head {
		t.Fatalf("the agent's git in the first worktree is at %s, the run at %s", head, g.Head)
	}
	if got := run(t, repo, "rev-parse", g.Branch); got != g.Head {
		t.Fatalf("the run's branch is at %s, the run at %s", got, g.Head)
	}
}

// A run that ends leaves its worktree as a spare; the next run takes it, on its own branch, with nothing of the
// previous run's files.
func TestTheNextRunTakesASpareWorktree(t *testing.T) {
	ctx := context.Background()
	repo := userRepo(t)
	before := state(t, repo)
	m := &Manager{Root: t.TempDir(), Spares: 1}
	a := newGit(t, repo, "r-a")
	wt, err := m.Checkout(ctx, "r-a", a)
	if err != nil {
		t.Fatal(err)
	}
	write(t, wt.Dir, "a.txt", "a\n")
	if _, err := commitTask(ctx, m, wt, "r-a", "1", "t", ""); err != nil {
		t.Fatal(err)
	}
	write(t, wt.Dir, "left-over.txt", "uncommitted\n")
	if ref, err := m.Remove(ctx, "r-a", a); err != nil || ref == "" {
		t.Fatalf("remove: %q, %v", ref, err)
	}
	if n := len(spareList(t, m, repo)); n != 1 {
		t.Fatalf("%d spares after the run, want 1", n)
	}
	b := newGit(t, repo, "r-b")
	wt, err = m.Checkout(ctx, "r-b", b)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(spareList(t, m, repo)); n != 0 {
		t.Fatalf("%d spares after a run took one", n)
	}
	for _, f := range []string{"a.txt", "left-over.txt"} {
		if _, err := os.Stat(filepath.Join(wt.Dir, f)); !os.IsNotExist(err) {
			t.Fatalf("the spare kept %s of the previous run", f)
		}
	}
	if got := run(t, wt.Dir, "symbolic-ref", "HEAD"); got != "refs/heads/orch/r-b" {
		t.Fatalf("the spare is on %s", got)
	}
	write(t, wt.Dir, "b.txt", "b\n")
	if _, err := commitTask(ctx, m, wt, "r-b", "1", "t", ""); err != nil {
		t.Fatal(err)
	}
	if got := run(t, repo, "diff", "--name-only", b.BaseCommit, "orch/r-b"); got != "b.txt" {
		t.Fatalf("run b's branch changed %q", got)
	}
	if _, err := m.Remove(ctx, "r-b", b); err != nil {
		t.Fatal(err)
	}
	if after := state(t, repo); after != before {
		t.Fatalf("the user's checkout changed:\n%s\n%s", before, after)
	}
	// A second spare beyond Spares is removed, not kept.
	for _, id := range []string{"r-c", "r-d"} {
		if _, err := m.Checkout(ctx, id, newGit(t, repo, id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"r-c", "r-d"} {
		if _, err := m.Remove(ctx, id, newGit(t, repo, id)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(spareList(t, m, repo)); n != 1 {
		t.Fatalf("%d spares, want at most 1", n)
	}
}

// A workspace in a directory the base commit does not have (untracked, or empty) is there in the run's worktree.
func TestAWorkspaceDirectoryTheBaseLacks(t *testing.T) {
	ctx := context.Background()
	repo := userRepo(t)
	m := &Manager{Root: t.TempDir()}
	g := newGit(t, repo, "r-1")
	g.Dir = filepath.Join("services", "new")
	wt, err := m.Checkout(ctx, "r-1", g)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(wt.Dir); err != nil || !fi.IsDir() || wt.Dir != filepath.Join(wt.Top, "services", "new") {
		t.Fatalf("the workspace's directory %s: %v", wt.Dir, err)
	}
}

// spareList is the manager's spares of the user's repository at repo.
func spareList(t *testing.T, m *Manager, repo string) []string {
	t.Helper()
	dir, err := commonDir(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	r, err := openRepository(context.Background(), dir, repo)
	if err != nil {
		t.Fatal(err)
	}
	return m.spares(r)
}

// commitTask commits the task's work and moves the run's branch to it, as a worker that still owns its step does.
func commitTask(ctx context.Context, m *Manager, wt Worktree, runID, taskID, title, summary string) (string, error) {
	from := wt.git.head()
	sha, err := m.CommitTask(ctx, wt, runID, taskID, title, summary)
	if err != nil || sha == "" {
		return sha, err
	}
	return sha, m.MoveBranch(ctx, wt, from, nil)
}

// The run's branch moves only by compare-and-set, on the remote and in the repository: from what the run recorded, or
// from a commit one of the run's dead steps was about to put there. A worker that lost its step cannot overwrite the
// new owner's push, and commits someone else put on the branch are not overwritten.
func TestTheBranchMovesOnlyFromWhatTheRunKnows(t *testing.T) {
	ctx := context.Background()
	src := userRepo(t)
	remote := bareClone(t, src)
	g := &jobs.Git{URL: remote, Branch: "orch/r-1", Push: "origin"}
	commit := func(m *Manager, text string) Worktree {
		t.Helper()
		wt, err := m.Checkout(ctx, "r-1", g)
		if err != nil {
			t.Fatal(err)
		}
		write(t, wt.Dir, "work.txt", text)
		if _, err := m.CommitTask(ctx, wt, "r-1", "1", text, ""); err != nil {
			t.Fatal(err)
		}
		return wt
	}
	// Worker one pushes its commit and dies before the run records it; two takes the step over and does it again.
	one, two := &Manager{Root: t.TempDir()}, &Manager{Root: t.TempDir()}
	wt1 := commit(one, "one\n")
	if err := one.Push(ctx, wt1, "origin", g.Branch, "", nil); err != nil {
		t.Fatal(err)
	}
	dead := wt1.git.head()
	wt2 := commit(two, "two\n")
	if err := two.Push(ctx, wt2, "origin", g.Branch, "", nil); !errors.Is(err, ErrMoved) {
		t.Fatalf("a push over a commit the run does not know: %v", err)
	}
	if err := two.Push(ctx, wt2, "origin", g.Branch, "", []string{dead}); err != nil {
		t.Fatalf("a push over the dead step's commit: %v", err)
	}
	if at := run(t, remote, "rev-parse", g.Branch); at != wt2.git.head() {
		t.Fatalf("the remote's branch is at %s, not at the new owner's %s", at, wt2.git.head())
	}
	// Worker one comes back: what it knows is what the run recorded, and it cannot push over two's commit.
	write(t, wt1.Dir, "work.txt", "one, later\n")
	if _, err := one.CommitTask(ctx, wt1, "r-1", "1", "later", ""); err != nil {
		t.Fatal(err)
	}
	if err := one.Push(ctx, wt1, "origin", g.Branch, "", nil); !errors.Is(err, ErrMoved) {
		t.Fatalf("a stale worker's push: %v", err)
	}
	if at := run(t, remote, "rev-parse", g.Branch); at != wt2.git.head() {
		t.Fatalf("the stale worker's push replaced the new owner's: the branch is at %s", at)
	}
	// The same in a user's repository: the branch moves from the recorded head only.
	repo, m, lg, wt := firstRun(t)
	write(t, wt.Dir, "a.txt", "a\n")
	if _, err := m.CommitTask(ctx, wt, "r-1", "1", "t", ""); err != nil {
		t.Fatal(err)
	}
	run(t, repo, "branch", "-f", lg.Branch, run(t, repo, "commit-tree", "-p", lg.BaseCommit, "-m", "someone's", lg.BaseCommit+"^{tree}"))
	someone := run(t, repo, "rev-parse", lg.Branch)
	if err := m.MoveBranch(ctx, wt, lg.BaseCommit, nil); !errors.Is(err, ErrMoved) {
		t.Fatalf("moving a branch someone else moved: %v", err)
	}
	if at := run(t, repo, "rev-parse", lg.Branch); at != someone {
		t.Fatalf("their commit was overwritten: the branch is at %s", at)
	}
	if err := m.MoveBranch(ctx, wt, lg.BaseCommit, []string{someone}); err != nil {
		t.Fatalf("moving from a dead step's commit: %v", err)
	}
	if at := run(t, repo, "rev-parse", lg.Branch); at != wt.git.head() {
		t.Fatalf("the branch is at %s, not the task's commit", at)
	}
}

// The run's branch is a ref of the user's repository. Checking the worktree out brings it to where the run is — from
// nowhere, from behind, from a dead step's commit — but never back over a commit orch did not make: that commit is
// left where it is, and the checkout says how to go on. A move while the agent works is found by Examine.
func TestACheckoutNeverMovesTheBranchBackOverSomeoneElsesCommit(t *testing.T) {
	ctx := context.Background()
	repo, m, g, wt := firstRun(t)
	write(t, wt.Dir, "a.txt", "a\n")
	c1, err := m.CommitTask(ctx, wt, "r-1", "1", "t", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.MoveBranch(ctx, wt, g.BaseCommit, nil); err != nil {
		t.Fatal(err)
	}
	g.Head = c1
	at := func() string { return run(t, repo, "rev-parse", g.Branch) }

	// Someone commits on the run's branch while the agent works: Examine names it.
	someone := run(t, repo, "commit-tree", "-p", c1, "-m", "someone's", c1+"^{tree}")
	run(t, repo, "update-ref", "refs/heads/"+g.Branch, someone)
	ex, err := m.Examine(ctx, wt)
	if err != nil || !slices.ContainsFunc(ex.Tampered, func(s string) bool { return strings.Contains(s, "was moved to "+Short(someone)) }) {
		t.Fatalf("examine: %v, %q", err, ex.Tampered)
	}
	// The next checkout leaves their commit on the branch and says so; so does a checkout made anew.
	for _, anew := range []bool{false, true} {
		if anew {
			m = &Manager{Root: t.TempDir()}
		}
		if _, err := m.Checkout(ctx, "r-1", g); !errors.Is(err, ErrMoved) || !strings.Contains(err.Error(), "git update-ref") {
			t.Fatalf("checkout (anew %v) over someone's commit: %v", anew, err)
		}
		if at() != someone {
			t.Fatalf("checkout (anew %v): their commit was overwritten: the branch is at %s", anew, at())
		}
	}
	// Put back behind the run, deleted, or at a commit a dead step was moving to: the checkout brings it to the run.
	for name, set := range map[string]func(){
		"behind":  func() { run(t, repo, "update-ref", "refs/heads/"+g.Branch, g.BaseCommit) },
		"deleted": func() { run(t, repo, "update-ref", "-d", "refs/heads/"+g.Branch) },
		"a dead step's": func() {
			run(t, repo, "update-ref", "refs/heads/"+g.Branch, someone)
			g.Moving = []string{someone}
		},
	} {
		set()
		if _, err := m.Checkout(ctx, "r-1", g); err != nil {
			t.Fatalf("checkout with the branch %s: %v", name, err)
		}
		if at() != c1 {
			t.Fatalf("checkout with the branch %s: the branch is at %s, want the run's %s", name, at(), c1)
		}
		g.Moving = nil
	}
}

// In orch's own mirror of a run's URL the branch is orch's record of where the run was on this machine: left behind
// on a commit the run replaced (its step rescued on another machine), it is brought to the run, not refused.
func TestAMirrorsBranchFollowsTheRun(t *testing.T) {
	ctx := context.Background()
	src := userRepo(t)
	remote := bareClone(t, src)
	g := &jobs.Git{URL: remote, Branch: "orch/r-1", Push: "origin"}
	m := &Manager{Root: t.TempDir()}
	wt, err := m.Checkout(ctx, "r-1", g)
	if err != nil {
		t.Fatal(err)
	}
	write(t, wt.Dir, "a.txt", "a\n")
	c1, err := m.CommitTask(ctx, wt, "r-1", "1", "t", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.MoveBranch(ctx, wt, g.BaseCommit, nil); err != nil {
		t.Fatal(err)
	}
	g.Head = c1
	// What a step here left and the run replaced: a commit of this machine's that is not behind the run's head.
	mirror := wt.repo.dir
	replaced := run(t, mirror, "commit-tree", "-p", g.BaseCommit, "-m", "replaced", g.BaseCommit+"^{tree}")
	run(t, mirror, "update-ref", "refs/heads/"+g.Branch, replaced)
	if _, err := m.Checkout(ctx, "r-1", g); err != nil {
		t.Fatalf("checkout in the mirror: %v", err)
	}
	if at := run(t, mirror, "rev-parse", g.Branch); at != c1 {
		t.Fatalf("the mirror's branch is at %s, want the run's %s", at, c1)
	}
}

// bareClone is a bare repository cloned from src: a remote for runs that clone their repository.
func bareClone(t *testing.T, src string) string {
	t.Helper()
	remote := filepath.Join(t.TempDir(), "remote.git")
	run(t, t.TempDir(), "clone", "-q", "--bare", src, remote)
	return remote
}
