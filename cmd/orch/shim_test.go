package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// Claude's permission hook is orch-hook when it stands beside orch and speaks orch's hook protocol, and orch's own
// binary when it is missing or speaks another: the settings claude is given name which, and the hook decides the
// run's calls either way.
func TestClaudesHookIsOrchHookBesideOrch(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		put  func(t *testing.T, dir string) // puts what stands beside orch
		own  bool                           // orch's own binary is the hook
	}{
		{"orch-hook of this release", func(t *testing.T, dir string) {
			build := exec.Command("go", "build", "-o", filepath.Join(dir, hookProgramName), "../orch-hook")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("building orch-hook: %v\n%s", err, out)
			}
		}, false},
		{"an orch-hook of another protocol", func(t *testing.T, dir string) {
			script := "#!/bin/sh\necho 'orch-hook 0'\n"
			if err := os.WriteFile(filepath.Join(dir, hookProgramName), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"no orch-hook", func(*testing.T, string) {}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bin, self := binDir(t)
			tt.put(t, bin)
			want := filepath.Join(bin, hookProgramName)
			if tt.own {
				want = self + " " + hookCommand
			}
			dir, _ := claudeWorkspace(t)
			env, log := claudeSetup(t, writeAndTest)
			r := orchAt(t, self, dir, env, nil, "run", "--agent", "claude", "--brain", "heuristic", "plan.md")
			must(t, r, 0, "Task 1: COMPLETED")
			procs := claudeLog(t, log)
			if len(procs) != 1 {
				t.Fatalf("claude processes: %+v", procs)
			}
			if got := procs[0].hookDecisions(); !slices.Equal(got, []string{"Write=allow", "Bash=allow"}) {
				t.Fatalf("the hook decided %v", got)
			}
			if got := hookCommandOf(t, procs[0].Args); got != want {
				t.Errorf("claude's hook is %q, want %q", got, want)
			}
		})
	}
}

// hookCommandOf is the PreToolUse hook's command in the --settings of claude's arguments.
func hookCommandOf(t *testing.T, args []string) string {
	t.Helper()
	i := slices.Index(args, "--settings")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("no --settings in %q", args)
	}
	var s struct {
		Hooks struct {
			PreToolUse []struct {
				Hooks []struct {
					Command string `json:"command"`
				} `json:"hooks"`
			} `json:"PreToolUse"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(args[i+1]), &s); err != nil || len(s.Hooks.PreToolUse) != 1 || len(s.Hooks.PreToolUse[0].Hooks) != 1 {
		t.Fatalf("settings %s: %v", args[i+1], err)
	}
	return s.Hooks.PreToolUse[0].Hooks[0].Command
}
