package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
	"github.com/orchrun/orch/workspace"
)

// savedState is every key of a database as it was at one moment, with its time to live: what a store that comes back
// from its last save holds.
type savedState map[string]struct {
	dump string
	ttl  time.Duration
}

func saveState(t *testing.T, rdb redis.UniversalClient, pattern string) savedState {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, pattern).Result()
	if err != nil {
		t.Fatal(err)
	}
	s := savedState{}
	for _, k := range keys {
		dump, err := rdb.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		ttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		s[k] = struct {
			dump string
			ttl  time.Duration
		}{dump, max(ttl, 0)}
	}
	return s
}

// comeBack puts the keys that match pattern back as s holds them: everything written to them since is lost.
func (s savedState) comeBack(t *testing.T, rdb redis.UniversalClient, pattern string) {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, pattern).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) > 0 {
		if err := rdb.Del(ctx, keys...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range s {
		if err := rdb.RestoreReplace(ctx, k, v.ttl, v.dump).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// A store that lost what it acknowledged — an embedded store's holder killed before it saved, a failover to a replica
// behind — hands a step out again while its first delivery still works on it: the step is back in the queue as it
// was before it was delivered, the task as it was before the claim. On the same machine, the second delivery waits
// for the first and then finds the step settled: the agent ran once, the run completed with its one attempt, and the
// branch is where the run says, in the repository and on the remote.
func TestAStepHandedOutAgainWaitsForItsFirstDelivery(t *testing.T) {
	url := jobstest.NewDatabase(t)
	if url == "" {
		t.Skip("needs a Redis server (DUMP and RESTORE of every type): ORCH_TEST_REDIS_URL")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	h, gate, count := gatedHarness(t, rdb)
	r, repo, remote := h.gitRun(t, false) // its start enqueued the step
	saved := saveState(t, rdb, "*")       // the database is the test's own: asynq's records go back with the run's
	waits := make(chan struct{}, 1)
	h.w.testStepWaits = func() {
		select {
		case waits <- struct{}{}:
		default:
		}
	}
	if err := h.w.Start(rdb); err != nil {
		t.Fatal(err)
	}
	defer h.w.Shutdown()
	patience := time.Now().Add(2 * time.Minute) // a bound on a hang, not on speed
	for runs(t, count) == 0 {
		if time.Now().After(patience) {
			t.Fatal("the agent never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	saved.comeBack(t, rdb, "*")
	// The queue hands the step out again (the worker runs two steps at once): the second delivery must not run the
	// agent beside the first.
	for waiting := false; !waiting; {
		select {
		case <-waits:
			waiting = true
		case <-time.After(10 * time.Millisecond):
			if n := runs(t, count); n > 1 {
				t.Fatalf("a second delivery of the step ran the agent (%d runs) while the first still worked", n)
			}
			if time.Now().After(patience) {
				t.Fatal("the step was never handed out again")
			}
		}
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	until(t, h, r.ID, "completed", func(r *jobs.Run) bool { return r.Status.Terminal() })
	h.w.Shutdown() // returns once both deliveries have ended
	got := h.get(t, r.ID)
	task := got.Tasks[0]
	if n := runs(t, count); n != 1 {
		t.Fatalf("the agent ran %d times", n)
	}
	if got.Status != jobs.RunCompleted || task.Status != jobs.TaskCompleted || len(task.Attempts) != 1 || task.Commit == "" {
		t.Fatalf("want the run completed by its one attempt: %s, task %s, %d attempts, commit %q", got.Status,
			task.Status, len(task.Attempts), task.Commit)
	}
	if at := gitIn(t, repo, "rev-parse", got.Git.Branch); at != got.Git.Head || at != task.Commit {
		t.Fatalf("the branch is at %s, the run records head %s and commit %s", at, got.Git.Head, task.Commit)
	}
	if at := remoteHead(t, remote, got.Git.Branch); at != got.Git.Head {
		t.Fatalf("the remote's branch is at %s, the run records %s", at, got.Git.Head)
	}
	if _, err := os.Stat(h.w.endingsDir(got)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the run is over and its step lock is left behind: %v", err)
	}
}

// The same on two machines: the store lost the first delivery's claim, and a delivery on another machine claimed the
// task and ran its agent. The claim the store holds is the second's, and the first, whose agent ends while the second
// judges, drops what it did: one attempt is saved, its work alone is on the branch, and the remote is where the run
// says. Were both deliveries one owner (asynq's task id alone names both), the first would pass the second's fence.
func TestAClaimLostToAnotherMachineIsDropped(t *testing.T) {
	rdb := clients(t)["redis"]
	if rdb == nil {
		t.Skip("needs a Redis server (DUMP and RESTORE of a stream): ORCH_TEST_REDIS_URL")
	}
	ctx := context.Background()
	gate := filepath.Join(t.TempDir(), "gate")
	firstRuns := filepath.Join(t.TempDir(), "runs")
	first := script(t, fmt.Sprintf("echo run >> %q\necho first > work.txt\nwhile [ ! -e %q ]; do sleep 0.02; done\n"+
		"echo 'Done. All tests pass.'\n", firstRuns, gate))
	a := newHarness(t, rdb, first, nil)
	r, _, remote := a.gitRun(t, true)
	b := newHarness(t, rdb, script(t, "echo second > work.txt\necho 'Done. All tests pass.'\n"), nil)
	b.w.cfg.Workspaces = &workspace.Manager{Root: t.TempDir()} // another machine
	judging, judged := make(chan struct{}), make(chan struct{})
	b.useBrain(&hookBrain{before: func(int) error {
		close(judging)
		<-judged
		return nil
	}})
	runKeys := "orch:run:{" + r.ID + "}*" // the run and its events
	before := saveState(t, rdb, runKeys)
	firstDone := make(chan error, 1)
	go func() { firstDone <- a.w.Handler().ProcessTask(ctx, stepTask(r.ID, 1)) }()
	// Its agent at work: its claim, and the base commit it recorded before the agent started, are saved.
	for patience := time.Now().Add(2 * time.Minute); runs(t, firstRuns) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(patience) {
			t.Fatal("the first delivery's agent never started")
		}
	}
	before.comeBack(t, rdb, runKeys) // the first claim is lost
	secondDone := make(chan error, 1)
	go func() { secondDone <- b.w.Handler().ProcessTask(ctx, stepTask(r.ID, 1)) }()
	select {
	case <-judging:
	case err := <-secondDone:
		t.Fatalf("the second delivery ended before its brain judged: %v", err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-firstDone; err != nil {
		t.Fatalf("the first delivery: %v", err)
	}
	close(judged)
	if err := <-secondDone; err != nil {
		t.Fatalf("the second delivery: %v", err)
	}
	got := a.get(t, r.ID)
	task := got.Tasks[0]
	if got.Status != jobs.RunCompleted || len(task.Attempts) != 1 || task.Commit == "" {
		t.Fatalf("want the run completed by one attempt: %s, %d attempts, commit %q", got.Status,
			len(task.Attempts), task.Commit)
	}
	if n := countEvents(t, a, r.ID, jobs.AttemptLostEvent{}.Kind()); n != 1 {
		t.Fatalf("%d attempt_lost events, want the first delivery's", n)
	}
	if at := remoteHead(t, remote, got.Git.Branch); at != got.Git.Head || at != task.Commit {
		t.Fatalf("the remote's branch is at %s, the run records head %s and commit %s", at, got.Git.Head, task.Commit)
	}
	clone := t.TempDir()
	gitIn(t, clone, "clone", "-q", "-b", got.Git.Branch, remote, ".")
	if work, err := os.ReadFile(filepath.Join(clone, "work.txt")); err != nil || string(work) != "second\n" {
		t.Fatalf("the branch holds %q (%v), want the second delivery's work", work, err)
	}
}

// A run that ends removes its step lock's directory with its endings. A delivery that opened the directory just
// before, and locks it just after, holds a lock on a directory nobody else will open: it must not take that for the
// run's lock, and takes the new directory's instead — held, here, by the delivery that made it.
func TestAStepLockOnARemovedDirectoryIsNoLock(t *testing.T) {
	h := newHarness(t, clients(t)["miniredis"], "true", nil)
	h.w.cfg.Endings = t.TempDir()
	r := &jobs.Run{ID: "r-lockgone00"}
	var late, other stepLock
	defer late.release()
	defer other.release()
	if err := os.MkdirAll(h.w.endingsDir(r), 0o700); err != nil {
		t.Fatal(err)
	}
	h.w.testLockOpened = func() {
		h.w.testLockOpened = nil
		// Between its open and its lock: the run's end removes the directory, and another delivery locks a new one.
		if err := h.w.dropEndings(r); err != nil {
			t.Error(err)
		}
		if err := other.try(h.w, r, 1); err != nil || other.f == nil {
			t.Errorf("the other delivery: %v, holding %v", err, other.f != nil)
		}
	}
	if err := late.try(h.w, r, 1); !errors.Is(err, errHeld) || late.f != nil {
		t.Fatalf("the late delivery: %v, holding %v; want the new directory's lock found held", err, late.f != nil)
	}
}

// BenchmarkStepLock is what the step lock costs a step that finds it free: its directory made if need be, opened,
// locked and checked, then let go.
func BenchmarkStepLock(b *testing.B) {
	w := &Worker{cfg: Config{Endings: b.TempDir()}, log: slog.New(slog.DiscardHandler)}
	r := &jobs.Run{ID: "r-benchlock0"}
	for b.Loop() {
		var l stepLock
		if err := l.try(w, r, 1); err != nil || l.f == nil {
			b.Fatalf("%v, holding %v", err, l.f != nil)
		}
		l.release()
	}
}
