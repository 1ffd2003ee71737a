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

// shimProgram is the name of the program that is the sandbox's shim alone (cmd/orch-shim).
const shimProgram = "orch-shim"

// shimFor is the command that runs the sandbox's shim for local agents: orch-shim when it stands beside the orch
// binary self and speaks this orch's protocol, which starts in a millisecond where orch's own binary takes tens; else
// self with its hidden shim command, which does the same work. Only the directory orch itself was started from is
// looked in, never PATH: the shim is what holds every agent, and must be as much the operator's as orch is.
func shimFor(self string, log *slog.Logger) []string {
	own := []string{self, shimCommand}
	small := filepath.Join(filepath.Dir(self), shimProgram)
	fi, err := os.Stat(small)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return own
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, small, "-protocol").Output()
	if got := strings.TrimSpace(string(out)); err != nil || got != shim.Protocol {
		log.Warn("the orch-shim beside orch is of another release: agents start behind orch's own binary",
			"path", small, "says", got, "want", shim.Protocol, "err", err)
		return own
	}
	return []string{small}
}
