package sandbox

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

func TestDockerExec(t *testing.T) {
	d := newTestDocker(t, DockerConfig{Env: []string{"FROM_CFG=cfg", "SHARED=cfg"}})
	ctx := context.Background()

	t.Run("output streamed in order, stderr and exit code", func(t *testing.T) {
		ws := workspace(t, "")
		type line struct {
			text string
			at   time.Time
		}
		var lines []line
		res, err := d.Exec(ctx, Spec{RunID: newRunID(t, d), TaskID: "1", Dir: ws,
			Args: []string{"/bin/sh", "-c", "echo one; echo two >&2; echo three; sleep 1; printf four; exit 3"}},
			func(b []byte) { lines = append(lines, line{string(b), time.Now()}) })
		end := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, l := range lines {
			texts = append(texts, l.text)
		}
		if got := strings.Join(texts, "|"); got != "one|three|four" {
			t.Errorf("lines = %q", got)
		}
		if string(res.Stdout) != "one\nthree\nfour" || string(res.Stderr) != "two\n" || res.ExitCode != 3 {
			t.Errorf("res = %q %q %d", res.Stdout, res.Stderr, res.ExitCode)
		}
		if len(lines) == 3 && end.Sub(lines[1].at) < 700*time.Millisecond {
			t.Errorf("line three came %v before the end: not streamed as printed", end.Sub(lines[1].at))
		}
		if res.TimedOut || res.OOMKilled || res.Signal != "" {
			t.Errorf("res = %+v", res)
		}
	})

	t.Run("3 MB line", func(t *testing.T) {
		var longest, n int
		res, err := d.Exec(ctx, Spec{RunID: newRunID(t, d), Dir: workspace(t, ""),
			Args: []string{"/bin/sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo end"}},
			func(b []byte) { longest = max(longest, len(b)); n++ })
		if err != nil {
			t.Fatal(err)
		}
		if longest != 3000000 || n != 2 || len(res.Stdout) != 3000005 {
			t.Errorf("longest line %d, %d lines, stdout %d bytes", longest, n, len(res.Stdout))
		}
	})

	t.Run("env and working dir at the host path", func(t *testing.T) {
		ws := workspace(t, "")
		res := execOK(t, d, Spec{RunID: newRunID(t, d), Dir: ws, Env: []string{"SHARED=spec", "ORCH_TASK_ID=1.1"}},
			"echo $FROM_CFG $SHARED $ORCH_TASK_ID; pwd")
		if want := "cfg spec 1.1\n" + ws + "\n"; string(res.Stdout) != want || res.ExitCode != 0 {
			t.Errorf("got %q (exit %d), want %q", res.Stdout, res.ExitCode, want)
		}
	})

	t.Run("workspace writes reach the host", func(t *testing.T) {
		ws := workspace(t, "")
		res := execOK(t, d, Spec{RunID: newRunID(t, d), Dir: ws}, "echo hello > out.txt && mkdir sub && touch sub/f")
		if res.ExitCode != 0 {
			t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
		}
		if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || string(b) != "hello\n" {
			t.Errorf("out.txt = %q, %v", b, err)
		}
		if _, err := os.Stat(filepath.Join(ws, "sub", "f")); err != nil {
			t.Error(err)
		}
	})

	t.Run("unprivileged", func(t *testing.T) {
		res := execOK(t, d, Spec{RunID: newRunID(t, d), Dir: workspace(t, "")},
			"echo $(id -u):$(id -g); grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status")
		out := string(res.Stdout)
		for _, want := range []string{testOwner() + "\n", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("read-only root, private tmp", func(t *testing.T) {
		res := execOK(t, d, Spec{RunID: newRunID(t, d), Dir: workspace(t, "")},
			"touch /x; echo root=$?; touch /tmp/y && echo tmp=ok; stat -c %u:%g /tmp; printf '#!/bin/sh\\necho ran\\n' > /tmp/x.sh; chmod +x /tmp/x.sh; /tmp/x.sh")
		// The mode of /tmp is not checked: when the workspace lies under the host's /tmp, its mount point is made
		// inside the tmpfs and the engine resets the tmpfs's mode to 0755; the owner is what matters.
		if got, want := string(res.Stdout), "root=1\ntmp=ok\n"+testOwner()+"\nran\n"; got != want {
			t.Errorf("got %q", got)
		}
		if !strings.Contains(string(res.Stderr), "Read-only file system") {
			t.Errorf("stderr %q", res.Stderr)
		}
	})

	t.Run("no network", func(t *testing.T) {
		start := time.Now()
		res := execOK(t, d, Spec{RunID: newRunID(t, d), Dir: workspace(t, "")},
			"grep : /proc/net/dev; nc -w 5 1.1.1.1 80 </dev/null; echo nc=$?")
		out := string(res.Stdout)
		if strings.Count(out, ":") != 1 || !strings.Contains(out, "lo:") {
			t.Errorf("interfaces other than lo:\n%s", out)
		}
		if !strings.HasSuffix(out, "nc=1\n") || !strings.Contains(string(res.Stderr), "Network is unreachable") {
			t.Errorf("nc reached out: %q %q", out, res.Stderr)
		}
		if d := time.Since(start); d > 4*time.Second {
			t.Errorf("the network failure took %v; want it at once", d)
		}
	})

	t.Run("labels", func(t *testing.T) {
		run := newRunID(t, d)
		execOK(t, d, Spec{RunID: run, TaskID: "2.1", Dir: workspace(t, "")}, "true")
		c := inspectRun(t, d, run)
		want := map[string]string{LabelRunID: run, LabelTaskID: "2.1", testLabel: testSession}
		for k, v := range want {
			if c.Config.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, c.Config.Labels[k], v)
			}
		}
		h := c.HostConfig
		if h.NetworkMode != "none" || !h.ReadonlyRootfs || !slices.Contains(h.CapDrop, "ALL") ||
			!slices.Contains(h.SecurityOpt, "no-new-privileges:true") || h.Init == nil || !*h.Init ||
			h.Memory != 256<<20 || h.MemorySwap != 256<<20 || h.NanoCPUs != 1e9 || h.PidsLimit == nil || *h.PidsLimit != 256 {
			t.Errorf("host config not hardened: %+v", h)
		}
		for _, o := range h.SecurityOpt {
			if strings.HasPrefix(o, "seccomp") {
				t.Errorf("the default seccomp profile is overridden: %q", o)
			}
		}
	})

	t.Run("one container per run: reused, stopped when parked, restarted", func(t *testing.T) {
		run := newRunID(t, d)
		spec := Spec{RunID: run, TaskID: "1", Dir: workspace(t, "")}
		execOK(t, d, spec, "echo kept > /tmp/state")
		first := inspectRun(t, d, run).ID
		spec.TaskID = "2"
		if res := execOK(t, d, spec, "cat /tmp/state"); string(res.Stdout) != "kept\n" {
			t.Errorf("second exec saw %q: not the same container", res.Stdout)
		}
		if id := inspectRun(t, d, run).ID; id != first {
			t.Errorf("second exec ran in %s, first in %s", id, first)
		}
		if err := d.Release(ctx, run, false); err != nil {
			t.Fatal(err)
		}
		if c := inspectRun(t, d, run); c.State.Running {
			t.Error("Release(false) left the container running")
		}
		if res := execOK(t, d, spec, "echo again"); string(res.Stdout) != "again\n" {
			t.Errorf("exec after Release(false): %q", res.Stdout)
		}
		if c := inspectRun(t, d, run); c.ID != first || !c.State.Running {
			t.Errorf("after the restart: id %s running %v, want %s running", c.ID, c.State.Running, first)
		}
		if err := d.Release(ctx, run, true); err != nil {
			t.Fatal(err)
		}
		if cs := runContainers(t, d, run); len(cs) != 0 {
			t.Errorf("Release(true) left %d containers", len(cs))
		}
		if err := d.Release(ctx, run, true); err != nil {
			t.Errorf("a second Release(true): %v", err)
		}
	})

	t.Run("timeout kills and the run goes on", func(t *testing.T) {
		run := newRunID(t, d)
		ws := workspace(t, "")
		start := time.Now()
		// The timeout leaves the exec time to start on a loaded machine (an exec the engine has not started yet
		// when it is killed fails in runc's setns, and prints nothing), and the child's sleep outlasts it.
		res, err := d.Exec(ctx, Spec{RunID: run, Dir: ws, Timeout: 3 * time.Second,
			Args: []string{"/bin/sh", "-c", "echo started; (sleep 6; touch survived) & sleep 60"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !res.TimedOut || string(res.Stdout) != "started\n" {
			t.Errorf("res = %+v", res)
		}
		if el := time.Since(start); el > 40*time.Second {
			t.Errorf("took %v: the timeout did not stop the agent's sleep 60", el)
		}
		if res := execOK(t, d, Spec{RunID: run, Dir: ws}, "echo next"); string(res.Stdout) != "next\n" || res.TimedOut {
			t.Errorf("next exec: %+v", res)
		}
		time.Sleep(6500 * time.Millisecond)
		if _, err := os.Stat(filepath.Join(ws, "survived")); err == nil {
			t.Error("a child of the timed-out agent survived and ran")
		}
	})

	t.Run("cancel stops promptly", func(t *testing.T) {
		run := newRunID(t, d)
		ws := workspace(t, "")
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := d.Exec(cctx, Spec{RunID: run, Dir: ws, Args: []string{"/bin/sh", "-c", "sleep 60"}}, nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v", err)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("took %v", el)
		}
		if res := execOK(t, d, Spec{RunID: run, Dir: ws}, "echo next"); string(res.Stdout) != "next\n" {
			t.Errorf("next exec: %+v", res)
		}
	})

	t.Run("bad specs", func(t *testing.T) {
		ws := workspace(t, "")
		if _, err := d.Exec(ctx, Spec{RunID: "r-1", Dir: ws}, nil); !errors.Is(err, ErrNoCommand) {
			t.Errorf("no command: %v", err)
		}
		for _, spec := range []Spec{
			{RunID: "", Dir: ws},
			{RunID: "bad/id", Dir: ws},
			{RunID: "pool-x", Dir: ws},
			{RunID: "r-1", Dir: "relative"},
		} {
			spec.Args = []string{"true"}
			if _, err := d.Exec(ctx, spec, nil); err == nil {
				t.Errorf("Exec(%+v) ran", spec)
			}
		}
		run := newRunID(t, d)
		if _, err := d.Exec(ctx, Spec{RunID: run, Dir: ws, Args: []string{"/no/such/agent"}}, nil); err == nil ||
			!strings.Contains(err.Error(), "no such file") {
			t.Errorf("a missing program: %v", err)
		}
		if res := execOK(t, d, Spec{RunID: run, Dir: ws}, "exit 127"); res.ExitCode != 127 {
			t.Errorf("a program that exits 127: %+v", res)
		}
		// The run's container was made for ws: another workspace gets a container made for it
		// (TestDockerRemakesAContainerForOtherDirectories), never the old one with the new workspace unmounted.
		other := workspace(t, "")
		if res := execOK(t, d, Spec{RunID: run, Dir: other}, "pwd"); string(res.Stdout) != other+"\n" {
			t.Errorf("another workspace: %q", res.Stdout)
		}
	})
}

func TestDockerLimits(t *testing.T) {
	d := newTestDocker(t, DockerConfig{PIDs: 64, Memory: 32 << 20, TmpfsSize: 4 << 20})
	ctx := context.Background()

	t.Run("a fork bomb hits the pids limit", func(t *testing.T) {
		run := newRunID(t, d)
		ws := workspace(t, "")
		start := time.Now()
		res, err := d.Exec(ctx, Spec{RunID: run, Dir: ws, Timeout: 3 * time.Second,
			Args: []string{"/bin/sh", "-c", "bomb() { bomb | bomb & }; bomb; sleep 60"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el > 20*time.Second {
			t.Errorf("took %v", el)
		}
		if !res.TimedOut {
			t.Errorf("the bomb ended on its own: %+v", res)
		}
		if s := string(res.Stderr); !strings.Contains(s, "can't fork") && !strings.Contains(s, "Resource temporarily unavailable") {
			t.Errorf("no fork failure in stderr: %q", s)
		}
		if res := execOK(t, d, Spec{RunID: run, Dir: ws}, "echo alive"); string(res.Stdout) != "alive\n" {
			t.Errorf("the run's next exec: %+v", res)
		}
	})

	oom := func(t *testing.T, d *Docker, settle time.Duration) {
		run := newRunID(t, d)
		ws := workspace(t, "")
		start := time.Now()
		res := execOK(t, d, Spec{RunID: run, Dir: ws}, "head -c 100m /dev/zero | tail")
		t.Logf("memory hog: %v", time.Since(start))
		if res.ExitCode != 137 || !res.OOMKilled {
			t.Errorf("memory hog: exit %d OOMKilled %v stderr %q", res.ExitCode, res.OOMKilled, res.Stderr)
		}
		// A SIGKILL that is not the OOM killer's, in the same container, is not an OOM kill. The engine's oom event
		// can arrive seconds late; the events fallback cannot tell a late event of the last exec from one of this
		// exec, so it is given time to arrive first (a known limit of the fallback, which the cgroup counter has not).
		time.Sleep(settle)
		start = time.Now()
		res = execOK(t, d, Spec{RunID: run, Dir: ws}, "kill -9 $$")
		t.Logf("kill -9: %v", time.Since(start))
		if res.ExitCode != 137 || res.OOMKilled {
			t.Errorf("kill -9: exit %d OOMKilled %v", res.ExitCode, res.OOMKilled)
		}
	}
	t.Run("a memory hog is OOM-killed", func(t *testing.T) { oom(t, d, 0) })
	t.Run("a memory hog is OOM-killed (events fallback)", func(t *testing.T) {
		d2 := newTestDocker(t, DockerConfig{Memory: 32 << 20, TmpfsSize: 4 << 20})
		d2.noOOMCounter = true
		oom(t, d2, 5*time.Second)
	})
}

func TestDockerPerTask(t *testing.T) {
	d := newTestDocker(t, DockerConfig{PerTask: true})
	run := newRunID(t, d)
	ws := workspace(t, "")
	var hosts []string
	for _, task := range []string{"1", "1"} {
		res := execOK(t, d, Spec{RunID: run, TaskID: task, Dir: ws}, "echo x >> shared; hostname; [ -e /tmp/mark ] && echo old || echo fresh; touch /tmp/mark")
		hosts = append(hosts, string(res.Stdout))
		if cs := runContainers(t, d, run); len(cs) != 0 {
			t.Errorf("the task's container is still there: %v", cs[0].Names)
		}
	}
	if hosts[0] == hosts[1] || !strings.HasSuffix(hosts[1], "\nfresh\n") {
		t.Errorf("the second task did not get a fresh container: %q", hosts)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "shared")); string(b) != "x\nx\n" {
		t.Errorf("workspace = %q", b)
	}
}

// TestDockerCleanup: whatever way an Exec ends, the run leaves no container behind once it is released (per task:
// once the Exec returns).
func TestDockerCleanup(t *testing.T) {
	for _, perTask := range []bool{false, true} {
		d := newTestDocker(t, DockerConfig{PerTask: perTask})
		for _, c := range []struct {
			name   string
			script string
			cancel bool
		}{
			{"success", "true", false},
			{"failure", "echo boom >&2; exit 1", false},
			{"abort", "touch started; sleep 60", true},
		} {
			name := c.name
			if perTask {
				name += " per task"
			}
			t.Run(name, func(t *testing.T) {
				run := newRunID(t, d)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				ws := workspace(t, "")
				if c.cancel {
					// Cancelled once the agent runs in its container, however long the engine took to start it: a
					// cancel before the container exists tests something else.
					go func() {
						for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
							if _, err := os.Stat(filepath.Join(ws, "started")); err == nil {
								break
							}
						}
						cancel()
					}()
				}
				_, err := d.Exec(ctx, Spec{RunID: run, Dir: ws, Args: []string{"/bin/sh", "-c", c.script}}, nil)
				if c.cancel != (err != nil) {
					t.Errorf("err = %v", err)
				}
				if !perTask {
					if len(runContainers(t, d, run)) != 1 {
						t.Error("the run has no container before Release")
					}
					if err := d.Release(context.Background(), run, true); err != nil {
						t.Fatal(err)
					}
				}
				if cs := runContainers(t, d, run); len(cs) != 0 {
					t.Errorf("left behind: %v", cs[0].Names)
				}
			})
		}
	}
}

func TestDockerReap(t *testing.T) {
	d := newTestDocker(t, DockerConfig{})
	ctx := context.Background()
	live, parked, gone := newRunID(t, d), newRunID(t, d), newRunID(t, d)
	for _, run := range []string{live, parked, gone} {
		execOK(t, d, Spec{RunID: run, Dir: workspace(t, "")}, "true")
	}
	if err := d.Release(ctx, parked, false); err != nil {
		t.Fatal(err)
	}
	mine := map[string]bool{live: true, parked: true, gone: false}
	removed, err := d.Reap(ctx, func(_ context.Context, run string) (bool, error) {
		alive, ok := mine[run]
		if !ok {
			return true, nil // another test's
		}
		return alive, nil
	})
	if err != nil || removed != 1 {
		t.Errorf("Reap = %d, %v; want 1", removed, err)
	}
	for run, alive := range mine {
		if n := len(runContainers(t, d, run)); (n == 1) != alive {
			t.Errorf("run %s (alive %v) has %d containers", run, alive, n)
		}
	}
	if _, err := d.Reap(ctx, func(context.Context, string) (bool, error) { return false, errors.New("store down") }); err == nil {
		t.Error("Reap hid the error of alive")
	} else if len(runContainers(t, d, live)) != 1 {
		t.Error("Reap removed a container whose run it could not check")
	}
}

// Deployments sharing an engine: each reaps and releases only the containers of its own instance, and one without an
// instance only those without one.
func TestDockerInstances(t *testing.T) {
	ctx := context.Background()
	scope := map[string]string{"orch.test.case": randomHex(4)} // this test's containers only, whatever the instance
	a := newTestDocker(t, DockerConfig{Instance: "a-" + randomHex(3), Labels: scope})
	b := newTestDocker(t, DockerConfig{Instance: "b-" + randomHex(3), Labels: scope})
	none := newTestDocker(t, DockerConfig{Labels: scope})
	runs := map[*Docker]string{a: newRunID(t, a), b: newRunID(t, b), none: newRunID(t, none)}
	for d, run := range runs {
		execOK(t, d, Spec{RunID: run, Dir: workspace(t, "")}, "true")
	}
	if got := inspectRun(t, a, runs[a]).Config.Labels[LabelInstance]; got != a.cfg.Instance {
		t.Errorf("label %s = %q, want %q", LabelInstance, got, a.cfg.Instance)
	}
	left := func() (n int) {
		for _, run := range runs {
			n += len(runContainers(t, a, run))
		}
		return n
	}

	// Neither Release nor Exec touches another instance's container of the same name.
	if err := a.Release(ctx, runs[b], true); err != nil {
		t.Fatal(err)
	}
	if err := none.Release(ctx, runs[a], true); err != nil {
		t.Fatal(err)
	}
	if n := left(); n != 3 {
		t.Fatalf("%d containers after releasing other instances' runs, want 3", n)
	}
	if _, err := a.Exec(ctx, Spec{RunID: runs[b], Dir: workspace(t, ""), Args: []string{"true"}}, nil); err == nil ||
		!strings.Contains(err.Error(), "not this deployment's") {
		t.Errorf("Exec in another instance's container: %v", err)
	}

	dead := func(context.Context, string) (bool, error) { return false, nil }
	for _, d := range []*Docker{a, none, b} {
		removed, err := d.Reap(ctx, dead)
		if err != nil || removed != 1 {
			t.Errorf("Reap of instance %q = %d, %v; want its own container only", d.cfg.Instance, removed, err)
		}
		if n := len(runContainers(t, d, runs[d])); n != 0 {
			t.Errorf("instance %q: its container is still there", d.cfg.Instance)
		}
	}
}

// TestDockerReapAfterSIGKILL: a worker killed in the middle of a task leaves its container running; Reap removes it.
func TestDockerReapAfterSIGKILL(t *testing.T) {
	d := newTestDocker(t, DockerConfig{})
	run := newRunID(t, d)
	killHelperWorker(t, run, workspace(t, ""), false)
	cs := runContainers(t, d, run)
	if len(cs) != 1 || cs[0].State != "running" {
		t.Fatalf("the killed worker's container: %+v", cs)
	}
	removed, err := d.Reap(context.Background(), func(_ context.Context, id string) (bool, error) { return id != run, nil })
	if err != nil || removed != 1 {
		t.Errorf("Reap = %d, %v", removed, err)
	}
	if cs := runContainers(t, d, run); len(cs) != 0 {
		t.Errorf("left behind: %v", cs[0].Names)
	}
}

// A recovered attempt (its worker was killed with the agent running) removes the container the dead worker's agent
// still runs in before it starts its own, a container per task included: two agents never work in one workspace.
func TestDockerRecoveredRemovesTheDeadWorkersContainer(t *testing.T) {
	for _, perTask := range []bool{false, true} {
		t.Run("per task "+strconv.FormatBool(perTask), func(t *testing.T) {
			d := newTestDocker(t, DockerConfig{PerTask: perTask})
			run := newRunID(t, d)
			ws := workspace(t, "")
			killHelperWorker(t, run, ws, perTask)
			dead := runContainers(t, d, run)
			if len(dead) != 1 || dead[0].State != "running" {
				t.Fatalf("the killed worker's container: %+v", dead)
			}
			execOK(t, d, Spec{RunID: run, TaskID: "1", Dir: ws, Recovered: true}, "true")
			for _, c := range runContainers(t, d, run) {
				if c.ID == dead[0].ID {
					t.Errorf("the dead worker's container %v is still there (%s)", c.Names, c.State)
				}
			}
		})
	}
}

// killHelperWorker starts a worker process (TestDockerHelperWorker) that runs a long task of run in workspace ws, and
// kills it with SIGKILL once the task runs. env may name the worker's orch binary (envTestOrchBinary) and its task's
// script (envTestScript).
func killHelperWorker(t *testing.T, run, ws string, perTask bool, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDockerHelperWorker$", "-test.count=1")
	cmd.Env = append(os.Environ(), envTestHelper+"="+run, envTestSession+"="+testSession,
		"ORCH_SANDBOX_TEST_WS="+ws, "ORCH_SANDBOX_TEST_PER_TASK="+strconv.FormatBool(perTask))
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "HELPER READY" {
				ready <- true
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
		close(ready)
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("the helper worker ended without running its task")
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the helper worker did not start its task")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// TestDockerHelperWorker is the worker killHelperWorker starts and kills.
func TestDockerHelperWorker(t *testing.T) {
	run := os.Getenv(envTestHelper)
	if run == "" {
		t.Skip("the helper process of killHelperWorker")
	}
	d := newTestDocker(t, DockerConfig{PerTask: os.Getenv("ORCH_SANDBOX_TEST_PER_TASK") == "true",
		OrchBinary: os.Getenv(envTestOrchBinary)})
	script := "echo ready; sleep 300"
	if s := os.Getenv(envTestScript); s != "" {
		script = s
	}
	_, _ = d.Exec(context.Background(), Spec{RunID: run, TaskID: "1", Dir: os.Getenv("ORCH_SANDBOX_TEST_WS"),
		Args: []string{"/bin/sh", "-c", script}}, func(b []byte) {
		if string(b) == "ready" {
			os.Stdout.WriteString("HELPER READY\n")
		}
	})
}

func TestDockerWarmPool(t *testing.T) {
	cli, _ := testEngine(t)
	_ = cli.Close() // only drops idle connections: their goroutines would count
	goroutines := runtime.NumGoroutine()
	root := workspace(t, "") // the workspaces in it have its owner: they claim pool containers
	d := newTestDocker(t, DockerConfig{WarmPool: 2, WorkspaceRoot: root, PoolCheckEvery: time.Hour})
	ctx := context.Background()

	idle := waitIdle(t, d, 2)
	var ids []string
	for _, c := range idle {
		ids = append(ids, c.ID)
	}
	run := newRunID(t, d)
	ws := root // a plain directory used in place: the workspace pool containers are made for
	if res := execOK(t, d, Spec{RunID: run, TaskID: "1", Dir: ws}, "pwd; touch made"); string(res.Stdout) != ws+"\n" {
		t.Errorf("pwd = %q", res.Stdout)
	}
	if _, err := os.Stat(filepath.Join(ws, "made")); err != nil {
		t.Error(err)
	}
	c := inspectRun(t, d, run)
	if !slices.Contains(ids, c.ID) || c.Config.Labels[LabelPool] != "1" {
		t.Errorf("run %s got container %s (labels %v), not one of the pool's %v", run, c.ID, c.Config.Labels, ids)
	}

	// The claim is replaced in the background; then two concurrent claims get two different containers.
	waitIdle(t, d, 2)
	runs := []string{newRunID(t, d), newRunID(t, d)}
	got := make([]string, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() { got[i], errs[i] = d.pool.claim(ctx, runContainerName(runs[i])) })
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || got[0] == "" || got[1] == "" || got[0] == got[1] {
		t.Errorf("concurrent claims: %q %v", got, errs)
	}
	for i, run := range runs {
		execOK(t, d, Spec{RunID: run, Dir: root}, "true")
		if id := inspectRun(t, d, run).ID; id != got[i] {
			t.Errorf("run %s execs in %s, claimed %s", run, id, got[i])
		}
	}
	if _, err := d.pool.claim(ctx, runContainerName(runs[0])); !errors.Is(err, errNameTaken) && err != nil {
		t.Errorf("claiming for a run that has its container: %v", err)
	}

	// A workspace outside the root gets a container of its own, made for it; so does one inside the root, which in a
	// pool container would see the rest of the root (other runs' files), and a run with directories to mount.
	for name, spec := range map[string]Spec{
		"outside":             {Dir: workspace(t, "")},
		"inside":              {Dir: workspace(t, root)},
		"with objects to see": {Dir: root, ReadOnly: []string{workspace(t, "")}},
	} {
		spec.RunID = newRunID(t, d)
		res := execOK(t, d, spec, "ls -A "+root+" 2>/dev/null")
		if c := inspectRun(t, d, spec.RunID); c.Config.Labels[LabelPool] == "1" {
			t.Errorf("a workspace %s was given a pool container", name)
		}
		// Only the workspace's own directory is there (the engine made it to mount the workspace on).
		if name == "inside" && strings.TrimSpace(string(res.Stdout)) != filepath.Base(spec.Dir) {
			t.Errorf("a workspace inside the root sees the root's other files: %q", res.Stdout)
		}
	}

	// So does the root when another user runs: pool containers run as the root's owner.
	if os.Geteuid() == 0 {
		d2 := newTestDocker(t, DockerConfig{User: "0:0"})
		run := newRunID(t, d2)
		execOK(t, d2, Spec{RunID: run, Dir: root}, "true")
		if c := inspectRun(t, d2, run); c.Config.Labels[LabelPool] == "1" || c.Config.User != "0:0" {
			t.Errorf("a run as another user got container of user %q (pool %q)", c.Config.User, c.Config.Labels[LabelPool])
		}
		if err := d2.Release(ctx, run, true); err != nil {
			t.Error(err)
		}
		d2.Close() // its client's connections are not the pool's goroutines, counted below
	}

	// Close removes the idle containers and stops the refill goroutine; claimed ones stay with their runs.
	waitIdle(t, d, 2)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: client.Filters{}.Add("label", testLabel+"="+testSession, LabelPool+"=1")})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, c := range list.Items {
		left = append(left, containerName(c.Names))
	}
	slices.Sort(left)
	want := []string{runContainerName(run), runContainerName(runs[0]), runContainerName(runs[1])}
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("pool containers after Close: %v, want the claimed ones %v", left, want)
	}
	_ = cli.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, goroutines, buf[:runtime.Stack(buf, true)])
	}
}

func TestDockerReapPool(t *testing.T) {
	root := workspace(t, "")
	d := newTestDocker(t, DockerConfig{WarmPool: 1, WorkspaceRoot: root, PoolCheckEvery: time.Hour})
	ctx := context.Background()
	waitIdle(t, d, 1)
	// Two more, as a crashed worker would leave them.
	for range 2 {
		if err := d.pool.add(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitIdle(t, d, 3)
	run := newRunID(t, d)
	execOK(t, d, Spec{RunID: run, Dir: root}, "true")
	if c := inspectRun(t, d, run); c.Config.Labels[LabelPool] != "1" || c.Config.Labels[LabelRunID] != "" {
		t.Fatalf("not a claimed pool container: %v", c.Config.Labels)
	}
	removed, err := d.Reap(ctx, func(_ context.Context, id string) (bool, error) { return id != run, nil })
	if err != nil || removed != 2 {
		t.Errorf("Reap = %d, %v; want the claimed container of the ended run and one idle beyond the pool's size", removed, err)
	}
	if _, err := d.cli.ContainerInspect(ctx, runContainerName(run), client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the ended run's container: %v", err)
	}
	if idle, err := d.pool.idle(ctx); err != nil || len(idle) != 1 {
		t.Errorf("idle after Reap: %d, %v", len(idle), err)
	}
}

func TestDockerSimAgent(t *testing.T) {
	_, _ = testEngine(t)
	if testing.Short() {
		t.Skip("builds orch")
	}
	bin := filepath.Join(t.TempDir(), "orch")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "../cmd/orch")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building a static orch: %v\n%s", err, out)
	}
	d := newTestDocker(t, DockerConfig{OrchBinary: bin})
	ws := workspace(t, "")
	scenario := "tasks:\n  \"1.1\":\n    - output: \"first\"\n    - output: \"Hello from the sandbox\"\n      files: {made.txt: \"x\\n\"}\n      sh: \"id -u\"\n"
	if err := os.WriteFile(filepath.Join(ws, "s.sim.yaml"), []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	var lines []string
	res, err := d.Exec(context.Background(), Spec{RunID: newRunID(t, d), TaskID: "1.1", Dir: ws,
		// The prompt on stdin, as the sim adapter gives it: its guidance comes back in the reply.
		Args:  []string{OrchPath, "sim-agent", "--scenario", filepath.Join(ws, "s.sim.yaml"), "-p"},
		Stdin: []byte(agentPromptWithGuidance),
		Env:   []string{"ORCH_TASK_ID=1.1", "ORCH_ATTEMPT=2"}}, func(b []byte) { lines = append(lines, string(b)) })
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	var result string
	for _, l := range lines {
		if strings.Contains(l, `"type":"result"`) {
			result = l
		}
	}
	if !strings.Contains(result, `"subtype":"success"`) || !strings.Contains(result, `Hello from the sandbox\n`+strings.Split(testOwner(), ":")[0]) ||
		!strings.Contains(result, `GUIDANCE: use the \u001b escape`) {
		t.Errorf("no successful result line with the reply and its sh output in:\n%s", strings.Join(lines, "\n"))
	}
	if b, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(b) != "x\n" {
		t.Errorf("made.txt = %q, %v", b, err)
	}
}

// agentPromptWithGuidance is a prompt as agent.BuildPrompt writes it, with one item of guidance.
const agentPromptWithGuidance = "You are working on one task.\n\n## Guidance for this attempt\n\n" +
	"This guidance was given after earlier attempts at this task. Follow it; where it conflicts with the task above, the guidance wins.\n\n" +
	"> use the \x1b escape\n"

func TestDockerReadOnlyMounts(t *testing.T) {
	shared := t.TempDir()
	if err := os.WriteFile(filepath.Join(shared, "tool"), []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newTestDocker(t, DockerConfig{OrchBinary: staticShim(t), ReadOnly: []string{shared}})
	res := execOK(t, d, Spec{RunID: newRunID(t, d), Dir: workspace(t, "")},
		"cat "+shared+"/tool; touch "+shared+"/new 2>/dev/null || echo shared=ro; [ -x "+OrchPath+" ] && echo orch=x; "+
			"touch "+OrchPath+" 2>/dev/null || echo orch=ro")
	if got, want := string(res.Stdout), "v1\nshared=ro\norch=x\norch=ro\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestNewDockerErrors(t *testing.T) {
	ctx := context.Background()
	text := filepath.Join(t.TempDir(), "orch")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  DockerConfig
		want string
	}{
		{"dynamic orch", DockerConfig{OrchBinary: "/bin/sh"}, "CGO_ENABLED=0"},
		{"not a binary", DockerConfig{OrchBinary: text}, "not a Linux executable"},
		{"relative read-only mount", DockerConfig{ReadOnly: []string{"etc"}}, "not an absolute path"},
		{"pool without root", DockerConfig{WarmPool: 1}, "WarmPool needs WorkspaceRoot"},
		{"pool per task", DockerConfig{WarmPool: 1, PerTask: true, WorkspaceRoot: t.TempDir()}, "exclude each other"},
		{"reserved label", DockerConfig{Labels: map[string]string{LabelRunID: "x"}}, "orch's own"},
		{"silent engine", DockerConfig{Host: "unix:///nonexistent/docker.sock"}, "docker: the engine at unix:///nonexistent/docker.sock does not answer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := NewDocker(ctx, c.cfg)
			if err == nil {
				d.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to say %q", err, c.want)
			}
		})
	}
	t.Run("static orch and a missing image", func(t *testing.T) {
		_, _ = testEngine(t)
		_, err := NewDocker(ctx, DockerConfig{Host: os.Getenv("DOCKER_HOST"), OrchBinary: "/bin/busybox", Image: "orch-test-no-such-image:1"})
		if err == nil || !strings.Contains(err.Error(), `has no image "orch-test-no-such-image:1"`) {
			t.Errorf("err = %v", err)
		}
	})
}

// Sandbox escape basics: from inside a run's container there is no Docker socket, no network but loopback (none is
// named), and no other run's workspace.
func TestDockerEscapeBasics(t *testing.T) {
	d := newTestDocker(t, DockerConfig{})
	run, other := newRunID(t, d), newRunID(t, d)
	ws, otherWS := workspace(t, ""), workspace(t, "")
	execOK(t, d, Spec{RunID: other, Dir: otherWS}, "echo secret > notes")
	res := execOK(t, d, Spec{RunID: run, Dir: ws}, `
for s in /var/run/docker.sock /run/docker.sock; do [ -e "$s" ] && echo "socket $s"; done
grep -v -e '^Inter' -e '^ face' -e '^ *lo:' /proc/net/dev | sed 's/^/iface /'
[ -e "`+otherWS+`/notes" ] && echo "other workspace visible"
echo checked`)
	out := string(res.Stdout)
	if !strings.HasSuffix(out, "checked\n") || strings.Contains(out, "socket ") || strings.Contains(out, "iface ") ||
		strings.Contains(out, "other workspace") {
		t.Fatalf("the sandbox sees more than it should:\n%s", out)
	}
}
