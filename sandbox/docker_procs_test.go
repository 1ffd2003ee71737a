package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Settings of the helper worker (TestDockerHelperWorker): its orch binary, and its task's script.
const (
	envTestOrchBinary = "ORCH_SANDBOX_TEST_ORCH_BINARY"
	envTestScript     = "ORCH_SANDBOX_TEST_SCRIPT"
)

// The test binary is built with the race detector, which needs a dynamic loader the test image lacks: the Docker
// tests that need the shim mount a static build of testdata/shim (RunShim and nothing else) as the orch binary.
var staticShimBuild struct {
	once      sync.Once
	dir, path string
	err       error
}

// staticShim returns the path of a static binary that runs the shim as orch does, built once per test process.
func staticShim(t testing.TB) string {
	t.Helper()
	_, _ = testEngine(t) // skips without an engine, before the build
	b := &staticShimBuild
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "orch-test-shim-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "orch")
		cmd := exec.Command("go", "build", "-trimpath", "-o", b.path, "./testdata/shim")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("%w\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatalf("building a static shim: %v", b.err)
	}
	return b.path
}

// removeStaticShim removes what staticShim built (TestMain).
func removeStaticShim() {
	if staticShimBuild.dir != "" {
		os.RemoveAll(staticShimBuild.dir)
	}
}

// detachInContainer starts, from the workspace, a background sleep (its pid in bg.pid) and a process that leaves
// the agent every way it can — a double fork, a session of its own, a cleared environment — and becomes a sleep
// (its pid in d.pid). It returns once both run.
const detachInContainer = `/bin/sleep 300 & echo $! > bg.pid
(busybox setsid busybox env -i /bin/sh -c 'echo $$ > d.pid; exec /bin/sleep 300' &)
while [ ! -s d.pid ]; do sleep 0.05; done
`

// leftovers lists, with an exec of its own, which of the processes named by the pid files (in the workspace) still
// run in the run's container: "bg.pid d.pid", or "" when none does. A process counts when it is still the
// `sleep 300` that wrote it (a zombie has no command line left).
func leftovers(t *testing.T, d *Docker, spec Spec, files ...string) string {
	t.Helper()
	res := execOK(t, d, spec, `for f in `+strings.Join(files, " ")+`; do
  case "$(tr '\0' ' ' < /proc/$(cat $f)/cmdline 2>/dev/null)" in *"sleep 300"*) printf '%s ' $f;; esac
done`)
	return strings.TrimSpace(string(res.Stdout))
}

// What an exec started in the background, detached or not, is gone when the exec returns: the run's container,
// kept for the run's next tasks, holds nothing of it.
func TestDockerBackgroundProcessesEndWithTheExec(t *testing.T) {
	d := newTestDocker(t, DockerConfig{OrchBinary: staticShim(t)})
	spec := Spec{RunID: newRunID(t, d), TaskID: "1", Dir: workspace(t, "")}
	res := execOK(t, d, spec, detachInContainer+`echo started`)
	if string(res.Stdout) != "started\n" || res.ExitCode != 0 {
		t.Fatalf("the agent did not start its processes: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if left := leftovers(t, d, spec, "bg.pid", "d.pid"); left != "" {
		t.Errorf("still running in the run's container after the exec returned: %s", left)
	}
}

// When the worker that holds an exec's attach dies (SIGKILL), the exec's processes die, everything they started with
// them, without anything removing the container: the engine closes the exec's stdin when the connection drops, and
// the shim reads the end of its lifeline there.
func TestDockerExecEndsWithItsWorker(t *testing.T) {
	shim := staticShim(t)
	d := newTestDocker(t, DockerConfig{OrchBinary: shim})
	run := newRunID(t, d)
	ws := workspace(t, "")
	killHelperWorker(t, run, ws, false, envTestOrchBinary+"="+shim,
		envTestScript+"="+detachInContainer+`echo $$ > agent.pid; echo ready; exec /bin/sleep 300`)
	killed := time.Now()
	spec := Spec{RunID: run, TaskID: "check", Dir: ws}
	var left string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if left = leftovers(t, d, spec, "agent.pid", "bg.pid", "d.pid"); left == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("60s after its worker was killed, the exec's processes still run: %s", left)
		}
	}
	t.Logf("the exec's processes were gone within %v of the kill (one look takes an exec)", time.Since(killed).Round(time.Millisecond))
	if cs := runContainers(t, d, run); len(cs) != 1 || cs[0].State != "running" {
		t.Errorf("the run's container is not the one the worker used, running: %+v", cs)
	}
}

// Through the shim an exec behaves as without it: output, exit status, environment, directory, a program that
// cannot be started, input on stdin, a timeout. An agent that kills its own shim loses its leftovers with the
// container.
func TestDockerExecThroughTheShim(t *testing.T) {
	d := newTestDocker(t, DockerConfig{OrchBinary: staticShim(t), Env: []string{"FROM_CFG=cfg"}})
	ctx := context.Background()
	run := newRunID(t, d)
	ws := workspace(t, "")

	t.Run("output, exit status, environment, directory", func(t *testing.T) {
		var lines []string
		res, err := d.Exec(ctx, Spec{RunID: run, Dir: ws, Env: []string{"ORCH_TASK_ID=1.1"},
			Args: []string{"/bin/sh", "-c", "echo one; echo two >&2; echo $FROM_CFG $ORCH_TASK_ID; pwd; exit 3"}},
			func(b []byte) { lines = append(lines, string(b)) })
		if err != nil {
			t.Fatal(err)
		}
		want := "one\ncfg 1.1\n" + ws + "\n"
		if string(res.Stdout) != want || string(res.Stderr) != "two\n" || res.ExitCode != 3 || len(lines) != 3 {
			t.Errorf("stdout %q stderr %q exit %d lines %q; want %q, two, 3", res.Stdout, res.Stderr, res.ExitCode, lines, want)
		}
	})

	t.Run("a program that cannot be started is an error", func(t *testing.T) {
		_, err := d.Exec(ctx, Spec{RunID: run, Dir: ws, Args: []string{"/no/such/agent"}}, nil)
		if err == nil || !strings.Contains(err.Error(), "no such file") {
			t.Errorf("a missing program: %v", err)
		}
		if _, err := d.Exec(ctx, Spec{RunID: run, Dir: ws, Args: []string{"no-such-agent"}}, nil); err == nil {
			t.Error("a program not in PATH ran")
		}
		if res := execOK(t, d, Spec{RunID: run, Dir: ws}, "exit 127"); res.ExitCode != 127 {
			t.Errorf("a program that exits 127: %+v", res)
		}
	})

	t.Run("stdin", func(t *testing.T) { testStdin(t, d, run) })

	t.Run("a timeout stops it and the run goes on", func(t *testing.T) {
		res, err := d.Exec(ctx, Spec{RunID: run, Dir: ws, Timeout: time.Second,
			Args: []string{"/bin/sh", "-c", "echo started; sleep 60"}}, nil)
		if err != nil || !res.TimedOut {
			t.Errorf("res %+v, err %v", res, err)
		}
		if res := execOK(t, d, Spec{RunID: run, Dir: ws}, "echo next"); string(res.Stdout) != "next\n" {
			t.Errorf("next exec: %+v", res)
		}
	})

	t.Run("an agent that kills its shim", func(t *testing.T) {
		res := execOK(t, d, Spec{RunID: run, Dir: ws}, "/bin/sleep 300 & echo $! > bg.pid; kill -KILL $PPID; sleep 5")
		if res.ExitCode != 137 {
			t.Errorf("exit %d, want 137", res.ExitCode)
		}
		if left := leftovers(t, d, Spec{RunID: run, Dir: ws}, "bg.pid"); left != "" {
			t.Errorf("still running in the run's container: %s", left)
		}
	})
}
