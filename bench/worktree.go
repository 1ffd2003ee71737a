package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/workspace"
)

// worktreeResult is what the worktree measurements found.
type worktreeResult struct {
	small, large   float64 // p50 ms of a run's worktree setup from a spare, 100 and 10,000 files
	cold           float64 // p50 ms of a worktree checked out anew, 10,000 files
	runs, isolated int     // runs at once on one repository, and how many branches held exactly their own work
	note           string
}

// measureWorktrees times Manager.Checkout — what a run's first step pays before its agent starts: the branch made
// from the base, the files checked out — on generated repositories, and starts n runs at once on one repository, all
// writing the same file, to count the branches that hold their own run's content and nothing else.
func measureWorktrees(ctx context.Context, tmp string, samples, n int) (worktreeResult, error) {
	var res worktreeResult
	times, err := checkoutTimes(ctx, tmp, samples)
	if err != nil {
		return res, err
	}
	res.small, res.large, res.cold = percentileMs(times["100/2"], 0.5), percentileMs(times["10000/2"], 0.5),
		percentileMs(times["10000/0"], 0.5)

	if res.isolated, err = concurrentRuns(ctx, tmp, n); err != nil {
		return res, err
	}
	res.runs = n
	res.note = fmt.Sprintf("Manager.Checkout of a new run's worktree, with the isolation of the trust boundary: branch "+
		"orch/<run> set in the repository, orch's own git directory of the run (HEAD, a configuration it writes, the "+
		"index), the files in place, and the agent's own git repository made in the worktree's .git (borrowing the "+
		"repository's objects, with a copy of orch's index so that its git status starts clean); %d samples on each of "+
		"two generated repositories of one commit: 100 files and 10,000 files of ~1 KiB in 100 directories; each run's "+
		"worktree given back (Manager.Remove) before the next run. As workers run it, with two spare worktrees per "+
		"repository (an ended run's files and index, cleaned, moved into place and switched to the new commit by a "+
		"two-tree read-tree; the first run, which finds no spare, is not counted): 100 files p50 %.1f ms (max %.1f), "+
		"10,000 files p50 %.1f ms (max %.1f). Without spares (every file checked out anew by git's parallel checkout: a "+
		"worker's first run on a repository) on 10,000 files: p50 %.1f ms (max %.1f); most of it is the kernel creating "+
		"and later deleting the files. Then %d runs at once on the 100-file repository, each making its worktree, "+
		"writing its own run id into the same file and committing it: %d branches held exactly their own content and "+
		"changed nothing else.",
		samples, res.small, percentileMs(times["100/2"], 1), res.large, percentileMs(times["10000/2"], 1), res.cold,
		percentileMs(times["10000/0"], 1), n, res.isolated)
	return res, nil
}

// generateRepo makes a repository of one commit with files files of about 1 KiB, in 100 directories.
func generateRepo(ctx context.Context, dir string, files int) error {
	line := strings.Repeat("orch generated this line to give the file some weight. ", 1) + "\n"
	body := strings.Repeat(line, 1024/len(line)+1)
	for i := range files {
		p := filepath.Join(dir, fmt.Sprintf("pkg%02d", i%100), fmt.Sprintf("file%05d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("%d\n%s", i, body)), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "shared.txt"), []byte("base\n"), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "generated"}} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@localhost",
			"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@localhost", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// checkoutTimes times Manager.Checkout on generated repositories of 100 and 10,000 files, by "files/spares": as
// workers run it (two spares per repository: a run's worktree is one that an ended run left), and with no spares
// (every worktree checked out anew: a worker's first run on a repository).
func checkoutTimes(ctx context.Context, tmp string, samples int) (map[string][]time.Duration, error) {
	times := map[string][]time.Duration{}
	for _, files := range []int{100, 10000} {
		repo := filepath.Join(tmp, fmt.Sprintf("repo-%d", files))
		if err := generateRepo(ctx, repo, files); err != nil {
			return nil, err
		}
		base, err := workspace.Resolve(ctx, repo, "HEAD")
		if err != nil {
			return nil, err
		}
		// As workers run it (two spares per repository: a run's worktree is one that an ended run left), and with
		// no spares (every worktree checked out anew: a worker's first run on a repository).
		for _, spares := range []int{2, 0} {
			key := fmt.Sprintf("%d/%d", files, spares)
			if files == 100 && spares == 0 {
				continue
			}
			m := &workspace.Manager{Root: filepath.Join(tmp, "trees-"+strings.ReplaceAll(key, "/", "-")), Spares: spares}
			for i := range samples + 1 {
				id := fmt.Sprintf("r-bench%05d", i)
				g := &jobs.Git{Repo: repo, Base: "main", BaseCommit: base, Branch: jobs.BranchPrefix + id}
				start := time.Now()
				if _, err := m.Checkout(ctx, id, g); err != nil {
					return nil, err
				}
				if i > 0 || spares == 0 { // the first run of a worker with spares has none yet: not the steady state
					times[key] = append(times[key], time.Since(start))
				}
				if _, err := m.Remove(ctx, id, g); err != nil {
					return nil, err
				}
			}
		}
	}
	return times, nil
}

// concurrentRuns runs n runs at once on the 100-file repository, each writing its own id into the same file and
// committing it, and counts the branches that hold exactly their own change.
func concurrentRuns(ctx context.Context, tmp string, n int) (int, error) {
	repo := filepath.Join(tmp, "repo-100")
	base, err := workspace.Resolve(ctx, repo, "HEAD")
	if err != nil {
		return 0, err
	}
	m := &workspace.Manager{Root: filepath.Join(tmp, "trees-concurrent")}
	isolated := 0
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("r-conc%05d", i)
			g := &jobs.Git{Repo: repo, Base: "main", BaseCommit: base, Branch: jobs.BranchPrefix + id}
			wt, err := m.Checkout(ctx, id, g)
			if err == nil {
				err = os.WriteFile(filepath.Join(wt.Dir, "shared.txt"), []byte(id+"\n"), 0o644)
			}
			if err == nil {
				_, err = m.CommitTask(ctx, wt, id, "1", "Write the shared file", "")
			}
			if err == nil {
				// As a step does once it knows it still owns the run: the branch moves from where the run began.
				err = m.MoveBranch(ctx, wt, base, nil)
			}
			if err == nil {
				_, err = m.Remove(ctx, id, g)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range n {
		id := fmt.Sprintf("r-conc%05d", i)
		if errs[i] != nil {
			fmt.Fprintf(os.Stderr, "bench: concurrent run %s: %v\n", id, errs[i])
			continue
		}
		got, err := exec.CommandContext(ctx, "git", "-C", repo, "show", jobs.BranchPrefix+id+":shared.txt").Output()
		changed, err2 := exec.CommandContext(ctx, "git", "-C", repo, "diff", "--name-only", base, jobs.BranchPrefix+id).Output()
		if err == nil && err2 == nil && string(got) == id+"\n" && strings.TrimSpace(string(changed)) == "shared.txt" {
			isolated++
		}
	}
	return isolated, nil
}
