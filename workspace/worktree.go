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
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/orchrun/orch/jobs"
)

// Manager keeps the worktrees of the runs a worker works on, orch's own git directories of those runs, and the
// mirrors of the repositories its runs clone.
type Manager struct {
	// Root holds what the manager makes: Root/worktrees/<run id> (the files, and the agent's own .git),
	// Root/gitdirs/<run id> (orch's git directory of the run), and Root/mirrors/<hash>.git for runs that clone.
	Root string
	// Author signs orch's commits. Default DefaultIdentity.
	Author Identity
	// Log hears about worktrees brought back in line with their run. Default: discarded.
	Log *slog.Logger
	// Spares is how many worktrees of a run that ended are kept per repository, clean, for the next run: its worktree
	// is then a spare moved into place and switched to the new commit, which rewrites only the files that differ,
	// instead of every file of the repository checked out anew (on 10,000 files, tens of milliseconds instead of most
	// of a second). 0 keeps none.
	Spares int
	// Stall is how long a network git command (clone, fetch, push) may go without a sign of progress before its
	// remote is taken for one that does not answer, and the command fails saying so. Default DefaultStall.
	Stall time.Duration

	// mu serialises this process's changes to worktrees and branches: two runs starting at once on one repository
	// must not take the same spare.
	mu sync.Mutex
}

// Worktree is where a run's agent works.
type Worktree struct {
	// Top is the worktree's top directory; Dir is where the agent works (Top, or the workspace's place in it).
	Top, Dir string
	// ReadOnly are the directories outside the worktree that the agent's git reads: the repository's object
	// directories. A sandbox that shows the agent only its worktree shows it these too, read-only.
	ReadOnly []string

	repo   *repository
	git    runGitDir
	branch string
	// print is the repository's print when the worktree was checked out (gitdir.go), and at the commit orch's git
	// directory was at then: what the agent found, whatever it wrote since.
	print map[string]string
	at    *string
}

// agent is the agent's own git in the worktree.
func (m *Manager) agent(wt Worktree) agentGit {
	return agentGit{dir: filepath.Join(wt.Top, ".git"), repo: wt.repo, branch: wt.branch, who: m.author()}
}

// Path is where run runID's worktree is.
func (m *Manager) Path(runID string) string { return filepath.Join(m.Root, "worktrees", runID) }

// Has reports whether this manager holds anything of run runID: its worktree, or orch's git directory of it.
func (m *Manager) Has(runID string) bool {
	for _, p := range []string{m.Path(runID), m.gitDirPath(runID)} {
		if _, err := os.Lstat(p); err == nil {
			return true
		}
	}
	return false
}

// gitDirPath is where orch's git directory of run runID is.
func (m *Manager) gitDirPath(runID string) string { return filepath.Join(m.Root, "gitdirs", runID) }

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

// inRun is a git command in a run's worktree, through orch's own git directory of the run.
func (m *Manager) inRun(wt Worktree, env ...string) gitCmd {
	return gitCmd{gitDir: wt.git.path, workTree: wt.Top, objects: wt.repo.objects, owner: wt.repo.owner, env: env}
}

// onRepo is a command on the repository's refs.
func onRepo(r *repository) gitCmd { return gitCmd{gitDir: r.dir, owner: r.owner} }

// online is a network command of the repository's, with remote url.
func (m *Manager) online(r *repository, url string) gitCmd {
	return gitCmd{gitDir: r.dir, owner: r.owner, userConfig: true, remote: url, stall: m.Stall}
}

// Checkout returns run runID's worktree at the run's head on branch g.Branch, making it when it is missing: from a
// spare worktree when there is one, else checked out anew; the branch is set in the repository to the run's head (or
// its base). A worktree that is not at g.Head (the run moved on elsewhere, or a commit was made that the run never
// recorded) is brought to g.Head: the run's record is the truth. g.BaseCommit is filled in when the run has none yet
// (a run that clones learns its base on the first worker that runs it).
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
	start := g.Head
	if start == "" {
		start = g.BaseCommit
	}
	path := m.Path(runID)
	wt := Worktree{Top: path, Dir: filepath.Join(path, g.Dir), ReadOnly: repo.readOnly, repo: repo,
		git: runGitDir{path: m.gitDirPath(runID), repo: repo}, branch: g.Branch}
	if m.isRunTree(wt) {
		if err := m.align(ctx, wt, start, g.Moving); err != nil {
			return Worktree{}, err
		}
		wt.print, wt.at = repo.print(), &start
		return wt, m.mkdirWorkspace(wt)
	}
	if err := m.prepareRoot(repo); err != nil {
		return Worktree{}, err
	}
	// What is there is what a crash in the middle of making it left, or a worktree of an older orch: start again.
	m.discard(ctx, repo, wt.Top, wt.git.path)
	if err := m.setBranch(ctx, repo, g.Branch, start, g.Moving...); err != nil {
		return Worktree{}, err
	}
	if !m.takeSpare(ctx, wt, start) {
		if err := m.checkoutAnew(ctx, wt, start); err != nil {
			m.discard(ctx, repo, wt.Top, wt.git.path)
			return Worktree{}, fmt.Errorf("making the run's worktree: %w", err)
		}
	}
	if err := m.remakeAgentGit(wt, start); err != nil {
		return Worktree{}, err
	}
	wt.print, wt.at = repo.print(), &start
	return wt, m.mkdirWorkspace(wt)
}

// isRunTree reports whether the run's worktree and orch's git directory of it are both there.
func (m *Manager) isRunTree(wt Worktree) bool {
	fi, err := os.Lstat(wt.Top)
	if err != nil || !fi.IsDir() || wt.git.head() == "" {
		return false
	}
	// An older orch's worktree is a linked worktree of the repository, its .git a file that git made.
	if fi, err := os.Lstat(filepath.Join(wt.Top, ".git")); err == nil && fi.Mode().IsRegular() {
		if _, err := os.Lstat(filepath.Join(wt.git.path, "index")); err != nil {
			return false
		}
	}
	return true
}

// checkoutAnew makes the worktree from nothing: orch's git directory at start, every file checked out.
func (m *Manager) checkoutAnew(ctx context.Context, wt Worktree, start string) error {
	if err := mkdirOwned(wt.Top, wt.repo.owner); err != nil {
		return err
	}
	if err := wt.git.write(start); err != nil {
		return err
	}
	_, err := m.inRun(wt).run(ctx, "read-tree", "--reset", "-u", start)
	return err
}

// remakeAgentGit makes the agent's own git anew at head, with orch's index of the same files.
func (m *Manager) remakeAgentGit(wt Worktree, head string) error {
	index, err := os.ReadFile(filepath.Join(wt.git.path, "index"))
	if err != nil {
		index = nil // the agent's git reads every file once instead
	}
	if err := m.agent(wt).make(head, index); err != nil {
		return fmt.Errorf("making the agent's git in the run's worktree: %w", err)
	}
	return nil
}

// setBranch points the run's branch in the repository at sha, from where it is: nowhere (a new branch), a commit sha
// holds (an older state of the run: a step of it done since on another machine), or one of may (commits orch put or
// was about to put there and the run did not record: a dead step's). The branch is the run's own, but it is a ref of
// the user's repository: a branch found anywhere else holds commits orch did not make — a person's, or an escaped
// agent's — and is left alone, with ErrMoved. This is the one way orch moves a branch back. In orch's own mirror of a
// URL the branch is orch's record alone (a step rescued on another machine leaves this one's behind, on a commit the
// run replaced): it goes where the run is.
func (m *Manager) setBranch(ctx context.Context, repo *repository, branch, sha string, may ...string) error {
	if !branchName(branch) {
		return fmt.Errorf("the run's branch %q is not a valid branch name", branch)
	}
	ref := "refs/heads/" + branch
	var last error
	for range 3 { // a ref that moves between the look and the set is looked at again
		at, _ := onRepo(repo).run(ctx, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
		switch {
		case at == sha:
			return nil
		case at != "" && !repo.mine && !slices.Contains(may, at) && !isAncestor(ctx, repo, at, sha):
			return fmt.Errorf("%w: %s is at %s in %s, which is neither where the run is (%s) nor behind it; orch leaves "+
				"it there. Put the branch back (git update-ref refs/heads/%s %s) or delete it, then answer to go on",
				ErrMoved, branch, Short(at), repo.dir, Short(sha), branch, sha)
		}
		// Compare and set: git update-ref refuses when the ref is no longer at, or (at empty) exists.
		_, last = onRepo(repo).run(ctx, "update-ref", "-m", "orch", ref, sha, at)
		if last == nil {
			return nil
		}
	}
	// Another process holding the ref's lock file (git's own, or one a killed git left) fails the set too.
	return fmt.Errorf("moving the run's branch %s: it keeps moving under orch, or git cannot set it: %w", branch, last)
}

// isAncestor reports whether commit a is an ancestor of commit b (or b itself).
func isAncestor(ctx context.Context, repo *repository, a, b string) bool {
	_, err := onRepo(repo).run(ctx, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// branchName reports whether name is a branch name git accepts (git-check-ref-format(1)): components that do not
// start with a dot or end with ".lock", no "..", "@{", control character, space or any of ~^:?*[\, no leading,
// trailing or doubled slash.
func branchName(name string) bool {
	if name == "" || strings.HasSuffix(name, ".") || strings.Contains(name, "..") ||
		strings.Contains(name, "@{") || strings.ContainsAny(name, " ~^:?*[\\") || strings.HasPrefix(name, "-") {
		return false
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return false
		}
	}
	return true
}

// mkdirWorkspace makes the workspace's directory in the worktree when the base commit does not have it (a directory
// of untracked files, or one git does not keep because it is empty).
func (m *Manager) mkdirWorkspace(wt Worktree) error {
	if wt.Dir == wt.Top {
		return nil
	}
	if err := mkdirOwned(wt.Dir, wt.repo.owner); err != nil {
		return fmt.Errorf("making the workspace's directory in the run's worktree: %w", err)
	}
	return nil
}

// repoKey names a repository in the names of its spares.
func repoKey(r *repository) string {
	sum := sha256.Sum256([]byte(r.dir))
	return hex.EncodeToString(sum[:6])
}

// spares are the spare worktrees of repo.
func (m *Manager) spares(repo *repository) []string {
	found, _ := filepath.Glob(filepath.Join(m.Root, "worktrees", ".spare-"+repoKey(repo)+"-*"))
	return found
}

// takeSpare makes a spare worktree of the repository the run's, at start. It reports whether there was one to take.
func (m *Manager) takeSpare(ctx context.Context, wt Worktree, start string) bool {
	for _, spare := range m.spares(wt.repo) {
		spareGit := filepath.Join(m.Root, "gitdirs", filepath.Base(spare))
		old := runGitDir{path: spareGit, repo: wt.repo}.head()
		if old == "" {
			m.discard(ctx, wt.repo, spare, spareGit) // half made, or an older orch's
			continue
		}
		if err := os.Rename(spare, wt.Top); err != nil {
			m.discard(ctx, wt.repo, spare, spareGit)
			continue
		}
		if err := os.Rename(spareGit, wt.git.path); err != nil {
			m.discard(ctx, wt.repo, wt.Top, spareGit)
			continue
		}
		// A spare lies in the manager's root, which a local agent can write: orch's configuration again first.
		if err := wt.git.write(old); err != nil {
			m.discard(ctx, wt.repo, wt.Top, wt.git.path)
			continue
		}
		// The index is the spare's clean checkout of old: a two-tree read rewrites the files that differ.
		if _, err := m.inRun(wt).run(ctx, "read-tree", "-m", "-u", old, start); err != nil {
			m.log().Warn("a spare worktree could not switch to the run's commit; removing it", "worktree", wt.Top, "err", err)
			m.discard(ctx, wt.repo, wt.Top, wt.git.path)
			continue
		}
		if _, err := m.inRun(wt).run(ctx, "clean", "-ffdxq"); err != nil {
			m.discard(ctx, wt.repo, wt.Top, wt.git.path)
			continue
		}
		if err := wt.git.write(start); err != nil {
			m.discard(ctx, wt.repo, wt.Top, wt.git.path)
			continue
		}
		return true
	}
	return false
}

// keepSpare makes the worktree of a run that ended a spare of its repository when there is room: its files as its
// head has them, nothing else, no agent's git. It reports whether it did.
func (m *Manager) keepSpare(ctx context.Context, wt Worktree) bool {
	if len(m.spares(wt.repo)) >= m.Spares {
		return false
	}
	head := wt.git.head()
	if head == "" || wt.git.write(head) != nil {
		return false
	}
	if _, err := m.inRun(wt).run(ctx, "read-tree", "--reset", "-u", head); err != nil {
		return false
	}
	if _, err := m.inRun(wt).run(ctx, "clean", "-ffdxq"); err != nil {
		return false
	}
	if err := os.RemoveAll(filepath.Join(wt.Top, ".git")); err != nil {
		return false
	}
	name := ".spare-" + repoKey(wt.repo) + "-" + randomSuffix()
	if err := os.Rename(wt.git.path, filepath.Join(m.Root, "gitdirs", name)); err != nil {
		return false
	}
	if err := os.Rename(wt.Top, filepath.Join(m.Root, "worktrees", name)); err != nil {
		_ = os.RemoveAll(filepath.Join(m.Root, "gitdirs", name))
		return false
	}
	return true
}

// discard removes a worktree and orch's git directory of it, whatever state they are in. A worktree an older orch
// made is a linked worktree of the repository: the repository forgets it too.
func (m *Manager) discard(ctx context.Context, repo *repository, top, gitDir string) {
	linked := false
	if fi, err := os.Lstat(filepath.Join(top, ".git")); err == nil && fi.Mode().IsRegular() {
		linked = true
	}
	_ = os.RemoveAll(top)
	_ = os.RemoveAll(gitDir)
	if linked {
		_, _ = onRepo(repo).run(ctx, "worktree", "prune")
	}
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// align brings the worktree to head when orch's git directory says it is elsewhere. Work not committed there is of a
// step whose outcome was never saved, or of the run's state before another worker moved it on: it goes. A worktree
// already at head keeps what it holds (a retried attempt sees what the last one left), and its agent's git is made
// anew only when it is gone.
//
// The run's branch in the repository is brought to head first, from orch's own last commit or a dead step's move
// (moving), or left alone with ErrMoved when it holds commits orch did not make (setBranch): before anything in the
// worktree goes.
func (m *Manager) align(ctx context.Context, wt Worktree, head string, moving []string) error {
	at := wt.git.head()
	if len(wt.git.changed("")) > 0 {
		if err := wt.git.write(at); err != nil { // orch's own configuration, whatever was written over it
			return err
		}
	}
	if at != head && !hasCommit(ctx, wt.repo, head) {
		return fmt.Errorf("the run's branch is at %s, which %s does not have (was it pushed?)", Short(head), wt.repo.dir)
	}
	if err := m.setBranch(ctx, wt.repo, wt.branch, head, append([]string{at}, moving...)...); err != nil {
		return err
	}
	if at == head {
		if fi, err := os.Lstat(filepath.Join(wt.Top, ".git")); err != nil || !fi.IsDir() {
			return m.remakeAgentGit(wt, head)
		}
		return nil
	}
	m.log().Warn("the run's worktree was not where the run is; moving it there", "worktree", wt.Top,
		"was", Short(at), "now", Short(head))
	if _, err := m.inRun(wt).run(ctx, "read-tree", "--reset", "-u", head); err != nil {
		return err
	}
	if _, err := m.inRun(wt).run(ctx, "clean", "-fdq"); err != nil {
		return err
	}
	if err := wt.git.write(head); err != nil {
		return err
	}
	return m.remakeAgentGit(wt, head)
}

// repository is the repository a run's worktree belongs to: the user's own, or this worker's mirror of the run's URL,
// cloned on first use and brought up to date.
func (m *Manager) repository(ctx context.Context, runID string, g *jobs.Git) (*repository, error) {
	if g.URL == "" {
		if g.Repo == "" {
			return nil, errors.New("the run has no repository")
		}
		dir, err := commonDir(ctx, g.Repo)
		if err != nil {
			return nil, err
		}
		return openRepository(ctx, dir, g.Repo)
	}
	mirror := m.mirror(g.URL)
	if _, err := os.Stat(filepath.Join(mirror, "HEAD")); err != nil {
		if err := m.clone(ctx, g.URL, mirror); err != nil {
			return nil, err
		}
	}
	repo, err := openRepository(ctx, mirror, mirror)
	if err != nil {
		return nil, err
	}
	repo.mine = true
	if g.BaseCommit != "" && runID != "" && m.isRunTree(Worktree{Top: m.Path(runID),
		git: runGitDir{path: m.gitDirPath(runID), repo: repo}}) && (g.Head == "" || hasCommit(ctx, repo, g.Head)) {
		return repo, nil // the run was here last: nothing to fetch
	}
	if err := m.fetch(ctx, repo, g.URL); err != nil {
		return nil, err
	}
	if g.Head != "" && !hasCommit(ctx, repo, g.Head) {
		return nil, fmt.Errorf("the run's branch %s is at %s, which %s does not have: it was not pushed from the worker that made it",
			g.Branch, Short(g.Head), redactURL(g.URL))
	}
	return repo, nil
}

// mirrorRefspecs are what a mirror keeps of its remote: the branches (the run's own included, when another worker
// pushed it) under refs/remotes/origin, and the tags.
var mirrorRefspecs = []string{"+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"}

// fetch brings the mirror repo up to date with its remote, by the run's URL: nothing of the mirror's configuration
// chooses where to fetch from or with what program.
func (m *Manager) fetch(ctx context.Context, repo *repository, url string) error {
	args := append([]string{"fetch", "--quiet", "--progress", "--prune", "--no-tags", "--no-write-fetch-head", "--", url},
		mirrorRefspecs...)
	if _, err := m.online(repo, url).run(ctx, args...); err != nil {
		return fmt.Errorf("fetching %s: %w", redactURL(url), err)
	}
	return nil
}

// mirror is where this manager keeps its mirror of url.
func (m *Manager) mirror(url string) string {
	sum := sha256.Sum256([]byte(url))
	return filepath.Join(m.Root, "mirrors", hex.EncodeToString(sum[:8])+".git")
}

func hasCommit(ctx context.Context, repo *repository, sha string) bool {
	_, err := onRepo(repo).run(ctx, "cat-file", "-e", sha+"^{commit}")
	return err == nil
}

// clone makes a bare mirror of url at dir, atomically: a half-made clone is never taken for a mirror. It is made as
// an empty repository of orch's (no hooks, no template) that fetches from url, so that nothing of the remote's but
// objects and refs ever reaches it.
func (m *Manager) clone(ctx context.Context, url, dir string) error {
	if protocolOf(url) == "" {
		return fmt.Errorf("cloning %s: orch speaks git over https, http, ssh, git and local paths, not this URL's transport", redactURL(url))
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".clone-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	init := gitCmd{plain: true, workTree: tmp}
	if _, err := init.run(ctx, "init", "--bare", "--quiet", "--template=", tmp); err != nil {
		return fmt.Errorf("cloning %s: %w", redactURL(url), err)
	}
	repo := &repository{dir: tmp, objects: filepath.Join(tmp, "objects")}
	// The remote's name is for a push to "origin" (a run's Push); fetches name the URL and the refspecs themselves.
	for _, kv := range [][]string{{"remote.origin.url", url}, {"gc.auto", "0"}} {
		if _, err := onRepo(repo).run(ctx, "config", "--file", filepath.Join(tmp, "config"), kv[0], kv[1]); err != nil {
			return fmt.Errorf("cloning %s: %w", redactURL(url), err)
		}
	}
	if err := m.fetch(ctx, repo, url); err != nil {
		return fmt.Errorf("cloning %s: %w", redactURL(url), errors.Unwrap(err))
	}
	// The remote's HEAD, for runs that start from it.
	if head, err := m.online(repo, url).run(ctx, "ls-remote", "--symref", "--", url, "HEAD"); err == nil {
		if ref, _, ok := strings.Cut(strings.TrimPrefix(head, "ref: "), "\t"); ok && strings.HasPrefix(ref, "refs/heads/") {
			_, _ = onRepo(repo).run(ctx, "symbolic-ref", "HEAD", ref)
		}
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
func (m *Manager) resolveBase(ctx context.Context, repo *repository, g *jobs.Git) (string, error) {
	base := g.Base
	if base == "" {
		base = "HEAD"
	}
	if g.URL == "" {
		return Resolve(ctx, g.Repo, base)
	}
	if base == "HEAD" {
		out, err := m.online(repo, g.URL).run(ctx, "ls-remote", "--quiet", "--", g.URL, "HEAD")
		if err != nil {
			return "", fmt.Errorf("asking %s for its HEAD: %w", redactURL(g.URL), err)
		}
		if sha, _, ok := strings.Cut(out, "\t"); ok {
			return sha, nil
		}
		return "", fmt.Errorf("%s has no HEAD (an empty repository?)", redactURL(g.URL))
	}
	if strings.HasPrefix(base, "-") {
		return "", fmt.Errorf("%q is not a git ref", base)
	}
	for _, ref := range []string{"refs/remotes/origin/" + base, base} {
		if sha, err := onRepo(repo).run(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}"); err == nil && sha != "" {
			return sha, nil
		}
	}
	return "", fmt.Errorf("%q names no commit in %s", base, redactURL(g.URL))
}

// prepareRoot makes the manager's directories, and keeps them out of git's sight when they lie inside a repository
// (the state directory is usually in the user's checkout).
func (m *Manager) prepareRoot(repo *repository) error {
	for _, d := range []string{"worktrees", "gitdirs"} {
		if err := mkdirOwned(filepath.Join(m.Root, d), repo.owner); err != nil {
			return fmt.Errorf("making the worktree directory: %w", err)
		}
	}
	ignore := filepath.Join(m.Root, ".gitignore")
	if _, err := os.Stat(ignore); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(ignore, []byte("# orch's own: worktrees of runs, their git directories, mirrors\n*\n"), 0o644); err != nil {
			return err
		}
		// What orch makes inside the user's checkout is the user's to remove.
		if rel, err := filepath.Rel(repo.owner, m.Root); err == nil && !strings.HasPrefix(rel, "..") {
			if err := giveTo(ignore, repo.owner); err != nil {
				return err
			}
			if err := giveTo(m.Root, repo.owner); err != nil {
				return err
			}
		}
	}
	return nil
}

// CommitTask commits the worktree's files as task taskID of run runID and returns the commit of the task: orch's
// commit on top of the commits the agent made itself (kept when they continue the run's branch, imported without
// running the agent's git: agentcommits.go), the agent's last commit when it committed everything itself, or "" when
// the task changed nothing. The worktree's head moves to it, and the agent's git starts again from it; the run's branch
// moves with MoveBranch, once the step knows it still owns the run.
func (m *Manager) CommitTask(ctx context.Context, wt Worktree, runID, taskID, title, summary string) (string, error) {
	head := wt.git.head()
	if head == "" {
		return "", fmt.Errorf("orch's git directory of run %s has no HEAD", runID)
	}
	if err := wt.git.write(head); err != nil {
		return "", err
	}
	parent := head
	if len(m.agent(wt).tampered()) == 0 {
		if imported, err := m.importAgentCommits(ctx, wt, head); err != nil {
			m.log().Warn("the agent's own commits could not be kept; its files are committed", "run_id", runID, "err", err)
		} else if imported != "" {
			parent = imported
		}
	}
	tree, err := m.stage(ctx, wt)
	if err != nil {
		return "", err
	}
	commit := ""
	if same, err := m.sameTree(ctx, wt, tree, parent); err != nil {
		return "", err
	} else if !same {
		commit, err = m.inRun(wt, m.author().env()...).run(ctx, "commit-tree", tree, "-p", parent, "-m",
			TaskMessage(runID, taskID, title, summary))
		if err != nil {
			return "", err
		}
	} else if parent != head {
		commit = parent
	}
	if commit == "" {
		return "", nil
	}
	if err := m.moveTo(commit, wt); err != nil {
		return "", err
	}
	return commit, nil
}

// ErrMoved says the run's branch (in the repository or on the remote) is at a commit this run did not put there, or
// put there from a step it no longer owns: orch does not overwrite it.
var ErrMoved = errors.New("the run's branch moved under orch")

// MoveBranch moves the run's branch in the repository to the worktree's head, from the commit the run recorded for it
// (from) or from one of moving, the commits the run's steps were about to put there before they died or lost the step
// (jobs.Git.Moving). It is a compare-and-set: a branch found anywhere else is left alone and ErrMoved returned.
func (m *Manager) MoveBranch(ctx context.Context, wt Worktree, from string, moving []string) error {
	head := wt.git.head()
	if head == "" {
		return errors.New("orch's git directory of the run has no HEAD")
	}
	if !branchName(wt.branch) {
		return fmt.Errorf("the run's branch %q is not a valid branch name", wt.branch)
	}
	ref := "refs/heads/" + wt.branch
	var last error
	for _, old := range append([]string{from}, moving...) {
		if old == head {
			continue
		}
		if _, last = onRepo(wt.repo).run(ctx, "update-ref", "-m", "orch", ref, head, old); last == nil {
			return nil
		}
	}
	at, err := onRepo(wt.repo).run(ctx, "rev-parse", "--verify", "--quiet", ref)
	switch {
	case err != nil && last != nil:
		return fmt.Errorf("moving the run's branch %s: %w", wt.branch, last)
	case at == head:
		return nil // there already: a step that died after moving it, or this one again
	}
	return fmt.Errorf("%w: %s is at %s in %s, not at what the run recorded (%s)", ErrMoved, wt.branch, Short(at),
		wt.repo.dir, Short(from))
}

// moveTo makes commit the worktree's head: orch's git directory of it and the agent's git. The run's branch in the
// repository is moved by MoveBranch, once the step that made the commit knows it still owns the run.
func (m *Manager) moveTo(commit string, wt Worktree) error {
	if err := wt.git.write(commit); err != nil {
		return err
	}
	if wt.at != nil {
		*wt.at = commit
	}
	return m.remakeAgentGit(wt, commit)
}

// Work is the git tree of the worktree's files as they are now (what git would commit: ignored files are not in it).
// Its objects are written to the repository, so that another worktree of the run on this machine can take the work
// back (Recover) when this one is lost.
func (m *Manager) Work(ctx context.Context, wt Worktree) (string, error) {
	head := wt.git.head()
	if head == "" {
		return "", errors.New("orch's git directory of the run has no HEAD")
	}
	if err := wt.git.write(head); err != nil {
		return "", err
	}
	return m.stage(ctx, wt)
}

// Recover brings the worktree's files to tree, the work an attempt left (Work), when they are elsewhere and the
// repository holds tree. It reports whether the worktree holds that work now; it does not when the work was made on
// another machine and never left it.
func (m *Manager) Recover(ctx context.Context, wt Worktree, tree string) (bool, error) {
	now, err := m.Work(ctx, wt)
	if err != nil || now == tree {
		return err == nil, err
	}
	if !isObjectName(tree) {
		return false, fmt.Errorf("%q is not a git object name", tree)
	}
	if _, err := onRepo(wt.repo).run(ctx, "cat-file", "-e", tree+"^{tree}"); err != nil {
		return false, nil
	}
	if _, err := m.inRun(wt).run(ctx, "read-tree", "--reset", "-u", tree); err != nil {
		return false, err
	}
	if _, err := m.inRun(wt).run(ctx, "clean", "-fdq"); err != nil {
		return false, err
	}
	m.log().Warn("the run's worktree did not hold the work its last attempt left; took it back from the repository",
		"worktree", wt.Top, "tree", Short(tree))
	return true, nil
}

// stage records the worktree's files in orch's index and returns their tree.
func (m *Manager) stage(ctx context.Context, wt Worktree) (string, error) {
	if _, err := m.inRun(wt).run(ctx, "add", "--all", "--ignore-errors"); err != nil {
		return "", fmt.Errorf("recording the worktree's files: %w", err)
	}
	return m.inRun(wt).run(ctx, "write-tree")
}

// sameTree reports whether commit holds tree.
func (m *Manager) sameTree(ctx context.Context, wt Worktree, tree, commit string) (bool, error) {
	t, err := m.inRun(wt).run(ctx, "rev-parse", "--verify", "--quiet", commit+"^{tree}")
	return t == tree, err
}

// Stat compares the worktree's head with base: how many commits, files, lines.
func (m *Manager) Stat(ctx context.Context, wt Worktree, base string) (Stat, error) {
	head := wt.git.head()
	if head == "" {
		return Stat{}, errors.New("orch's git directory of the run has no HEAD")
	}
	if err := wt.git.write(head); err != nil {
		return Stat{}, err
	}
	st := Stat{Head: head}
	n, err := m.inRun(wt).run(ctx, "rev-list", "--count", base+".."+head)
	if err != nil {
		return Stat{}, err
	}
	st.Commits, _ = strconv.Atoi(n)
	short, err := m.inRun(wt).run(ctx, "diff", "--no-ext-diff", "--no-textconv", "--shortstat", base, head, "--")
	if err != nil {
		return Stat{}, err
	}
	st.FilesChanged, st.Insertions, st.Deletions = parseShortstat(short)
	return st, nil
}

// Push sends the run's head to branch on remote, as a compare-and-set on the remote's branch: it replaces what the
// run recorded as pushed there (expect, "" for nothing) or one of moving, the commits the run's steps were about to
// push before they died or lost the step (jobs.Git.Moving), and nothing else. A worker that lost its step to another
// cannot overwrite the newer owner's push, and commits someone else pushed to the branch are not lost: ErrMoved.
func (m *Manager) Push(ctx context.Context, wt Worktree, remote, branch, expect string, moving []string) error {
	head := wt.git.head()
	if head == "" {
		return errors.New("orch's git directory of the run has no HEAD")
	}
	url, err := onRepo(wt.repo).run(ctx, "remote", "get-url", "--push", "--", remote)
	if err != nil {
		return fmt.Errorf("pushing %s: the repository has no remote %q: %w", branch, remote, err)
	}
	ref := "refs/heads/" + branch
	push := func(lease string) error {
		// To the remote's URL, not its name: a remote's receivepack, vcs or proxy settings are programs and
		// transports the repository's configuration would choose. The lease names the commit the remote's branch must
		// be at ("" for none: the branch must not exist), which git checks on the remote's side of the push.
		_, err := m.online(wt.repo, url).run(ctx, "push", "--quiet", "--progress", "--no-verify",
			"--force-with-lease="+ref+":"+lease, "--", url, head+":"+ref)
		return err
	}
	err = push(expect)
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrStalled) || ctx.Err() != nil {
		return fmt.Errorf("pushing %s to %s: %w", branch, remote, err)
	}
	at, lerr := m.remoteBranch(ctx, wt.repo, url, ref)
	switch {
	case lerr != nil:
		return fmt.Errorf("pushing %s to %s: %w", branch, remote, err)
	case at == head:
		return nil // there already: a push that landed though its step died before saying so
	case at == expect:
		return fmt.Errorf("pushing %s to %s: %w", branch, remote, err) // not a lease refused: the push failed
	case slices.Contains(moving, at):
		if err := push(at); err != nil {
			return fmt.Errorf("pushing %s to %s: %w", branch, remote, err)
		}
		return nil
	}
	return fmt.Errorf("pushing %s to %s: %w: the remote's branch is at %s, not at what the run recorded (%s)", branch,
		remote, ErrMoved, orNone(Short(at)), orNone(Short(expect)))
}

// remoteBranch is the commit ref is at on the remote at url, "" when the remote has no such ref.
func (m *Manager) remoteBranch(ctx context.Context, repo *repository, url, ref string) (string, error) {
	out, err := m.online(repo, url).run(ctx, "ls-remote", "--", url, ref)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if sha, name, ok := strings.Cut(line, "\t"); ok && name == ref {
			return sha, nil
		}
	}
	return "", nil
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// Remove removes run runID's worktree and orch's git directory of it; the branch stays. Work left uncommitted in it
// (a run that failed or was aborted mid-task) is kept first as a commit on top of the branch under
// refs/orch/unfinished/<run id>, which is returned ("" when there was none).
func (m *Manager) Remove(ctx context.Context, runID string, g *jobs.Git) (unfinished string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	path, gitDir := m.Path(runID), m.gitDirPath(runID)
	repo, rerr := m.openKnown(ctx, g)
	if rerr != nil {
		// The repository is gone: nothing can be kept in it.
		return "", errors.Join(os.RemoveAll(path), os.RemoveAll(gitDir))
	}
	wt := Worktree{Top: path, Dir: path, repo: repo, git: runGitDir{path: gitDir, repo: repo}, branch: g.Branch}
	if !m.isRunTree(wt) {
		m.discard(ctx, repo, path, gitDir)
		return "", nil
	}
	if unfinished, err = m.saveUnfinished(ctx, wt, runID); err != nil {
		return "", fmt.Errorf("keeping the run's uncommitted work: %w", err)
	}
	if m.keepSpare(ctx, wt) {
		return unfinished, nil
	}
	return unfinished, errors.Join(os.RemoveAll(path), os.RemoveAll(gitDir))
}

// openKnown opens the repository of a run without reaching any remote: the user's, or this worker's mirror.
func (m *Manager) openKnown(ctx context.Context, g *jobs.Git) (*repository, error) {
	if g.URL != "" {
		return openRepository(ctx, m.mirror(g.URL), m.mirror(g.URL))
	}
	if g.Repo == "" {
		return nil, errors.New("the run has no repository")
	}
	dir, err := commonDir(ctx, g.Repo)
	if err != nil {
		return nil, err
	}
	return openRepository(ctx, dir, g.Repo)
}

// saveUnfinished commits what the worktree holds, when it differs from the run's head, without moving the run's
// branch, and names the commit with a ref of its own.
func (m *Manager) saveUnfinished(ctx context.Context, wt Worktree, runID string) (string, error) {
	head := wt.git.head()
	if err := wt.git.write(head); err != nil {
		return "", err
	}
	tree, err := m.stage(ctx, wt)
	if err != nil {
		return "", err
	}
	if same, err := m.sameTree(ctx, wt, tree, head); err != nil || same {
		return "", err
	}
	c, err := m.inRun(wt, m.author().env()...).run(ctx, "commit-tree", tree, "-p", head, "-m",
		fmt.Sprintf("Unfinished work of run %s\n\nOrch-Run: %s\n", runID, runID))
	if err != nil {
		return "", err
	}
	ref := "refs/orch/unfinished/" + runID
	if _, err := onRepo(wt.repo).run(ctx, "update-ref", "-m", "orch", ref, c); err != nil {
		return "", err
	}
	return ref, nil
}

// Diff writes the run's work, its branch against its base, to out: the patch, or with stat git's diffstat. A run that
// clones its repository is read from this machine's mirror, brought up to date first. Nothing the repository or the
// run's files configure runs: no external diff, no textconv.
func (m *Manager) Diff(ctx context.Context, g *jobs.Git, stat bool, out io.Writer) error {
	m.mu.Lock()
	repo, err := m.repository(ctx, "", g)
	m.mu.Unlock()
	if err != nil {
		return err
	}
	head := g.Head
	if head == "" {
		head = g.BaseCommit // nothing done yet
	}
	args := []string{"diff", "--no-ext-diff", "--no-textconv", "--no-color"}
	if stat {
		args = append(args, "--stat")
	}
	view, err := m.view(repo)
	if err != nil {
		return err
	}
	c := gitCmd{gitDir: view, objects: repo.objects, owner: repo.owner, stdout: out}
	if _, err := c.run(ctx, append(args, g.BaseCommit, head, "--")...); err != nil {
		var ge *gitError
		if errors.As(err, &ge) {
			ge.args = []string{"diff", Short(g.BaseCommit), Short(head)}
		}
		return err
	}
	return nil
}

// view is a git directory of orch's for reading a repository's objects with orch's configuration alone: the diffs
// of runs that are over, which have no git directory of their own any more.
func (m *Manager) view(repo *repository) (string, error) {
	dir := filepath.Join(m.Root, "gitdirs", ".view-"+repoKey(repo))
	d := runGitDir{path: dir, repo: repo}
	if len(d.changed("")) == 0 {
		return dir, nil
	}
	if err := m.prepareRoot(repo); err != nil {
		return "", err
	}
	if err := mkdirOwned(filepath.Join(dir, "refs"), repo.owner); err != nil {
		return "", err
	}
	if err := writeOwned(filepath.Join(dir, "config"), repo.configText(false), repo.owner); err != nil {
		return "", err
	}
	return dir, writeOwned(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/none\n"), repo.owner)
}
