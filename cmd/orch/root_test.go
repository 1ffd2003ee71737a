//go:build unix

package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// owner is the user whose repository a root orch works in, in these tests: a uid with no name, as a user's files look
// from inside a container.
const owner = 12345

// rootTestDir is a directory every user can reach (t.TempDir's are root's alone), holding the orch binary, the
// owner's home and coverage directory; removed at the end.
func rootTestDir(t *testing.T) (base, bin string) {
	t.Helper()
	base, err := os.MkdirTemp("", "orch-root")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(base, "orch")
	linkOrch(t, bin)
	for _, d := range []string{"home", "cover"} {
		ownersDir(t, filepath.Join(base, d))
	}
	// The owner's orch processes write their coverage where they can; it joins the others' at the end.
	t.Cleanup(func() {
		entries, _ := os.ReadDir(filepath.Join(base, "cover"))
		for _, e := range entries {
			if data, err := os.ReadFile(filepath.Join(base, "cover", e.Name())); err == nil {
				os.WriteFile(filepath.Join(os.Getenv("GOCOVERDIR"), e.Name()), data, 0o644)
			}
		}
	})
	return base, bin
}

// ownersDir makes dir, the owner's.
func ownersDir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, owner, owner); err != nil {
		t.Fatal(err)
	}
}

// orchAs runs the orch binary bin in dir as uid owner (cred set) or as root (nil).
func orchAs(t *testing.T, cred *syscall.Credential, bin, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("")
	cmd.Env = append(append(os.Environ(), "ORCH_REDIS_URL=", "ORCH_AGENT=", "ORCH_BRAIN=", "ORCH_SANDBOX=",
		"ANTHROPIC_API_KEY=", "ORCH_GIT_PUSH=", "ORCH_REPO=", "ORCH_GIT_BASE=", "ORCH_WORKTREES="), env...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(90 * time.Second): // a guard against a hang, not a measure
		cmd.Process.Kill()
		<-done
		t.Fatalf("orch %v did not finish\n%s\n%s", args, out.String(), errb.String())
	}
	return result{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode()}
}

// TestARootRunLeavesTheOwnerInCharge runs `orch run` as root on a user's repository, with the state directory in the
// repository (the default) and outside it, not made yet, in a directory of the user's. Afterwards the user's own
// orch commands work, a run of theirs included, and nothing orch made in the repository or the state directory is
// root's.
func TestARootRunLeavesTheOwnerInCharge(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs orch as root and then as another user")
	}
	t.Parallel()
	base, bin := rootTestDir(t)
	cred := &syscall.Credential{Uid: owner, Gid: owner, NoSetGroups: true}
	ownerEnv := []string{"HOME=" + filepath.Join(base, "home"), "GOCOVERDIR=" + filepath.Join(base, "cover"),
		"USER=", "LOGNAME="}
	for _, c := range []struct{ name, stateDir string }{
		{"state dir in the repository", ""},
		{"state dir outside", filepath.Join(base, "outside", "theirs", "orch-state")},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			repo := filepath.Join(base, strings.ReplaceAll(c.name, " ", "-"), "repo")
			ownersDir(t, filepath.Dir(repo))
			if c.stateDir != "" {
				ownersDir(t, filepath.Dir(c.stateDir))
			}
			ownersDir(t, repo)
			gitT(t, repo, "init", "-q", "-b", "main")
			writeFile(t, repo, "plan.md", "# Greeting\n\n## Task 1: Say hello\n\nWrite hello.txt.\n")
			writeFile(t, repo, "plan.sim.yaml", "tasks:\n  \"1\":\n    - output: \"Wrote hello.txt. All tests pass.\"\n"+
				"      sh: \"echo hello >> hello.txt\"\n")
			gitT(t, repo, "add", ".")
			gitT(t, repo, "commit", "-q", "-m", "a plan")
			chownTree(t, repo)
			var env []string
			stateDir := filepath.Join(repo, ".orch")
			if c.stateDir != "" {
				env, stateDir = []string{"ORCH_STATE_DIR=" + c.stateDir}, c.stateDir
			}

			r := orchAs(t, nil, bin, repo, env, "run", "--agent", "sim", "plan.md")
			must(t, r, 0, "Task 1: COMPLETED")
			id := runID(t, r)

			asOwner := append(append([]string{}, env...), ownerEnv...)
			must(t, orchAs(t, cred, bin, repo, asOwner, "status", id), 0, "Run "+id+": completed")
			must(t, orchAs(t, cred, bin, repo, asOwner, "history"), 0, id)
			must(t, orchAs(t, cred, bin, repo, asOwner, "escalation", "log", id), 0)
			r = orchAs(t, cred, bin, repo, asOwner, "run", "--agent", "sim", "plan.md")
			must(t, r, 0, "Task 1: COMPLETED")
			second := runID(t, r)
			must(t, orchAs(t, cred, bin, repo, asOwner, "history"), 0, id, second)

			// Nothing orch made is root's. What the worktree manager makes in the state directory (the worktrees,
			// their git directories, its .gitignore, what agents said as they ended) and what the agent writes in a
			// worktree (the local agent runs as orch does) are the workspace's and the sandbox's to settle: reported
			// here, not judged.
			workspaces := func(path string) bool {
				for _, d := range []string{"worktrees", "gitdirs", "ended"} {
					if strings.HasPrefix(path, filepath.Join(stateDir, d)+string(filepath.Separator)) {
						return true
					}
				}
				return path == filepath.Join(stateDir, ".gitignore")
			}
			for _, dir := range []string{repo, stateDir} {
				filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
					if err != nil {
						t.Fatal(err)
					}
					fi, err := os.Lstat(path)
					if err != nil {
						t.Fatal(err)
					}
					if fi.Sys().(*syscall.Stat_t).Uid == owner {
						return nil
					}
					if workspaces(path) {
						t.Logf("root's, the worktree manager's: %s", path)
						return nil
					}
					t.Errorf("root's: %s", path)
					return nil
				})
			}
		})
	}
}

// chownTree gives dir and everything in it to the owner.
func chownTree(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, owner, owner)
	})
	if err != nil {
		t.Fatal(err)
	}
}
