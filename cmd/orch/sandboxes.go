package main

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/sandbox"
	"github.com/orchrun/orch/worker"
)

// dockers opens the Docker sandboxes this process needs, one per image and scenario, and closes them at the end.
type dockers struct {
	a    *app
	self string // the orch binary, mounted into containers for the sim agent when it is static
	// pool and root configure the warm pool: idle containers kept started, mounting root (the workspace of a
	// long-running server), so that a new run's first task starts with an exec.
	pool int
	root string
	mu   sync.Mutex
	open map[string]*sandbox.Docker
}

func newDockers(a *app, self string) *dockers {
	return &dockers{a: a, self: self, open: map[string]*sandbox.Docker{}}
}

// forRun returns the sandbox a run's options ask for.
func (d *dockers) forRun(opts jobs.Options) (worker.Sandbox, error) {
	if opts.Sandbox != "docker" {
		return nil, fmt.Errorf("unknown sandbox %q", opts.Sandbox)
	}
	// A scenario inside the workspace root is mounted with it already; one elsewhere needs its own mount, so its own
	// sandbox. The API key goes only to claude runs, and orch's own binary only into sim runs' containers, so they
	// have their own sandboxes too.
	scenario := opts.SimScenario
	if d.root != "" && within(d.root, scenario) {
		scenario = ""
	}
	claude, sim := opts.Agent == "claude", opts.Agent == "sim"
	key := fmt.Sprintf("%s\x00%s\x00%t\x00%t", opts.Image, scenario, claude, sim)
	d.mu.Lock()
	defer d.mu.Unlock()
	if dk, ok := d.open[key]; ok {
		return dk, nil
	}
	cfg := sandbox.DockerConfig{
		Host:    d.a.env("DOCKER_HOST"),
		Image:   opts.Image,
		Network: d.a.env("ORCH_DOCKER_NETWORK"),
		Logger:  d.a.log,
	}
	if sim && isStatic(d.self) {
		// Only the sim agent runs orch inside the container; other agents' containers do not see it.
		cfg.OrchBinary = d.self
	}
	if d.pool > 0 && d.root != "" && scenario == "" {
		cfg.WarmPool, cfg.WorkspaceRoot = d.pool, d.root
	}
	if scenario != "" {
		// The scenario is read inside the container, at the same path (a file mount: its directory may be the
		// workspace itself, which is mounted already).
		cfg.ReadOnly = append(cfg.ReadOnly, scenario)
	}
	if key := d.a.env("ANTHROPIC_API_KEY"); key != "" && claude {
		cfg.Env = append(cfg.Env, "ANTHROPIC_API_KEY="+key)
	}
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

// within reports whether path is inside dir.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
