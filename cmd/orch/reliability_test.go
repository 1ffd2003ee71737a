package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/jobs/store"
)

// reliabilityRedis is the real Redis for the tests that run orch processes against it, on this test process's own
// database (jobstest.URL): the other packages' workers, running at the same time, must not take these runs.
func reliabilityRedis(t *testing.T) string { return needRedis(t, jobstest.URL(t)) }

// isolatedRedis is a database of the real Redis for one test alone: an orch run's worker takes any run's steps from
// the queue it shares, so tests that count a run's attempts keep their runs apart.
func isolatedRedis(t *testing.T) string { return needRedis(t, jobstest.NewDatabase(t)) }

// needRedis skips a test that has no real Redis (outside CI, where jobstest fails instead).
func needRedis(t *testing.T, url string) string {
	t.Helper()
	if url == "" {
		t.Skip("needs a real Redis: set ORCH_TEST_REDIS_URL")
	}
	return url
}

// startOrch starts orch in dir and returns the process and its combined output.
func startOrch(t *testing.T, dir string, env []string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(orchBin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "ANTHROPIC_API_KEY=", "ORCH_AGENT=", "ORCH_BRAIN=heuristic"), env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, out
}

// waitOutput waits for a process's output to say what.
func waitOutput(t *testing.T, out *syncBuffer, what string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(out.String(), what); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q:\n%s", what, out.String())
		}
	}
}

// writeSlowPlan writes slow.md, one task, and its scenario beside it.
func writeSlowPlan(t *testing.T, dir, scenario string) {
	t.Helper()
	os.WriteFile(filepath.Join(dir, "slow.md"), []byte("# Slow\n\n## Task 1.1: Take a while\n\nDo it slowly.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "slow.sim.yaml"), []byte(scenario), 0o644)
}

// A worker killed with SIGKILL in the middle of a task: another worker takes the step over once its lease runs out,
// the run completes, the task is completed once, and nothing the dead worker started is left running.
func TestWorkerKilledMidTask(t *testing.T) {
	t.Parallel()
	url := reliabilityRedis(t)
	dir := workdir(t)
	// The first attempt works for a long time (a marker makes its process findable); the rescued one is quick.
	writeSlowPlan(t, dir, `tasks:
  "1.1":
    - output: "Done after a long time."
      sh: "sleep 97.25"
    - output: "Done. All tests pass."
`)
	env := []string{"ORCH_REDIS_URL=" + url, "ORCH_SANDBOX=local"}
	first, firstOut := startOrch(t, dir, env, "run", "--agent", "sim", "slow.md")
	// Wait for the first attempt to be under way.
	var id string
	deadline := time.Now().Add(60 * time.Second)
	for id == "" || !strings.Contains(firstOut.String(), "Invoking") {
		if time.Now().After(deadline) {
			t.Fatalf("the first attempt did not start:\n%s", firstOut.String())
		}
		if m := runIDPattern.FindStringSubmatch(firstOut.String()); m != nil {
			id = m[1]
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // the agent's sh is running
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	killed := time.Now()
	_, workerOut := startOrch(t, dir, append(env, "ORCH_HTTP_ADDR=127.0.0.1:0"), "worker", "--agent", "sim")

	var took time.Duration
	var run jobs.Run
	for {
		r := orch(t, dir, "", "status", id, "--redis", url, "--json")
		if err := json.Unmarshal([]byte(r.stdout), &run); err != nil {
			t.Fatalf("status: %v\n%s", err, r)
		}
		if run.Status == jobs.RunCompleted {
			took = time.Since(killed)
			break
		}
		if time.Since(killed) > 3*time.Minute {
			t.Fatalf("the run did not complete after its worker was killed: %s\nworker:\n%s", run.Status, workerOut.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("worker SIGKILL: the run completed %s after the kill", took.Round(time.Second))
	if n := run.Tasks[0].Started; n != 2 {
		t.Fatalf("task 1.1 started %d times, want 2: the killed attempt and the rescued one", n)
	}
	opt, _ := redis.ParseURL(url)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	msgs, err := rdb.XRange(context.Background(), "orch:run:{"+id+"}:events", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	completions := 0
	for _, m := range msgs {
		if strings.Contains(fmt.Sprint(m.Values), `"type":"task_completed"`) {
			completions++
		}
	}
	if completions != 1 {
		t.Fatalf("task 1.1 completed %d times in the log, want once", completions)
	}
	if out, _ := exec.Command("pgrep", "-f", "sleep 97.25").Output(); len(out) > 0 {
		t.Fatalf("the dead worker's agent is still running: pids %s", out)
	}
}

var runIDPattern = regexp.MustCompile(`Run (r-[a-z2-7]{10})`)

// Two workers on one Redis; the one running a task is killed with SIGKILL in the middle of it. Its agent, and the
// child the agent started, die with it; the other worker takes the step over once the lease runs out and completes the
// run; the task's work (a line the agent appends to work.log when it is done) is done once, by the second attempt, and
// nothing of the run's agents is left running. With an agent that works longer than the lease (30 s), asynq hands
// the killed worker's original delivery back while the rescued attempt works: it must leave that attempt alone.
func TestWorkerKilledMidTaskWorksOnce(t *testing.T) {
	t.Parallel()
	for _, agentTime := range []time.Duration{5 * time.Second, 150 * time.Second} {
		t.Run(agentTime.String(), func(t *testing.T) {
			t.Parallel()
			workerKilledMidTask(t, agentTime)
		})
	}
}

func workerKilledMidTask(t *testing.T, agentTime time.Duration) {
	url := isolatedRedis(t) // no other test's worker may take the run, nor these workers another test's
	dir := workdir(t)
	writeSlowPlan(t, dir, fmt.Sprintf(`tasks:
  "1.1":
    - output: "Done. All tests pass."
      sh: "sleep %d & wait; echo done >> work.log"
`, int(agentTime.Seconds())))
	env := []string{"ORCH_REDIS_URL=" + url, "ORCH_SANDBOX=local", "ORCH_HTTP_ADDR=127.0.0.1:0"}
	workers := map[int]*exec.Cmd{}
	outs := map[int]*syncBuffer{}
	for range 2 {
		w, out := startOrch(t, dir, env, "worker")
		waitOutput(t, out, "worker running")
		workers[w.Process.Pid], outs[w.Process.Pid] = w, out
	}
	r := orch(t, dir, "", "run", "--detach", "--redis", url, "--agent", "sim", "slow.md")
	must(t, r, 0)
	id := strings.TrimSpace(r.stdout)

	// The worker whose agent is at work: the agent's sleep is running, and one of the workers is its ancestor.
	var victim int
	for deadline := time.Now().Add(60 * time.Second); victim == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not start: processes %v", agentProcesses(id))
		}
		for _, pid := range agentProcesses(id) {
			if comm(pid) != "sleep" {
				continue
			}
			for p := pid; p > 1 && victim == 0; p = parentOf(p) {
				if workers[p] != nil {
					victim = p
				}
			}
		}
	}
	if err := workers[victim].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	workers[victim].Wait()
	killed := time.Now()
	for left := agentProcesses(id); len(left) > 0; left = agentProcesses(id) {
		if time.Since(killed) > 2*time.Second {
			pids := make([]string, len(left))
			for i, pid := range left {
				pids[i] = strconv.Itoa(pid)
			}
			ps, _ := exec.Command("ps", "-o", "pid,ppid,pgid,stat,args", "-p", strings.Join(pids, ",")).CombinedOutput()
			t.Fatalf("the killed worker's agent still runs 2 s after the kill:\n%s", ps)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the killed worker's agent was gone %v after the kill", time.Since(killed).Round(time.Millisecond))
	var survivor *syncBuffer
	for pid, out := range outs {
		if pid != victim {
			survivor = out
		}
	}

	var run jobs.Run
	for {
		st := orch(t, dir, "", "status", id, "--redis", url, "--json")
		if err := json.Unmarshal([]byte(st.stdout), &run); err != nil {
			t.Fatalf("status: %v\n%s", err, st)
		}
		if run.Status == jobs.RunCompleted {
			break
		}
		if run.Status.Terminal() || run.Status == jobs.RunParked || time.Since(killed) > agentTime+3*time.Minute {
			t.Fatalf("the run did not complete after its worker was killed: %s %s\nworker:\n%s", run.Status, run.Reason,
				survivor.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("the run completed %v after the kill", time.Since(killed).Round(time.Second))
	if n := run.Tasks[0].Started; n != 2 {
		t.Fatalf("task 1.1 started %d times, want 2: the killed attempt and the one that took it over\nworker:\n%s", n,
			survivor.String())
	}
	if work, _ := os.ReadFile(filepath.Join(dir, "work.log")); string(work) != "done\n" {
		t.Fatalf("work.log holds %q: the task's work was not done exactly once", work)
	}
	if agentTime > 45*time.Second && !strings.Contains(survivor.String(), "leaving it to that one") {
		// asynq's recoverer brings the original delivery back one to two minutes after the kill (the lease, its
		// grace, its pass once a minute): while a rescued attempt of 150 s still works.
		t.Fatalf("asynq's redelivery of the killed worker's step did not meet the rescued attempt:\n%s", survivor.String())
	}
	for deadline := time.Now().Add(2 * time.Second); len(agentProcesses(id)) > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run completed, and its agents' processes %v still run", agentProcesses(id))
		}
	}
}

// agentProcesses lists the processes of run id's agents: they carry ORCH_RUN_ID in their environment.
func agentProcesses(id string) []int {
	marker := []byte("\x00ORCH_RUN_ID=" + id + "\x00")
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if env, err := os.ReadFile("/proc/" + e.Name() + "/environ"); err == nil && bytes.Contains(append([]byte{0}, env...), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// comm is a process's command name ("" once it is gone).
func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// parentOf is a process's parent (0 once it is gone).
func parentOf(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	// pid (comm) state ppid …: comm may hold spaces and parentheses, the last ")" ends it.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// ownRedis is a redis-server of the test's own, with production's AOF settings, that the test can kill and start
// again on the same port and directory.
type ownRedis struct {
	t    *testing.T
	dir  string
	port int
	cmd  *exec.Cmd
	args []string // beyond deploy/redis.conf's
}

func startOwnRedis(t *testing.T, args ...string) *ownRedis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed")
		}
		t.Skip("needs redis-server")
	}
	r := &ownRedis{t: t, dir: t.TempDir(), port: freePort(t), args: args}
	r.start()
	t.Cleanup(func() { r.kill() })
	return r
}

func (r *ownRedis) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

func (r *ownRedis) start() {
	r.t.Helper()
	conf, _ := filepath.Abs("../../deploy/redis.conf")
	r.cmd = exec.Command("redis-server", append([]string{conf, "--port", fmt.Sprint(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--save", ""}, r.args...)...)
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", r.port)})
	defer rdb.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := rdb.Ping(context.Background()).Err(); err == nil || strings.Contains(err.Error(), "NOAUTH") {
			break
		}
		if time.Now().After(deadline) {
			r.t.Fatal("redis-server did not start")
		}
	}
}

// kill stops Redis the hard way (SIGKILL): what the append-only file holds is what survives.
func (r *ownRedis) kill() {
	if r.cmd != nil && r.cmd.ProcessState == nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
	}
}

func freePort(t *testing.T) int { return jobstest.FreePort(t) }

// Redis killed and started again (AOF) while a run waits for its human: the question survives, the terminal waits
// for Redis instead of giving up, and the answer given after the restart completes the run.
func TestRedisRestartKeepsParkedRun(t *testing.T) {
	t.Parallel()
	// Every write on disk before Redis acknowledges it: what is tested is orch across the restart, not how much of the
	// last second a killed Redis keeps (appendfsync everysec), which a loaded machine stretches.
	rs := startOwnRedis(t, "--appendfsync", "always")
	dir := workdir(t)
	cmd := exec.Command(orchBin, "run", "--agent", "sim", "--redis", rs.url(), "examples/plans/ambiguous_task.md")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "ORCH_AGENT=", "ORCH_BRAIN=heuristic", "ORCH_SANDBOX=")
	stdin, _ := cmd.StdinPipe()
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitOutput(t, out, "Your response")
	rs.kill()
	waitOutput(t, out, "does not answer")
	rs.start()
	waitOutput(t, out, "is back after")
	answerAndComplete(t, stdin, cmd, out, "B")
}

// Redis killed and started again while an agent works: the agent's outcome waits for Redis and is saved once it is
// back; the task is not run a second time. The agent ends well before its worker, cut off, would stop it (cutOff in
// worker/alive.go: four seconds without a word from Redis): one that runs past that is stopped and run again by
// design, so that a worker cut off for good does not go on beside the one that takes its step over.
func TestRedisRestartWhileRunning(t *testing.T) {
	t.Parallel()
	rs := startOwnRedis(t, "--appendfsync", "always") // as above: orch is tested, not Redis's last second

	dir := workdir(t)
	writeSlowPlan(t, dir, `tasks:
  "1.1":
    - output: "Done. All tests pass."
      sh: "sleep 1"
`)
	cmd, out := startOrch(t, dir, []string{"ORCH_SANDBOX=local"}, "run", "--agent", "sim", "--redis", rs.url(), "slow.md")
	waitOutput(t, out, "Invoking")
	rs.kill()
	time.Sleep(8 * time.Second) // the agent finishes while Redis is away
	rs.start()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "Task 1.1: COMPLETED") {
			t.Fatalf("the run did not complete across the restart (%v):\n%s", err, out.String())
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("the run did not end:\n%s", out.String())
	}
	if strings.Count(out.String(), "Invoking the simulated agent") != 1 {
		t.Fatalf("the agent ran again after the restart:\n%s", out.String())
	}
}

// `orch serve` stopped with SIGTERM while it acks and while an agent works: the acks in flight are answered, the
// process exits cleanly, the interrupted step is requeued (not failed), and a restarted serve finishes the run.
func TestServeSIGTERMDrains(t *testing.T) {
	t.Parallel()
	fake := slackfake.New()
	t.Cleanup(fake.Close)
	dir := workdir(t)
	writeSlowPlan(t, dir, `tasks:
  "1.1":
    - output: "Done after a while."
      sh: "sleep 30"
    - output: "Done. All tests pass."
`)
	s := startServeIn(t, dir, fake)
	s.post("/slack/commands", fake.SlashCommand("run slow.md", "U123ALICE", "C0RUNS"), "application/x-www-form-urlencoded")
	var run jobs.Run
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		json.Unmarshal([]byte(orch(t, dir, "", "status", "--json").stdout), &run)
		if run.Status == jobs.RunRunning && len(run.Tasks) == 1 && run.Tasks[0].Status == jobs.TaskRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task did not start:\n%s", s.out.String())
		}
	}
	time.Sleep(300 * time.Millisecond) // the agent is under way
	// A burst of acks, then SIGTERM while they are in flight.
	codes := make(chan int, 20)
	for range 20 {
		go func() {
			req := slackfake.Request(s.url, "/slack/commands", testSecret, fake.SlashCommand("status", "U123ALICE", "C0RUNS"), "application/x-www-form-urlencoded")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				codes <- 0 // refused: the listener had closed before it was sent
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	time.Sleep(5 * time.Millisecond)
	s.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("serve did not exit cleanly on SIGTERM: %v\n%s", err, s.out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop within 30 s of SIGTERM:\n%s", s.out.String())
	}
	for range 20 {
		if c := <-codes; c != 0 && c != http.StatusOK {
			t.Fatalf("an ack in flight got %d", c)
		}
	}
	json.Unmarshal([]byte(orch(t, dir, "", "status", run.ID, "--json").stdout), &run)
	if run.Status != jobs.RunRunning || run.Tasks[0].Failures != 0 {
		t.Fatalf("after SIGTERM the run is %s with %d failures; want running, its step requeued", run.Status, run.Tasks[0].Failures)
	}
	// A new serve in the same place picks the step up and finishes the run.
	s2 := startServeIn(t, dir, fake)
	s2.waitFor("the final message", func(m []slackfake.Message) bool { return finalMsg(m, "completed") })
}

// answerAndComplete answers the question a run waits on at its terminal and waits for the run to complete.
func answerAndComplete(t *testing.T, stdin io.Writer, cmd *exec.Cmd, out *syncBuffer, answer string) {
	t.Helper()
	fmt.Fprintln(stdin, answer)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "Task 1.1: COMPLETED") {
			t.Fatalf("the run did not complete after the answer (%v):\n%s", err, out.String())
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("the run did not end:\n%s", out.String())
	}
}

// A service started before Redis answers, or while Slack does not, waits for them instead of exiting (a crash loop
// under systemd or Kubernetes): its /healthz says what it waits for, and it starts when they answer. Stopped while it
// waits, it exits cleanly.
func TestServicesWaitForRedisAndSlack(t *testing.T) {
	t.Parallel()
	health := func(addr string) (int, string) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	waitHealth := func(addr string, code int, says string) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			got, body := health(addr)
			if got == code && strings.Contains(body, says) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/healthz on %s: %d %q, want %d %q", addr, got, body, code, says)
			}
		}
	}
	stop := func(cmd *exec.Cmd, out *syncBuffer) {
		t.Helper()
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("stopped: %v\n%s", err, out.String())
		}
	}

	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed")
		}
		t.Skip("needs redis-server")
	}
	// A worker before its Redis.
	rs := &ownRedis{t: t, dir: t.TempDir(), port: freePort(t)}
	t.Cleanup(rs.kill)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd, out := startOrch(t, workdir(t), []string{"ORCH_REDIS_URL=" + rs.url(), "ORCH_SANDBOX=local", "ORCH_HTTP_ADDR=" + addr}, "worker")
	waitOutput(t, out, "waiting for it")
	waitHealth(addr, http.StatusServiceUnavailable, "waiting for Redis")
	rs.start()
	waitOutput(t, out, "Redis answers")
	waitHealth(addr, http.StatusOK, "ok")
	stop(cmd, out)

	// A bot while Slack is down (503s): it starts when Slack answers.
	fake := slackfake.New()
	t.Cleanup(fake.Close)
	fake.Down()
	addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	dir := workdir(t)
	cmd, out = startOrch(t, dir, []string{"ORCH_REDIS_URL=" + rs.url(), "SLACK_BOT_TOKEN=xoxb-test", "SLACK_SIGNING_SECRET=" + testSecret,
		"SLACK_APP_TOKEN=", "SLACK_API_URL=" + fake.APIURL(), "ORCH_HTTP_ADDR=" + addr, "ORCH_WORKSPACE=" + dir}, "bot")
	waitHealth(addr, http.StatusServiceUnavailable, "waiting for Slack")
	fake.Up()
	waitOutput(t, out, "Slack endpoints on")
	waitHealth(addr, http.StatusOK, "")
	stop(cmd, out)

	// Stopped while it waits: a clean exit.
	closed := "redis://" + closedPort(t) + "/0"
	cmd, out = startOrch(t, workdir(t), []string{"ORCH_REDIS_URL=" + closed, "ORCH_SANDBOX=local", "ORCH_HTTP_ADDR=127.0.0.1:0"}, "worker")
	waitOutput(t, out, "waiting for it")
	stop(cmd, out)
	if !strings.Contains(out.String(), "stopped before Redis answered") {
		t.Fatalf("no word of the stop:\n%s", out.String())
	}
}

// A run that is over leaves nothing queued in the store: the step still finishing as `orch run` shut its worker down
// (interrupted, so asynq keeps it to retry) is removed, and a store used for many runs holds only what is live.
func TestFinishedRunsLeaveNothingQueued(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	for _, plan := range []string{"examples/plans/hello.md", "examples/plans/hello.md", "examples/plans/verified.md"} {
		must(t, orch(t, dir, "", "run", "--agent", "sim", plan), 0)
	}
	b, err := store.Connect(context.Background(), store.ConnectConfig{StateDir: filepath.Join(dir, ".orch")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	inspector := asynq.NewInspectorFromRedisClient(b.Redis)
	for _, q := range []string{queue.Steps, queue.Control} {
		info, err := inspector.GetQueueInfo(q)
		if errors.Is(err, asynq.ErrQueueNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if info.Size != 0 {
			var left []string
			for _, list := range []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){inspector.ListRetryTasks,
				inspector.ListArchivedTasks, inspector.ListScheduledTasks, inspector.ListPendingTasks} {
				tasks, _ := list(q)
				for _, t := range tasks {
					left = append(left, fmt.Sprintf("%s (%s: %s)", t.ID, t.State, t.LastErr))
				}
			}
			t.Fatalf("queue %s holds %d tasks after three runs that completed: %s", q, info.Size, strings.Join(left, ", "))
		}
	}
}

// A Redis with a password (deploy/redis.conf's advice, compose's and Kubernetes' set-up): ORCH_REDIS_PASSWORD gives it
// to every orch command beside a URL that holds none; without it orch says what is wrong and never prints it.
func TestRedisPasswordFromItsOwnSetting(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed")
		}
		t.Skip("needs redis-server")
	}
	const password = "s3cret-redis-pw"
	rs := &ownRedis{t: t, dir: t.TempDir(), port: freePort(t), args: []string{"--requirepass", password}}
	rs.start()
	t.Cleanup(rs.kill)
	dir := workdir(t)
	r := orchEnv(t, dir, []string{"ORCH_REDIS_URL=" + rs.url(), "ORCH_REDIS_PASSWORD=" + password, "ORCH_BRAIN=heuristic"}, nil,
		"run", "--agent", "sim", "examples/plans/hello.md")
	must(t, r, 0)
	r = orchEnv(t, dir, []string{"ORCH_REDIS_URL=" + rs.url(), "ORCH_BRAIN=heuristic"}, nil, "status")
	if r.code != 2 || !strings.Contains(r.stderr, "NOAUTH") {
		t.Fatalf("without the password: want exit 2 and NOAUTH, got %s", r)
	}
	r = orchEnv(t, dir, []string{"ORCH_REDIS_URL=" + rs.url(), "ORCH_REDIS_PASSWORD=wrong-" + password, "ORCH_BRAIN=heuristic"}, nil, "status")
	if r.code != 2 || strings.Contains(r.stdout+r.stderr, password) {
		t.Fatalf("with a wrong password: want exit 2 and no password printed, got %s", r)
	}
}
