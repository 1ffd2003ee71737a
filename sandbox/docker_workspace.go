package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
)

// A container sees its run and nothing else: the run's workspace, read-write, at its own path; the directories orch
// names for the run (Spec.ReadOnly: the repository's objects, which the agent's own git borrows), read-only; orch's
// own binary and the configured read-only paths. Nothing is chosen by what the workspace holds: a `.git` file, a
// `commondir`, an alternates file are the agent's to write, and a mount that followed one would hand the agent what
// they name. Inside the workspace, orch's own directories (DockerConfig.Hide: the state directory, which holds the
// store's journal and every run's worktree) are covered by an empty read-only tmpfs.

// needs is what a run asks of the container that runs its agent.
type needs struct {
	// user runs the agent, as "uid:gid": DockerConfig.User, or else the owner of the workspace, so that the agent
	// can write there whatever its mode, and what it writes belongs to whoever owns the rest.
	user string
	// readOnly are host directories mounted read-only at their own paths (Spec.ReadOnly, checked).
	readOnly []string
}

// needsOf reads what the workspace dir and the run's read-only directories need.
func (d *Docker) needsOf(dir string, readOnly []string) (needs, error) {
	n := needs{user: d.cfg.User}
	if n.user == "" {
		u, err := owner(dir)
		if err != nil {
			return needs{}, fmt.Errorf("sandbox: the owner of workspace %s: %w", dir, err)
		}
		n.user = u
	}
	for _, p := range readOnly {
		if err := checkReadOnly(dir, p); err != nil {
			return needs{}, err
		}
		if !slices.Contains(n.readOnly, filepath.Clean(p)) {
			n.readOnly = append(n.readOnly, filepath.Clean(p))
		}
	}
	return n, nil
}

// checkReadOnly refuses a read-only directory that would show the agent more than it: one that holds the workspace
// (its other files, other runs' worktrees beside it), the root, a path through a symbolic link (the engine would
// follow it where orch did not look), or what is not a directory.
func checkReadOnly(dir, p string) error {
	switch {
	case !filepath.IsAbs(p):
		return fmt.Errorf("sandbox: read-only directory %q is not an absolute path", p)
	case filepath.Clean(p) == "/" || within(filepath.Clean(p), dir):
		return fmt.Errorf("sandbox: read-only directory %s holds the workspace %s: the agent would see beside it", p, dir)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("sandbox: read-only directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("sandbox: read-only directory %s is not a directory", p)
	}
	if real, err := filepath.EvalSymlinks(p); err != nil || real != filepath.Clean(p) {
		return fmt.Errorf("sandbox: read-only directory %s goes through a symbolic link", p)
	}
	return nil
}

// hidden are the directories of DockerConfig.Hide inside the workspace dir, covered in its container.
func (d *Docker) hidden(dir string) []string {
	var out []string
	for _, h := range d.cfg.Hide {
		if h != dir && within(dir, h) {
			out = append(out, h)
		}
	}
	return out
}

// mounts are a container's mounts for workspace dir: the workspace, the run's read-only directories, orch's own
// directories inside the workspace covered, the orch binary and the configured read-only paths.
func (d *Docker) mounts(dir string, n needs) []mount.Mount {
	cfg := d.cfg
	ms := []mount.Mount{{Type: mount.TypeBind, Source: dir, Target: dir}}
	for _, p := range n.readOnly {
		ms = append(ms, mount.Mount{Type: mount.TypeBind, Source: p, Target: p, ReadOnly: true})
	}
	for _, h := range d.hidden(dir) {
		ms = append(ms, mount.Mount{Type: mount.TypeTmpfs, Target: h, ReadOnly: true,
			TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 4096, Mode: 0o500}})
	}
	if cfg.OrchBinary != "" {
		ms = append(ms, mount.Mount{Type: mount.TypeBind, Source: cfg.OrchBinary, Target: OrchPath, ReadOnly: true})
	}
	for _, p := range cfg.ReadOnly {
		ms = append(ms, mount.Mount{Type: mount.TypeBind, Source: p, Target: p, ReadOnly: true})
	}
	return ms
}

// mountsAsMade reports whether a container's mounts are what a container made now for dir and n would have: the
// workspace its only writable bind mount, every read-only directory there, every hidden directory covered. A
// container made by an older orch (which mounted a repository's git directory writable) or for other directories is
// not reused.
func (d *Docker) mountsAsMade(got []container.MountPoint, dir string, n needs) bool {
	want := d.mounts(dir, n)
	for _, m := range got {
		if m.Type == mount.TypeBind && m.RW && !(filepath.Clean(m.Source) == dir && filepath.Clean(m.Destination) == dir) {
			return false
		}
	}
	for _, w := range want {
		found := false
		for _, m := range got {
			if filepath.Clean(m.Destination) == w.Target && string(m.Type) == string(w.Type) && m.RW == !w.ReadOnly {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
