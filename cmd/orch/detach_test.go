package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/jobs"
)

// A team with a worker pool: orch run --detach queues the run on the shared Redis and prints its id; a worker
// elsewhere runs it; orch logs -f follows it to its end, with the run's exit code; orch logs prints the same lines.
func TestDetachAndLogs(t *testing.T) {
	t.Parallel()
	url := isolatedRedis(t) // no other test's worker may take the run
	dir := workdir(t)
	r := orch(t, dir, "", "run", "--detach", "--redis", url, "--agent", "sim", "examples/plans/hello.md")
	must(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	if !regexp.MustCompile(`^r-[a-z2-7]{10}$`).MatchString(id) || r.stderr != "" {
		t.Fatalf("--detach printed %q, stderr %q", r.stdout, r.stderr)
	}
	st := status(t, dir, id, "--redis", url)
	if st["status"] != "queued" {
		t.Fatalf("a detached run is %v before any worker took it", st["status"])
	}
	_, out := startOrch(t, dir, []string{"ORCH_REDIS_URL=" + url, "ORCH_SANDBOX=local", "ORCH_HTTP_ADDR=127.0.0.1:0"}, "worker")
	waitOutput(t, out, "worker running")
	f := orch(t, dir, "", "logs", "-f", id, "--redis", url)
	must(t, f, 0, "Run "+id+" started: Test Milestone: Hello (2 tasks)", "Task 1.1: COMPLETED", "Task 1.2: COMPLETED", "Run "+id+" completed in")
	// The whole log, once more, without following: the same lines.
	l := orch(t, dir, "", "logs", id, "--redis", url)
	must(t, l, 0)
	if stamps := regexp.MustCompile(`\[\d\d:\d\d:\d\d\] `); stamps.ReplaceAllString(l.stdout, "") != stamps.ReplaceAllString(f.stdout, "") {
		t.Fatalf("logs and logs -f differ:\n%s\n---\n%s", l.stdout, f.stdout)
	}
	// --json is the run's --json stream.
	j := orch(t, dir, "", "logs", id, "--json", "--redis", url)
	must(t, j, 0, `"type":"run_started"`, `"type":"run_completed"`)
	lines := strings.Split(strings.TrimSpace(j.stdout), "\n")
	for _, line := range lines {
		var e jobs.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.RunID != id {
			t.Fatalf("not an event of the run: %s (%v)", line, err)
		}
	}
	if len(lines) < strings.Count(l.stdout, "\n[") {
		t.Fatalf("%d JSON events, fewer than the lines people see:\n%s", len(lines), l.stdout)
	}
}

// A detached run that fails: logs -f ends with exit 1. A question is shown with how to answer it.
func TestLogsFollowsAQuestionAndAFailure(t *testing.T) {
	t.Parallel()
	url := isolatedRedis(t) // no other test's worker may take the run
	dir := workdir(t)
	_, out := startOrch(t, dir, []string{"ORCH_REDIS_URL=" + url, "ORCH_SANDBOX=local", "ORCH_HTTP_ADDR=127.0.0.1:0"}, "worker")
	waitOutput(t, out, "worker running")
	id := strings.TrimSpace(orch(t, dir, "", "run", "--detach", "--redis", url, "--agent", "sim", "examples/plans/ambiguous_task.md").stdout)
	done := make(chan result, 1)
	go func() { done <- orch(t, dir, "", "logs", "-f", id, "--redis", url) }()
	// Answer it from another process once it asks; the follower sees the answer and the end.
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(orch(t, dir, "", "escalation", "show", id, "--redis", url).stdout,
		"NEEDS HUMAN INPUT"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run did not ask")
		}
	}
	must(t, orch(t, dir, "", "escalation", "resolve", id, "--abort", "--reason", "not today", "--redis", url), 0)
	r := <-done
	must(t, r, 1, "NEEDS HUMAN INPUT — Task 1.1: Implement caching (the agent asked)", "Run "+id+" waits for an answer: orch escalation show "+id,
		"aborted by", "not today")
}

func TestDetachRefusals(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	must(t, orch(t, dir, "", "run", "--detach", "--auto-approve", "--agent", "sim", "examples/plans/hello.md"), 2,
		"--detach queues the run for workers elsewhere")
	must(t, orch(t, dir, "", "logs", "r-nosuchrun0"), 2, "run not found: r-nosuchrun0")
	must(t, orch(t, dir, "", "logs"), 2, "accepts 1 arg")
	// Detached on the embedded store with nobody serving it: queued, and said how it will run.
	r := orch(t, dir, "", "run", "--detach", "--agent", "sim", "examples/plans/hello.md")
	must(t, r, 0, "no other orch process serves", "orch resume")
	id := strings.TrimSpace(r.stdout)
	must(t, orch(t, dir, "", "resume", id), 0, "Task 1.2: COMPLETED")
}
