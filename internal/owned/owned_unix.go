//go:build unix

package owned

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ownerOf is whom files made in the directory fi describes are given to: its owner, when orch runs as root and the
// directory is not root's; nobody otherwise.
func ownerOf(fi fs.FileInfo) owner {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || os.Geteuid() != 0 || st.Uid == 0 {
		return owner{}
	}
	return owner{uid: int(st.Uid), gid: int(st.Gid), set: true}
}

// foreignLink refuses a symbolic link at path that someone other than root made.
func foreignLink(path string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 {
		return nil
	}
	return fmt.Errorf("%s is a symbolic link that uid %d made: orch, run as root, does not follow it (it could point "+
		"anywhere); name the directory it points to instead", path, st.Uid)
}
