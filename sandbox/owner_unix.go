//go:build unix

package sandbox

import (
	"fmt"
	"os"
	"syscall"
)

// owner returns the "uid:gid" that owns path.
func owner(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("%s: no owner in its file info", path)
	}
	return fmt.Sprintf("%d:%d", st.Uid, st.Gid), nil
}
