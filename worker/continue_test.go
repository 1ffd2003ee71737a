package worker

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
)

// A run that goes on with a pull request's branch (after a review, or a red check) starts where the branch is on the
// remote, commits there, pushes over that commit alone and opens no second pull request; a commit someone pushes to
// the branch while a run works is not lost: that run's push is refused and says so.
func TestARunGoesOnWithItsPullRequestsBranch(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			agentCmd := script(t, `echo "$ORCH_RUN_ID" >> work.txt
echo "Done. All tests pass."`)
			h := newHarness(t, rdb, agentCmd, nil)
			const pr = "https://example.test/acme/app/pull/1"
			prs := 0
			h.w.cfg.PullRequests = func(context.Context, *jobs.Run) (string, error) { prs++; return pr, nil }
			first, _, remote := h.gitRun(t, true)
			if err := h.process(t, queue.TypeStep, queue.Payload{RunID: first.ID, Seq: 1}); err != nil {
				t.Fatal(err)
			}
			first = h.get(t, first.ID)
			branch := first.Git.Branch
			if first.Status != jobs.RunCompleted || prs != 1 || remoteHead(t, remote, branch) != first.Git.Head {
				t.Fatalf("the first run: %s, %d pull requests, branch at %q", first.Status, prs, remoteHead(t, remote, branch))
			}

			// A person pushes a commit of their own to the pull request's branch; then a review asks for more.
			human := pushOnto(t, remote, branch, "review.txt")
			next := h.continuing(t, remote, branch, human, pr)
			if next.Status != jobs.RunCompleted {
				t.Fatalf("the run that goes on: %s (%s)", next.Status, next.Reason)
			}
			if at := remoteHead(t, remote, branch); at != next.Git.Head || gitIn(t, remote, "rev-parse", at+"^") != human {
				t.Fatalf("the branch is at %s, want the run's commit (%s) on top of the person's (%s)", at, next.Git.Head, human)
			}
			if next.Git.Commits != 1 || next.Git.PullRequest != pr || prs != 1 {
				t.Fatalf("the run counts %d commits, has pull request %q; %d pull requests opened", next.Git.Commits,
					next.Git.PullRequest, prs)
			}

			// A run asked while the branch was at the person's commit, which someone pushed over since: its push
			// would drop their commit.
			theirs := pushOnto(t, remote, branch, "more.txt")
			stale := h.continuing(t, remote, branch, human, pr)
			if at := remoteHead(t, remote, branch); at != theirs {
				t.Fatalf("the branch is at %s, want what was pushed last (%s)", at, theirs)
			}
			if n := countEvents(t, h, stale.ID, jobs.GitErrorEvent{}.Kind()); n == 0 {
				t.Fatal("the refused push is not said")
			}
		})
	}
}

// continuing runs a one-task run that goes on with branch of remote from commit at, as runs.Git's Continue makes it.
func (h *harness) continuing(t *testing.T, remote, branch, at, pr string) *jobs.Run {
	t.Helper()
	ctx := context.Background()
	r := h.newRun(t, "1")
	g := &jobs.Git{URL: remote, Base: branch, BaseCommit: at, Branch: branch, Push: "origin", Pushed: at, PullRequest: pr}
	if _, err := h.store.Update(ctx, r.ID, func(s *jobs.Run, c *jobs.Change) error {
		s.Git = g
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.process(t, queue.TypeStart, queue.Payload{RunID: r.ID}); err != nil {
		t.Fatal(err)
	}
	if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	return h.get(t, r.ID)
}

// pushOnto commits a new file onto branch of remote, as a person would from a clone, and returns the commit.
func pushOnto(t *testing.T, remote, branch, file string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	gitIn(t, t.TempDir(), "clone", "-q", "-b", branch, remote, dir)
	gitIn(t, dir, "commit", "-q", "--allow-empty", "-m", "by hand: "+file)
	gitIn(t, dir, "push", "-q", "origin", branch)
	return gitIn(t, dir, "rev-parse", "HEAD")
}
