package sandbox

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// oomEventWait is how long the events fallback waits for an "oom" event: the engine reports it about half a second
// after the kill.
const oomEventWait = 2 * time.Second

// oomKilled tells whether the memory limit killed the process. The container's State.OOMKilled only covers its
// PID 1; an exec killed by the OOM killer shows up, as verified on the engines we run on, in the container's memory
// cgroup counter (oom_kill in memory.events on cgroup v2, memory.oom_control on v1) and as an "oom" event about
// half a second later. The counter is exact and immediate; the event is the fallback when the cgroup files cannot
// be read.
func (d *Docker) oomKilled(ctx context.Context, t target, execID string, base int64, since time.Time) bool {
	info, err := d.cli.ContainerInspect(ctx, t.id, client.ContainerInspectOptions{})
	if err == nil && info.Container.State != nil {
		if info.Container.State.OOMKilled {
			return true
		}
		if info.Container.State.Running && base >= 0 {
			if n := d.oomCount(ctx, t.id); n >= 0 {
				return n > base
			}
		}
	}
	return d.oomEvent(ctx, t.id, execID, since)
}

// oomScript prints the memory cgroup's OOM-kill count with nothing but sh builtins.
const oomScript = `for f in /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control; do
  [ -r "$f" ] && while read -r k v; do [ "$k" = oom_kill ] && echo "$v" && exit 0; done < "$f"
done
exit 1`

// oomCount returns the container's OOM-kill count, or -1 when it cannot be read.
func (d *Docker) oomCount(ctx context.Context, id string) int64 {
	if d.noOOMCounter {
		return -1
	}
	ctx, cancel := context.WithTimeout(ctx, killTimeout)
	defer cancel()
	ex, err := d.cli.ExecCreate(ctx, id, client.ExecCreateOptions{AttachStdout: true,
		AttachStderr: true, Cmd: []string{"/bin/sh", "-c", oomScript}})
	if err != nil {
		return -1
	}
	att, err := d.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return -1
	}
	defer att.Close()
	stop := context.AfterFunc(ctx, att.Close)
	defer stop()
	out := &tailBuffer{max: 64}
	if _, err := stdcopy.StdCopy(out, &tailBuffer{max: 64}, att.Reader); err != nil {
		return -1
	}
	if r, err := d.cli.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{}); err != nil || r.Running || r.ExitCode != 0 {
		return -1
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(out.buf)), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// oomEvent looks for an "oom" event of the container after the "exec_start" event of the process, waiting up to
// oomEventWait for it. The engine orders its events, so this holds whatever the clocks of the two hosts say; an OOM
// kill of an earlier exec in the same container does not count.
func (d *Docker) oomEvent(ctx context.Context, id, execID string, since time.Time) bool {
	ctx, cancel := context.WithTimeout(ctx, oomEventWait+5*time.Second)
	defer cancel() // also ends the client's reading goroutine
	ev := d.cli.Events(ctx, client.EventsListOptions{
		Since: since.Add(-time.Minute).UTC().Format(time.RFC3339Nano),
		Until: time.Now().Add(oomEventWait).UTC().Format(time.RFC3339Nano),
		Filters: client.Filters{}.Add("type", "container").Add("container", id).
			Add("event", string(events.ActionOOM), string(events.ActionExecStart)),
	})
	started := false
	for {
		select {
		case m := <-ev.Messages:
			switch {
			case strings.HasPrefix(string(m.Action), string(events.ActionExecStart)) && m.Actor.Attributes["execID"] == execID:
				started = true
			case m.Action == events.ActionOOM && started:
				return true
			}
		case <-ev.Err:
			return false
		}
	}
}
