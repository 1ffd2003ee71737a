package sandbox

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// errNameTaken says the run's container name is in use: someone else made or claimed the run's container.
var errNameTaken = errors.New("sandbox: the run's container name is taken")

// pool keeps a few idle containers ready so that a new run starts with an exec. It is a component with start and
// shutdown: one goroutine refills the pool after each claim and every PoolCheckEvery.
//
// A pool container is named "orch-pool-<random>", labelled orch.pool=1, orch.run_id="" and orch.pool_config=<hash
// of its settings, its user included>, started, and then paused: idle means paused. Only a run whose workspace it
// can serve (fits) claims one, in two steps:
//
//  1. Unpause it, by its pool name. The engine checks and clears the paused state under the container's lock, so of
//     any number of claimers exactly one succeeds; the others get an error ("is not paused", or no such container
//     once it is renamed) and try the next one.
//  2. Rename it to "orch-<run id>". The engine reserves the new name atomically, so if the run got a container
//     meanwhile the rename fails with a conflict and the container goes back to the pool (paused again).
//
// Renaming alone is not a claim: the engine resolves the old name before it locks the container, so two claimers
// that found the same container could both rename it, one after the other, and both believe they own it (seen
// happen in the test of concurrent claims). Labels cannot change after creation, so a claimed container keeps
// orch.pool=1 and orch.run_id="" and from then on its name alone says whose it is (Reap reads it so).
//
// The pool is shared by every worker with the same settings on the engine: each one tops it up to its size, and
// Reap removes what lies beyond it (a crashed worker's leftovers) and pool containers that are not paused (a claim
// or a refill cut short).
type pool struct {
	d     *Docker
	size  int
	every time.Duration
	kick  chan struct{}
	done  chan struct{} // closed by shutdown

	mu  sync.Mutex
	own map[string]bool // names of unclaimed containers this pool created, removed by Close
}

// poolOpTimeout bounds one refill: listing the pool and creating what it lacks.
const poolOpTimeout = time.Minute

func newPool(d *Docker, size int, every time.Duration) *pool {
	return &pool{d: d, size: size, every: every, kick: make(chan struct{}, 1), done: make(chan struct{}),
		own: make(map[string]bool)}
}

// start fills the pool in the background until shutdown.
func (p *pool) start(wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(p.every)
		defer tick.Stop()
		for {
			if err := p.fillSafely(); err != nil {
				p.d.log.Warn("docker: filling the warm pool", "err", err)
			}
			select {
			case <-p.done:
				return
			case <-p.kick:
			case <-tick.C:
			}
		}
	}()
}

// shutdown stops the refill loop. A container being created is finished first, so that it is known and removed
// with the others: the owner waits on the WaitGroup given to start, then calls removeOwn.
func (p *pool) shutdown() { close(p.done) }

func (p *pool) fillSafely() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), poolOpTimeout)
	defer cancel()
	return p.fill(ctx)
}

// fill starts containers until the pool holds size idle ones.
func (p *pool) fill(ctx context.Context) error {
	idle, err := p.idle(ctx)
	if err != nil {
		return err
	}
	names := make(map[string]bool, len(idle))
	for _, c := range idle {
		names[containerName(c.Names)] = true
	}
	p.mu.Lock()
	for n := range p.own {
		if !names[n] { // claimed, or removed by someone else
			delete(p.own, n)
		}
	}
	p.mu.Unlock()
	for n := len(idle); n < p.size; n++ {
		select {
		case <-p.done:
			return nil
		default:
		}
		if err := p.add(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (p *pool) add(ctx context.Context) error {
	name := poolNamePrefix + randomHex(6)
	p.mu.Lock()
	p.own[name] = true // before the create, so that Close removes it even if the create is cut short
	p.mu.Unlock()
	id, err := p.d.create(ctx, createSpec{name: name, workspace: p.d.cfg.WorkspaceRoot, needs: needs{user: p.d.poolAs},
		labels: map[string]string{LabelRunID: "", LabelTaskID: "", LabelPool: "1", LabelPoolConfig: p.d.hash}})
	if err == nil {
		if _, err = p.d.cli.ContainerPause(ctx, id, client.ContainerPauseOptions{}); err != nil {
			err = fmt.Errorf("pausing pool container %s: %w", name, err)
		}
	}
	if err != nil {
		_ = p.d.remove(context.WithoutCancel(ctx), name)
		p.mu.Lock()
		delete(p.own, name)
		p.mu.Unlock()
	}
	return err
}

// fits reports whether a pool container is the container the agent of workspace dir would be given: made for
// WorkspaceRoot itself, as its user, with nothing else to mount. A workspace inside the root would see the rest of it.
func (p *pool) fits(dir string, n needs) bool {
	return dir == p.d.cfg.WorkspaceRoot && n.user == p.d.poolAs && len(n.readOnly) == 0
}

// idle lists the paused, unclaimed pool containers made with this backend's settings.
func (p *pool) idle(ctx context.Context) ([]container.Summary, error) {
	f := p.d.labelFilters(LabelPool+"=1", LabelPoolConfig+"="+p.d.hash)
	f.Add("status", "paused")
	list, err := p.d.cli.ContainerList(ctx, client.ContainerListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("listing pool containers: %w", err)
	}
	var idle []container.Summary
	for _, c := range list.Items {
		if strings.HasPrefix(containerName(c.Names), poolNamePrefix) {
			idle = append(idle, c)
		}
	}
	return idle, nil
}

// claim takes an idle pool container for the container name given (see pool) and returns its id, or "" when no
// container could be had. errNameTaken means a container with that name exists already.
func (p *pool) claim(ctx context.Context, name string) (string, error) {
	idle, err := p.idle(ctx)
	if err != nil {
		return "", err
	}
	// Concurrent claimers that try the containers in the same order would all fight over the first one.
	rand.Shuffle(len(idle), func(i, j int) { idle[i], idle[j] = idle[j], idle[i] })
	var lost error
	for _, c := range idle {
		old := containerName(c.Names)
		if _, err := p.d.cli.ContainerUnpause(ctx, old, client.ContainerUnpauseOptions{}); err != nil {
			lost = err // another claimer's, most likely
			continue
		}
		p.mu.Lock()
		delete(p.own, old)
		p.mu.Unlock()
		select {
		case p.kick <- struct{}{}:
		default:
		}
		_, err := p.d.cli.ContainerRename(ctx, c.ID, client.ContainerRenameOptions{NewName: name})
		if err == nil {
			return c.ID, nil
		}
		if cerrdefs.IsConflict(err) {
			// The run has its container already: give this one back.
			if _, perr := p.d.cli.ContainerPause(context.WithoutCancel(ctx), c.ID, client.ContainerPauseOptions{}); perr != nil {
				_ = p.d.remove(context.WithoutCancel(ctx), c.ID)
			} else {
				p.mu.Lock()
				p.own[old] = true // back in the pool: Close must remove it with the others
				p.mu.Unlock()
			}
			return "", errNameTaken
		}
		_ = p.d.remove(context.WithoutCancel(ctx), c.ID) // unpaused under its pool name, nobody could claim it
		return "", fmt.Errorf("claiming %s: %w", old, err)
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if lost != nil && len(idle) > 0 {
		p.d.log.Debug("docker: every idle pool container was taken", "last_err", lost)
	}
	return "", nil
}

// removeOwn removes the unclaimed containers this pool created. It removes them by name, so one claimed meanwhile
// (renamed) is left to its run.
func (p *pool) removeOwn(ctx context.Context) error {
	p.mu.Lock()
	names := make([]string, 0, len(p.own))
	for n := range p.own {
		names = append(names, n)
	}
	p.own = make(map[string]bool)
	p.mu.Unlock()
	var errs []error
	for _, n := range names {
		errs = append(errs, p.d.remove(ctx, n))
	}
	return errors.Join(errs...)
}
