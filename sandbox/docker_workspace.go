package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// needs is what a workspace asks of the container that runs its agent.
type needs struct {
	// user runs the agent, as "uid:gid": DockerConfig.User, or else the owner of the workspace, so that the agent
	// can write there whatever its mode, and what it writes belongs to whoever owns the rest.
	user string
	// gitDirs are git directories outside the workspace that git needs to work in it (see gitDirs), mounted
	// read-write at their own paths.
	gitDirs []string
}

// needsOf reads what the workspace dir needs.
func (d *Docker) needsOf(dir string) (needs, error) {
	n := needs{user: d.cfg.User, gitDirs: gitDirs(dir)}
	if n.user == "" {
		u, err := owner(dir)
		if err != nil {
			return needs{}, fmt.Errorf("sandbox: the owner of workspace %s: %w", dir, err)
		}
		n.user = u
	}
	return n, nil
}

// gitDirs returns the repository's git directory when dir is a linked worktree (`git worktree add`): its .git is a
// file "gitdir: <common dir>/worktrees/<name>", and that admin directory lives in the repository's git directory
// (the common dir, named by its file commondir), which may be anywhere on the host. Nothing is needed for a plain
// repository (.git a directory in the workspace) or for no repository at all.
//
// These files are the agent's to write as much as git's (the workspace is writable in the container, and so is the
// common dir once mounted), and what they name is mounted read-write: they are believed only when they describe one
// worktree of one real repository, i.e. the admin directory is outside the workspace, inside a directory that has
// HEAD, objects and refs, names that directory as its commondir and names this workspace's .git as its gitdir, and
// the path of the common dir holds no symbolic link (the engine would follow it). Anything else mounts nothing, and git in the container fails as it would with a
// broken worktree.
func gitDirs(dir string) []string {
	dotGit := filepath.Join(dir, ".git")
	s, ok := readSmall(dotGit)
	if !ok {
		return nil
	}
	p, ok := strings.CutPrefix(s, "gitdir:")
	if !ok {
		return nil
	}
	admin := resolvePath(dir, strings.TrimSpace(p))
	common := filepath.Dir(filepath.Dir(admin))
	if filepath.Base(filepath.Dir(admin)) != "worktrees" || within(dir, admin) || within(dir, common) {
		return nil
	}
	if c, ok := readSmall(filepath.Join(admin, "commondir")); !ok || resolvePath(admin, c) != common {
		return nil
	}
	if g, ok := readSmall(filepath.Join(admin, "gitdir")); !ok || !samePath(resolvePath(admin, g), dotGit) {
		return nil
	}
	for _, f := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(common, f)); err != nil {
			return nil
		}
	}
	if real, err := filepath.EvalSymlinks(common); err != nil || real != common {
		return nil
	}
	return []string{common}
}

// readSmall returns the trimmed content of a regular file of at most 4 KiB: git's pointer files are one line, and a
// FIFO or a huge file put there by the agent must not hang or load the worker.
func readSmall(path string) (string, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4<<10 {
		return "", false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// samePath reports whether a and b name the same file once symbolic links are followed (git writes real paths, the
// workspace may be given through a link).
func samePath(a, b string) bool {
	ra, err := filepath.EvalSymlinks(a)
	if err != nil {
		return false
	}
	rb, err := filepath.EvalSymlinks(b)
	return err == nil && ra == rb
}

// resolvePath returns p, relative to base unless it is absolute, cleaned.
func resolvePath(base, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p)
}

// regularFile reports whether p is a regular file (not a link, not a directory).
func regularFile(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}
