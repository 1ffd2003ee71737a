package main

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/sandbox"
	"github.com/orchrun/orch/worker"
)

// dockers opens the Docker sandboxes this process needs, one per image and scenario, and closes them at the end.
type dockers struct {
	a    *app
	self string // the orch binary, mounted into containers for the sim agent when it is static
	dockerSettings
	// pool and root configure the warm pool: idle containers kept started, mounting root (the workspace of a
	// long-running server), so that a new run's first task starts with an exec.
	pool int
	root string
	mu   sync.Mutex
	open map[string]*sandbox.Docker
}

func newDockers(a *app, self string, s dockerSettings) *dockers {
	return &dockers{a: a, self: self, dockerSettings: s, open: map[string]*sandbox.Docker{}}
}

// dockerSettings are the Docker sandbox's settings that hold for every run of this process.
type dockerSettings struct {
	// instance names this deployment's containers on the engine (sandbox.DockerConfig.Instance).
	instance string
	// user runs the agents ("uid:gid"); empty: the owner of each run's workspace.
	user string
	// warmPool is how many idle containers a long-running worker keeps started (ORCH_DOCKER_WARM_POOL; 0: none).
	warmPool int
	// hide are orch's own directories (the state directory, the worktrees' root) that no container sees, should a
	// workspace hold them.
	hide []string
	// agentPass names what agents are given of orch's environment besides the allowlist (orch.yaml agent_env).
	agentPass []string
}

// maxWarmPool bounds the idle containers one worker keeps: each holds memory on the engine.
const maxWarmPool = 64

var (
	instancePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)
	userPattern     = regexp.MustCompile(`^[0-9]{1,10}:[0-9]{1,10}$`)
)

// dockerSettings reads ORCH_INSTANCE and ORCH_SANDBOX_USER, and derives the instance when it is not set.
func (a *app) dockerSettings(cmd *cobra.Command) (dockerSettings, error) {
	s := dockerSettings{instance: a.env("ORCH_INSTANCE"), user: a.env("ORCH_SANDBOX_USER")}
	if s.instance == "" {
		s.instance = instanceID(a.set.str(cmd, "redis", "ORCH_REDIS_URL", a.set.file.Redis, ""),
			a.set.str(cmd, "state-dir", "ORCH_STATE_DIR", a.set.file.StateDir, ".orch"))
	} else if !instancePattern.MatchString(s.instance) {
		return s, usageErr("ORCH_INSTANCE: %q: want up to 63 letters, digits, '_', '.' or '-'", s.instance)
	}
	if s.user != "" && !userPattern.MatchString(s.user) {
		return s, usageErr("ORCH_SANDBOX_USER: %q: want a numeric uid:gid, e.g. 1000:1000", safetext.OneLine(s.user, 40))
	}
	for _, dir := range []string{a.set.str(cmd, "state-dir", "ORCH_STATE_DIR", a.set.file.StateDir, ".orch"),
		a.set.str(cmd, "", "ORCH_WORKTREES", a.set.file.Git.Worktrees, "")} {
		if abs, err := filepath.Abs(dir); err == nil && dir != "" {
			s.hide = append(s.hide, abs)
		}
	}
	s.warmPool = 1
	if v := strings.TrimSpace(a.env("ORCH_DOCKER_WARM_POOL")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxWarmPool {
			return s, usageErr("ORCH_DOCKER_WARM_POOL: %q: want a number of containers from 0 (none kept) to %d", safetext.OneLine(v, 40), maxWarmPool)
		}
		s.warmPool = n
	}
	return s, nil
}

// instanceID is the instance of a deployment that does not name one: what makes its workers one deployment is the
// state they share, the Redis (its URL without the password, which must not be guessable from a label, nor the
// options) or the embedded store's directory. Workers that spell the same Redis differently get different ids, and
// do not reap each other's leftovers: give them one ORCH_INSTANCE.
func instanceID(redisURL, stateDir string) string {
	what := "redis " + redisIdentity(redisURL)
	if redisURL == "" {
		abs, err := filepath.Abs(stateDir)
		if err != nil {
			abs = stateDir
		}
		what = "state-dir " + abs
	}
	h := sha256.Sum256([]byte(what))
	return hex.EncodeToString(h[:6])
}

// redisIdentity is a Redis URL without its password, query and fragment.
func redisIdentity(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return redactURL(raw)
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}

// forRun returns the sandbox a run's options ask for.
func (d *dockers) forRun(opts jobs.Options) (worker.Sandbox, error) {
	if opts.Sandbox != "docker" {
		return nil, fmt.Errorf("unknown sandbox %q", opts.Sandbox)
	}
	// The scenario is mounted on its own, read-only: a container sees its run's workspace alone, and a run in a
	// repository works in a worktree that is not where the scenario lies. So each scenario has its own sandbox. An
	// agent CLI's own credential goes only to that CLI's runs, so they have their own sandboxes too.
	scenario := opts.SimScenario
	key := fmt.Sprintf("%s\x00%s\x00%s", opts.Image, scenario, envAgent(opts))
	d.mu.Lock()
	defer d.mu.Unlock()
	if dk, ok := d.open[key]; ok {
		return dk, nil
	}
	cfg := sandbox.DockerConfig{
		Host:     d.a.env("DOCKER_HOST"),
		Image:    opts.Image,
		User:     d.user,
		Network:  d.a.env("ORCH_DOCKER_NETWORK"),
		Instance: d.instance,
		Logger:   d.a.log,
		Hide:     d.hide,
	}
	if isStatic(d.self) {
		// Every agent runs under orch's shim (sandbox.RunShim), which ends what the agent starts with its exec and
		// with this worker; the sim agent is orch, and claude runs orch as its permission hook.
		cfg.OrchBinary = d.self
	} else {
		// A dynamically linked orch may not run in the image (no libc, or another one): no shim. What an agent
		// leaves running lives on in the run's container until the run is parked or ends, and the exec of a worker
		// that dies runs on until the run is taken up again or reaped (sandbox.Docker.Exec).
		d.a.log.Warn("docker: this orch binary is dynamically linked and cannot run in the containers; an agent's " +
			"background processes outlive its task in the run's container, and its exec outlives a worker that dies " +
			"(build a static orch: make build, or CGO_ENABLED=0 go build ./cmd/orch)")
	}
	if d.pool > 0 && d.root != "" {
		cfg.WarmPool, cfg.WorkspaceRoot = d.pool, d.root
	}
	if scenario != "" {
		// The scenario is read inside the container, at the same path (a file mount: its directory may be the
		// workspace itself, which is mounted already).
		cfg.ReadOnly = append(cfg.ReadOnly, scenario)
	}
	// The image gives PATH, HOME and the rest of what a program needs there: the agent is given the allowlist's part
	// that is the same on both sides, and its CLI's own credential and settings.
	cfg.Env = sandbox.AgentEnv(d.a.environ(), sandbox.EnvPolicy{Container: true, Agent: envAgent(opts), Pass: d.agentPass})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dk, err := sandbox.NewDocker(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d.open[key] = dk
	return dk, nil
}

// reap removes the containers of runs that ended or are unknown.
func (d *dockers) reap(ctx context.Context, store *store.Store) {
	d.mu.Lock()
	var any *sandbox.Docker
	for _, dk := range d.open {
		any = dk
		break
	}
	d.mu.Unlock()
	if any == nil {
		return
	}
	n, err := any.Reap(ctx, func(ctx context.Context, runID string) (bool, error) {
		r, err := store.Get(ctx, runID)
		if errors.Is(err, jobs.ErrRunNotFound) {
			return false, nil
		}
		if err != nil {
			return true, err
		}
		return !r.Status.Terminal(), nil
	})
	if err != nil {
		d.a.log.Warn("reaping sandbox containers", "err", err)
	} else if n > 0 {
		d.a.log.Info("reaped sandbox containers", "removed", n)
	}
}

func (d *dockers) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, dk := range d.open {
		dk.Close()
		delete(d.open, k)
	}
}

// isStatic reports whether the binary at path needs no dynamic loader, so that it runs in an image without libc.
func isStatic(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// checkDocker validates a docker run before it is created: the sim agent runs orch itself inside the container.
func checkDocker(opts jobs.Options, self string) error {
	if opts.Sandbox != "docker" || opts.Agent != "sim" {
		return nil
	}
	if !isStatic(self) {
		return usageErr("--sandbox docker --agent sim runs orch itself in the container, and this orch binary is dynamically linked; build a static one: make build (or CGO_ENABLED=0 go build ./cmd/orch)")
	}
	if _, err := os.Stat(opts.SimScenario); err != nil {
		return usageErr("scenario %s: %v", opts.SimScenario, err)
	}
	return nil
}
