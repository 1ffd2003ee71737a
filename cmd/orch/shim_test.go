package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binDir is a directory holding a link to (or copy of) the orch binary under test, for tests that put programs beside
// it.
func binDir(t *testing.T) (dir, bin string) {
	t.Helper()
	dir = t.TempDir()
	bin = filepath.Join(dir, "orch")
	linkOrch(t, bin)
	return dir, bin
}

// linkOrch puts the orch binary under test at bin: a hard link where it can, a copy elsewhere.
func linkOrch(t *testing.T, bin string) {
	t.Helper()
	if err := os.Link(orchBin, bin); err == nil {
		return
	}
	data, err := os.ReadFile(orchBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// A local agent starts below orch-shim when it stands beside orch and speaks orch's protocol, and below orch's own
// binary when it is missing or speaks another: the agent says which by naming its parent.
func TestLocalAgentsStartBelowOrchShimBesideOrch(t *testing.T) {
	t.Parallel()
	// The agent prints its parent's name: the shim's.
	agent := `cmd:sh -c "echo parent=$(cat /proc/$PPID/comm). Done. All tests pass."`
	for _, tt := range []struct {
		name   string
		shim   func(t *testing.T, dir string) // puts what stands beside orch
		parent string
	}{
		{"orch-shim of this release", func(t *testing.T, dir string) {
			build := exec.Command("go", "build", "-o", filepath.Join(dir, shimProgram), "../orch-shim")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("building orch-shim: %v\n%s", err, out)
			}
		}, "parent=orch-shim"},
		{"an orch-shim of another protocol", func(t *testing.T, dir string) {
			script := "#!/bin/sh\necho 'orch-shim 0'\n"
			if err := os.WriteFile(filepath.Join(dir, shimProgram), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "parent=orch."},
		{"no orch-shim", func(*testing.T, string) {}, "parent=orch."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bin, self := binDir(t)
			tt.shim(t, bin)
			dir := workdir(t)
			writeFile(t, dir, "one.md", "# One\n\n## Task 1: Say who started you\n\nSay it.\n")
			cmd := exec.Command(self, "run", "one.md", "--agent", agent, "--brain", "heuristic")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "ORCH_REDIS_URL=", "ORCH_AGENT=", "ORCH_BRAIN=", "ORCH_SANDBOX=", "ANTHROPIC_API_KEY=")
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Task 1: COMPLETED") {
				t.Fatalf("orch run: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), tt.parent) {
				t.Errorf("want the agent below %q, orch run said:\n%s", tt.parent, out)
			}
		})
	}
}
