package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sleepyRepo is a git repository with plans p0.md, p1.md, … whose one task takes the given times.
func sleepyRepo(t *testing.T, sleeps ...time.Duration) string {
	t.Helper()
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	for i, d := range sleeps {
		writeFile(t, dir, fmt.Sprintf("p%d.md", i), fmt.Sprintf("# Plan %d\n\n## Task 1: Wait\n\nWait a while.\n", i))
		writeFile(t, dir, fmt.Sprintf("p%d.sim.yaml", i), fmt.Sprintf("tasks:\n  \"1\":\n    - output: \"Done. All tests pass.\"\n      sh: \"sleep %.1f\"\n", d.Seconds()))
	}
	gitT(t, dir, "add", ".")
	gitT(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "plans")
	return dir
}

type proc struct {
	cmd   *exec.Cmd
	out   *syncBuffer
	ended time.Time
	code  int
}

// startRun starts `orch run` of plan in dir on the embedded store and waits until it has made its run.
func startRun(t *testing.T, dir, plan string) *proc {
	t.Helper()
	cmd, out := startOrch(t, dir, []string{"ORCH_REDIS_URL="}, "run", "--agent", "sim", plan)
	waitOutput(t, out, "Run r-")
	return &proc{cmd: cmd, out: out}
}

func (p *proc) wait(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		p.cmd.Process.Kill()
		<-done
		t.Fatalf("orch did not end:\n%s", p.out.String())
	}
	p.ended, p.code = time.Now(), p.cmd.ProcessState.ExitCode()
}

// TestRunsAtOnceOnOneStateDir runs two and three `orch run`s at once in one workspace, ending in every order: the
// first serves the embedded store to the others, and when it ends while others still run, one of them takes the
// store over, with nothing lost and nothing said about it on their terminals.
func TestRunsAtOnceOnOneStateDir(t *testing.T) {
	t.Parallel()
	orders := [][]int{{0, 1}, {1, 0}, {0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	for _, order := range orders {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			t.Parallel()
			// order lists the runs as they end; each sleeps longer the later it is to end.
			sleeps := make([]time.Duration, len(order))
			for rank, i := range order {
				sleeps[i] = time.Second + time.Duration(rank)*1500*time.Millisecond
			}
			dir := sleepyRepo(t, sleeps...)
			procs := make([]*proc, len(order))
			for i := range procs { // the first started serves the store
				procs[i] = startRun(t, dir, fmt.Sprintf("p%d.md", i))
			}
			var wg sync.WaitGroup
			for _, p := range procs {
				wg.Go(func() { p.wait(t) })
			}
			wg.Wait()
			var ids, ended []string
			for i, p := range procs {
				r := result{stdout: p.out.String(), code: p.code}
				must(t, r, 0, "Task 1: COMPLETED")
				if n := strings.Count(r.stdout, "does not answer"); n > 0 {
					t.Fatalf("run %d told of the store going away %d times:\n%s", i, n, r.stdout)
				}
				ids = append(ids, runID(t, r))
			}
			byEnd := slices.Clone(procs)
			slices.SortFunc(byEnd, func(a, b *proc) int { return a.ended.Compare(b.ended) })
			for _, p := range byEnd {
				ended = append(ended, fmt.Sprint(slices.Index(procs, p)))
			}
			if want := fmt.Sprint(order); "["+strings.Join(ended, " ")+"]" != want {
				t.Fatalf("the runs ended in the order %v, not %s: the test did not test that order", ended, want)
			}
			for _, id := range ids {
				must(t, orchEnv(t, dir, nil, nil, "status", id), 0, "Run "+id+": completed")
			}
			if got := historyIDs(t, dir); !sameSet(got, ids) {
				t.Fatalf("history = %v, want %v", got, ids)
			}
		})
	}
}

// TestTheStoreHolderKilled SIGKILLs the process that serves the embedded store while another runs on it: the other
// takes the store over and completes, and the killed one's run is resumed later.
func TestTheStoreHolderKilled(t *testing.T) {
	t.Parallel()
	dir := sleepyRepo(t, 8*time.Second, 4*time.Second)
	holder := startRun(t, dir, "p0.md")
	waitOutput(t, holder.out, "Invoking")
	other := startRun(t, dir, "p1.md")
	waitOutput(t, other.out, "Invoking")
	holder.cmd.Process.Signal(syscall.SIGKILL)
	holder.wait(t)
	other.wait(t)
	r := result{stdout: other.out.String(), code: other.code}
	must(t, r, 0, "Task 1: COMPLETED")
	killed := runID(t, result{stdout: holder.out.String()})
	must(t, orchEnv(t, dir, nil, nil, "status", runID(t, r)), 0, ": completed")
	must(t, orchEnv(t, dir, nil, nil, "status", killed), 0, ": running")
	if _, err := os.Stat(filepath.Join(dir, ".orch", "redis.addr")); err == nil {
		t.Fatal("the store's address is left behind with nobody serving it")
	}
	must(t, orchEnv(t, dir, nil, nil, "resume", killed), 0, "Task 1: COMPLETED")
}

// TestAFullDiskIsAnError fills the disk of the state dir while a run works: the run that parks is not reported as
// parked (it could not be saved), and the command fails saying what was not saved and why.
func TestAFullDiskIsAnError(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem for the state dir needs root")
	}
	state := filepath.Join(t.TempDir(), "state")
	os.MkdirAll(state, 0o700)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", state).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs for the state dir: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", state).Run() })
	dir := workdir(t)
	writeFile(t, dir, "ask.md", "# Ask\n\n## Task 1: Ask\n\nAsk which cache to use.\n")
	writeFile(t, dir, "ask.sim.yaml", "tasks:\n  \"1\":\n    - output: |\n        QUESTION: Which cache?\n        OPTIONS:\n        A) Redis  B) In-memory\n      sh: \"sleep 2\"\n")
	cmd, out := startOrch(t, dir, []string{"ORCH_REDIS_URL="}, "run", "--agent", "sim", "--state-dir", state, "ask.md")
	waitOutput(t, out, "Invoking")
	filler, err := os.Create(filepath.Join(state, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := filler.Write(make([]byte, 4096)); err != nil {
			break // full
		}
	}
	filler.Close()
	p := &proc{cmd: cmd, out: out}
	p.wait(t)
	r := result{stdout: out.String(), code: p.code}
	must(t, r, exitFailed, "is not saved", "no space left on device")
	if strings.Contains(r.stdout, "orch escalation resolve") {
		t.Fatalf("a run that was not saved is reported parked, with how to answer it:\n%s", r)
	}
	// With room again, orch works in the state dir, and says what it found.
	os.Remove(filepath.Join(state, "filler"))
	must(t, orchEnv(t, dir, nil, nil, "history", "--state-dir", state), 0)
}
