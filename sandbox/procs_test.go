package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orchrun/orch/sandbox/shim"
)

// detachedScript is a shell script that starts a process that leaves the agent every way it can, and says which:
// a double fork (the subshell that starts it exits at once, so the process loses its parent), a session and process
// group of its own (setsid), and a cleared environment (env -i: no ORCH_RUN_ID, no mark). The process writes its pid
// to dir/pid and becomes `sleep 300`; the script waits for it and prints "detached PID" once it runs.
func detachedScript(t *testing.T, dir, setsid string) string {
	t.Helper()
	script := "echo $$ > \"$1.tmp\" && mv \"$1.tmp\" \"$1\"\nexec sleep 300\n"
	if err := os.WriteFile(filepath.Join(dir, "detach.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`(%s env -i /bin/sh %s/detach.sh %s/pid &)
while [ ! -s %[2]s/pid ]; do sleep 0.01; done
p=$(cat %[2]s/pid); kill -0 "$p" && echo "detached $p"`, setsid, dir, dir)
}

// detachedPID reads the pid the script printed.
func detachedPID(t *testing.T, out []byte) int {
	t.Helper()
	s, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "detached ")
	pid, err := strconv.Atoi(s)
	if !ok || err != nil {
		t.Fatalf("the agent did not start its detached process: stdout %q", out)
	}
	return pid
}

// sleeperRuns reports whether pid is a running `sleep` (not a zombie, not a process that took the pid over).
func sleeperRuns(pid int) bool {
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil || strings.TrimSpace(string(comm)) != "sleep" {
		return false
	}
	return shim.Running(pid)
}

// waitGone waits until pid no longer runs, and fails the test if it still does after a generous guard.
func waitGone(t *testing.T, pid int, after string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); sleeperRuns(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the detached process %d still runs 30s after %s", pid, after)
		}
	}
}

// A process the agent detached every way there is ends with the agent's task: when the agent exits, and when a
// timeout stops it. As root, the agent runs as the workspace's owner (testOwner), and so does what it leaves.
func TestLocalDetachedProcessEndsWithTheTask(t *testing.T) {
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Skip("needs setsid")
	}
	l := NewLocal(LocalConfig{KillGrace: 200 * time.Millisecond, Shim: testShim()})
	for name, tail := range map[string]string{"the agent exits": "", "a timeout stops it": "\nsleep 300"} {
		t.Run(name, func(t *testing.T) {
			ws := workspace(t, "")
			spec := Spec{RunID: "r-detach", Dir: ws, Args: []string{"/bin/sh", "-c", detachedScript(t, ws, setsid) + tail}}
			if tail != "" {
				spec.Timeout = 2 * time.Second
			}
			res, err := l.Exec(context.Background(), spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			waitGone(t, detachedPID(t, res.Stdout), "its task ended")
		})
	}
}

// The same process ends when the worker dies: the test binary run again is the worker (TestLocalHelperSupervisor),
// killed with SIGKILL while its agent runs.
func TestLocalDetachedProcessEndsWithTheWorker(t *testing.T) {
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Skip("needs setsid")
	}
	dir := t.TempDir()
	run := "r-detachk" + randomHex(3)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLocalHelperSupervisor$", "-test.count=1")
	cmd.Env = append(os.Environ(), envTestSupervisor+"="+run,
		envTestSupervisorSh+"="+detachedScript(t, dir, setsid)+"\nsleep 300")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(dir, "pid")); err == nil {
			if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err == nil && sleeperRuns(pid) {
				break
			}
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the agent did not start its detached process")
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, pid, "its worker was killed")
}

// When orch runs as root, a local agent in a workspace that belongs to someone else runs as that user, with no
// other group and a home of its own, and what it writes is theirs; with and without the shim.
func TestLocalAgentRunsAsTheWorkspaceOwner(t *testing.T) {
	needRoot(t)
	const uid, gid = 12345, 12345 // no entry in /etc/passwd: the home is one orch makes
	t.Cleanup(func() { os.RemoveAll(filepath.Join(os.TempDir(), homesDir, strconv.Itoa(uid))) })
	for name, shim := range map[string][]string{"direct": nil, "shim": testShim()} {
		t.Run(name, func(t *testing.T) {
			ws, err := os.MkdirTemp("", "orch-owner-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(ws) })
			if err := os.Chmod(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(ws, uid, gid); err != nil {
				t.Fatal(err)
			}
			l := NewLocal(LocalConfig{Shim: shim})
			res, err := l.Exec(context.Background(), Spec{Dir: ws, Args: []string{"/bin/sh", "-c",
				`id -u; id -g; id -G; touch "$HOME/.orch-probe" && echo home=ok; echo "$USER"; echo x > made`}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := string(res.Stdout), "12345\n12345\n12345\nhome=ok\n12345\n"; got != want || res.ExitCode != 0 {
				t.Errorf("stdout %q (exit %d, stderr %q), want %q", got, res.ExitCode, res.Stderr, want)
			}
			if got := fileOwner(t, filepath.Join(ws, "made")); got != "12345:12345" {
				t.Errorf("the agent's file belongs to %s", got)
			}
		})
	}
}
