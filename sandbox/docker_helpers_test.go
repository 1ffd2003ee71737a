package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// The Docker tests run against the real engine. Everything they create carries the label orch.test=<session>, and
// TestMain removes it all at the end, images included.

const (
	testLabel      = "orch.test"
	envTestSession = "ORCH_SANDBOX_TEST_SESSION"
	envTestHelper  = "ORCH_SANDBOX_TEST_HELPER"
)

var testSession = func() string {
	if s := os.Getenv(envTestSession); s != "" {
		return s
	}
	return randomHex(4)
}()

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == testShimArg {
		os.Exit(RunShim(os.Args[2:])) // the test binary is the local sandbox's shim
	}
	if os.Getenv("GORACE") == "" {
		// A race-enabled binary sleeps a second before it exits 0 (atexit_sleep_ms): every shim would.
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	code := m.Run()
	removeStaticShim()
	if os.Getenv(envTestHelper) == "" {
		cleanupDockerTests()
	}
	os.Exit(code)
}

// testEngineOpts honours DOCKER_HOST as cmd would; tests may read the environment, the package may not.
func testEngineOpts() []client.Opt {
	// The client negotiates the API version with the engine by default (older engines, from API 1.40, included).
	var opts []client.Opt
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		opts = append(opts, client.WithHost(h))
	}
	return opts
}

var engine struct {
	once  sync.Once
	cli   *client.Client
	image string
	built bool
	err   error
}

// testEngine returns a client and the test image, building the image once. Without an engine the test is skipped,
// except in CI, where it fails: CI must run these tests.
func testEngine(t testing.TB) (*client.Client, string) {
	t.Helper()
	engine.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cli, err := client.New(testEngineOpts()...)
		if err == nil {
			_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
		}
		if err != nil {
			engine.err = fmt.Errorf("no Docker engine: %w", err)
			return
		}
		engine.cli = cli
		engine.image, engine.built, engine.err = buildTestImage(ctx, cli)
	})
	if engine.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must run the Docker tests: %v", engine.err)
		}
		t.Skipf("skipping the Docker tests (they run in CI): %v", engine.err)
	}
	return engine.cli, engine.image
}

// testApplets are the busybox commands the test image has, as symlinks to busybox.
var testApplets = []string{"sh", "id", "sleep", "cat", "head", "tail", "yes", "touch", "echo", "ls", "mkdir", "rm",
	"pwd", "printf", "tr", "wget", "nc", "ip", "env", "kill", "stat", "grep", "wc", "true", "false", "hostname", "seq"}

const testDockerfile = "FROM scratch\nCOPY bin /bin\n"

// buildTestImage builds a tiny image (busybox and its applets, nothing else) from a tar context, or reuses it.
func buildTestImage(ctx context.Context, cli *client.Client) (tag string, built bool, err error) {
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return "", false, fmt.Errorf("the test image needs a static busybox at /bin/busybox (Debian: busybox-static): %w", err)
	}
	h := sha256.New()
	h.Write(bb)
	fmt.Fprint(h, testDockerfile, testApplets)
	tag = "orch-test-sandbox:" + hex.EncodeToString(h.Sum(nil))[:12]
	if _, err := cli.ImageInspect(ctx, tag); err == nil {
		return tag, false, nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(hdr *tar.Header, body []byte) {
		hdr.ModTime = time.Unix(0, 0)
		if err == nil {
			err = tw.WriteHeader(hdr)
		}
		if err == nil && body != nil {
			_, err = tw.Write(body)
		}
	}
	add(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(testDockerfile))}, []byte(testDockerfile))
	add(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755}, nil)
	add(&tar.Header{Name: "bin/busybox", Mode: 0o755, Size: int64(len(bb))}, bb)
	for _, a := range testApplets {
		add(&tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777}, nil)
	}
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return "", false, err
	}
	res, err := cli.ImageBuild(ctx, &buf, client.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true,
		Labels: map[string]string{testLabel: "1"}, Dockerfile: "Dockerfile"})
	if err != nil {
		return "", false, fmt.Errorf("building the test image: %w", err)
	}
	defer res.Body.Close()
	dec := json.NewDecoder(res.Body)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", false, fmt.Errorf("building the test image: %w", err)
		}
		if msg.Error != "" {
			return "", false, fmt.Errorf("building the test image: %s", msg.Error)
		}
	}
	return tag, true, nil
}

// cleanupDockerTests removes every container of this session and the test image.
func cleanupDockerTests() {
	if engine.cli == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := engine.cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: client.Filters{}.Add("label", testLabel+"="+testSession)})
	if err == nil {
		for _, c := range list.Items {
			_, _ = engine.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}
	}
	if engine.image != "" {
		_, _ = engine.cli.ImageRemove(ctx, engine.image, client.ImageRemoveOptions{PruneChildren: true})
	}
	_ = engine.cli.Close()
}

// newTestDocker returns a backend on the test image with small limits, closed when the test ends.
func newTestDocker(t testing.TB, cfg DockerConfig) *Docker {
	t.Helper()
	_, image := testEngine(t)
	cfg.Image = image
	cfg.Host = os.Getenv("DOCKER_HOST")
	labels := map[string]string{testLabel: testSession}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	cfg.Labels = labels
	if cfg.Memory == 0 {
		cfg.Memory = 256 << 20
	}
	if cfg.PIDs == 0 {
		cfg.PIDs = 256
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = 1
	}
	if cfg.TmpfsSize == 0 {
		cfg.TmpfsSize = 16 << 20
	}
	if cfg.StopGrace == 0 {
		cfg.StopGrace = time.Second
	}
	d, err := NewDocker(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

// newRunID returns a run id of this session; the run's containers are removed when the test ends.
func newRunID(t testing.TB, d *Docker) string {
	t.Helper()
	id := "t" + testSession + "-" + randomHex(4)
	t.Cleanup(func() {
		if err := d.Release(context.Background(), id, true); err != nil {
			t.Errorf("Release(%s, true): %v", id, err)
		}
	})
	return id
}

// testUID and testGID own the tests' workspaces when the tests run as root, as an ordinary user's would be owned:
// the agent then runs as a uid that is not root's. Otherwise the workspaces are the tests' own user's.
const testUID, testGID = 1000, 1000

// testOwner is the "uid:gid" that owns the directories workspace returns.
func testOwner() string {
	if os.Geteuid() == 0 {
		return fmt.Sprintf("%d:%d", testUID, testGID)
	}
	return fmt.Sprintf("%d:%d", os.Geteuid(), os.Getegid())
}

// workspace returns a new directory of mode 0755 owned by testOwner: a workspace, whose agent runs as testOwner, or a
// WorkspaceRoot.
func workspace(t testing.TB, parent string) string {
	t.Helper()
	if parent == "" {
		parent = t.TempDir()
		if os.Geteuid() == 0 {
			// The directories the test made above it are root's, mode 0700: the owner must pass them, as a local
			// agent runs as the owner.
			for _, d := range []string{parent, filepath.Dir(parent)} {
				if err := os.Chmod(d, 0o711); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	dir, err := os.MkdirTemp(parent, "ws-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, testUID, testGID); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fileOwner returns the "uid:gid" of a file on the host.
func fileOwner(t testing.TB, path string) string {
	t.Helper()
	u, err := owner(path)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// needRoot skips a test that must give files to other users.
func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give workspaces to other users")
	}
}

// runContainers lists every container of a run, by label and by the run container's name.
func runContainers(t testing.TB, d *Docker, runID string) []container.Summary {
	t.Helper()
	ctx := context.Background()
	list, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: client.Filters{}.Add("label", LabelRunID+"="+runID)})
	if err != nil {
		t.Fatal(err)
	}
	out := list.Items
	byName, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: client.Filters{}.Add("name", "^/?"+runContainerName(runID)+"$")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range byName.Items {
		if c.Labels[LabelRunID] != runID {
			out = append(out, c)
		}
	}
	return out
}

// inspectRun returns the run container, failing the test when there is none.
func inspectRun(t testing.TB, d *Docker, runID string) container.InspectResponse {
	t.Helper()
	info, err := d.cli.ContainerInspect(context.Background(), runContainerName(runID), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("inspecting the container of run %s: %v", runID, err)
	}
	return info.Container
}

// execOK runs a shell script and fails the test unless it could be run.
func execOK(t testing.TB, d *Docker, spec Spec, script string) Result {
	t.Helper()
	spec.Args = []string{"/bin/sh", "-c", script}
	res, err := d.Exec(context.Background(), spec, nil)
	if err != nil {
		t.Fatalf("Exec(%q): %v", script, err)
	}
	return res
}

// waitIdle waits until the pool holds n idle containers.
func waitIdle(t testing.TB, d *Docker, n int) []container.Summary {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		idle, err := d.pool.idle(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(idle) >= n {
			return idle
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool holds %d idle containers after 60s, want %d", len(idle), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
