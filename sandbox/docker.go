package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/orchrun/orch/internal/lazyre"
)

// Labels and names that mark orch's containers. Labels cannot change after a container is created, so a pool
// container that has been claimed by a run still says orch.pool=1 and orch.run_id="": it is recognised as the run's
// by its name, "orch-<run id>" (see pool for how a claim works).
const (
	LabelRunID  = "orch.run_id"
	LabelTaskID = "orch.task_id"
	LabelPool   = "orch.pool"
	// LabelInstance names the deployment that created the container (DockerConfig.Instance): Reap, Release and the
	// pool touch only their own deployment's containers on an engine that several share.
	LabelInstance = "orch.instance"
	// LabelPoolConfig holds a hash of the settings a pool container was created with, so that a worker never claims a
	// container made for another image, workspace root or set of limits.
	LabelPoolConfig = "orch.pool_config"
	// LabelBinary holds a hash of the orch binary mounted into the container (DockerConfig.OrchBinary).
	LabelBinary = "orch.binary"

	namePrefix     = "orch-"
	poolNamePrefix = "orch-pool-"
	// OrchPath is where DockerConfig.OrchBinary appears inside the container: callers run "/orch/orch sim-agent …".
	OrchPath = "/orch/orch"
)

// DefaultImage is the image built from deploy/sandbox/Dockerfile.
const DefaultImage = "orch-sandbox:latest"

// DockerConfig configures the Docker backend. The zero value works against the local engine with the default image.
//
// The defaults are hardened: the agent runs as the owner of its workspace with no capabilities (even when that owner
// is root), no new privileges, Docker's default seccomp profile (never overridden here), a read-only root filesystem
// with a private /tmp, no network, and memory, CPU and process limits. Each can be loosened below; each field says when that is a reasonable thing to do.
type DockerConfig struct {
	// Host is the engine's address as DOCKER_HOST spells it ("unix:///var/run/docker.sock", "tcp://10.0.0.5:2376").
	// Empty means the platform's default socket. This package reads no environment: cmd passes DOCKER_HOST here.
	Host string
	// Image is what the containers run (`--image`). Default DefaultImage. It needs /bin/sh; the sim agent needs nothing
	// else because orch mounts its own static binary (OrchBinary).
	Image string

	// User runs every process in the container, as numeric "uid:gid". Empty (the default) means the owner of the
	// run's workspace, read from the directory when the run's container is created: the agent can write where its
	// owner can, whatever the directory's mode, and its files belong to that owner. A workspace owned by root makes
	// the agent uid 0: still without any capability (the bounding set is empty, so no exec gives one back), it cannot
	// override file permissions or change owners, but it owns every root-owned file it reaches through a writable
	// mount. Set it to run every agent as one user (e.g. "1000:1000") whatever owns the workspaces; it must be able to write
	// them.
	User string
	// CapAdd gives back capabilities (all are dropped). Needed only by tools that insist on one, e.g. CHOWN for a
	// package manager that chowns what it unpacks.
	CapAdd []string
	// AllowNewPrivileges lifts no-new-privileges. Needed only when the image relies on setuid programs (sudo, ping)
	// that the agent must run; every such program is a way up to root inside the container.
	AllowNewPrivileges bool
	// WritableRootFS makes the root filesystem writable. Needed only by agents that install system packages at run
	// time; what they write lives in the container and goes with it, never into the image.
	WritableRootFS bool
	// TmpfsSize bounds the /tmp tmpfs in bytes; it counts against Memory. Default 512 MiB.
	TmpfsSize int64
	// Network is the network the containers join. Empty means "none": only a loopback interface. Name a network to
	// let the agent reach what that network reaches: the claude agent must reach the Anthropic API, best through a
	// network whose only way out is an egress proxy that allows just that.
	Network string
	// Memory is the memory limit in bytes, and also the memory+swap limit (no swap). Default 4 GiB: Node, git and a
	// test run. -1 removes the limit, for hosts that account memory some other way.
	Memory int64
	// CPUs is how many CPUs' worth of time the container gets. Default 2. -1 removes the limit.
	CPUs float64
	// PIDs bounds the processes and threads in the container: a fork bomb stops there. Default 1024. -1 removes the
	// limit (only for a build that really runs more threads than that).
	PIDs int64
	// NoInit runs the keep-alive process as PID 1 instead of Docker's init. Needed only with an image whose
	// entrypoint is its own init; without an init nothing reaps the agent's orphaned children.
	NoInit bool

	// OrchBinary is a host path of a static orch binary, mounted read-only at OrchPath: every exec runs under its shim
	// (RunShim), which ends what the agent leaves running with the exec and with its worker; the sim agent and
	// claude's permission hook are orch too. Empty mounts nothing (and runs no shim). A dynamically linked binary is
	// refused: the image has no libc to load it with. Containers carry a hash of the binary (LabelBinary): one made
	// with another orch (an upgrade while a run was parked) is made again, since a file mount keeps the old binary.
	OrchBinary string
	// ReadOnly lists host paths mounted read-only at the same path in the container (a toolchain, a shared cache).
	ReadOnly []string
	// Env holds KEY=VALUE pairs given to every process (e.g. ANTHROPIC_API_KEY). They are set per exec, never on the
	// container (so `docker inspect` of the container does not show them), and never logged. Spec.Env wins over them.
	Env []string
	// Instance names this deployment on the engine (the label orch.instance). Reap, Release and the pool look only at
	// containers with this same instance, so deployments that share an engine never remove each other's containers;
	// containers made without one (older ones included) are never touched by a deployment that has one. Empty means
	// the containers without the label.
	Instance string
	// Labels are put on every container, and Reap and the pool only look at containers that carry them all.
	Labels map[string]string

	// PerTask gives every Exec a fresh container, removed when it returns, instead of one container per run kept
	// for all its tasks and attempts. Nothing outside the workspace survives from one attempt to the next (an
	// agent's session store included), and every task pays for a cold start. The pool is not used.
	PerTask bool
	// WarmPool is how many idle containers to keep started (and paused), so that a new run's first task starts with
	// an exec instead of a create and a start (see BenchmarkDockerStart). Default 0: off. Keep it small (1–4 per
	// worker): the pool only has to cover the runs that start within the second it takes to replace a claimed
	// container, while every idle one holds its processes, its page cache and an engine slot. A container cannot get
	// a mount or a user after it is created, so a pool container is made for WorkspaceRoot itself — mounted as a run's
	// container would mount it, run as its owner (or User) — and only a run whose workspace is WorkspaceRoot, with
	// nothing else to mount (a plain directory used in place), claims one: its container is then exactly the one it
	// would have been given. Runs in worktrees of their own get containers of their own, made for them.
	WarmPool int
	// WorkspaceRoot is the workspace pool containers are made for; required by WarmPool.
	WorkspaceRoot string
	// Hide are host directories of orch's own (the state directory, where the store's journal and every run's
	// worktree live) that a container whose workspace holds them must not see: each is covered by an empty read-only
	// tmpfs. Directories outside a container's workspace are not mounted anyway.
	Hide []string
	// PoolCheckEvery is how often the pool is checked and refilled besides after each claim. Default 30s.
	PoolCheckEvery time.Duration

	// StopGrace is how long the processes of a parked run get between SIGTERM and SIGKILL. Default 5s.
	StopGrace time.Duration
	// Logger receives what the backend has to say (never the environment). Default: discarded.
	Logger *slog.Logger
}

// Docker runs agents in containers: one per run, created on the run's first Exec and kept (stopped while the run is
// parked) until the run ends, or one per task with DockerConfig.PerTask.
type Docker struct {
	cfg     DockerConfig
	cli     *client.Client
	host    string
	log     *slog.Logger
	runs    keyedMutex
	pool    *pool  // nil when WarmPool is 0
	poolAs  string // the user of pool containers: cfg.User or the owner of WorkspaceRoot
	binary  string // the hash of OrchBinary (LabelBinary)
	hash    string // poolConfigHash
	wg      sync.WaitGroup
	closing sync.Once
	ooms    oomLedger
	// noOOMCounter makes the OOM check skip the cgroup counter, so that tests reach the events fallback.
	noOOMCounter bool
}

var (
	_ interface {
		Exec(context.Context, Spec, func([]byte)) (Result, error)
		Release(context.Context, string, bool) error
	} = (*Docker)(nil)
	_ interface {
		Exec(context.Context, Spec, func([]byte)) (Result, error)
		Release(context.Context, string, bool) error
	} = (*Local)(nil)
)

// reservedLabels are orch's own: DockerConfig.Labels cannot set them.
var reservedLabels = []string{LabelRunID, LabelTaskID, LabelPool, LabelPoolConfig, LabelInstance, LabelBinary}

// NewDocker checks cfg, connects to the engine (negotiating the API version down to what the engine speaks, 1.40 at
// least) and checks that it answers and has the image. With WarmPool set it starts filling the pool; Close stops it.
func NewDocker(ctx context.Context, cfg DockerConfig) (*Docker, error) {
	if err := fillDockerDefaults(&cfg); err != nil {
		return nil, err
	}
	host := cfg.Host
	if host == "" {
		host = client.DefaultDockerHost
	}
	// The client negotiates the API version with the engine by default (older engines, from API 1.40, included).
	var opts []client.Opt
	if cfg.Host != "" {
		opts = append(opts, client.WithHost(cfg.Host))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker: connecting to %s: %w", host, err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("docker: the engine at %s does not answer: %w", host, err)
	}
	if _, err := cli.ImageInspect(ctx, cfg.Image); err != nil {
		_ = cli.Close()
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("docker: the engine at %s has no image %q (build it, e.g. docker build -t %s deploy/sandbox)", host, cfg.Image, DefaultImage)
		}
		return nil, fmt.Errorf("docker: inspecting image %q: %w", cfg.Image, err)
	}
	d := &Docker{cfg: cfg, cli: cli, host: host, log: cfg.Logger, poolAs: cfg.User}
	if cfg.OrchBinary != "" {
		if d.binary, err = fileHash(cfg.OrchBinary); err != nil {
			_ = cli.Close()
			return nil, fmt.Errorf("docker: reading OrchBinary: %w", err)
		}
	}
	if cfg.WorkspaceRoot != "" && d.poolAs == "" {
		if d.poolAs, err = owner(cfg.WorkspaceRoot); err != nil {
			_ = cli.Close()
			return nil, fmt.Errorf("docker: the owner of WorkspaceRoot: %w", err)
		}
	}
	d.hash = d.poolConfigHash()
	if cfg.WarmPool > 0 {
		d.pool = newPool(d, cfg.WarmPool, cfg.PoolCheckEvery)
		d.pool.start(&d.wg)
	}
	return d, nil
}

// fillDockerDefaults sets what cfg leaves zero to its default, then checks it.
func fillDockerDefaults(cfg *DockerConfig) error {
	setDefault(&cfg.Image, DefaultImage)
	setDefault(&cfg.TmpfsSize, 512<<20)
	setDefault(&cfg.Memory, 4<<30)
	setDefault(&cfg.CPUs, 2)
	setDefault(&cfg.PIDs, 1024)
	cfg.PoolCheckEvery = positiveOr(cfg.PoolCheckEvery, 30*time.Second)
	cfg.StopGrace = positiveOr(cfg.StopGrace, 5*time.Second)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := checkDockerLimits(cfg); err != nil {
		return err
	}
	return checkDockerPaths(cfg)
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

func positiveOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// checkDockerLimits checks the container's limits, the pool's settings and the labels.
func checkDockerLimits(cfg *DockerConfig) error {
	switch {
	case cfg.User != "" && !numericUserPattern.MatchString(cfg.User):
		return fmt.Errorf("docker: User %q: want numeric uid:gid, e.g. 1000:1000", cfg.User)
	case cfg.TmpfsSize < 0:
		return errors.New("docker: TmpfsSize must not be negative")
	case cfg.Memory < -1 || cfg.Memory > 0 && cfg.Memory < 6<<20:
		return fmt.Errorf("docker: Memory %d: want -1 (no limit) or at least 6 MiB", cfg.Memory)
	case cfg.CPUs < 0 && cfg.CPUs != -1:
		return fmt.Errorf("docker: CPUs %v: want -1 (no limit) or a positive number", cfg.CPUs)
	case cfg.PIDs < -1:
		return fmt.Errorf("docker: PIDs %d: want -1 (no limit) or a positive number", cfg.PIDs)
	case cfg.WarmPool < 0:
		return fmt.Errorf("docker: WarmPool %d must not be negative", cfg.WarmPool)
	case cfg.WarmPool > 0 && cfg.PerTask:
		return errors.New("docker: WarmPool and PerTask exclude each other: a per-task container is never claimed from the pool")
	case cfg.WarmPool > 0 && cfg.WorkspaceRoot == "":
		return errors.New("docker: WarmPool needs WorkspaceRoot: pool containers are created before anyone knows the workspace, so they mount the directory that holds them all")
	}
	return checkLabels(cfg.Labels)
}

// checkLabels refuses a label of orch's own among the labels cfg adds to the containers.
func checkLabels(labels map[string]string) error {
	for k := range labels {
		if slices.Contains(reservedLabels, k) {
			return fmt.Errorf("docker: label %q is orch's own and cannot be set in Labels", k)
		}
	}
	return nil
}

// checkDockerPaths checks the host paths cfg names, and cleans them.
func checkDockerPaths(cfg *DockerConfig) error {
	if cfg.WorkspaceRoot != "" {
		if err := checkHostDir("WorkspaceRoot", cfg.WorkspaceRoot); err != nil {
			return err
		}
		cfg.WorkspaceRoot = filepath.Clean(cfg.WorkspaceRoot)
	}
	for i, p := range cfg.Hide {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("docker: hidden directory %q is not an absolute path", p)
		}
		cfg.Hide[i] = filepath.Clean(p)
	}
	for i, p := range cfg.ReadOnly {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("docker: read-only mount %q is not an absolute path", p)
		}
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("docker: read-only mount: %w", err)
		}
		cfg.ReadOnly[i] = filepath.Clean(p)
	}
	if cfg.OrchBinary != "" {
		return checkStaticBinary(cfg.OrchBinary)
	}
	return nil
}

func checkHostDir(what, p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("docker: %s %q is not an absolute path", what, p)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("docker: %s: %w", what, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("docker: %s %s is not a directory", what, p)
	}
	return nil
}

// checkStaticBinary refuses a binary that needs a dynamic loader: the container's image may have no libc, and the
// sim agent must run in any image with a shell.
func checkStaticBinary(p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("docker: OrchBinary %q is not an absolute path", p)
	}
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("docker: OrchBinary %s is not a Linux executable: %w", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("docker: OrchBinary %s is dynamically linked; the sim agent in Docker needs a static orch (build it with CGO_ENABLED=0; `make build` does)", p)
		}
	}
	return nil
}

// numericUserPattern is a "uid:gid" user. Names are refused: the /tmp tmpfs is given to the user by number, and a
// name means whatever the image's /etc/passwd says.
var numericUserPattern = lazyre.New(`^[0-9]{1,10}:[0-9]{1,10}$`)

// Close stops the pool and removes the pool containers this backend created that no run has claimed. Containers of
// runs stay: they belong to their runs (Release) or to Reap.
func (d *Docker) Close() error {
	var err error
	d.closing.Do(func() {
		if d.pool != nil {
			d.pool.shutdown()
			d.wg.Wait() // no pool container is created after this
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err = d.pool.removeOwn(ctx)
			cancel()
		}
		err = errors.Join(err, d.cli.Close())
	})
	return err
}

// runIDPattern is what a container name allows; the run id is part of the name.
var runIDPattern = lazyre.New(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$`)

func checkRunID(id string) error {
	if !runIDPattern.MatchString(id) {
		return fmt.Errorf("sandbox: run id %q cannot name a container (want letters, digits, '_', '.', '-')", id)
	}
	if strings.HasPrefix(namePrefix+id, poolNamePrefix) {
		return fmt.Errorf("sandbox: run id %q is reserved for the warm pool", id)
	}
	return nil
}

func runContainerName(runID string) string { return namePrefix + runID }

// createSpec is one container to create.
type createSpec struct {
	name   string
	labels map[string]string
	// workspace is bind-mounted read-write at the same path: the agent's work lands on the host, never in the
	// container layer, and a resumed agent finds its session under the same path.
	workspace string
	needs
}

// createOptions is the whole hardened container configuration.
func (d *Docker) createOptions(cs createSpec) client.ContainerCreateOptions {
	cfg := d.cfg
	labels := make(map[string]string, len(cfg.Labels)+len(cs.labels))
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	for k, v := range cs.labels {
		labels[k] = v
	}
	if cfg.Instance != "" {
		labels[LabelInstance] = cfg.Instance
	}
	if d.binary != "" {
		labels[LabelBinary] = d.binary
	}
	mounts := d.mounts(cs.workspace, cs.needs)
	// A tmpfs mounted over a directory of the image would take that directory's owner and mode; the agent's user
	// must own /tmp whatever the image says. exec, against the engine's default noexec: `go test` and other build
	// tools run the binaries they build from the temporary directory.
	uid, gid, _ := strings.Cut(cs.user, ":")
	tmpfs := fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,mode=1777,uid=%s,gid=%s", cfg.TmpfsSize, uid, gid)
	network := container.NetworkMode("none")
	if cfg.Network != "" {
		network = container.NetworkMode(cfg.Network)
	}
	res := container.Resources{}
	if cfg.Memory > 0 {
		res.Memory, res.MemorySwap = cfg.Memory, cfg.Memory
	}
	if cfg.CPUs > 0 {
		res.NanoCPUs = int64(cfg.CPUs * 1e9)
	}
	if cfg.PIDs > 0 {
		pids := cfg.PIDs
		res.PidsLimit = &pids
	}
	var secOpt []string
	if !cfg.AllowNewPrivileges {
		secOpt = append(secOpt, "no-new-privileges:true")
	}
	useInit := !cfg.NoInit
	return client.ContainerCreateOptions{
		Name: cs.name,
		Config: &container.Config{
			Image:  cfg.Image,
			User:   cs.user,
			Labels: labels,
			// PID 1 only keeps the container alive for the execs. An image with nothing but a shell has no sleep: the
			// fallback blocks on stdin, which OpenStdin keeps open and nobody writes to.
			Entrypoint: []string{"/bin/sh", "-c", "sleep 2147483647 2>/dev/null || while read -r _; do :; done"},
			OpenStdin:  true,
			WorkingDir: cs.workspace,
		},
		HostConfig: &container.HostConfig{
			NetworkMode:    network,
			CapDrop:        []string{"ALL"},
			CapAdd:         cfg.CapAdd,
			SecurityOpt:    secOpt,
			ReadonlyRootfs: !cfg.WritableRootFS,
			Tmpfs:          map[string]string{"/tmp": tmpfs},
			Mounts:         mounts,
			Resources:      res,
			Init:           &useInit,
			RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyDisabled},
		},
	}
}

// create creates and starts a container. It returns cerrdefs' conflict error when the name is taken.
func (d *Docker) create(ctx context.Context, cs createSpec) (string, error) {
	opts := d.createOptions(cs)
	res, err := d.cli.ContainerCreate(ctx, opts)
	if err != nil {
		if cerrdefs.IsConflict(err) {
			return "", err
		}
		return "", fmt.Errorf("creating container %s: %w", cs.name, err)
	}
	for _, w := range res.Warnings {
		d.log.Warn("docker: creating container", "name", cs.name, "warning", w)
	}
	if _, err := d.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		d.remove(context.WithoutCancel(ctx), res.ID)
		return "", fmt.Errorf("starting container %s: %w", cs.name, err)
	}
	return res.ID, nil
}

// remove removes a container and its anonymous volumes (the image's per-run state, e.g. the agent's config dir),
// whatever state it is in. A container already gone is not an error.
func (d *Docker) remove(ctx context.Context, idOrName string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := d.cli.ContainerRemove(ctx, idOrName, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		// A removal already under way (the engine says "is already in progress") ends the same way.
		if cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "in progress") {
			return nil
		}
		return fmt.Errorf("removing container %s: %w", idOrName, err)
	}
	d.ooms.forget(idOrName)
	return nil
}

// poolConfigHash names the settings of a pool container: containers made with other settings are not claimed.
func (d *Docker) poolConfigHash() string {
	opts := d.createOptions(createSpec{workspace: d.cfg.WorkspaceRoot, needs: needs{user: d.poolAs}})
	// The hidden directories are in the mounts, and the mounts in the hash: a pool made before a directory was hidden
	// is not claimed.
	b, err := json.Marshal(struct {
		C *container.Config
		H *container.HostConfig
	}{opts.Config, opts.HostConfig})
	if err != nil {
		panic(err) // plain structs always marshal
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:6])
}

// labelFilters selects orch's containers of this deployment (DockerConfig.Labels and Instance) with the given extra
// labels. The engine cannot select containers that lack a label: without an Instance, callers check mine too.
func (d *Docker) labelFilters(extra ...string) client.Filters {
	f := client.Filters{}
	for k, v := range d.cfg.Labels {
		f.Add("label", k+"="+v)
	}
	if d.cfg.Instance != "" {
		f.Add("label", LabelInstance+"="+d.cfg.Instance)
	}
	f.Add("label", extra...)
	return f
}

// mine reports whether a container with these labels belongs to this deployment's instance.
func (d *Docker) mine(labels map[string]string) bool {
	return labels[LabelInstance] == d.cfg.Instance
}

// fileHash is a short hash of a file's content.
func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b)
}

// containerName returns a summary's name without the leading slash the engine gives it.
func containerName(names []string) string {
	for _, n := range names {
		n = strings.TrimPrefix(n, "/")
		if !strings.Contains(n, "/") { // linked names look like "/other/alias"
			return n
		}
	}
	return ""
}

// keyedMutex serialises work per key (a run) and lets waiters give up with their context.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedLock
}

type keyedLock struct {
	ch   chan struct{}
	refs int
}

func (k *keyedMutex) lock(ctx context.Context, key string) (unlock func(), err error) {
	k.mu.Lock()
	if k.m == nil {
		k.m = make(map[string]*keyedLock)
	}
	l := k.m[key]
	if l == nil {
		l = &keyedLock{ch: make(chan struct{}, 1)}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()
	release := func() {
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
