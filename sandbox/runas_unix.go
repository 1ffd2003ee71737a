//go:build unix

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// runAs is the user a local agent runs as when it is not orch's own.
type runAs struct {
	uid, gid uint32
	// env is what the agent's environment says of its user (HOME, USER, LOGNAME), over what orch's said.
	env []string
}

// String is the user as the shim's -user takes it.
func (r *runAs) String() string { return fmt.Sprintf("%d:%d", r.uid, r.gid) }

// agentUser returns who runs a local agent whose workspace is dir: nil (orch's own user) unless orch runs as root
// and dir belongs to another user, whose uid:gid it then is. An agent of a root-owned workspace runs as root, as
// orch does: nobody else owns it. Run as root in someone's workspace, an agent would leave root-owned files there
// that the owner can no longer change, and could reach everything root can; run as the owner it can do what the
// owner can, and its files are the owner's.
//
// HOME is the user's home in the user database (os/user reads /etc/passwd without cgo) when it has an entry whose
// home is a directory; otherwise one orch makes for the user (homeFor). USER and LOGNAME are the user's name, or its
// uid when it has none.
func agentUser(dir string) (*runAs, error) {
	if dir == "" || os.Geteuid() != 0 {
		return nil, nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the owner of the workspace: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("reading the owner of the workspace %s: no owner in its file info", dir)
	}
	if st.Uid == 0 {
		return nil, nil
	}
	r := &runAs{uid: st.Uid, gid: st.Gid}
	id := strconv.FormatUint(uint64(st.Uid), 10)
	name, home := id, ""
	if u, err := user.LookupId(id); err == nil {
		name = u.Username
		if fi, err := os.Stat(u.HomeDir); err == nil && fi.IsDir() && u.HomeDir != "" {
			home = u.HomeDir
		}
	}
	if home == "" {
		if home, err = homeFor(st.Uid, st.Gid); err != nil {
			return nil, err
		}
	}
	r.env = []string{"HOME=" + home, "USER=" + name, "LOGNAME=" + name}
	return r, nil
}

// homesDir holds the homes orch makes for users without one, under the temporary directory.
const homesDir = "orch-homes"

// homeFor returns a home directory for uid that only uid can write, the same for every agent it runs (the agent
// CLI keeps its sessions there): <temp>/orch-homes/<uid>. The parent is root's, mode 0711, so no other user can
// put anything in it; either directory found otherwise (another owner, a link, a writable parent) is refused rather
// than used.
func homeFor(uid, gid uint32) (string, error) {
	parent := filepath.Join(os.TempDir(), homesDir)
	if err := os.Mkdir(parent, 0o711); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("making a home for uid %d: %w", uid, err)
	}
	if err := checkDirOwner(parent, 0, 0o022); err != nil {
		return "", fmt.Errorf("making a home for uid %d: %w", uid, err)
	}
	home := filepath.Join(parent, strconv.FormatUint(uint64(uid), 10))
	if err := os.Mkdir(home, 0o700); err == nil {
		if err := os.Chown(home, int(uid), int(gid)); err != nil {
			return "", fmt.Errorf("making a home for uid %d: %w", uid, err)
		}
	} else if !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("making a home for uid %d: %w", uid, err)
	}
	if err := checkDirOwner(home, uid, 0o022); err != nil {
		return "", fmt.Errorf("making a home for uid %d: %w", uid, err)
	}
	return home, nil
}

// checkDirOwner refuses path unless it is a directory (not a link to one) owned by uid with none of the mode bits
// in forbidden.
func checkDirOwner(path string, uid uint32, forbidden fs.FileMode) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", path)
	case !ok || st.Uid != uid:
		return fmt.Errorf("%s does not belong to uid %d", path, uid)
	case fi.Mode().Perm()&forbidden != 0:
		return fmt.Errorf("%s has mode %v: others could write it", path, fi.Mode().Perm())
	}
	return nil
}
