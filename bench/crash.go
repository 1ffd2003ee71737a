package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/jobs/store"
)

// rescueResult is how long a dead worker's step waits for another worker.
type rescueResult struct {
	samples []time.Duration
	note    string
}

// measureRescue runs two `orch worker` processes on the rig's Redis and, n times: queues a one-task run whose agent
// works for a minute on its first attempt, SIGKILLs the worker that took it, and times the kill to the second
// attempt's start on the other worker. The killed worker is started again, and given the time to count as alive
// (queue.AliveTTL), before the next sample.
func measureRescue(ctx context.Context, r *rig, n int) (rescueResult, error) {
	res := rescueResult{}
	ws := filepath.Join(r.tmp, "rescue")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return res, err
	}
	if err := os.WriteFile(filepath.Join(ws, "plan.md"), []byte(stepPlan(1)), 0o644); err != nil {
		return res, err
	}
	agentCmd := `cmd:/bin/sh -c 'cat >/dev/null; [ "$ORCH_ATTEMPT" = 1 ] && sleep 60; echo Done. All tests pass.'`
	env := []string{"ORCH_REDIS_URL=" + r.redis.URL, "ORCH_SANDBOX=local", "ORCH_BRAIN=heuristic", "ANTHROPIC_API_KEY=",
		"ORCH_HTTP_ADDR=127.0.0.1:0", "ORCH_LOG_LEVEL=error"}
	workers := map[int]*exec.Cmd{}
	start := func() error {
		cmd := exec.Command(r.orchBin, "worker", "--concurrency", "1")
		cmd.Dir, cmd.Env = ws, append(os.Environ(), env...)
		stopWithParent(cmd)
		if err := cmd.Start(); err != nil {
			return err
		}
		workers[cmd.Process.Pid] = cmd
		return nil
	}
	defer func() {
		for _, w := range workers {
			w.Process.Kill()
			w.Wait()
		}
	}()
	for range 2 {
		if err := start(); err != nil {
			return res, err
		}
	}
	s, _, _ := r.backend()
	for i := range n {
		// Both workers count as alive, and have for long enough to judge each other.
		if err := sleep(ctx, queue.AliveTTL+2*queue.AliveEvery); err != nil {
			return res, err
		}
		out, err := r.orchIn(ctx, ws, env, "run", "--detach", "--agent", agentCmd, "plan.md")
		if err != nil {
			return res, fmt.Errorf("orch run --detach: %v\n%s", err, out)
		}
		id := regexp.MustCompile(`\br-[a-z0-9]{10}\b`).FindString(string(out))
		if id == "" {
			return res, fmt.Errorf("no run id in %q", out)
		}
		pid, err := workerOf(ctx, r, id)
		if err != nil {
			return res, err
		}
		// A worker killed between its claim and its first attempt's record has made no attempt: the rescued step
		// is that step's first attempt, and there would be no second to time.
		if err := attempts(ctx, s, id, 1); err != nil {
			return res, err
		}
		w := workers[pid]
		if w == nil {
			return res, fmt.Errorf("run %s's step is claimed by process %d, which is not one of the bench's workers", id, pid)
		}
		rescued, killed, err := killAndWait(ctx, s, w, id)
		delete(workers, pid)
		if err != nil {
			return res, err
		}
		res.samples = append(res.samples, rescued.Sub(killed))
		if err := waitRunStatus(ctx, s, id, jobs.RunCompleted); err != nil {
			return res, err
		}
		if err := start(); err != nil {
			return res, err
		}
		step(fmt.Sprintf("rescue %d of %d: %s", i+1, n, rescued.Sub(killed).Round(10*time.Millisecond)))
	}
	res.note = fmt.Sprintf("two `orch worker` processes on the bench's Redis; %d times a one-task run whose first attempt works for "+
		"a minute, the worker that took it SIGKILLed, and the time from the kill to the second attempt's start on the "+
		"other worker (the store's attempt record): p50 %.2f s, max %.2f s. Workers say they live every %s, a word that "+
		"holds %s; the others look for dead workers' steps every 2 s. Before, a dead worker's step waited for its asynq "+
		"lease (30 s).", n, percentileMs(res.samples, 0.5)/1000, percentileMs(res.samples, 1)/1000, queue.AliveEvery,
		queue.AliveTTL)
	return res, nil
}

// crashTrialDir makes a crash trial's directory: two workspaces and a plan of three tasks.
func crashTrialDir(dir string) error {
	for _, ws := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, ws), 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "plan.md"), []byte(stepPlan(3)), 0o644)
}

// countCompletions reads the file the agents count their completions in ("RUN TASK" a line): the tasks completed,
// and those completed more than once.
func countCompletions(path string) (tasks, twice int, err error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, 0, err
	}
	seen := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l != "" {
			seen[l]++
		}
	}
	for _, c := range seen {
		tasks++
		if c > 1 {
			twice++
		}
	}
	return tasks, twice, nil
}

// killAndWait SIGKILLs worker w, which runs run id's step, and waits for the step's second attempt: when it started,
// and when w was killed.
func killAndWait(ctx context.Context, s *store.Store, w *exec.Cmd, id string) (rescued, killed time.Time, err error) {
	killed = time.Now()
	w.Process.Signal(syscall.SIGKILL)
	w.Wait()
	if err := attempts(ctx, s, id, 2); err != nil {
		return rescued, killed, err
	}
	run, err := s.Get(ctx, id)
	if err != nil {
		return rescued, killed, err
	}
	return run.Tasks[0].Attempts[1].StartedAt, killed, nil
}

// attempts waits until run id's first task has made n attempts.
func attempts(ctx context.Context, s *store.Store, id string, n int) error {
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		run, err := s.Get(ctx, id)
		if err == nil && len(run.Tasks) > 0 && len(run.Tasks[0].Attempts) >= n {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("run %s: its first task has not made %d attempt(s) within two minutes", id, n)
		}
	}
}

// workerOf waits until run id's step is claimed by a worker, and returns that worker's process id (the worker ids are
// host:pid:suffix, queue.Claim).
func workerOf(ctx context.Context, r *rig, id string) (int, error) {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		claims, err := r.redis.Client.HGetAll(ctx, "orch:deliveries").Result()
		if err != nil {
			return 0, err
		}
		for delivery, worker := range claims {
			if !strings.HasPrefix(delivery, "step:"+id+":") {
				continue
			}
			parts := strings.Split(worker, ":")
			if len(parts) < 3 {
				return 0, fmt.Errorf("worker id %q", worker)
			}
			return strconv.Atoi(parts[len(parts)-2])
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("run %s's step was taken by no worker within a minute", id)
		}
	}
}

func waitRunStatus(ctx context.Context, s *store.Store, id string, want jobs.RunStatus) error {
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		run, err := s.Get(ctx, id)
		if err == nil && run.Status == want {
			return nil
		}
		if err == nil && run.Status.Terminal() {
			return fmt.Errorf("run %s ended %s (%s), want %s", id, run.Status, run.Reason, want)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("run %s is not %s after two minutes (%v)", id, want, err)
		}
	}
}

// crashResult is what a SIGKILL at a random moment costs runs that share an embedded store.
type crashResult struct {
	trials, twice, tasks int
	note                 string
}

// measureCrashTrials runs, n times, two `orch run`s of a three-task plan on one embedded state directory (each in a
// workspace of its own), SIGKILLs one of them at a random moment of its first two seconds, lets the other finish,
// resumes the killed run with `orch resume`, and counts the tasks whose agent completed more than once (each agent
// appends a line to a file outside the workspace as it completes).
func measureCrashTrials(ctx context.Context, r *rig, n int) (crashResult, error) {
	res := crashResult{trials: n}
	for i := range n {
		dir := filepath.Join(r.tmp, fmt.Sprintf("crash-%d", i))
		count := filepath.Join(dir, "completions")
		if err := crashTrialDir(dir); err != nil {
			return res, err
		}
		agentCmd := fmt.Sprintf(`cmd:/bin/sh -c 'cat >/dev/null; sleep 0.$(( $$ %% 4 ))$(( $$ %% 10 )); echo "$ORCH_RUN_ID $ORCH_TASK_ID" >> %s; echo Done. All tests pass.'`, count)
		env := []string{"ORCH_REDIS_URL=", "ORCH_SANDBOX=local", "ORCH_BRAIN=heuristic", "ANTHROPIC_API_KEY=", "ORCH_STATE_DIR=" + filepath.Join(dir, "state")}
		run := func(ws string) *exec.Cmd {
			cmd := exec.CommandContext(ctx, r.orchBin, "run", "--agent", agentCmd, "--workspace", ws, "--no-notify", "--json", "plan.md")
			cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
			return cmd
		}
		victim, other := run("a"), run("b")
		var vout, oout strings.Builder
		victim.Stdout = &vout
		other.Stdout, other.Stderr = &oout, &oout
		if err := victim.Start(); err != nil {
			return res, err
		}
		if err := other.Start(); err != nil {
			return res, err
		}
		time.Sleep(time.Duration(rand.Int64N(int64(2 * time.Second))))
		victim.Process.Signal(syscall.SIGKILL)
		victim.Wait()
		if err := other.Wait(); err != nil {
			return res, fmt.Errorf("trial %d: the run that was not killed: %v\n%s", i, err, lastLines(oout.String(), 30))
		}
		// The killed run, if it was created at all, is resumed until it completes.
		id := regexp.MustCompile(`"run_id":"(r-[a-z0-9]{10})"`).FindStringSubmatch(vout.String())
		if id != nil {
			cmd := exec.CommandContext(ctx, r.orchBin, "resume", "--no-notify", id[1])
			cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
			if out, err := cmd.CombinedOutput(); err != nil {
				return res, fmt.Errorf("trial %d: orch resume %s: %v\n%s", i, id[1], err, out)
			}
		}
		tasks, twice, err := countCompletions(count)
		if err != nil {
			return res, err
		}
		res.tasks, res.twice = res.tasks+tasks, res.twice+twice
		if err := os.RemoveAll(dir); err != nil {
			return res, err
		}
	}
	res.note = fmt.Sprintf("%d trials: two `orch run`s of a three-task plan on one embedded state directory, one SIGKILLed at a "+
		"random moment of its first 2 s, the other left to finish, the killed one resumed with `orch resume`; agents of "+
		"0–0.39 s count their completions in a file outside the workspaces. %d task completions in all; tasks "+
		"completed twice: %d (before orch kept what an agent said as it ended: 7 of 48 trials had one; before it wrote it to a file: 4 of 294 completions).", n, res.tasks, res.twice)
	return res, nil
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
