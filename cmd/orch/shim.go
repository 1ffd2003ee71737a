package main

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/orchrun/orch/sandbox/shim"
)

// The programs that do one part of orch's work where an agent runs, looked for beside orch (companion): the
// sandbox's shim alone (cmd/orch-shim) and the permission hook alone (cmd/orch-hook).
const (
	shimProgram     = "orch-shim"
	hookProgramName = "orch-hook"
)

// shimFor is the command that runs the sandbox's shim for local agents: orch-shim when it stands beside the orch
// binary self and speaks this orch's protocol, which starts in a millisecond where orch's own binary takes tens; else
// self with its hidden shim command, which does the same work.
func shimFor(self string, log *slog.Logger) []string {
	if small, ok := companion(self, shimProgram, shim.Protocol, log); ok {
		return []string{small}
	}
	return []string{self, shimCommand}
}

// companion is the path of the program name beside the orch binary self when it is there and says protocol to
// `-protocol`: one of the small programs that do one part of orch's work where an agent runs, and start in a
// millisecond or two where orch's own binary takes ten or more. Only the directory orch itself was started from is
// looked in, never PATH: these programs hold every agent or decide its calls, and must be as much the operator's as
// orch is. One of another release is not used (and said), since its protocol differs.
func companion(self, name, protocol string, log *slog.Logger) (string, bool) {
	small := filepath.Join(filepath.Dir(self), name)
	fi, err := os.Stat(small)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, small, "-protocol").Output()
	if got := strings.TrimSpace(string(out)); err != nil || got != protocol {
		log.Warn("the "+name+" beside orch is of another release: orch does its part with its own binary",
			"path", small, "says", got, "want", protocol, "err", err)
		return "", false
	}
	return small, true
}
