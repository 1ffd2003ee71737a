package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	dockerOnce  sync.Once
	dockerImage string
	staticOrch  string
	dockerErr   error
)

// dockerSetup builds a static orch and a tiny sandbox image (busybox from Debian's busybox-static, nothing else).
// Without an engine the test is skipped on a laptop and fails in CI.
func dockerSetup(t *testing.T) (image, orchStatic string) {
	t.Helper()
	if err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the Docker Engine does not answer: %v", err)
		}
		t.Skip("no Docker Engine here")
	}
	dockerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "orch-docker-test")
		if err != nil {
			dockerErr = err
			return
		}
		staticOrch = filepath.Join(dir, "orch")
		build := exec.Command("go", "build", "-o", staticOrch, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			dockerErr = err
			dockerImage = string(out)
			return
		}
		busybox, err := os.ReadFile("/bin/busybox")
		if err != nil {
			dockerErr = err
			return
		}
		ctxDir := filepath.Join(dir, "image")
		os.MkdirAll(ctxDir, 0o755)
		os.WriteFile(filepath.Join(ctxDir, "busybox"), busybox, 0o755)
		os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte("FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\",\"--install\",\"-s\",\"/bin\"]\nLABEL orch.test=cmd\n"), 0o644)
		dockerImage = "orch-cmd-test-sandbox:latest"
		if out, err := exec.Command("docker", "build", "-q", "-t", dockerImage, ctxDir).CombinedOutput(); err != nil {
			dockerErr = err
			dockerImage = string(out)
		}
	})
	if dockerErr != nil {
		t.Fatalf("preparing the docker test: %v %s", dockerErr, dockerImage)
	}
	return dockerImage, staticOrch
}

func orchContainers(t *testing.T, runID string) string {
	t.Helper()
	out, _ := exec.Command("docker", "ps", "-a", "--filter", "label=orch.run_id="+runID, "--format", "{{.Names}}").Output()
	return strings.TrimSpace(string(out))
}

// The acceptance: the ambiguous plan in the Docker sandbox asks, resumes and completes with the files in the
// workspace, and no orch container is left afterwards — also when the run parks and is resumed by another process.
func TestDockerSandboxRun(t *testing.T) {
	t.Parallel()
	image, bin := dockerSetup(t)
	dir := workdir(t) // the agent runs as its owner, and writes its files there
	run := func(stdin string, args ...string) result {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Env = append(os.Environ(), "ORCH_REDIS_URL=", "ANTHROPIC_API_KEY=", "ORCH_SANDBOX=")
		out, _ := cmd.CombinedOutput()
		return result{stdout: string(out), code: cmd.ProcessState.ExitCode()}
	}
	r := run("B\n", "run", "--sandbox", "docker", "--image", image, "--agent", "sim", "examples/plans/ambiguous_task.md")
	must(t, r, 0, "sandbox docker", "NEEDS HUMAN INPUT", "Task 1.1: COMPLETED")
	if data, err := os.ReadFile(filepath.Join(dir, "orch-demo/cache.py")); err != nil || !strings.Contains(string(data), "lru_cache") {
		t.Fatalf("the agent's file is not in the workspace: %v", err)
	}
	if left := orchContainers(t, runID(t, r)); left != "" {
		t.Fatalf("containers left after the run: %s", left)
	}

	parked := run("", "run", "--sandbox", "docker", "--image", image, "--agent", "sim", "examples/plans/ambiguous_task.md")
	must(t, parked, 3, "is parked")
	id := runID(t, parked)
	// The parked run's container is kept, labelled with this deployment's instance: the embedded store's directory.
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label=orch.run_id="+id, "--format", `{{.Label "orch.instance"}}`).Output()
	if want := instanceID("", filepath.Join(dir, ".orch")); err != nil || strings.TrimSpace(string(out)) != want {
		t.Errorf("the parked run's container has instance %q (%v), want %q", out, err, want)
	}
	must(t, run("", "escalation", "resolve", id, "--choose", "B"), 0, "resolved")
	must(t, run("", "resume", id), 0, "Task 1.1: COMPLETED")
	if left := orchContainers(t, id); left != "" {
		t.Fatalf("containers left after the resumed run: %s", left)
	}
}

// A dynamically linked orch cannot run in an image without libc: --sandbox docker --agent sim says so up front.
func TestDockerSimNeedsStaticOrch(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	if isStatic(orchBin) {
		t.Skip("the test binary is static here")
	}
	must(t, orch(t, dir, "", "run", "--sandbox", "docker", "--agent", "sim", "examples/plans/hello.md"), 2, "static")
}

// The services default to the Docker sandbox (DESIGN §3): a worker started with no ORCH_SANDBOX checks the engine
// before it takes any work, and says so when it does not answer.
func TestWorkerDefaultsToDocker(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	r := orchEnv(t, dir, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock", "ORCH_HTTP_ADDR=127.0.0.1:0"}, nil,
		"worker", "--agent", "sim")
	must(t, r, 2, "docker", "does not answer")
}

// The Docker sandbox's settings are checked before anything starts.
func TestDockerSettingsChecked(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	for env, want := range map[string]string{
		"ORCH_SANDBOX_USER=agent":  "ORCH_SANDBOX_USER",
		"ORCH_INSTANCE=a b":        "ORCH_INSTANCE",
		"ORCH_SANDBOX_USER=1000":   "uid:gid",
		"ORCH_INSTANCE=-leading-x": "ORCH_INSTANCE",
	} {
		r := orchEnv(t, dir, []string{env, "ORCH_HTTP_ADDR=127.0.0.1:0"}, nil, "worker", "--agent", "sim")
		must(t, r, 2, want)
	}
}

// A Docker run in a repository owned by a user (mode 0755) and in one owned by root (mode 0700): the agent works in
// the run's worktree as the repository's owner, the task is committed on the run's branch, and everything orch and
// the agent made in the repository belongs to its owner.
func TestDockerRunInARepository(t *testing.T) {
	t.Parallel()
	image, bin := dockerSetup(t)
	for _, tt := range []struct {
		owner string
		mode  os.FileMode
	}{{"1000:1000", 0o755}, {"0:0", 0o700}} {
		t.Run(tt.owner, func(t *testing.T) {
			dir := workdir(t)
			for d := filepath.Dir(dir); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
				os.Chmod(d, 0o755) // the owner must reach the repository
			}
			gitT(t, dir, "init", "-q", "-b", "main")
			gitT(t, dir, "add", "-A")
			gitT(t, dir, "commit", "-q", "-m", "first")
			if out, err := exec.Command("chown", "-R", tt.owner, dir).CombinedOutput(); err != nil {
				t.Fatalf("chown: %v %s", err, out)
			}
			os.Chmod(dir, tt.mode)
			cmd := exec.Command(bin, "run", "--sandbox", "docker", "--image", image, "--agent", "sim", "--json",
				"examples/plans/ambiguous_task.md")
			cmd.Dir = dir
			cmd.Stdin = strings.NewReader("B\n")
			cmd.Env = append(os.Environ(), "ORCH_REDIS_URL=", "ANTHROPIC_API_KEY=", "ORCH_SANDBOX=", "ORCH_GIT_PUSH=")
			out, _ := cmd.CombinedOutput()
			if cmd.ProcessState.ExitCode() != 0 {
				t.Fatalf("exit %d:\n%s", cmd.ProcessState.ExitCode(), out)
			}
			end := lastEvent(t, string(out), "run_completed")
			branch, _ := end["branch"].(string)
			if end["commits"] != 1.0 || !strings.HasPrefix(branch, "orch/") {
				t.Fatalf("run_completed: %v", end)
			}
			if got := gitT(t, dir, "show", branch+":orch-demo/cache.py"); !strings.Contains(got, "lru_cache") {
				t.Fatalf("the branch lacks the agent's file: %q", got)
			}
			if status := gitT(t, dir, "status", "--porcelain"); status != "" {
				t.Fatalf("the user's checkout changed:\n%s", status)
			}
			uid, _, _ := strings.Cut(tt.owner, ":")
			// The embedded store's files are orch's own state, written by orch's user (root here).
			left, _ := exec.Command("find", dir, "-not", "-uid", uid, "-not", "-path", "*/.orch/lock",
				"-not", "-path", "*/.orch/redis.*", "-not", "-path", "*/.orch/owners",
				"-not", "-path", "*/.orch/history", "-not", "-path", "*/.orch/history/*").CombinedOutput()
			if strings.TrimSpace(string(left)) != "" {
				t.Fatalf("files not owned by %s:\n%s", tt.owner, left)
			}
		})
	}
}
