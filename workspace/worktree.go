package workspace

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/orchrun/orch/jobs"
)

// Manager keeps the worktrees of the runs a worker works on, and the mirrors of the repositories its runs clone.
type Manager struct {
	// Root holds what the manager makes: Root/worktrees/<run id>, and Root/mirrors/<hash>.git for runs that clone.
	Root string
	// Author signs orch's commits. Default DefaultIdentity.
	Author Identity
	// Log hears about worktrees brought back in line with their run. Default: discarded.
	Log *slog.Logger
	// Spares is how many worktrees of a run that ended are kept per repository, clean and detached, for the next
	// run: its worktree is then a spare moved into place and switched to the new branch, which rewrites only the
	// files that differ, instead of every file of the repository checked out anew (on 10,000 files, tens of
	// milliseconds instead of most of a second). 0 keeps none.
	Spares int

	// mu serialises this process's changes to a repository's worktree list and branches: two runs starting at once
	// in one repository must not prune each other's worktree half-made.
	mu sync.Mutex
}

// Worktree is where a run's agent works.
type Worktree struct {
	// Top is the worktree's top directory; Dir is where the agent works (Top, or the workspace's place in it).
	Top, Dir string
}

// Path is where run runID's worktree is.
func (m *Manager) Path(runID string) string { return filepath.Join(m.Root, "worktrees", runID) }

func (m *Manager) log() *slog.Logger {
	if m.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return m.Log
}

func (m *Manager) author() Identity {
	if m.Author.Name == "" || m.Author.Email == "" {
		return DefaultIdentity
	}
	return m.Author
}

// Checkout returns run runID's worktree on branch g.Branch, making it when it is missing: from the branch where the
// branch exists (a run resumed after its worktree was removed, or by another worker), else as a new branch at the
// run's base. A worktree whose HEAD is not g.Head (the run moved on elsewhere, or a commit was made that the run
// never recorded) is brought to g.Head: the run's record is the truth. g.BaseCommit is filled in when the run has
// none yet (a run that clones learns its base on the first worker that runs it).
func (m *Manager) Checkout(ctx context.Context, runID string, g *jobs.Git) (Worktree, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	repo, err := m.repository(ctx, runID, g)
	if err != nil {
		return Worktree{}, err
	}
	if g.BaseCommit == "" {
		if g.BaseCommit, err = m.resolveBase(ctx, repo, g); err != nil {
			return Worktree{}, err
		}
	}
	path := m.Path(runID)
	wt := Worktree{Top: path, Dir: filepath.Join(path, g.Dir)}
	if isWorktree(path) {
		if err := m.align(ctx, repo, path, g); err != nil {
			return Worktree{}, err
		}
		return wt, m.mkdirWorkspace(wt)
	}
	if err := m.prepareRoot(repo); err != nil {
		return Worktree{}, err
	}
	// A directory without its .git file is what a crash in the middle of making it left: start it again.
	if err := os.RemoveAll(path); err != nil {
		return Worktree{}, fmt.Errorf("removing the half-made worktree %s: %w", path, err)
	}
	if _, err := git(ctx, repo, nil, "worktree", "prune"); err != nil {
		return Worktree{}, err
	}
	start := g.Head
	if start == "" {
		start = g.BaseCommit
	}
	exists := false
	if _, err := git(ctx, repo, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+g.Branch); err == nil {
		exists = true
		if err := m.takeBranch(ctx, repo, path, g.Branch); err != nil {
			return Worktree{}, err
		}
	}
	if m.takeSpare(ctx, repo, path, g.Branch, start) {
		return wt, m.mkdirWorkspace(wt)
	}
	if exists {
		// The branch is there (the run was here before, or another worker pushed it): it must hold the run's head.
		if _, err := git(ctx, repo, nil, "branch", "--force", "--no-track", g.Branch, start); err != nil {
			return Worktree{}, err
		}
		_, err = git(ctx, repo, nil, "-c", "checkout.workers=0", "worktree", "add", "--quiet", path, g.Branch)
		if err != nil {
			return Worktree{}, fmt.Errorf("making the run's worktree: %w", err)
		}
		return wt, m.mkdirWorkspace(wt)
	}
	// Files are written by as many workers as there are CPUs: most of a big checkout is the kernel making files.
	if _, err := git(ctx, repo, nil, "-c", "checkout.workers=0", "worktree", "add", "--quiet", "--no-track", "-b", g.Branch,
		path, start); err != nil {
		return Worktree{}, fmt.Errorf("making the run's worktree: %w", err)
	}
	return wt, m.mkdirWorkspace(wt)
}

// mkdirWorkspace makes the workspace's directory in the worktree when the base commit does not have it (a directory
// of untracked files, or one git does not keep because it is empty).
func (m *Manager) mkdirWorkspace(wt Worktree) error {
	if wt.Dir == wt.Top {
		return nil
	}
	if err := os.MkdirAll(wt.Dir, 0o755); err != nil {
		return fmt.Errorf("making the workspace's directory in the run's worktree: %w", err)
	}
	return giveTo(wt.Dir, wt.Top)
}

// spares are the spare worktrees of repo.
func (m *Manager) spares(repo string) []string {
	sum := sha256.Sum256([]byte(repo))
	found, _ := filepath.Glob(filepath.Join(m.Root, "worktrees", ".spare-"+hex.EncodeToString(sum[:6])+"-*"))
	return found
}

// takeSpare makes a spare worktree of repo the run's, at path on branch (made or moved to start). It reports whether
// there was one to take.
func (m *Manager) takeSpare(ctx context.Context, repo, path, branch, start string) bool {
	for _, spare := range m.spares(repo) {
		if !isWorktree(spare) {
			_ = os.RemoveAll(spare)
			continue
		}
		if _, err := git(ctx, repo, nil, "worktree", "move", spare, path); err != nil {
			m.log().Warn("a spare worktree could not be taken; removing it", "worktree", spare, "err", err)
			m.discard(ctx, repo, spare)
			continue
		}
		if _, err := git(ctx, path, nil, "checkout", "--quiet", "--force", "--no-track", "-B", branch, start); err != nil {
			m.log().Warn("a spare worktree could not switch to the run's branch; removing it", "worktree", path, "err", err)
			m.discard(ctx, repo, path)
			continue
		}
		if _, err := git(ctx, path, nil, "clean", "-ffdxq"); err != nil {
			m.discard(ctx, repo, path)
			continue
		}
		return true
	}
	return false
}

// keepSpare makes the worktree at path, of a run that ended, a spare of repo when there is room: clean, detached from
// the run's branch. It reports whether it did.
func (m *Manager) keepSpare(ctx context.Context, repo, path string) bool {
	if len(m.spares(repo)) >= m.Spares {
		return false
	}
	if _, err := git(ctx, path, nil, "checkout", "--quiet", "--detach"); err != nil {
		return false
	}
	if _, err := git(ctx, path, nil, "reset", "--quiet", "--hard"); err != nil {
		return false
	}
	if _, err := git(ctx, path, nil, "clean", "-ffdxq"); err != nil {
		return false
	}
	sum := sha256.Sum256([]byte(repo))
	spare := filepath.Join(m.Root, "worktrees", ".spare-"+hex.EncodeToString(sum[:6])+"-"+randomSuffix())
	_, err := git(ctx, repo, nil, "worktree", "move", path, spare)
	return err == nil
}

// discard removes a worktree, whatever state it is in.
func (m *Manager) discard(ctx context.Context, repo, path string) {
	if _, err := git(ctx, repo, nil, "worktree", "remove", "--force", "--force", path); err != nil {
		_ = os.RemoveAll(path)
		_, _ = git(ctx, repo, nil, "worktree", "prune")
	}
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// takeBranch removes another worktree of the run's branch: a run has one step at a time, so a worktree of its branch
// elsewhere on this machine (another worker's directory, on the same repository) was left by a step that is over.
func (m *Manager) takeBranch(ctx context.Context, repo, path, branch string) error {
	out, err := git(ctx, repo, nil, "worktree", "list", "--porcelain")
	if err != nil {
		return err
	}
	var at string
	for _, line := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			at = p
		}
		if line == "branch refs/heads/"+branch && at != path {
			m.log().Warn("removing another worktree of the run's branch", "worktree", at, "branch", branch)
			if _, err := git(ctx, repo, nil, "worktree", "remove", "--force", at); err != nil {
				return fmt.Errorf("the run's branch is checked out in %s: %w", at, err)
			}
		}
	}
	return nil
}

// align brings the worktree at path to g.Head when it is elsewhere. Work not committed there is of a step whose
// outcome was never saved, or of the run's state before another worker moved it on: it goes.
func (m *Manager) align(ctx context.Context, repo, path string, g *jobs.Git) error {
	if g.Head == "" {
		return nil
	}
	head, err := git(ctx, path, nil, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	if head == g.Head {
		return nil
	}
	if !hasCommit(ctx, repo, g.Head) {
		return fmt.Errorf("the run's branch is at %s, which %s does not have (was it pushed?)", Short(g.Head), repo)
	}
	m.log().Warn("the run's worktree was not where the run is; moving it there", "worktree", path,
		"was", Short(head), "now", Short(g.Head))
	if _, err := git(ctx, path, nil, "reset", "--hard", "--quiet", g.Head); err != nil {
		return err
	}
	_, err = git(ctx, path, nil, "clean", "-fdq")
	return err
}

// repository is the repository a run's worktree belongs to: the user's own, or this worker's mirror of the run's URL,
// cloned on first use and brought up to date.
func (m *Manager) repository(ctx context.Context, runID string, g *jobs.Git) (string, error) {
	if g.URL == "" {
		if g.Repo == "" {
			return "", errors.New("the run has no repository")
		}
		return g.Repo, nil
	}
	mirror := m.mirror(g.URL)
	if _, err := os.Stat(filepath.Join(mirror, "HEAD")); err != nil {
		if err := m.clone(ctx, g.URL, mirror); err != nil {
			return "", err
		}
	} else if g.BaseCommit != "" && isWorktree(m.Path(runID)) && (g.Head == "" || hasCommit(ctx, mirror, g.Head)) {
		return mirror, nil // the run was here last: nothing to fetch
	}
	// The remote's branches, the run's own included when another worker pushed it, under refs/remotes/origin.
	if _, err := git(ctx, mirror, nil, "fetch", "--quiet", "--prune", "origin",
		"+refs/heads/*:refs/remotes/origin/*"); err != nil {
		return "", fmt.Errorf("fetching %s: %w", redactURL(g.URL), err)
	}
	if g.Head != "" {
		if !hasCommit(ctx, mirror, g.Head) {
			return "", fmt.Errorf("the run's branch %s is at %s, which %s does not have: it was not pushed from the worker that made it",
				g.Branch, Short(g.Head), redactURL(g.URL))
		}
	}
	return mirror, nil
}

// mirror is where this manager keeps its mirror of url.
func (m *Manager) mirror(url string) string {
	sum := sha256.Sum256([]byte(url))
	return filepath.Join(m.Root, "mirrors", hex.EncodeToString(sum[:8])+".git")
}

func hasCommit(ctx context.Context, repo, sha string) bool {
	_, err := git(ctx, repo, nil, "cat-file", "-e", sha+"^{commit}")
	return err == nil
}

// clone makes a bare mirror of url at dir, atomically: a half-made clone is never taken for a mirror.
func (m *Manager) clone(ctx context.Context, url, dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".clone-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if _, err := git(ctx, filepath.Dir(dir), nil, "clone", "--bare", "--quiet", "--", url, tmp); err != nil {
		return fmt.Errorf("cloning %s: %w", redactURL(url), err)
	}
	if err := os.Rename(tmp, dir); err != nil && !isExist(err) {
		return err
	}
	return nil
}

func isExist(err error) bool {
	return errors.Is(err, os.ErrExist) || strings.Contains(err.Error(), "directory not empty")
}

// resolveBase is the commit the run's branch starts from.
func (m *Manager) resolveBase(ctx context.Context, repo string, g *jobs.Git) (string, error) {
	base := g.Base
	if base == "" {
		base = "HEAD"
	}
	if g.URL == "" {
		return Resolve(ctx, repo, base)
	}
	if base == "HEAD" {
		out, err := git(ctx, repo, nil, "ls-remote", "--quiet", "origin", "HEAD")
		if err != nil {
			return "", fmt.Errorf("asking %s for its HEAD: %w", redactURL(g.URL), err)
		}
		if sha, _, ok := strings.Cut(out, "\t"); ok {
			return sha, nil
		}
		return "", fmt.Errorf("%s has no HEAD (an empty repository?)", redactURL(g.URL))
	}
	if sha, err := Resolve(ctx, repo, "refs/remotes/origin/"+base); err == nil {
		return sha, nil
	}
	return Resolve(ctx, repo, base)
}

// prepareRoot makes the manager's directory, and keeps it out of git's sight when it lies inside a repository (the
// state directory is usually in the user's checkout).
func (m *Manager) prepareRoot(repo string) error {
	trees := filepath.Join(m.Root, "worktrees")
	if err := os.MkdirAll(trees, 0o755); err != nil {
		return fmt.Errorf("making the worktree directory: %w", err)
	}
	ignore := filepath.Join(m.Root, ".gitignore")
	if _, err := os.Stat(ignore); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(ignore, []byte("# orch's own: worktrees of runs, mirrors\n*\n"), 0o644); err != nil {
			return err
		}
	}
	// git makes the run's worktree as the repository's owner: in a directory that owner can write. What orch makes
	// inside the user's checkout is the user's to remove.
	mine := []string{trees}
	if rel, err := filepath.Rel(repo, m.Root); err == nil && !strings.HasPrefix(rel, "..") {
		mine = append(mine, m.Root, ignore)
	}
	for _, p := range mine {
		if err := giveTo(p, repo); err != nil {
			return fmt.Errorf("giving %s to the repository's owner: %w", p, err)
		}
	}
	return nil
}

// CommitTask commits the worktree's changes as task taskID of run runID and returns the commit ("" when the task
// changed nothing).
func (m *Manager) CommitTask(ctx context.Context, wt Worktree, runID, taskID, title, summary string) (string, error) {
	return Commit(ctx, wt.Top, m.author(), TaskMessage(runID, taskID, title, summary))
}

// Push sends the worktree's HEAD to branch on remote. The branch is the run's own: it is forced, so that a run
// resumed from its recorded head after a crash replaces commits that the run never recorded.
func (m *Manager) Push(ctx context.Context, wt Worktree, remote, branch string) error {
	if _, err := git(ctx, wt.Top, nil, "push", "--quiet", "--force", remote, "HEAD:refs/heads/"+branch); err != nil {
		return fmt.Errorf("pushing %s to %s: %w", branch, remote, err)
	}
	return nil
}

// Remove removes run runID's worktree; the branch stays. Work left uncommitted in it (a run that failed or was
// aborted mid-task) is kept first as a commit on top of the branch under refs/orch/unfinished/<run id>, which is
// returned ("" when there was none).
func (m *Manager) Remove(ctx context.Context, runID string, g *jobs.Git) (unfinished string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	path := m.Path(runID)
	repo := g.Repo
	if g.URL != "" {
		repo = m.mirror(g.URL)
	}
	if !isWorktree(path) {
		if err := os.RemoveAll(path); err != nil {
			return "", err
		}
		if _, err := os.Stat(repo); err == nil {
			_, err = git(ctx, repo, nil, "worktree", "prune")
			return "", err
		}
		return "", nil
	}
	if dirty, err := Dirty(ctx, path); err == nil && dirty {
		unfinished, err = saveUnfinished(ctx, path, runID, m.author())
		if err != nil {
			return "", fmt.Errorf("keeping the run's uncommitted work: %w", err)
		}
	}
	if m.keepSpare(ctx, repo, path) {
		return unfinished, nil
	}
	if _, err := git(ctx, repo, nil, "worktree", "remove", "--force", path); err != nil {
		if rerr := os.RemoveAll(path); rerr != nil {
			return unfinished, errors.Join(err, rerr)
		}
		_, err = git(ctx, repo, nil, "worktree", "prune")
		return unfinished, err
	}
	return unfinished, nil
}

// saveUnfinished commits what the worktree holds without moving its branch, and names the commit with a ref of its
// own.
func saveUnfinished(ctx context.Context, dir, runID string, who Identity) (string, error) {
	if _, err := git(ctx, dir, nil, "add", "--all"); err != nil {
		return "", err
	}
	tree, err := git(ctx, dir, nil, "write-tree")
	if err != nil {
		return "", err
	}
	c, err := git(ctx, dir, who.env(), "commit-tree", tree, "-p", "HEAD", "-m",
		fmt.Sprintf("Unfinished work of run %s\n\nOrch-Run: %s\n", runID, runID))
	if err != nil {
		return "", err
	}
	ref := "refs/orch/unfinished/" + runID
	if _, err := git(ctx, dir, nil, "update-ref", ref, c); err != nil {
		return "", err
	}
	return ref, nil
}

// isWorktree reports whether path is a linked worktree: it holds a .git file.
func isWorktree(path string) bool {
	fi, err := os.Stat(filepath.Join(path, ".git"))
	return err == nil && fi.Mode().IsRegular()
}

// Short is how orch abbreviates a commit in what it tells people: 12 hex digits.
func Short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// redactURL drops the credentials from a URL before it goes into a message.
func redactURL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if slash := strings.Index(rest, "/"); slash < 0 || at < slash {
			rest = rest[at+1:]
		}
	}
	return scheme + "://" + rest
}

// Diff writes the run's work, its branch against its base, to out: the patch, or with stat git's diffstat. A run that
// clones its repository is read from this machine's mirror, brought up to date first.
func (m *Manager) Diff(ctx context.Context, g *jobs.Git, stat bool, out io.Writer) error {
	repo := g.Repo
	if g.URL != "" {
		m.mu.Lock()
		var err error
		repo, err = m.repository(ctx, "", g)
		m.mu.Unlock()
		if err != nil {
			return err
		}
	}
	head := g.Head
	if head == "" {
		head = g.BaseCommit // nothing done yet
	}
	args := []string{"-c", "safe.directory=*", "-C", repo, "diff"}
	if stat {
		args = append(args, "--stat")
	}
	cmd := exec.CommandContext(ctx, "git", append(args, g.BaseCommit, head, "--")...)
	cmd.Stdout = out
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return &gitError{args: []string{"diff", Short(g.BaseCommit), Short(head)}, stderr: stderr.String(), err: err}
	}
	return nil
}
