//go:build unix

package workspace

import (
	"os"
	"os/exec"
	"syscall"
)

// asOwner is how git runs in dir when orch runs as root on a repository that belongs to someone else (a service in
// a container, on a user's checkout): as the owner, so that everything git writes there (objects, refs, the
// worktree's files) stays theirs and their own git keeps working. nil means as orch itself.
func asOwner(dir string) *syscall.SysProcAttr {
	if os.Geteuid() != 0 {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 {
		return nil
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: st.Uid, Gid: st.Gid, NoSetGroups: true}}
}

// giveTo makes path belong to the owner of like, when orch runs as root and like is someone else's.
func giveTo(path, like string) error {
	a := asOwner(like)
	if a == nil {
		return nil
	}
	return os.Chown(path, int(a.Credential.Uid), int(a.Credential.Gid))
}

// oNoFollow opens a file only when it is not a symbolic link.
const oNoFollow = syscall.O_NOFOLLOW

// inGroup starts cmd as the leader of a process group of its own, whatever else its SysProcAttr says.
func inGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// killGroup kills cmd's process group.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
