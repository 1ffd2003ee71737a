package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gatedRepo is a git repository with plans p0.md … p<n-1>.md whose one task waits until its gate file (gates[i], outside
// the repository: each run works in a worktree of its own) exists. The test decides when each run ends.
func gatedRepo(t *testing.T, n int) (dir string, gates []string) {
	t.Helper()
	dir, gateDir := t.TempDir(), t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	for i := range n {
		gate := filepath.Join(gateDir, fmt.Sprintf("go%d", i))
		gates = append(gates, gate)
		writeFile(t, dir, fmt.Sprintf("p%d.md", i), fmt.Sprintf("# Plan %d\n\n## Task 1: Wait\n\nWait for the gate.\n", i))
		writeFile(t, dir, fmt.Sprintf("p%d.sim.yaml", i), fmt.Sprintf("tasks:\n  \"1\":\n    - output: \"Done. All tests pass.\"\n"+
			"      sh: \"while [ ! -e %s ]; do sleep 0.05; done\"\n", gate))
	}
	gitT(t, dir, "add", ".")
	gitT(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "plans")
	return dir, gates
}

// release lets the run waiting on gate end.
func release(t *testing.T, gate string) {
	t.Helper()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

type proc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	code int
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
	p.code = p.cmd.ProcessState.ExitCode()
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
			dir, gates := gatedRepo(t, len(order))
			procs := make([]*proc, len(order))
			for i := range procs { // the first started serves the store
				procs[i] = startRun(t, dir, fmt.Sprintf("p%d.md", i))
				waitOutput(t, procs[i].out, "Invoking")
			}
			// order lists the runs as they end: each is let go, and ends, before the next.
			for _, i := range order {
				release(t, gates[i])
				procs[i].wait(t)
			}
			var ids []string
			for i, p := range procs {
				r := result{stdout: p.out.String(), code: p.code}
				must(t, r, 0, "Task 1: COMPLETED")
				if n := strings.Count(r.stdout, "does not answer"); n > 0 {
					t.Fatalf("run %d told of the store going away %d times:\n%s", i, n, r.stdout)
				}
				ids = append(ids, runID(t, r))
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
	dir, gates := gatedRepo(t, 2)
	holder := startRun(t, dir, "p0.md")
	waitOutput(t, holder.out, "Invoking")
	other := startRun(t, dir, "p1.md")
	waitOutput(t, other.out, "Invoking")
	holder.cmd.Process.Signal(syscall.SIGKILL)
	holder.wait(t)
	release(t, gates[1])
	other.wait(t)
	r := result{stdout: other.out.String(), code: other.code}
	must(t, r, 0, "Task 1: COMPLETED")
	killed := runID(t, result{stdout: holder.out.String()})
	must(t, orchEnv(t, dir, nil, nil, "status", runID(t, r)), 0, ": completed")
	must(t, orchEnv(t, dir, nil, nil, "status", killed), 0, ": running")
	if _, err := os.Stat(filepath.Join(dir, ".orch", "redis.addr")); err == nil {
		t.Fatal("the store's address is left behind with nobody serving it")
	}
	release(t, gates[0])
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
