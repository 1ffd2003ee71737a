package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Commits the agent makes itself are kept: when its git's HEAD continues the run's branch, its commits become the
// branch's, under orch's commit of whatever it left uncommitted. Nothing of the agent's git runs to get them, and
// nothing it wrote is believed:
//
//  1. Its HEAD is read as small files (agentGit.head), never through git.
//  2. Its object files are copied into a quarantine directory of orch's: regular files only, loose objects by their
//     names, packs without their indexes (git makes those again), never objects/info/alternates — so that an agent
//     cannot lead orch to another repository's objects on the host — and no more than maxImport bytes.
//  3. git packs the commits' objects from the quarantine and the repository (pack-objects --revs) and indexes the
//     pack into the repository (index-pack --stdin --strict): every object is named by its content again, checked
//     as git checks what it fetches, so an object file whose name lies never enters the repository under that name.
//
// The quarantine goes when the import ends.

// maxImport bounds the agent's object files copied for an import. An agent's commits hold its own work, which the
// repository's objects do not (they are borrowed); more than this is not a coding task's history, and its files are
// committed without it.
const maxImport = 512 << 20

// errTooBig says the agent's objects are more than orch imports.
var errTooBig = errors.New("the agent's git holds more objects than orch imports")

// importAgentCommits brings the commits the agent made on top of head into the repository, and returns the agent's
// last commit; "" when the agent made none, or made them somewhere head is not an ancestor of (it rewrote the run's
// history: its files are committed, its history is not).
func (m *Manager) importAgentCommits(ctx context.Context, wt Worktree, head string) (string, error) {
	a := m.agent(wt)
	tip := a.head()
	if tip == "" || tip == head {
		return "", nil
	}
	if hasCommit(ctx, wt.repo, tip) {
		return m.descends(ctx, wt, nil, head, tip)
	}
	q, err := os.MkdirTemp(filepath.Join(m.Root, "gitdirs"), ".import-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(q)
	if err := quarantine(filepath.Join(a.dir, "objects"), q); err != nil {
		return "", err
	}
	// git runs as the repository's owner: the quarantine is theirs too.
	if err := filepath.WalkDir(q, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return giveTo(p, wt.repo.owner)
	}); err != nil {
		return "", err
	}
	// The agent's packs get their indexes from git, which reads every object of each.
	packs, _ := filepath.Glob(filepath.Join(q, "pack", "*.pack"))
	for _, p := range packs {
		if _, err := m.inRun(wt).run(ctx, "index-pack", "--strict", p); err != nil {
			return "", fmt.Errorf("reading the agent's pack %s: %w", filepath.Base(p), err)
		}
	}
	tip, err = m.descends(ctx, wt, []string{q}, head, tip)
	if err != nil || tip == "" {
		return "", err
	}
	// pack-objects reads the new objects from the quarantine, index-pack writes them into the repository.
	r, w := io.Pipe()
	packer := m.inRun(wt)
	packer.alternates, packer.stdin, packer.stdout = []string{q}, strings.NewReader(tip+"\n^"+head+"\n"), w
	done := make(chan error, 1)
	go func() {
		_, err := packer.run(ctx, "pack-objects", "--revs", "--stdout", "--quiet")
		w.CloseWithError(err)
		done <- err
	}()
	indexer := m.inRun(wt)
	indexer.stdin = r
	_, ierr := indexer.run(ctx, "index-pack", "--stdin", "--strict")
	r.CloseWithError(io.ErrClosedPipe) // a packer still writing stops
	if perr := <-done; perr != nil {
		return "", fmt.Errorf("packing the agent's commits: %w", perr)
	}
	if ierr != nil {
		return "", fmt.Errorf("storing the agent's commits: %w", ierr)
	}
	// Everything the commits need is in the repository now, by its own name.
	if _, err := m.inRun(wt).run(ctx, "rev-list", "--objects", "--quiet", tip, "^"+head); err != nil {
		return "", fmt.Errorf("the agent's commits are incomplete: %w", err)
	}
	return tip, nil
}

// descends returns tip when head is one of its ancestors (the agent built on the run's branch), "" otherwise; the
// object directories in alternates are read besides the repository's.
func (m *Manager) descends(ctx context.Context, wt Worktree, alternates []string, head, tip string) (string, error) {
	c := m.inRun(wt)
	c.alternates = alternates
	if _, err := c.run(ctx, "merge-base", "--is-ancestor", head, tip); err != nil {
		var ge *gitError
		if errors.As(err, &ge) && ge.stderr == "" {
			m.log().Warn("the agent's commits do not continue the run's branch: its files are committed, its history is not",
				"worktree", wt.Top, "agent_head", Short(tip))
			return "", nil
		}
		return "", fmt.Errorf("reading the agent's commits: %w", err)
	}
	return tip, nil
}

// quarantine copies the agent's object files from src into dst: loose objects and packs, regular files that are not
// symbolic links, under names git itself gives them, and no more than maxImport bytes.
func quarantine(src, dst string) error {
	if fi, err := os.Lstat(src); err != nil || !fi.IsDir() {
		return fmt.Errorf("the agent's objects are not a directory")
	}
	total := int64(0)
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		switch {
		case rel == ".":
			return nil
		case d.IsDir():
			// objects/xx/ (loose objects) and objects/pack/; objects/info and anything else are not copied.
			if len(parts) == 1 && (isHexLen(parts[0], 2) || parts[0] == "pack") {
				return os.Mkdir(filepath.Join(dst, rel), 0o755)
			}
			return fs.SkipDir
		case !d.Type().IsRegular():
			return nil // a symbolic link, a FIFO, …
		case len(parts) != 2:
			return nil
		case parts[0] == "pack" && !(strings.HasPrefix(parts[1], "pack-") && strings.HasSuffix(parts[1], ".pack")):
			return nil // an index, a keep file, a bitmap: git makes or needs none of them here
		case parts[0] != "pack" && !(isHexLen(parts[1], 38) || isHexLen(parts[1], 62)):
			return nil
		}
		n, err := copyNoFollow(p, filepath.Join(dst, rel), maxImport-total)
		total += n
		return err
	})
}

// copyNoFollow copies the regular file at src (never through a symbolic link) to dst, at most limit bytes.
func copyNoFollow(src, dst string, limit int64) (int64, error) {
	in, err := os.OpenFile(src, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is not a regular file", src)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(in, limit+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > limit {
		err = errTooBig
	}
	return n, err
}

func isHexLen(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
