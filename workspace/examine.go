package workspace

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Examination is what orch sees of a run's worktree after its agent worked, before anything is committed or pushed.
type Examination struct {
	// Tampered lists, in words a person can act on, what the agent changed that points git outside the worktree or at
	// programs: its .git made a link to another git directory, orch's git directory of the run rewritten, the
	// repository's hooks or program-running settings changed. Empty when nothing was. The agent's git is made anew
	// (its commits are not kept) and orch's git directory rewritten, so that nothing of it outlives the examination.
	Tampered []string
	// Files lists the files the work changes against the run's head ("M\tpath", as git diff --name-status says),
	// and Stat is git's diffstat of it.
	Files []string
	Stat  string
	// Added is what the work adds, bounded: the added lines of its diff against the run's head, and the messages of the
	// commits the agent made. It is what is searched for secrets before anything is committed or pushed.
	Added string
}

// maxAdded bounds Examination.Added.
const maxAdded = 8 << 20

// Examine looks at the run's worktree after its agent worked (see Examination). The commits the agent made are
// imported into the repository, without moving any ref, so that their messages can be read; CommitTask moves the
// branch to them once the task is done.
func (m *Manager) Examine(ctx context.Context, wt Worktree) (Examination, error) {
	var ex Examination
	head := wt.git.head()
	if wt.at != nil {
		head = *wt.at
	}
	a := m.agent(wt)
	ex.Tampered = append(ex.Tampered, a.tampered()...)
	ex.Tampered = append(ex.Tampered, wt.git.changed(head)...)
	if wt.print != nil {
		ex.Tampered = append(ex.Tampered, changedSince(wt.print, wt.repo.print())...)
	}
	if head == "" {
		return ex, nil
	}
	if moved := m.branchMoved(ctx, wt, head); moved != "" {
		ex.Tampered = append(ex.Tampered, moved)
	}
	if err := wt.git.write(head); err != nil {
		return ex, err
	}
	tip := ""
	if len(ex.Tampered) > 0 {
		if err := m.remakeAgentGit(wt, head); err != nil {
			return ex, err
		}
	} else if t, err := m.importAgentCommits(ctx, wt, head); err == nil {
		tip = t
	} else {
		m.log().Warn("the agent's own commits could not be read", "worktree", wt.Top, "err", err)
	}
	if _, err := m.stage(ctx, wt); err != nil {
		return ex, err
	}
	if err := m.describeChange(ctx, wt, head, &ex); err != nil {
		return ex, err
	}
	added, err := m.added(ctx, wt, head, tip)
	ex.Added = added
	return ex, err
}

// describeChange lists the files the staged work changes from head, and its --stat.
func (m *Manager) describeChange(ctx context.Context, wt Worktree, head string, ex *Examination) error {
	names, err := m.inRun(wt).run(ctx, "diff-index", "--cached", "--name-status", "--no-renames", head, "--")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(names, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			ex.Files = append(ex.Files, line)
		}
	}
	ex.Stat, err = m.inRun(wt).run(ctx, "diff-index", "--cached", "--stat", "--no-ext-diff", "--no-textconv", head, "--")
	return err
}

// added is what the staged work adds to head, bounded by maxAdded: the messages of the agent's commits up to tip (if
// any), then the added lines of the diff.
func (m *Manager) added(ctx context.Context, wt Worktree, head, tip string) (string, error) {
	var added bytes.Buffer
	if tip != "" {
		c := m.inRun(wt)
		c.stdout = &capped{w: &added, n: maxAdded / 2}
		if _, err := c.run(ctx, "log", "--format=%B", tip, "^"+head, "--"); err != nil {
			return "", err
		}
	}
	var patch bytes.Buffer
	c := m.inRun(wt)
	c.stdout = &capped{w: &patch, n: maxAdded - int64(added.Len())}
	if _, err := c.run(ctx, "diff-index", "--cached", "-p", "-U0", "--no-ext-diff", "--no-textconv", "--no-color", head, "--"); err != nil {
		return "", err
	}
	for _, line := range strings.SplitAfter(patch.String(), "\n") {
		if strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "+++ ") {
			added.WriteString(line[1:])
		}
	}
	return added.String(), nil
}

// capped keeps the first n bytes written to it and drops the rest, so that a command's output of any size costs no
// more than n.
type capped struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *capped) Write(p []byte) (int, error) {
	if c.n > 0 {
		k := min(int64(len(p)), c.n)
		c.w.Write(p[:k])
		c.n -= k
	}
	return len(p), nil
}

// PlainChanges lists what git would call changed in a workspace used in place that is a repository without a first
// commit (its runs have no branch to work on): its staged and untracked files, as `git status --porcelain` says them.
// Its git directory is the agent's to write, so git reads it only as data: the index is copied, the objects borrowed,
// and the configuration is an empty one of orch's, so that no filter, fsmonitor or hook of it runs. nil when dir has no
// .git directory, or git cannot tell within a few seconds.
func PlainChanges(ctx context.Context, dir string) []string {
	dotGit := filepath.Join(dir, ".git")
	if !isDir(dotGit) || !isDir(filepath.Join(dotGit, "objects")) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tmp, err := os.MkdirTemp("", "orch-status-")
	if err != nil {
		return nil
	}
	defer os.RemoveAll(tmp)
	repo := &repository{dir: dotGit, objects: filepath.Join(dotGit, "objects"), owner: dir}
	d := runGitDir{path: tmp, repo: repo}
	if err := d.write("ref: refs/heads/none"); err != nil {
		return nil
	}
	if index, ok := readRaw(filepath.Join(dotGit, "index"), 64<<20); ok {
		_ = writeOwned(filepath.Join(tmp, "index"), index, dir)
	}
	_ = filepath.WalkDir(tmp, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			err = giveTo(p, dir)
		}
		return err
	})
	_ = os.Chmod(tmp, 0o755)
	c := gitCmd{gitDir: tmp, workTree: dir, objects: repo.objects, owner: dir}
	out, err := c.run(ctx, "status", "--porcelain", "--untracked-files=all", "--ignore-submodules=all")
	if err != nil {
		return nil
	}
	var files []string
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			files = append(files, line)
		}
	}
	return files
}

// branchMoved says how the run's branch in the repository moved while the agent worked: checking the worktree out put
// it at head (align), and only orch moves it, after the agent (MoveBranch). "" when it is still there.
func (m *Manager) branchMoved(ctx context.Context, wt Worktree, head string) string {
	if !branchName(wt.branch) {
		return ""
	}
	at, _ := onRepo(wt.repo).run(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+wt.branch+"^{commit}")
	switch {
	case at == head:
		return ""
	case at == "":
		return fmt.Sprintf("the repository's branch %s was deleted (orch had it at %s)", wt.branch, Short(head))
	}
	return fmt.Sprintf("the repository's branch %s was moved to %s (orch had it at %s)", wt.branch, Short(at), Short(head))
}
