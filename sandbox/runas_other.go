//go:build !unix

package sandbox

import "fmt"

// runAs is the user a local agent runs as when it is not orch's own.
type runAs struct {
	uid, gid uint32
	env      []string
}

func (r *runAs) String() string { return fmt.Sprintf("%d:%d", r.uid, r.gid) }

// agentUser returns nil: agents run as orch's user where users cannot be switched this way.
func agentUser(dir string) (*runAs, error) { return nil, nil }
