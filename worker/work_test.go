package worker

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/workspace"
)

func gitRepo(t *testing.T) (dir, head string) {
	t.Helper()
	dir = t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=U", "GIT_AUTHOR_EMAIL=u@x", "GIT_COMMITTER_NAME=U",
			"GIT_COMMITTER_EMAIL=u@x", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	head, err := workspace.Resolve(context.Background(), dir, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	return dir, head
}

// The worktrees of runs that ended while no worker of theirs was there go; those of runs that wait stay.
func TestSweepRemovesTheWorktreesOfEndedRunsOnly(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			h := newHarness(t, rdb, "true", nil)
			h.w.cfg.Workspaces = &workspace.Manager{Root: t.TempDir()}
			repo, head := gitRepo(t)
			ids := map[jobs.RunStatus]string{}
			for _, st := range []jobs.RunStatus{jobs.RunAborted, jobs.RunParked, jobs.RunCompleted} {
				r := h.newRun(t, "1")
				r.Git = &jobs.Git{Repo: repo, Base: "main", BaseCommit: head, Branch: jobs.BranchPrefix + r.ID}
				if _, err := h.store.Update(ctx, r.ID, func(s *jobs.Run, c *jobs.Change) error {
					s.Git, s.Status = r.Git, st
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				wt, err := h.w.cfg.Workspaces.Checkout(ctx, r.ID, r.Git)
				if err != nil {
					t.Fatal(err)
				}
				if st == jobs.RunAborted {
					if err := os.WriteFile(wt.Dir+"/half.txt", []byte("half\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if st == jobs.RunCompleted {
					// A crash between removing the worktree and orch's git directory of it: the rest is swept too.
					if err := os.RemoveAll(wt.Top); err != nil {
						t.Fatal(err)
					}
				}
				ids[st] = r.ID
			}
			n, err := h.w.SweepWorktrees(ctx)
			if err != nil || n != 2 {
				t.Fatalf("swept %d, %v; want 2", n, err)
			}
			for st, id := range ids {
				if gone := !h.w.cfg.Workspaces.Has(id); gone != (st != jobs.RunParked) {
					t.Errorf("%s run: worktree and git directory gone=%v", st, gone)
				}
			}
			r, err := h.store.Get(ctx, ids[jobs.RunAborted])
			if err != nil || !strings.HasPrefix(r.Git.Unfinished, "refs/orch/unfinished/") {
				t.Fatalf("the aborted run's unfinished work is not recorded: %+v, %v", r.Git, err)
			}
		})
	}
}
