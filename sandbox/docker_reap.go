package sandbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// Release frees what the sandbox holds for a run. final=false (the run is parked for a human): the run's container
// is stopped, keeping its state for the next Exec, which starts it again. final=true (the run ended): every
// container of the run is removed, with its anonymous volumes. A run without containers is not an error. Containers of
// another instance (DockerConfig.Instance) are left alone.
func (d *Docker) Release(ctx context.Context, runID string, final bool) error {
	if err := checkRunID(runID); err != nil {
		return err
	}
	unlock, err := d.runs.lock(ctx, runID)
	if err != nil {
		return err
	}
	defer unlock()
	name := runContainerName(runID)
	found := map[string]string{} // id -> name
	info, err := d.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	switch {
	case err == nil && info.Container.Config != nil && d.mine(info.Container.Config.Labels):
		found[info.Container.ID] = name
	case err != nil && !cerrdefs.IsNotFound(err):
		return fmt.Errorf("releasing run %s: %w", runID, err)
	}
	// Per-task containers, and a run container that lost its name in an interrupted claim, carry the label.
	list, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: d.labelFilters(LabelRunID + "=" + runID)})
	if err != nil {
		return fmt.Errorf("releasing run %s: listing its containers: %w", runID, err)
	}
	for _, c := range list.Items {
		if d.mine(c.Labels) {
			found[c.ID] = containerName(c.Names)
		}
	}
	var errs []error
	for id, n := range found {
		if final || n != name { // a per-task container is never used again
			errs = append(errs, d.remove(ctx, id))
			continue
		}
		grace := int(math.Ceil(d.cfg.StopGrace.Seconds()))
		if _, err := d.cli.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &grace}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("stopping container %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// Reap removes the containers of runs that alive says are over (or unknown), unclaimed pool containers that are not
// paused (see pool), and idle pool containers of this backend's settings beyond WarmPool (the leftovers of a crashed
// worker).
// Callers run it when a worker starts and then periodically. It only looks at containers that carry
// DockerConfig.Labels and this backend's DockerConfig.Instance (without one: no instance at all). A run whose
// liveness cannot be told (alive returns an error) keeps its containers; the error is returned with the others once
// everything else is done.
//
// A pool container claimed by a run keeps its labels orch.pool=1 and orch.run_id="": its run is read from its name,
// "orch-<run id>". Every other container names its run in orch.run_id.
func (d *Docker) Reap(ctx context.Context, alive func(ctx context.Context, runID string) (bool, error)) (removed int, err error) {
	list, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: d.labelFilters(LabelRunID)})
	if err != nil {
		return 0, fmt.Errorf("reaping: listing containers: %w", err)
	}
	var errs []error
	verdict := map[string]bool{}
	isAlive := func(runID string) bool {
		if v, ok := verdict[runID]; ok {
			return v
		}
		v, err := alive(ctx, runID)
		if err != nil {
			errs = append(errs, fmt.Errorf("reaping: is run %s alive: %w", runID, err))
			v = true // when in doubt, keep
		}
		verdict[runID] = v
		return v
	}
	var idle []container.Summary
	for _, c := range list.Items {
		name := containerName(c.Names)
		if !strings.HasPrefix(name, namePrefix) || !d.mine(c.Labels) {
			continue
		}
		var runID string
		switch {
		case c.Labels[LabelPool] == "1" && strings.HasPrefix(name, poolNamePrefix):
			switch {
			case c.State != container.StatePaused:
				// Idle pool containers are paused. One that is not was claimed by a claimer that did not get to
				// rename it, or stopped with the engine: nobody will claim it; remove it below.
			case c.Labels[LabelPoolConfig] == d.hash:
				idle = append(idle, c)
				continue
			default:
				continue // another deployment's pool, or another worker's settings: theirs to manage
			}
		case c.Labels[LabelPool] == "1":
			runID = strings.TrimPrefix(name, namePrefix)
		default:
			runID = c.Labels[LabelRunID]
		}
		if runID != "" && isAlive(runID) {
			continue
		}
		target := c.ID
		if strings.HasPrefix(name, poolNamePrefix) {
			// By name: an unpaused pool container may be a claim in progress; once renamed to its run it must live.
			target = name
		}
		if err := d.remove(ctx, target); err != nil {
			if !cerrdefs.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		removed++
	}
	// Keep the newest; remove the rest by name, so that one claimed meanwhile (renamed) is left alone. The engine
	// refuses nothing to a forced removal, paused or not.
	slices.SortFunc(idle, func(a, b container.Summary) int { return int(b.Created - a.Created) })
	for _, c := range idle[min(len(idle), d.cfg.WarmPool):] {
		if _, err := d.cli.ContainerRemove(ctx, containerName(c.Names), client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			if !cerrdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("reaping pool container %s: %w", containerName(c.Names), err))
			}
			continue
		}
		removed++
	}
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return removed, errors.Join(errs...)
}
