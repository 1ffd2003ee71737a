package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/workspace"
)

// gitIn runs git in dir and returns its output, trimmed.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=U", "GIT_AUTHOR_EMAIL=u@x", "GIT_COMMITTER_NAME=U",
		"GIT_COMMITTER_EMAIL=u@x", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// sideEffects is an agent that does something outside the repository on every run (a line in a file, as a deploy
// or a message would be), writes a file of its own into its workspace, waits for gate when there is one, and says it
// is done. It returns the agent and the file its runs are counted in.
func sideEffects(t *testing.T, gate string) (agentCmd, count string) {
	count = filepath.Join(t.TempDir(), "runs")
	wait := ""
	if gate != "" {
		wait = fmt.Sprintf("while [ ! -e %q ]; do sleep 0.02; done\n", gate)
	}
	return script(t, fmt.Sprintf("echo run >> %q\necho \"attempt $ORCH_ATTEMPT\" > work.txt\n%secho 'Done. All tests pass.'\n",
		count, wait)), count
}

func runs(t *testing.T, count string) int {
	t.Helper()
	data, err := os.ReadFile(count)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "run\n")
}

// gitRun starts a run of one task on a branch of its own in a new repository, pushed to the repository's remote
// origin (a bare repository). url makes it a run that clones origin instead.
func (h *harness) gitRun(t *testing.T, url bool) (r *jobs.Run, repo, remote string) {
	t.Helper()
	ctx := context.Background()
	repo, head := gitRepo(t)
	remote = filepath.Join(t.TempDir(), "remote.git")
	gitIn(t, t.TempDir(), "init", "-q", "--bare", "-b", "main", remote)
	gitIn(t, repo, "remote", "add", "origin", remote)
	gitIn(t, repo, "push", "-q", "origin", "main")
	h.w.cfg.Workspaces = &workspace.Manager{Root: t.TempDir()}
	r = h.newRun(t, "1")
	g := &jobs.Git{Repo: repo, Base: "main", BaseCommit: head, Branch: jobs.BranchPrefix + r.ID, Push: "origin"}
	if url {
		g = &jobs.Git{URL: remote, Base: "HEAD", Branch: jobs.BranchPrefix + r.ID, Push: "origin"}
	}
	if _, err := h.store.Update(ctx, r.ID, func(s *jobs.Run, c *jobs.Change) error {
		s.Git, s.Workspace = g, repo
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.process(t, queue.TypeStart, queue.Payload{RunID: r.ID}); err != nil {
		t.Fatal(err)
	}
	return h.get(t, r.ID), repo, remote
}

// remoteHead is the commit the branch is at on remote, "" when it has none.
func remoteHead(t *testing.T, remote, branch string) string {
	t.Helper()
	out := gitIn(t, remote, "for-each-ref", "--format=%(objectname)", "refs/heads/"+branch)
	return out
}

// hookBrain is the heuristic brain with a hook that runs before each interpretation.
type hookBrain struct {
	brain.Heuristic
	mu     sync.Mutex
	calls  int
	before func(n int) error
}

func (b *hookBrain) Interpret(ctx context.Context, output string) (brain.Interpretation, error) {
	b.mu.Lock()
	b.calls++
	n := b.calls
	b.mu.Unlock()
	if b.before != nil {
		if err := b.before(n); err != nil {
			return brain.Interpretation{}, err
		}
	}
	return b.Heuristic.Interpret(ctx, output)
}

func (h *harness) useBrain(b Brain) {
	h.w.cfg.Brain = func(jobs.Options) (Brain, error) { return b, nil }
}

// rescue does what a rescue's delivery does to a step whose owner it found dead: the task's next attempt, its own.
func (h *harness) rescue(t *testing.T, id string) string {
	t.Helper()
	owner := fmt.Sprintf("step:%s:1:rescue", id)
	if _, err := h.store.Update(context.Background(), id, func(r *jobs.Run, c *jobs.Change) error {
		task := r.Current()
		task.Started++
		task.Pending = nil
		task.Attempts = append(task.Attempts, &jobs.Attempt{N: task.Started, StartedAt: time.Now().UTC(), Owner: owner})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return owner
}

// dieAsTheAgentEnds delivers the run's first step to a worker killed as its agent's ending has been noted: nothing
// the delivery does after that reaches Redis.
func (h *harness) dieAsTheAgentEnds(t *testing.T, runID string) {
	t.Helper()
	dctx, die := context.WithCancel(context.Background())
	h.w.testEnded = die
	defer func() { h.w.testEnded = nil }()
	if err := h.w.Handler().ProcessTask(dctx, stepTask(runID, 1)); err == nil {
		t.Fatal("the dying delivery succeeded")
	}
}

// deadAttempt is what a worker that died, on another machine or this one, left of the run's current task: its first
// attempt running under the delivery "step:elsewhere", with what its agent said kept (pending) or not (nil).
func (h *harness) deadAttempt(t *testing.T, runID string, pending *jobs.Pending) {
	t.Helper()
	if _, err := h.store.Update(context.Background(), runID, func(r *jobs.Run, c *jobs.Change) error {
		task := r.Current()
		task.Status, task.Started = jobs.TaskRunning, 1
		task.Attempts = []*jobs.Attempt{{N: 1, StartedAt: time.Now().UTC(), Owner: "step:elsewhere"}}
		task.Pending = pending
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A worker that lost its step — cut off from Redis past its lease while its agent worked or while its brain judged,
// and rescued by another — changes nothing when it comes back: its result is dropped and said so, the run's branch
// moves neither in the repository nor on the remote, and the new owner's attempt stands.
func TestAStaleDeliveryChangesNothing(t *testing.T) {
	for name, rdb := range clients(t) {
		for _, when := range []string{"while the agent works", "while the brain judges"} {
			t.Run(name+"/"+when, func(t *testing.T) {
				ctx := context.Background()
				h, gate, count := gatedHarness(t, rdb)
				r, repo, remote := h.gitRun(t, false)
				var owner string
				b := &hookBrain{}
				if when == "while the brain judges" {
					if err := os.WriteFile(gate, nil, 0o644); err != nil {
						t.Fatal(err)
					}
					b.before = func(int) error { owner = h.rescue(t, r.ID); return nil }
				}
				h.useBrain(b)
				done := make(chan error, 1)
				go func() { done <- h.w.Handler().ProcessTask(ctx, stepTask(r.ID, 1)) }()
				if when == "while the agent works" {
					for runs(t, count) == 0 {
						time.Sleep(10 * time.Millisecond)
					}
					owner = h.rescue(t, r.ID)
					if err := os.WriteFile(gate, nil, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if err := <-done; err != nil {
					t.Fatalf("the stale delivery: %v", err)
				}
				got := h.get(t, r.ID)
				task := got.Tasks[0]
				if got.Status != jobs.RunRunning || task.Status != jobs.TaskRunning || len(task.Attempts) != 2 ||
					task.Attempts[1].Owner != owner || task.Pending != nil || task.Commit != "" || got.Git.Head != "" {
					t.Fatalf("the stale delivery changed the run: %s, task %s, %d attempts, pending %v, commit %q, head %q",
						got.Status, task.Status, len(task.Attempts), task.Pending != nil, task.Commit, got.Git.Head)
				}
				if n := countEvents(t, h, r.ID, jobs.AttemptLostEvent{}.Kind()); n != 1 {
					t.Fatalf("%d attempt_lost events, want 1", n)
				}
				if at := gitIn(t, repo, "rev-parse", got.Git.Branch); at != got.Git.BaseCommit {
					t.Fatalf("the branch moved in the repository, to %s", at)
				}
				if at := remoteHead(t, remote, got.Git.Branch); at != "" {
					t.Fatalf("the stale delivery pushed %s", at)
				}
				if len(got.Git.Moving) != 0 {
					t.Fatalf("the stale delivery recorded a move: %q", got.Git.Moving)
				}
			})
		}
	}
}

// gatedHarness is a harness whose agent has side effects (sideEffects) and waits for the file gate to exist; count is
// where its runs are counted.
func gatedHarness(t *testing.T, rdb redis.UniversalClient) (h *harness, gate, count string) {
	t.Helper()
	gate = filepath.Join(t.TempDir(), "gate")
	agentCmd, count := sideEffects(t, gate)
	return newHarness(t, rdb, agentCmd, nil), gate, count
}

// stepTask is step seq of run id as the queue delivers it.
func stepTask(id string, seq int64) *asynq.Task {
	data, _ := json.Marshal(queue.Payload{RunID: id, Seq: seq})
	return asynq.NewTask(queue.TypeStep, data)
}

// A worker that dies after its agent finished — while the brain judges, or after it pushed the task's commit and
// before it saved — has its attempt settled by the next delivery: the agent does not run again, the task is committed
// once, and the remote's branch is the commit the run records, which the dead worker's push did not stop.
func TestAFinishedAttemptIsSettledNotRunAgain(t *testing.T) {
	for name, rdb := range clients(t) {
		for _, when := range []string{"while the brain judges", "after the push"} {
			t.Run(name+"/"+when, func(t *testing.T) {
				agentCmd, count := sideEffects(t, "")
				h := newHarness(t, rdb, agentCmd, nil)
				r, repo, remote := h.gitRun(t, false)
				dctx, die := context.WithCancel(context.Background())
				b := &hookBrain{}
				if when == "while the brain judges" {
					b.before = func(n int) error {
						if n == 1 {
							die()
							return dctx.Err()
						}
						return nil
					}
				}
				h.useBrain(b)
				prs := 0
				h.w.cfg.PullRequests = func(ctx context.Context, r *jobs.Run) (string, error) {
					if prs++; prs == 1 && when == "after the push" {
						die() // the worker dies: nothing after this reaches Redis
						return "", errors.New("killed")
					}
					return "https://example.test/pull/1", nil
				}
				if err := h.w.Handler().ProcessTask(dctx, stepTask(r.ID, 1)); err == nil {
					t.Fatal("the dying delivery succeeded")
				}
				mid := h.get(t, r.ID)
				if mid.Tasks[0].Pending == nil || mid.Status != jobs.RunRunning {
					t.Fatalf("the finished agent's result was not kept: %s, pending %v", mid.Status, mid.Tasks[0].Pending)
				}
				if when == "after the push" {
					if remoteHead(t, remote, mid.Git.Branch) == "" {
						t.Fatal("the dying delivery did not push: the test does not test what it says")
					}
					// The next delivery comes later: its commit of the same work is another commit (git's dates are
					// in seconds), which must replace the dead worker's on the remote.
					time.Sleep(1100 * time.Millisecond)
				}
				if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
					t.Fatal(err)
				}
				got := h.get(t, r.ID)
				task := got.Tasks[0]
				if n := runs(t, count); n != 1 {
					t.Fatalf("the agent ran %d times", n)
				}
				if got.Status != jobs.RunCompleted || len(task.Attempts) != 1 || task.Commit == "" || task.Pending != nil {
					t.Fatalf("want the run completed by its one attempt: %s, %d attempts, commit %q", got.Status,
						len(task.Attempts), task.Commit)
				}
				if n := gitIn(t, repo, "rev-list", "--count", got.Git.BaseCommit+".."+got.Git.Branch); n != "1" {
					t.Fatalf("%s commits on the branch, want 1", n)
				}
				if at := gitIn(t, repo, "rev-parse", got.Git.Branch); at != got.Git.Head || at != task.Commit {
					t.Fatalf("the branch is at %s, the run records head %s and commit %s", at, got.Git.Head, task.Commit)
				}
				if at := remoteHead(t, remote, got.Git.Branch); at != got.Git.Head || got.Git.Pushed != at {
					t.Fatalf("the remote's branch is at %s, the run records head %s, pushed %s", at, got.Git.Head, got.Git.Pushed)
				}
				if got := gitIn(t, repo, "show", got.Git.Branch+":work.txt"); got != "attempt 1" {
					t.Fatalf("the branch holds %q", got)
				}
				if len(got.Git.Moving) != 0 {
					t.Fatalf("moves left recorded: %q", got.Git.Moving)
				}
			})
		}
	}
}

// A finished attempt whose work stayed on a machine that is gone cannot be settled: the delivery that took it over
// says so and runs the task again, rather than committing nothing as the task's work.
func TestAFinishedAttemptsLostWorkIsDoneAgain(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			agentCmd, count := sideEffects(t, "")
			h := newHarness(t, rdb, agentCmd, nil)
			r, repo, _ := h.gitRun(t, false)
			// What a worker on another machine left: its attempt finished and kept, its work a tree only it had.
			h.deadAttempt(t, r.ID, &jobs.Pending{Text: "Done. All tests pass.", Success: true,
				Work: "4b825dc642cb6eb9a060e54bf8d69288fbee4904"[:39] + "5"})
			if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
				t.Fatal(err)
			}
			got := h.get(t, r.ID)
			task := got.Tasks[0]
			if runs(t, count) != 1 || got.Status != jobs.RunCompleted || len(task.Attempts) != 2 || task.Attempts[0].Status != "lost" {
				t.Fatalf("want the task run again: %d runs, %s, %d attempts", runs(t, count), got.Status, len(task.Attempts))
			}
			if n := countEvents(t, h, r.ID, jobs.AttemptLostEvent{}.Kind()); n != 1 {
				t.Fatalf("%d attempt_lost events, want 1", n)
			}
			if got := gitIn(t, repo, "show", got.Git.Branch+":work.txt"); got != "attempt 2" {
				t.Fatalf("the branch holds %q", got)
			}
		})
	}
}

// A run that clones its repository learns its base on the first worker that runs it, and records it before the agent
// works: an attempt that dies and is run again starts from the same base, though the remote's HEAD moved meanwhile.
func TestTheBaseIsRecordedBeforeTheAgentWorks(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			agentCmd, _ := sideEffects(t, "")
			h := newHarness(t, rdb, agentCmd, nil)
			r, repo, remote := h.gitRun(t, true)
			base := gitIn(t, remote, "rev-parse", "main")
			dctx, die := context.WithCancel(context.Background())
			h.useBrain(&hookBrain{before: func(n int) error {
				if n == 1 {
					die()
					return dctx.Err()
				}
				return nil
			}})
			if err := h.w.Handler().ProcessTask(dctx, stepTask(r.ID, 1)); err == nil {
				t.Fatal("the dying delivery succeeded")
			}
			if got := h.get(t, r.ID).Git.BaseCommit; got != base {
				t.Fatalf("recorded base %q, want %s", got, base)
			}
			// A teammate pushes to main meanwhile; and the next attempt runs on another worker.
			gitIn(t, repo, "commit", "-q", "--allow-empty", "-m", "later")
			gitIn(t, repo, "push", "-q", "origin", "main")
			h.w.cfg.Workspaces = &workspace.Manager{Root: t.TempDir()}
			if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
				t.Fatal(err)
			}
			got := h.get(t, r.ID)
			if got.Status != jobs.RunCompleted {
				t.Fatalf("run %s", got.Status)
			}
			// The work was on the machine that died: the task ran again, on the recorded base.
			if parent := gitIn(t, remote, "rev-parse", got.Git.Branch+"^"); parent != base {
				t.Fatalf("the task's commit is on %s, not on the run's base %s", parent, base)
			}
		})
	}
}

// A worker cut off from Redis stops its agents before the others may take its steps over (they wait for its word that
// it lives to run out): the work is not done twice, once here for nothing.
func TestACutOffWorkerStopsItsAgents(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	started := filepath.Join(t.TempDir(), "started")
	agentCmd := script(t, fmt.Sprintf("touch %q\nsleep 120\necho 'Done.'\n", started))
	h := newHarness(t, rdb, agentCmd, nil)
	r := h.newRun(t, "1")
	if err := h.process(t, queue.TypeStart, queue.Payload{RunID: r.ID}); err != nil {
		t.Fatal(err)
	}
	go h.w.aliveLoop()
	t.Cleanup(h.w.Shutdown)
	done := make(chan error, 1)
	go func() { done <- h.w.Handler().ProcessTask(context.Background(), stepTask(r.ID, 1)) }()
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	m.Close() // Redis is gone for this worker
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the step ended with %v, want it stopped", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the agent of a worker cut off from Redis was not stopped")
	}
}

// A worker that lost its step opens no pull request, even when it had nothing to push (its last task changed nothing
// and the branch was pushed already): the post on the forge is fenced like the push.
func TestAStaleDeliveryOpensNoPullRequest(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			agentCmd := script(t, `[ "$ORCH_TASK_ID" = 1 ] && echo one > one.txt
echo "Done. All tests pass."`)
			h := newHarness(t, rdb, agentCmd, nil)
			r, _, remote := h.gitRun(t, false)
			if _, err := h.store.Update(context.Background(), r.ID, func(r *jobs.Run, c *jobs.Change) error {
				r.Tasks = append(r.Tasks, &jobs.Task{ID: "2", Title: "task 2", Status: jobs.TaskPending})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			prs := 0
			h.w.cfg.PullRequests = func(context.Context, *jobs.Run) (string, error) { prs++; return "https://example.test/pull/1", nil }
			if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
				t.Fatal(err)
			}
			if got := h.get(t, r.ID); got.Seq != 2 || remoteHead(t, remote, got.Git.Branch) != got.Git.Head {
				t.Fatalf("task 1 was not committed and pushed: seq %d", got.Seq)
			}
			// Task 2 changes nothing; its worker loses the step while the brain judges.
			h.useBrain(&hookBrain{before: func(int) error { h.rescue(t, r.ID); return nil }})
			if err := h.w.Handler().ProcessTask(context.Background(), stepTask(r.ID, 2)); err != nil {
				t.Fatal(err)
			}
			if prs != 0 {
				t.Fatalf("the stale delivery opened %d pull requests", prs)
			}
			if n := countEvents(t, h, r.ID, jobs.AttemptLostEvent{}.Kind()); n != 1 {
				t.Fatalf("%d attempt_lost events, want 1", n)
			}
		})
	}
}

// A worker killed as its agent ended — after the agent's last word, before the task held it — leaves the ending it
// noted on its machine: the delivery that takes the step over there settles the attempt with it, and the agent does
// not run again.
func TestAnAttemptWhoseWorkerDiedAsItsAgentEndedIsSettled(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name+"/in a plain directory", func(t *testing.T) {
			agentCmd, count := sideEffects(t, "")
			h := newHarness(t, rdb, agentCmd, nil)
			h.w.cfg.Endings = filepath.Join(t.TempDir(), "ended")
			r := h.newRun(t, "1")
			if err := h.process(t, queue.TypeStart, queue.Payload{RunID: r.ID}); err != nil {
				t.Fatal(err)
			}
			h.dieAsTheAgentEnds(t, r.ID)
			if endings, _ := filepath.Glob(filepath.Join(h.w.cfg.Endings, r.ID, "*.json")); len(endings) != 1 {
				t.Fatalf("endings noted: %q, want one", endings)
			}
			if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
				t.Fatal(err)
			}
			got := h.get(t, r.ID)
			if n := runs(t, count); n != 1 || got.Status != jobs.RunCompleted || len(got.Tasks[0].Attempts) != 1 {
				t.Fatalf("the agent ran %d times; %s, %d attempts", n, got.Status, len(got.Tasks[0].Attempts))
			}
			if _, err := os.Stat(h.w.cfg.Endings); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the run is over and the endings' directory is still there: %v", err)
			}
		})
		t.Run(name+"/in a worktree", func(t *testing.T) {
			agentCmd, count := sideEffects(t, "")
			h := newHarness(t, rdb, agentCmd, nil)
			r, repo, remote := h.gitRun(t, false)
			h.dieAsTheAgentEnds(t, r.ID)
			mid := h.get(t, r.ID)
			if task := mid.Tasks[0]; task.Pending != nil || task.Status != jobs.TaskRunning || len(task.Attempts) != 1 {
				t.Fatalf("the delivery did not die between the agent's end and the save: pending %v, %s, %d attempts",
					task.Pending != nil, task.Status, len(task.Attempts))
			}
			endings, _ := filepath.Glob(filepath.Join(h.w.cfg.Workspaces.Root, "ended", r.ID, "*.json"))
			if len(endings) != 1 {
				t.Fatalf("endings noted: %q, want one", endings)
			}
			if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
				t.Fatal(err)
			}
			got := h.get(t, r.ID)
			task := got.Tasks[0]
			if n := runs(t, count); n != 1 {
				t.Fatalf("the agent ran %d times", n)
			}
			if got.Status != jobs.RunCompleted || len(task.Attempts) != 1 || task.Commit == "" || task.Pending != nil {
				t.Fatalf("want the run completed by its one attempt: %s, %d attempts, commit %q", got.Status,
					len(task.Attempts), task.Commit)
			}
			if task.Attempts[0].Duration <= 0 {
				t.Fatalf("the attempt's record lost what the agent's run cost: %+v", task.Attempts[0])
			}
			if got := gitIn(t, repo, "show", got.Git.Branch+":work.txt"); got != "attempt 1" {
				t.Fatalf("the branch holds %q", got)
			}
			if at := remoteHead(t, remote, got.Git.Branch); at != got.Git.Head {
				t.Fatalf("the remote's branch is at %s, the run records %s", at, got.Git.Head)
			}
			if _, err := os.Stat(filepath.Join(h.w.cfg.Workspaces.Root, "ended", r.ID)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the run is over and its endings are still there: %v", err)
			}
		})
	}
}

// An ending is the word of one attempt of one delivery: another attempt's, or one that does not hold together, is not
// taken for it, and the task runs again.
func TestAnEndingIsOnlyItsAttemptsWord(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(path, runID string) error
	}{
		{"another owner's", func(path, runID string) error {
			return writeEnding(path, ending{Run: runID, Task: "1", Attempt: 1, Owner: "step:someone-else",
				Said: jobs.Pending{Text: "Done. All tests pass.", Success: true}})
		}},
		{"cut short", func(path, _ string) error { return os.WriteFile(path, []byte(`{"run":"r-`), 0o600) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agentCmd, count := sideEffects(t, "")
			h := newHarness(t, clients(t)["miniredis"], agentCmd, nil)
			r, _, _ := h.gitRun(t, false)
			h.deadAttempt(t, r.ID, nil)
			path := h.w.endingPath(r, "1", 1)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := tc.write(path, r.ID); err != nil {
				t.Fatal(err)
			}
			if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
				t.Fatal(err)
			}
			got := h.get(t, r.ID)
			if runs(t, count) != 1 || got.Status != jobs.RunCompleted || len(got.Tasks[0].Attempts) != 2 {
				t.Fatalf("want the task run again: %d runs, %s, %d attempts", runs(t, count), got.Status,
					len(got.Tasks[0].Attempts))
			}
		})
	}
}

// What an ending says goes through the intake again when it is taken: a secret orch holds, written into the file by
// something that could write there, is found (a security question) and taken out, as it is when an agent says it.
func TestAnEndingsWordIsTakenInLikeTheAgents(t *testing.T) {
	const token = "w3b-t0ken-0f-orch"
	agentCmd, count := sideEffects(t, "")
	h := newHarness(t, clients(t)["miniredis"], agentCmd, nil)
	h.w.cfg.Secrets = safetext.NewRedactor([]safetext.Secret{{Name: "ORCH_WEB_TOKEN", Value: token}})
	r, _, _ := h.gitRun(t, false)
	h.deadAttempt(t, r.ID, nil)
	if err := writeEnding(h.w.endingPath(r, "1", 1), ending{Run: r.ID, Task: "1", Attempt: 1, Owner: "step:elsewhere",
		Said: jobs.Pending{Text: "Done. The token is " + token + ". All tests pass.", Success: true}}); err != nil {
		t.Fatal(err)
	}
	if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	got := h.get(t, r.ID)
	e := got.OpenEscalation()
	if runs(t, count) != 0 || e == nil || e.Trigger != jobs.TriggerSecurity {
		t.Fatalf("want the ending settled with a security question: %d runs, %s, %+v", runs(t, count), got.Status, e)
	}
	data, _ := json.Marshal(got)
	if strings.Contains(string(data), token) || !strings.Contains(e.Output, "[REDACTED:ORCH_WEB_TOKEN]") {
		t.Fatalf("the secret was kept: output %q", e.Output)
	}
}

// Someone commits on the run's branch in the repository while the brain judges the agent's work (after the worktree
// was examined): orch leaves their commit where it is and holds the task on a security question, instead of
// completing it without its commit.
func TestABranchMovedWhileTheBrainJudgesHoldsTheTask(t *testing.T) {
	agentCmd, _ := sideEffects(t, "")
	h := newHarness(t, clients(t)["miniredis"], agentCmd, nil)
	r, repo, _ := h.gitRun(t, false)
	var someone string
	h.useBrain(&hookBrain{before: func(n int) error {
		if n == 1 {
			base := r.Git.BaseCommit
			someone = gitIn(t, repo, "commit-tree", "-p", base, "-m", "someone's", base+"^{tree}")
			gitIn(t, repo, "update-ref", "refs/heads/"+r.Git.Branch, someone)
		}
		return nil
	}})
	if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	got := h.get(t, r.ID)
	e := got.OpenEscalation()
	if got.Status != jobs.RunParked || e == nil || e.Trigger != jobs.TriggerSecurity || !strings.Contains(e.Question, "moved") {
		t.Fatalf("want the task held on a security question: %s, %+v", got.Status, e)
	}
	if task := got.Tasks[0]; task.Commit != "" || task.Status == jobs.TaskCompleted {
		t.Fatalf("the task completed (%s) with commit %q", task.Status, task.Commit)
	}
	if at := gitIn(t, repo, "rev-parse", r.Git.Branch); at != someone {
		t.Fatalf("their commit was overwritten: the branch is at %s", at)
	}
}

// An ending is written as the agent ends and must cost little: what the agent said is bounded as the task keeps it.
func TestAnEndingIsBounded(t *testing.T) {
	h := newHarness(t, clients(t)["miniredis"], "true", nil)
	h.w.cfg.Endings = t.TempDir()
	r := &jobs.Run{ID: "r-bounded000"}
	at := &attempt{run: r, task: jobs.Task{ID: "1"}, n: 1, owner: owner{id: "step:r-bounded000:1"}}
	out := &outcome{said: jobs.Pending{Text: strings.Repeat("x", 10*maxKept), Success: true}}
	h.w.noteEnd(at, out)
	e, err := h.w.endingOf(r, "1", 1, at.owner.id)
	if err != nil || e == nil {
		t.Fatalf("the ending: %v, %v", e, err)
	}
	fi, err := os.Stat(h.w.endingPath(r, "1", 1))
	if err != nil || fi.Size() > maxKept+4096 || !strings.Contains(e.Said.Text, "bytes cut") {
		t.Fatalf("an ending of %d bytes for a %d-byte answer: %v", fi.Size(), 10*maxKept, err)
	}
}

// A store can lose writes it acknowledged: a Sentinel failover promotes a replica that had not received them, an
// embedded store's holder is killed before it saved. When a step's claim on its task is among them, the store comes
// back with the task as the claim found it, and with asynq's record of the delivery as it was then: nothing will
// deliver the step again. The delivery that made the claim — of a new attempt, or of a finished one it took over —
// records it again and settles its attempt once, rather than dropping its result as a lost step's and leaving the
// run running for ever.
func TestAClaimTheStoreLostIsRecordedAgain(t *testing.T) {
	for name, rdb := range clients(t) {
		for _, when := range []string{"while the agent works", "while the brain judges", "taken over, while the brain judges"} {
			t.Run(name+"/"+when, func(t *testing.T) {
				ctx := context.Background()
				h, gate, count := gatedHarness(t, rdb)
				r, repo, remote := h.gitRun(t, false)
				open := func() {
					if err := os.WriteFile(gate, nil, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				b := &hookBrain{}
				h.useBrain(b)
				if when == "taken over, while the brain judges" {
					// A first delivery whose worker died while its brain judged: the agent's result is kept.
					open()
					dctx, die := context.WithCancel(ctx)
					b.before = func(int) error { die(); return dctx.Err() }
					if err := h.w.Handler().ProcessTask(dctx, stepTask(r.ID, 1)); err == nil {
						t.Fatal("the dying delivery succeeded")
					}
					// It ran under a delivery of its own, which is gone.
					if _, err := h.store.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
						r.Current().Attempts[0].Owner = "step:elsewhere"
						return nil
					}); err != nil {
						t.Fatal(err)
					}
				}
				key := "orch:run:{" + r.ID + "}"
				found, err := h.rdb.Get(ctx, key).Bytes()
				if err != nil {
					t.Fatal(err)
				}
				lose := func() {
					if err := h.rdb.Set(ctx, key, found, 0).Err(); err != nil {
						t.Error(err)
					}
				}
				b.before = nil
				if when != "while the agent works" {
					open()
					b.before = func(int) error { lose(); return nil }
				}
				done := make(chan error, 1)
				go func() { done <- h.w.Handler().ProcessTask(ctx, stepTask(r.ID, 1)) }()
				if when == "while the agent works" {
					for runs(t, count) == 0 {
						time.Sleep(10 * time.Millisecond)
					}
					lose()
					open()
				}
				if err := <-done; err != nil {
					t.Fatalf("the delivery: %v", err)
				}
				got := h.get(t, r.ID)
				task := got.Tasks[0]
				if n := runs(t, count); n != 1 {
					t.Fatalf("the agent ran %d times", n)
				}
				if got.Status != jobs.RunCompleted || task.Status != jobs.TaskCompleted || len(task.Attempts) != 1 ||
					task.Attempts[0].Owner != "" || task.Commit == "" || task.Pending != nil {
					t.Fatalf("want the run completed by its one attempt under the delivery: %s, task %s, %d attempts, "+
						"commit %q, pending %v", got.Status, task.Status, len(task.Attempts), task.Commit, task.Pending != nil)
				}
				if n := countEvents(t, h, r.ID, jobs.AttemptLostEvent{}.Kind()); n != 0 {
					t.Fatalf("%d attempt_lost events, want none", n)
				}
				if at := gitIn(t, repo, "rev-parse", got.Git.Branch); at != got.Git.Head || at != task.Commit {
					t.Fatalf("the branch is at %s, the run records head %s and commit %s", at, got.Git.Head, task.Commit)
				}
				if at := remoteHead(t, remote, got.Git.Branch); at != got.Git.Head || got.Git.Pushed != at {
					t.Fatalf("the remote's branch is at %s, the run records head %s, pushed %s", at, got.Git.Head, got.Git.Pushed)
				}
			})
		}
	}
}

// A worker shut down (a deploy, a rolling restart) once an agent has ended lets that step settle — judge what the agent
// said, commit, push, save — within its grace, rather than throw the finished work away: handed back, the step would
// go to a worker on another machine without that work, which runs the task again. A step still settling when the grace
// ends goes back to the queue with the agent's result kept, and the next worker settles it without running the agent.
func TestAShutdownLetsAFinishedAttemptSettle(t *testing.T) {
	rdb := clients(t)["redis"]
	if rdb == nil {
		t.Skip("needs a Redis server: ORCH_TEST_REDIS_URL")
	}
	for _, grace := range []string{"settles within the grace", "outlives the grace"} {
		t.Run(grace, func(t *testing.T) {
			agentCmd, count := sideEffects(t, "")
			h := newHarness(t, rdb, agentCmd, nil)
			r, _, remote := h.gitRun(t, false)
			judging := make(chan struct{})
			b := &hookBrain{}
			b.before = func(n int) error {
				if n == 1 {
					close(judging)
					go h.w.Shutdown()
					<-h.w.base.Done() // the shutdown has begun: agents are interrupted from here on
				}
				return nil
			}
			h.useBrain(b)
			h.w.cfg.ShutdownTimeout = 30 * time.Second // a loaded machine settles in time
			if grace == "outlives the grace" {
				h.useBrain(&slowBrain{hookBrain: b})
				h.w.cfg.ShutdownTimeout = 3 * time.Second
			}
			if err := h.w.Start(rdb); err != nil {
				t.Fatal(err)
			}
			if err := h.queue.Start(context.Background(), r.ID); err != nil {
				t.Fatal(err)
			}
			select {
			case <-judging:
			case <-time.After(2 * time.Minute):
				t.Fatal("the agent's output never reached the brain")
			}
			h.w.Shutdown() // returns once the shutdown the brain began has
			got := h.get(t, r.ID)
			if grace == "outlives the grace" {
				if got.Status != jobs.RunRunning || got.Tasks[0].Pending == nil {
					t.Fatalf("want the step given back with the agent's result kept: %s, pending %v", got.Status,
						got.Tasks[0].Pending != nil)
				}
				// The next worker settles it.
				next := newHarness(t, rdb, agentCmd, nil)
				next.w.cfg.Workspaces = h.w.cfg.Workspaces
				if err := next.w.Start(rdb); err != nil {
					t.Fatal(err)
				}
				defer next.w.Shutdown()
				got = until(t, next, r.ID, "completed", func(r *jobs.Run) bool { return r.Status.Terminal() })
			}
			task := got.Tasks[0]
			if n := runs(t, count); n != 1 {
				t.Fatalf("the agent ran %d times", n)
			}
			if got.Status != jobs.RunCompleted || task.Status != jobs.TaskCompleted || len(task.Attempts) != 1 || task.Commit == "" {
				t.Fatalf("want the run completed by its one attempt: %s, task %s, %d attempts, commit %q",
					got.Status, task.Status, len(task.Attempts), task.Commit)
			}
			if at := remoteHead(t, remote, got.Git.Branch); at != got.Git.Head {
				t.Fatalf("the remote's branch is at %s, the run records %s", at, got.Git.Head)
			}
		})
	}
}

// slowBrain judges only once its context ends: a brain that outlives a shutdown's grace.
type slowBrain struct{ *hookBrain }

func (b *slowBrain) Interpret(ctx context.Context, output string) (brain.Interpretation, error) {
	if _, err := b.hookBrain.Interpret(ctx, output); err != nil {
		return brain.Interpretation{}, err
	}
	<-ctx.Done()
	return brain.Interpretation{}, ctx.Err()
}

// A shutdown does not wait for a running agent, which could run for half an hour: the agent is stopped, its step goes
// back to the queue, and the next worker runs it again — however long the shutdown would let a settling step take.
func TestAShutdownInterruptsRunningAgents(t *testing.T) {
	rdb := clients(t)["redis"]
	if rdb == nil {
		t.Skip("needs a Redis server: ORCH_TEST_REDIS_URL")
	}
	gate := filepath.Join(t.TempDir(), "gate")
	agentCmd, count := sideEffects(t, gate)
	h := newHarness(t, rdb, agentCmd, nil)
	r, _, _ := h.gitRun(t, false)
	h.w.cfg.ShutdownTimeout = time.Hour
	if err := h.w.Start(rdb); err != nil {
		t.Fatal(err)
	}
	if err := h.queue.Start(context.Background(), r.ID); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); runs(t, count) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the agent never started")
		}
	}
	done := make(chan struct{})
	go func() { h.w.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatal("the shutdown waits for the running agent")
	}
	if got := h.get(t, r.ID); got.Status != jobs.RunRunning || got.Tasks[0].Pending != nil {
		t.Fatalf("want the interrupted step left to the queue, nothing judged: %s, pending %v", got.Status,
			got.Tasks[0].Pending != nil)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	next := newHarness(t, rdb, agentCmd, nil)
	next.w.cfg.Workspaces = h.w.cfg.Workspaces
	if err := next.w.Start(rdb); err != nil {
		t.Fatal(err)
	}
	defer next.w.Shutdown()
	got := until(t, next, r.ID, "completed", func(r *jobs.Run) bool { return r.Status.Terminal() })
	if got.Status != jobs.RunCompleted || runs(t, count) != 2 {
		t.Fatalf("want the run completed by the agent run again: %s, the agent ran %d times", got.Status, runs(t, count))
	}
}

// A worker settling a step in a shutdown's grace goes on saying it lives: past queue.AliveTTL without its word, the
// other workers would take the step for a dead worker's and run it again beside it.
func TestASettlingWorkerStillLives(t *testing.T) {
	rdb := clients(t)["redis"]
	if rdb == nil {
		t.Skip("needs a Redis server: ORCH_TEST_REDIS_URL")
	}
	agentCmd, count := sideEffects(t, "")
	h := newHarness(t, rdb, agentCmd, nil)
	r, _, _ := h.gitRun(t, false)
	h.w.cfg.ShutdownTimeout = 2 * time.Minute
	judged := make(chan error, 1)
	h.useBrain(&livesBrain{judge: func(ctx context.Context) {
		go h.w.Shutdown()
		<-h.w.base.Done()                          // the shutdown has begun
		time.Sleep(queue.AliveTTL + 2*time.Second) // longer than a worker's word that it lives holds
		self, _ := asynq.GetTaskID(ctx)
		dead, err := h.queue.DeliveryDead(context.Background(), self)
		if err == nil && dead {
			err = fmt.Errorf("the step's delivery %s was taken for a dead worker's while it settled", self)
		}
		judged <- err
	}})
	if err := h.w.Start(rdb); err != nil {
		t.Fatal(err)
	}
	if err := h.queue.Start(context.Background(), r.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-judged:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the agent's output never reached the brain")
	}
	h.w.Shutdown()
	if got := h.get(t, r.ID); got.Status != jobs.RunCompleted || runs(t, count) != 1 {
		t.Fatalf("want the run completed by its one attempt: %s, the agent ran %d times", got.Status, runs(t, count))
	}
}

// livesBrain runs judge, with the delivery's context, before its first judgement.
type livesBrain struct {
	hookBrain
	judge func(ctx context.Context)
	once  sync.Once
}

func (b *livesBrain) Interpret(ctx context.Context, output string) (brain.Interpretation, error) {
	b.once.Do(func() { b.judge(ctx) })
	return b.hookBrain.Interpret(ctx, output)
}
