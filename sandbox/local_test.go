package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testShimArg makes the test binary run RunShim (TestMain): the local sandbox's shim in these tests.
const testShimArg = ShimCommand

// testShim is the shim prefix of the tests: this test binary.
func testShim() []string { return []string{os.Args[0], testShimArg} }

// The local sandbox behaves the same with the shim between orch and the agent as without.
func TestLocalExec(t *testing.T) {
	for name, shim := range map[string][]string{"direct": nil, "shim": testShim()} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testLocalExec(t, NewLocal(LocalConfig{KillGrace: 200 * time.Millisecond, Shim: shim}))
		})
	}
}

func testLocalExec(t *testing.T, l *Local) {
	ctx := context.Background()

	t.Run("lines streamed and captured", func(t *testing.T) {
		var lines []string
		res, err := l.Exec(ctx, Spec{Args: []string{"/bin/sh", "-c", "echo one; echo two >&2; printf 'three'"}}, func(b []byte) {
			lines = append(lines, string(b))
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(lines, "|"); got != "one|three" {
			t.Errorf("lines = %q", got)
		}
		if string(res.Stdout) != "one\nthree" || string(res.Stderr) != "two\n" || res.ExitCode != 0 {
			t.Errorf("res = %+v", res)
		}
	})

	t.Run("megabyte line", func(t *testing.T) {
		var longest int
		res, err := l.Exec(ctx, Spec{Args: []string{"/bin/sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x; echo"}}, func(b []byte) {
			longest = max(longest, len(b))
		})
		if err != nil {
			t.Fatal(err)
		}
		if longest != 3000000 || len(res.Stdout) != 3000001 {
			t.Errorf("longest line %d, stdout %d", longest, len(res.Stdout))
		}
	})

	t.Run("exit code env and dir", func(t *testing.T) {
		dir := t.TempDir()
		res, err := l.Exec(ctx, Spec{Args: []string{"/bin/sh", "-c", "echo $ORCH_TASK_ID; pwd; exit 7"}, Env: []string{"ORCH_TASK_ID=1.1"}, Dir: dir}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := "1.1\n" + dir + "\n"
		if res.ExitCode != 7 || string(res.Stdout) != want {
			t.Errorf("res = %d %q, want 7 %q", res.ExitCode, res.Stdout, want)
		}
	})

	t.Run("timeout kills the whole group", func(t *testing.T) {
		dir := t.TempDir()
		marker := filepath.Join(dir, "survived")
		start := time.Now()
		res, err := l.Exec(ctx, Spec{
			Args:    []string{"/bin/sh", "-c", "(sleep 2; touch " + marker + ") & sleep 60"},
			Timeout: 300 * time.Millisecond,
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !res.TimedOut {
			t.Errorf("TimedOut = false, res %+v", res)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
		time.Sleep(2500 * time.Millisecond)
		if _, err := os.Stat(marker); err == nil {
			t.Error("a child of the timed-out agent survived and ran")
		}
	})

	t.Run("context cancel", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err := l.Exec(cctx, Spec{Args: []string{"/bin/sh", "-c", "sleep 30"}}, nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("missing program", func(t *testing.T) {
		if _, err := l.Exec(ctx, Spec{Args: []string{"/no/such/agent"}}, nil); err == nil {
			t.Error("no error")
		}
		if _, err := l.Exec(ctx, Spec{}, nil); !errors.Is(err, ErrNoCommand) {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("killed by a signal", func(t *testing.T) {
		for _, tt := range []struct {
			sig, want string
		}{{"TERM", "terminated"}, {"USR1", "user defined signal 1"}, {"SEGV", "segmentation fault"}, {"KILL", "killed"}} {
			res, err := l.Exec(ctx, Spec{Args: []string{"/bin/sh", "-c", "echo before; kill -" + tt.sig + " $$; sleep 5"}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Signal != tt.want || res.ExitCode != -1 || string(res.Stdout) != "before\n" {
				t.Errorf("SIG%s: signal %q exit %d stdout %q; want %q -1", tt.sig, res.Signal, res.ExitCode, res.Stdout, tt.want)
			}
		}
	})

	t.Run("what the agent left running goes with it", func(t *testing.T) {
		if _, err := exec.LookPath("setsid"); err != nil {
			t.Skip("needs setsid")
		}
		run := "r-left" + randomHex(3)
		t.Cleanup(func() { killRunProcesses(run) })
		// One child in the agent's group, one in a session of its own: the attempt's mark finds the second.
		_, err := l.Exec(ctx, Spec{RunID: run, Args: []string{"/bin/sh", "-c", "sleep 30 & setsid sleep 30 & echo started"},
			Env: []string{"ORCH_RUN_ID=" + run}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if n := sleeping(run); n != 0 {
			t.Errorf("%d of the agent's children left running", n)
		}
	})

	t.Run("stderr tail bounded", func(t *testing.T) {
		res, err := l.Exec(ctx, Spec{Args: []string{"/bin/sh", "-c", "head -c 200000 /dev/zero | tr '\\0' e >&2; echo END >&2"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Stderr) != stderrTail || !bytes.HasSuffix(res.Stderr, []byte("END\n")) {
			t.Errorf("stderr %d bytes", len(res.Stderr))
		}
	})
}

// An agent and everything it started die within a second of the process that supervises it, SIGKILL included: nothing
// of a dead worker's agent goes on working in the workspace. The supervisor is this test binary run again
// (TestLocalHelperSupervisor), killed once the agent's children run: one in the agent's process group, which outlived
// the agent before, and one in a session of its own, which a process group kill misses.
func TestLocalAgentDiesWithItsSupervisor(t *testing.T) {
	run := "r-shim" + randomHex(3)
	t.Cleanup(func() { killRunProcesses(run) })
	agentSh, sleeps := "sleep 30 & sleep 30", 2
	if _, err := exec.LookPath("setsid"); err == nil {
		agentSh, sleeps = "sleep 30 & setsid sleep 30 & sleep 30", 3
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLocalHelperSupervisor$", "-test.count=1")
	cmd.Env = append(os.Environ(), envTestSupervisor+"="+run, envTestSupervisorSh+"="+agentSh)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); sleeping(run) < sleeps; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not start its children: processes %v", runProcesses(run))
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()
	for len(runProcesses(run)) > 0 {
		if time.Since(killed) > time.Second {
			t.Fatalf("a second after its supervisor was killed, the agent's processes %v are still running", runProcesses(run))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the agent's processes were gone %v after the kill", time.Since(killed).Round(time.Millisecond))
}

const (
	envTestSupervisor   = "ORCH_SANDBOX_TEST_SUPERVISOR"
	envTestSupervisorSh = "ORCH_SANDBOX_TEST_SUPERVISOR_SH"
)

// TestLocalHelperSupervisor is the supervisor TestLocalAgentDiesWithItsSupervisor starts and kills: a local sandbox
// with the shim, running an agent that forks.
func TestLocalHelperSupervisor(t *testing.T) {
	run := os.Getenv(envTestSupervisor)
	if run == "" {
		t.Skip("the helper process of TestLocalAgentDiesWithItsSupervisor")
	}
	l := NewLocal(LocalConfig{Shim: testShim()})
	_, _ = l.Exec(context.Background(), Spec{RunID: run, Args: []string{"/bin/sh", "-c", os.Getenv(envTestSupervisorSh)},
		Env: []string{"ORCH_RUN_ID=" + run}}, nil)
	t.Error("the agent ended before its supervisor was killed")
}

// sleeping counts the run's processes that are sleep.
func sleeping(run string) int {
	n := 0
	for _, pid := range runProcesses(run) {
		if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); strings.TrimSpace(string(comm)) == "sleep" {
			n++
		}
	}
	return n
}
