package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchrun/orch/jobs/jobstest"
)

// These tests drive the real orch binary the way a user does: commands, stdin, exit codes, files on disk.

var orchBin string

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	flag.Parse()
	// These tests mostly wait, for orch processes, their agents and the polls between them: running more of them at
	// once than the machine has CPUs (go test's default) keeps the CPUs busy. -parallel, when given, decides.
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(max(8, runtime.GOMAXPROCS(0))))
	}
	dir, err := os.MkdirTemp("", "orch-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cov, err := newCoverage()
	if err != nil {
		fmt.Fprintln(os.Stderr, "coverage:", err)
		return 1
	}
	defer cov.close()
	orchBin = filepath.Join(dir, "orch")
	if err := cov.build(orchBin); err != nil {
		fmt.Fprintln(os.Stderr, "building orch:", err)
		return 1
	}
	// Every orch process the tests start inherits this, and so do the agents it starts.
	os.Setenv("GOCOVERDIR", cov.cli)
	code := m.Run()
	line, err := cov.report()
	if err != nil {
		fmt.Fprintln(os.Stderr, "coverage:", err)
		return 1
	}
	if line != "" {
		fmt.Println(line)
	}
	return code
}

// workdir is a fresh directory holding the examples and the test plans.
func workdir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, src := range []string{"../../examples", "testdata"} {
		if err := os.CopyFS(filepath.Join(dir, filepath.Base(src)), os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s\n--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// orch runs the binary in dir with stdin and args, under a time limit.
func orch(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	return orchIn(t, dir, strings.NewReader(stdin), args...)
}

func orchIn(t *testing.T, dir string, stdin io.Reader, args ...string) result {
	t.Helper()
	return orchEnv(t, dir, nil, stdin, args...)
}

func orchEnv(t *testing.T, dir string, env []string, stdin io.Reader, args ...string) result {
	t.Helper()
	return orchAt(t, orchBin, dir, env, stdin, args...)
}

// orchAt is orchEnv with the orch binary at bin (one with programs beside it, say).
func orchAt(t *testing.T, bin, dir string, env []string, stdin io.Reader, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdin = stdin
	cmd.Env = append(append(os.Environ(), "ORCH_REDIS_URL=", "ORCH_AGENT=", "ORCH_BRAIN=", "ORCH_SANDBOX=",
		"ANTHROPIC_API_KEY=", "ORCH_GITHUB_TOKEN=", "GITHUB_TOKEN=", "ORCH_GIT_PUSH=", "ORCH_REPO=", "ORCH_GIT_BASE="), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("orch %v did not finish in time\n%s\n%s", args, out.String(), errb.String())
	}
	return result{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode()}
}

func must(t *testing.T, r result, code int, wants ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("want exit %d, got %s", code, r)
	}
	for _, w := range wants {
		if !strings.Contains(r.stdout+r.stderr, w) {
			t.Fatalf("output lacks %q:\n%s", w, r)
		}
	}
}

func runID(t *testing.T, r result) string {
	t.Helper()
	m := regexp.MustCompile(`Run (r-[a-z2-7]{10})`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no run id in output:\n%s", r)
	}
	return m[1]
}

// status returns a run as orch status --json prints it.
func status(t *testing.T, dir, id string, extra ...string) map[string]any {
	t.Helper()
	r := orch(t, dir, "", append([]string{"status", id, "--json"}, extra...)...)
	must(t, r, 0)
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r)
	}
	return m
}

func TestHelloCompletes(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	r := orch(t, dir, "", "run", "--agent", "sim", "examples/plans/hello.md")
	must(t, r, 0, "Task 1.1: COMPLETED", "Task 1.2: COMPLETED", "completed in")
	data, err := os.ReadFile(filepath.Join(dir, "orch-demo/hello.txt"))
	if err != nil || !strings.Contains(string(data), "Hello") {
		t.Fatalf("the agent's file is missing: %v %q", err, data)
	}
	st := status(t, dir, runID(t, r))
	if st["status"] != "completed" {
		t.Fatalf("status = %v", st["status"])
	}
}

// The human's guidance reaches the agent's next prompt.
func TestGuidanceReachesTheAgent(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	r := orch(t, dir, "Use an LRU with 500 entries\n", "run", "--agent", "sim", "--sim-scenario", "testdata/asks_twice.sim.yaml",
		"examples/plans/ambiguous_task.md")
	must(t, r, 3, "Resuming Task 1.1 with guidance...")
	id := runID(t, r)
	show := orch(t, dir, "", "escalation", "show", id, "--json")
	must(t, show, 0)
	var got struct {
		Escalation struct {
			ID     string `json:"id"`
			Output string `json:"output"`
		} `json:"escalation"`
	}
	if err := json.Unmarshal([]byte(show.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.Escalation.ID != "e2" || !strings.Contains(got.Escalation.Output, "GUIDANCE: Use an LRU with 500 entries") {
		t.Fatalf("second escalation does not show the guidance the agent got:\n%s", show.stdout)
	}
}

// Scenario B: three similar failures → LOOP DETECTED with the similarity, and the run parks.
func TestScenarioBLoopDetected(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	r := orch(t, dir, "", "run", "--agent", "sim", "examples/plans/doomed_to_fail.md")
	must(t, r, 3, "Task 1.1: FAILED (attempt 1/3)", "Retrying Task 1.1...", "Task 1.1: FAILED (attempt 3/3)",
		"LOOP DETECTED: Task 1.1 failed 3 times with similar errors", "Stopping to prevent resource waste.",
		"orch escalation resolve", "orch resume")
	if !regexp.MustCompile(`Error similarity: \d{1,3}%`).MatchString(r.stdout) {
		t.Fatalf("no similarity line:\n%s", r)
	}
	if strings.Contains(r.stdout, "FAILED (attempt 4/3)") {
		t.Fatal("the cap let a fourth attempt through")
	}
	st := status(t, dir, runID(t, r))
	if st["status"] != "parked" {
		t.Fatalf("status = %v", st["status"])
	}
}

// Scenario C: guidance given, the task still fails, loop detected again after 3 more attempts.
func TestScenarioCGuidanceDoesNotHelp(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	answers := filepath.Join(dir, "answers.txt")
	os.WriteFile(answers, []byte("Write exactly 100 lines and ignore the rest\n"), 0o644)
	r := orch(t, dir, "", "run", "--agent", "sim", "--answers", answers, "examples/plans/doomed_to_fail.md")
	must(t, r, 3, "(from the answers file)", "Resuming Task 1.1 with guidance...")
	if n := strings.Count(r.stdout, "LOOP DETECTED"); n != 2 {
		t.Fatalf("LOOP DETECTED %d times, want 2:\n%s", n, r)
	}
	if n := strings.Count(r.stdout, "FAILED (attempt 3/3)"); n != 2 {
		t.Fatalf("want two rounds of three attempts:\n%s", r)
	}
	st := status(t, dir, runID(t, r))
	tasks := st["tasks"].([]any)
	task := tasks[0].(map[string]any)
	if task["started"].(float64) != 6 || task["failures"].(float64) != 3 {
		t.Fatalf("task counters: started %v failures %v", task["started"], task["failures"])
	}
}

// While a run waits at the prompt in one terminal, an answer from another terminal resumes it.
func TestAnswerFromAnotherTerminalWhileWaiting(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	defer pr.Close()
	done := make(chan result, 1)
	go func() { done <- orchIn(t, dir, pr, "run", "--agent", "sim", "examples/plans/ambiguous_task.md") }()
	var id string
	deadline := time.Now().Add(30 * time.Second)
	for id == "" && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		r := orch(t, dir, "", "escalation", "show", "--json")
		if r.code == 0 && strings.Contains(r.stdout, `"needs_help"`) {
			var m map[string]any
			json.Unmarshal([]byte(r.stdout), &m)
			id, _ = m["run_id"].(string)
		}
	}
	if id == "" {
		t.Fatal("the run never parked")
	}
	must(t, orch(t, dir, "", "escalation", "resolve", id, "--answer", "use the in-memory one"), 0, "resolved")
	r := <-done
	must(t, r, 0, "Answered by", "Task 1.1: COMPLETED")
}

func TestAutoApprove(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	// A question takes the recommendation.
	must(t, orch(t, dir, "", "run", "--agent", "sim", "--auto-approve", "examples/plans/ambiguous_task.md"), 0,
		"chose B) In-memory", "Task 1.1: COMPLETED")
	// A failure is never approved: the run fails.
	r := orch(t, dir, "", "run", "--agent", "sim", "--auto-approve", "examples/plans/doomed_to_fail.md")
	must(t, r, 1, "LOOP DETECTED", "cannot be auto-approved")
	id := runID(t, r)
	if st := status(t, dir, id); st["status"] != "failed" {
		t.Fatalf("status %v", st["status"])
	}
	// The question was closed with the run: nobody can answer a failed run back to life by accident.
	must(t, orch(t, dir, "", "escalation", "resolve", id, "--answer", "try again"), 2, "already ended: failed")
	must(t, orch(t, dir, "", "escalation", "log", id), 0, "declined", "auto-approve")
}

func TestAbortAndForceContinue(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	r := orch(t, dir, "", "run", "--agent", "sim", "examples/plans/doomed_to_fail.md")
	id := runID(t, r)
	must(t, orch(t, dir, "", "escalation", "resolve", id, "--abort"), 2, "--abort needs --reason")
	must(t, orch(t, dir, "", "escalation", "resolve", id, "--force-continue"), 2, "--acknowledge-risk")
	must(t, orch(t, dir, "", "escalation", "resolve", id, "--abort", "--reason", "requirements are contradictory"), 0, "aborted")
	st := status(t, dir, id)
	if st["status"] != "aborted" || st["reason"] != "requirements are contradictory" {
		t.Fatalf("status %v reason %v", st["status"], st["reason"])
	}
	must(t, orch(t, dir, "", "resume", id), 1, "already ended: aborted")

	r = orch(t, dir, "", "run", "--agent", "sim", "examples/plans/doomed_to_fail.md")
	id = runID(t, r)
	must(t, orch(t, dir, "", "escalation", "resolve", id, "--force-continue", "--acknowledge-risk"), 0, "forced")
	must(t, orch(t, dir, "", "resume", id), 0, "FORCED", "completed")
	must(t, orch(t, dir, "", "escalation", "log", id), 0, "warning", "force-continue")
}

func TestJSONEvents(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	r := orch(t, dir, "B\n", "run", "--json", "--agent", "sim", "examples/plans/ambiguous_task.md")
	must(t, r, 0)
	types := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if m["type"] == nil || m["time"] == nil {
			t.Fatalf("event without type/time: %q", line)
		}
		if m["type"] != "note" && m["run_id"] == nil {
			t.Fatalf("event without run_id: %q", line)
		}
		types[m["type"].(string)] = true
	}
	for _, want := range []string{"run_started", "task_started", "escalation", "resolution", "resumed", "task_completed", "run_completed"} {
		if !types[want] {
			t.Errorf("no %s event in %v", want, types)
		}
	}
}

func TestBrainTasksOfTheM4Seed(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	r := orch(t, dir, "", "brain", "tasks", "--brain", "heuristic", "testdata/m4-escalation-loop-detection.md")
	must(t, r, 0)
	var tasks []struct{ ID, Title string }
	if err := json.Unmarshal([]byte(r.stdout), &tasks); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range tasks {
		ids = append(ids, tk.ID)
	}
	want := "4.1 4.2 4.3 4.4 4.5 4.6 4.7 4.8 4.9 4.10 4.11"
	if got := strings.Join(ids, " "); got != want {
		t.Fatalf("tasks %s, want %s", got, want)
	}
}

// Every user error gets one clear line and exit 2; nothing panics.
func TestBadInput(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	os.WriteFile(filepath.Join(dir, "notasks.md"), []byte("# Just a title\n\nNo tasks here.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "binary.md"), []byte("\x00\x01\x02ELF"), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.sim.yaml"), []byte("tasks:\n  \"1.1\":\n    - output: ok\n      exit: lots\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "undirected.dot"), []byte("graph g { start -- exit }\n"), 0o644)
	parked := orch(t, dir, "", "run", "--agent", "sim", "examples/plans/ambiguous_task.md")
	id := runID(t, parked)
	done := orch(t, dir, "", "run", "--agent", "sim", "examples/plans/hello.md")
	doneID := runID(t, done)
	before := status(t, dir, id)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"run", "--frobnicate", "examples/plans/hello.md"}, "unknown flag"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"no plan arg", []string{"run"}, "accepts 1 arg"},
		{"missing plan", []string{"run", "--agent", "sim", "nope.md"}, "nope.md"},
		{"no tasks", []string{"run", "--agent", "sim", "--sim-scenario", "examples/plans/hello.sim.yaml", "notasks.md"}, "no tasks found"},
		{"binary plan", []string{"run", "--agent", "sim", "binary.md"}, "binary.md"},
		{"directory plan", []string{"run", "--agent", "sim", "examples"}, "examples"},
		{"broken scenario", []string{"run", "--agent", "sim", "--sim-scenario", "broken.sim.yaml", "examples/plans/hello.md"}, "broken.sim.yaml:4"},
		{"missing scenario", []string{"run", "--agent", "sim", "--sim-scenario", "nope.sim.yaml", "examples/plans/hello.md"}, "nope.sim.yaml"},
		{"undirected pipeline", []string{"run", "--agent", "sim", "undirected.dot"}, "undirected.dot:1"},
		{"negative cap", []string{"run", "--agent", "sim", "--max-attempts", "-1", "examples/plans/hello.md"}, "--max-attempts"},
		{"unknown agent", []string{"run", "--agent", "gpt", "examples/plans/hello.md"}, "--agent"},
		{"unknown brain", []string{"run", "--agent", "sim", "--brain", "oracle", "examples/plans/hello.md"}, "--brain"},
		{"bad workspace", []string{"run", "--agent", "sim", "--workspace", "nowhere", "examples/plans/hello.md"}, "workspace"},
		{"unknown task", []string{"task", "--agent", "sim", "examples/plans/hello.md", "9.9"}, `no task "9.9"`},
		{"unknown run status", []string{"status", "r-nosuchrun1"}, "run not found"},
		{"unknown run resume", []string{"resume", "r-nosuchrun1"}, "run not found"},
		{"unknown run resolve", []string{"escalation", "resolve", "r-nosuchrun1", "--resume"}, "run not found"},
		{"resolve without escalation", []string{"escalation", "resolve", doneID, "--resume"}, "no open escalation"},
		{"resolve two kinds", []string{"escalation", "resolve", id, "--resume", "--retry"}, "exactly one"},
		{"resolve nothing", []string{"escalation", "resolve", id}, "exactly one"},
		{"bad key", []string{"escalation", "resolve", id, "--choose", "Q"}, "not an option"},
		{"answers missing", []string{"run", "--agent", "sim", "--answers", "nope.txt", "examples/plans/hello.md"}, "answers file"},
		{"bad redis", []string{"status", "--redis", "redis://127.0.0.1:1/0"}, "redis unavailable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := orch(t, dir, "", c.args...)
			must(t, r, 2, c.want)
			if strings.Contains(r.stderr, "panic") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 2 {
				t.Fatalf("want one clear line:\n%s", r)
			}
		})
	}
	after := status(t, dir, id)
	if fmt.Sprint(before["escalations"]) != fmt.Sprint(after["escalations"]) || before["status"] != after["status"] {
		t.Fatal("a rejected command changed the run")
	}
}

// With a Redis server, the same flows work, and a second process sees the run.
func TestWithRealRedis(t *testing.T) {
	// A database of its own: the reliability tests' workers, on the process's shared one, would take its steps.
	url := jobstest.NewDatabase(t)
	if url == "" {
		t.Skip("ORCH_TEST_REDIS_URL not set")
	}
	t.Parallel()
	dir := workdir(t)
	r := orch(t, dir, "", "run", "--redis", url, "--agent", "sim", "examples/plans/ambiguous_task.md")
	must(t, r, 3, "is parked", "--redis")
	id := runID(t, r)
	must(t, orch(t, dir, "", "escalation", "resolve", "--redis", url, id, "--answer", "in-memory please"), 0, "resolved")
	must(t, orch(t, dir, "", "resume", "--redis", url, id), 0, "Task 1.1: COMPLETED")
	if _, err := os.Stat(filepath.Join(dir, ".orch")); err == nil {
		t.Fatal("with --redis nothing should be written to the state dir")
	}
}

// Ctrl-C stops the agent, saves the run, and `orch resume` finishes it.
func TestInterruptThenResume(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	os.WriteFile(filepath.Join(dir, "slow.md"), []byte("# Slow\n\n## Task 1: Sleep\n\nSleep a while.\n"), 0o644)
	cmd := exec.Command(orchBin, "run", "--agent", `cmd:sh -c "sleep 2; echo Done. All tests pass."`, "slow.md")
	cmd.Dir = dir
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "Invoking") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	r := result{stdout: out.String(), code: cmd.ProcessState.ExitCode()}
	must(t, r, 130, "Interrupted", "orch resume")
	id := runID(t, r)
	if st := status(t, dir, id); st["status"] != "running" {
		t.Fatalf("status after interrupt: %v", st["status"])
	}
	must(t, orch(t, dir, "", "resume", id), 0, "Task 1: COMPLETED")
}

// syncBuffer is a bytes.Buffer that a running process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// --agent claude end to end, with a fake claude on PATH that replays real stream-json transcripts.
func TestClaudeAgentWithFakeCLI(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "claude"), "../../agent/testdata/fakeclaude")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building fake claude: %v\n%s", err, out)
	}
	transcripts, _ := filepath.Abs("../../agent/testdata/claude")
	argsFile := filepath.Join(t.TempDir(), "args.json")
	path := "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")

	ok := orchEnv(t, dir, []string{path, "ORCH_AGENT_ENV=" + fakeClaudeEnv, "FAKE_CLAUDE_ARGS=" + argsFile,
		"FAKE_CLAUDE_TRANSCRIPT=" + filepath.Join(transcripts, "02_stream_claude-2.1.63.jsonl")}, nil,
		"run", "--agent", "claude", "--brain", "heuristic", "examples/plans/hello.md")
	must(t, ok, 0, "Invoking Claude Code", "Task 1.1: COMPLETED", "Task 1.2: COMPLETED", "$0.9437")
	var inv struct {
		Args []string          `json:"args"`
		Env  map[string]string `json:"env"`
	}
	data, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(data, &inv)
	got := strings.Join(inv.Args, " ")
	for _, want := range []string{"-p", "--output-format stream-json", "--verbose", "Task 1.2: Check the greeting"} {
		if !strings.Contains(got, want) {
			t.Errorf("claude was called without %q: %q", want, got)
		}
	}
	if inv.Env["ORCH_TASK_ID"] != "1.2" || inv.Env["ORCH_ATTEMPT"] != "1" || inv.Env["ORCH_RUN_ID"] != runID(t, ok) {
		t.Errorf("env = %v", inv.Env)
	}

	// Signed out: no retry can fix that, so orch asks at once instead of burning attempts.
	out := orchEnv(t, dir, []string{path, "ORCH_AGENT_ENV=" + fakeClaudeEnv, "FAKE_CLAUDE_EXIT=1",
		"FAKE_CLAUDE_TRANSCRIPT=" + filepath.Join(transcripts, "04e_not_logged_in.jsonl")}, nil,
		"run", "--agent", "claude", "--brain", "heuristic", "examples/plans/hello.md")
	must(t, out, 3, "Task 1.1: FAILED (attempt 1/3)", "NEEDS HUMAN INPUT", "Not logged in")
	if strings.Contains(out.stdout, "attempt 2/3") {
		t.Fatalf("a permanent failure was retried:\n%s", out)
	}
}

// fakeBrainCLI builds brain's fake claude into a directory for PATH and returns the PATH entry and the directory
// where it records each call.
func fakeBrainCLI(t *testing.T) (path, calls string) {
	t.Helper()
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "claude"), "../../brain/testdata/fakeclaude")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building fake claude: %v\n%s", err, out)
	}
	return "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), t.TempDir()
}

// --brain claude end to end: the CLI judges, with the exact flags, the full output on stdin, and its cost counted.
func TestClaudeBrainEndToEnd(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	path, calls := fakeBrainCLI(t)
	td, _ := filepath.Abs("testdata")
	r := orchEnv(t, dir, []string{path, "FAKECLAUDE_DIR=" + calls,
		"FAKECLAUDE_REPLIES=" + filepath.Join(td, "brain_completed.json")},
		strings.NewReader("B\n"), "run", "--agent", "sim", "--brain", "claude", "examples/plans/ambiguous_task.md")
	// The question carries explicit markers: the fast path answers it without an LLM call; the brain judges the rest.
	must(t, r, 0, "brain: claude", "NEEDS HUMAN INPUT", "B) In-memory", "Task 1.1: COMPLETED")
	argv, err := os.ReadFile(filepath.Join(calls, "argv-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"--model","claude-haiku-4-5-20251001"`, `"--print"`, `"--no-session-persistence"`, `"--tools",""`} {
		if !strings.Contains(strings.ReplaceAll(string(argv), ", ", ","), want) {
			t.Errorf("brain call lacks %s: %s", want, argv)
		}
	}
	stdin, _ := os.ReadFile(filepath.Join(calls, "stdin-1.txt"))
	if !strings.Contains(string(stdin), "Implemented the cache as decided") || !strings.Contains(string(stdin), "GUIDANCE: The human chose option B") {
		t.Errorf("the agent's output did not reach the brain in full:\n%s", stdin)
	}
	costs := orch(t, dir, "", "costs", runID(t, r), "--json")
	must(t, costs, 0)
	var c struct {
		Brain struct {
			Calls   int     `json:"calls"`
			CostUSD float64 `json:"cost_usd"`
		} `json:"brain"`
	}
	json.Unmarshal([]byte(costs.stdout), &c)
	if c.Brain.Calls != 1 || c.Brain.CostUSD <= 0 {
		t.Fatalf("brain costs not recorded: %s", costs.stdout)
	}
	must(t, orch(t, dir, "", "costs", runID(t, r)), 0, "claude-haiku-4-5-20251001", "orch-sim")
}

// A brain that stays unavailable stops the run with its output saved; resume judges that output without running the
// agent again.
func TestBrainUnavailablePausesAndResumes(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	path, calls := fakeBrainCLI(t)
	td, _ := filepath.Abs("testdata")
	r := orchEnv(t, dir, []string{path, "FAKECLAUDE_DIR=" + calls, "FAKECLAUDE_FAIL=1000"}, nil,
		"run", "--agent", "sim", "--brain", "claude", "examples/plans/hello.md")
	must(t, r, 3, "Brain unavailable:", "state saved; resume with: orch resume")
	id := runID(t, r)
	if st := status(t, dir, id); st["status"] != "paused" {
		t.Fatalf("status %v", st["status"])
	}
	calls2 := t.TempDir()
	res := orchEnv(t, dir, []string{path, "FAKECLAUDE_DIR=" + calls2, "FAKECLAUDE_REPLIES=" + filepath.Join(td, "brain_completed.json")}, nil,
		"resume", id)
	must(t, res, 0, "Continuing Task 1.1", "Task 1.1: COMPLETED", "Task 1.2: COMPLETED")
	st := status(t, dir, id)
	task := st["tasks"].([]any)[0].(map[string]any)
	if task["started"].(float64) != 1 {
		t.Fatalf("the agent ran again on resume: started %v", task["started"])
	}
}

// Asking for an LLM brain that is not installed says so and falls back to the heuristic.
func TestMissingLLMBrainFallsBack(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	noClaude := "PATH=/usr/bin:/bin"
	r := orchEnv(t, dir, []string{noClaude, "ANTHROPIC_API_KEY="}, nil, "run", "--agent", "sim", "--brain", "claude", "examples/plans/hello.md")
	must(t, r, 0, "claude CLI not found on PATH", "falling back to the heuristic brain", "Task 1.2: COMPLETED")
	r = orchEnv(t, dir, []string{noClaude, "ANTHROPIC_API_KEY="}, nil, "run", "--agent", "sim", "--brain", "anthropic", "examples/plans/hello.md")
	must(t, r, 0, "ANTHROPIC_API_KEY is not set", "falling back to the heuristic brain")
	r = orchEnv(t, dir, []string{noClaude, "ANTHROPIC_API_KEY="}, strings.NewReader(""), "brain", "interpret", "--brain", "claude")
	must(t, r, 0, "falling back to the heuristic brain", `"status"`)
}

// With --llm-only (or ORCH_LLM_ONLY, or orch.yaml's llm_only) even a marked question goes to the LLM, which judges it.
func TestLLMOnlySkipsTheMarkerFastPath(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, yaml string
		env, args  []string
	}{
		{name: "flag", args: []string{"--llm-only"}},
		{name: "env", env: []string{"ORCH_LLM_ONLY=true"}},
		{name: "orch.yaml", yaml: "llm_only: true\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := workdir(t)
			if c.yaml != "" {
				writeFile(t, dir, "orch.yaml", c.yaml)
			}
			path, calls := fakeBrainCLI(t)
			td, _ := filepath.Abs("testdata")
			env := append([]string{path, "FAKECLAUDE_DIR=" + calls,
				"FAKECLAUDE_REPLIES=" + filepath.Join(td, "brain_needs_help.json") + "," + filepath.Join(td, "brain_completed.json")}, c.env...)
			args := append(append([]string{"run", "--agent", "sim", "--brain", "claude"}, c.args...), "examples/plans/ambiguous_task.md")
			r := orchEnv(t, dir, env, strings.NewReader("A\n"), args...)
			must(t, r, 0, "Which cache should I use?", "chose A) Redis", "Task 1.1: COMPLETED")
			if _, err := os.Stat(filepath.Join(calls, "argv-2.json")); err != nil {
				t.Fatal("the LLM was not asked twice")
			}
		})
	}
	// Without the switch the marker answers and the LLM is asked only for the completion.
	dir := workdir(t)
	path, calls := fakeBrainCLI(t)
	td, _ := filepath.Abs("testdata")
	r := orchEnv(t, dir, []string{path, "FAKECLAUDE_DIR=" + calls, "FAKECLAUDE_REPLIES=" + filepath.Join(td, "brain_completed.json")},
		strings.NewReader("A\n"), "run", "--agent", "sim", "--brain", "claude", "examples/plans/ambiguous_task.md")
	must(t, r, 0, "Task 1.1: COMPLETED")
	if _, err := os.Stat(filepath.Join(calls, "argv-2.json")); err == nil {
		t.Fatal("the LLM was asked about the marked question")
	}
}

// A plan without "Task <id>:" headings is split by an LLM brain when there is one.
func TestLLMBrainFindsTasksInAFreeFormPlan(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	os.WriteFile(filepath.Join(dir, "freeform.md"), []byte("# Cache feature\n\nFirst create the data model, then add an API endpoint.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "freeform.sim.yaml"), []byte("default:\n  - output: \"Done. All tests pass.\"\n"), 0o644)
	path, calls := fakeBrainCLI(t)
	td, _ := filepath.Abs("testdata")
	r := orchEnv(t, dir, []string{path, "FAKECLAUDE_DIR=" + calls,
		"FAKECLAUDE_REPLIES=" + filepath.Join(td, "brain_tasks.json") + "," + filepath.Join(td, "brain_completed.json")}, nil,
		"run", "--agent", "sim", "--brain", "claude", "freeform.md")
	must(t, r, 0, "the claude brain found 2 tasks", "Task 1.1: COMPLETED", "Task 1.2: COMPLETED")
	// Without an LLM brain the same plan is a usage error that says what orch looks for.
	must(t, orch(t, dir, "", "run", "--agent", "sim", "--brain", "heuristic", "freeform.md"), 2, "no tasks found")
}

// Three attempts that fail the same check, each told in the agent's own words (another line number, duration and
// closing sentence, the error quoted inside prose), are a loop: the brain stops them before the attempt cap, with
// the similarity of the failures themselves, and the guidance it gave in between quoted the failure, not the
// closing words.
func TestTheSameFailureInOtherWordsIsALoop(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	writeFile(t, dir, "count.md", "# Counting\n\n## Task 1.1: Count lines\n\nMake count_lines return the number of lines.\n")
	writeFile(t, dir, "count.sim.yaml", `tasks:
  "1.1":
    - output: |
        I ran the tests. `+"`test_count_lines`"+` fails with `+"`AssertionError: expected 100 lines, got 99`"+` (tests/test_count.py:14, 0.03s).
        exit status 1
        The task could not be completed.
      exit: 1
    - output: |
        Still failing after handling the trailing newline:
        FAILED tests/test_count.py::test_count_lines - AssertionError: expected 100 lines, got 99
        1 failed, 12 passed in 0.05s
      exit: 1
    - output: |
        I tried a third approach (reading in binary mode) but the same test fails:
            tests/test_count.py:17: AssertionError: expected 100 lines, got 99
        Still failing.
      exit: 1
`)
	r := orchEnv(t, dir, nil, nil, "run", "--agent", "sim", "--brain", "heuristic", "--max-attempts", "5", "count.md")
	must(t, r, 3, "LOOP DETECTED: Task 1.1 failed 3 times with similar errors", `Latest error: "AssertionError: expected 100 lines, got 99"`)
	m := regexp.MustCompile(`Error similarity: (\d+)%`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no similarity printed:\n%s", r.stdout)
	}
	if n, _ := strconv.Atoi(m[1]); n < 90 {
		t.Errorf("similarity at the loop stop = %d%%, want at least 90%%:\n%s", n, r.stdout)
	}
	if strings.Contains(r.stdout, `Latest error: "exit status 1`) {
		t.Errorf("the guidance quotes the closing words, not the failure:\n%s", r.stdout)
	}
}

// --brain auto relies on a claude CLI only once it has answered: one that cannot (not signed in, not Claude Code)
// leaves the heuristic judging, and the run's first line says so and why.
func TestAutoBrainReliesOnlyOnABrainThatAnswers(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	path, calls := fakeBrainCLI(t)
	td, _ := filepath.Abs("testdata")
	failing := filepath.Join(t.TempDir(), "login.json")
	os.WriteFile(failing, []byte(`{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"}`), 0o644)
	r := orchEnv(t, dir, []string{path, "FAKECLAUDE_DIR=" + calls, "FAKECLAUDE_FAIL=1000", "FAKECLAUDE_FAIL_REPLY=" + failing},
		nil, "run", "--agent", "sim", "examples/plans/hello.md")
	must(t, r, 0, "brain: heuristic (auto: the claude brain did not answer (", "Not logged in", "Task 1.2: COMPLETED")
	if n, _ := os.ReadFile(filepath.Join(calls, "count")); strings.TrimSpace(string(n)) != "1" {
		t.Fatalf("the claude CLI was asked %s times, want once (the probe): the heuristic judges the run", n)
	}
	calls2 := t.TempDir()
	r = orchEnv(t, dir, []string{path, "FAKECLAUDE_DIR=" + calls2, "FAKECLAUDE_REPLIES=" + filepath.Join(td, "brain_completed.json")},
		strings.NewReader("I changed the handler."), "brain", "interpret")
	must(t, r, 0, "brain: claude (auto: the claude CLI on PATH answers)", `"completed"`)
}
