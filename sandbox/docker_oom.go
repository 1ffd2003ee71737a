package sandbox

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// oomEventWait is how long the events fallback waits for an "oom" event: the engine reports it about half a second
// after the kill.
const oomEventWait = 2 * time.Second

// oomKilled tells whether the memory limit killed the process; base is the container's OOM-kill count read before
// the exec started (-1: it could not be read). An exec killed by the OOM killer shows up, as verified on the engines
// we run on, in the container's memory cgroup counter (oom_kill in memory.events on cgroup v2, memory.oom_control on
// v1) and as an "oom" event, from about half a second to seconds later on a loaded engine. Neither names the
// process: an exec is blamed only for kills beyond those counted before it began, so a late event, or a count, of an
// earlier exec's OOM kill is never taken for this one's. The counter is exact and immediate; the container's
// State.OOMKilled (which says that something in the container's life was OOM-killed, not what) serves when the
// container has stopped and nothing earlier was; the events are the fallback when the cgroup files cannot be read.
func (d *Docker) oomKilled(ctx context.Context, t target, execID string, base int64, since time.Time) bool {
	info, err := d.cli.ContainerInspect(ctx, t.id, client.ContainerInspectOptions{})
	if err != nil || info.Container.State == nil {
		return d.oomEvent(ctx, t.id, execID, since, "", max(base, 0))
	}
	st := info.Container.State
	life := st.StartedAt // a restart gives the container a new memory cgroup, counting from 0
	before := base
	if before < 0 {
		// What the execs judged before this one saw of the container's life: a failed read does not hand them over.
		before = d.ooms.kills(t.id, life)
	}
	if st.Running {
		if n := d.oomCount(ctx, t.id); n >= 0 {
			d.ooms.note(t.id, life, n)
			return n > before
		}
	} else if st.OOMKilled && before == 0 {
		return true
	}
	if d.oomEvent(ctx, t.id, execID, since, life, before) {
		d.ooms.note(t.id, life, before+1)
		return true
	}
	return false
}

// oomLedger remembers, for each container whose execs were OOM-killed, how many kills of its current life (a restart
// begins another) the execs judged so far account for.
type oomLedger struct {
	mu sync.Mutex
	m  map[string]oomMark // by container id
}

type oomMark struct {
	life  string // the container's State.StartedAt
	kills int64
}

// kills returns the OOM kills of the container's life that earlier execs account for.
func (l *oomLedger) kills(id, life string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m, ok := l.m[id]; ok && m.life == life {
		return m.kills
	}
	return 0
}

// note records that the container's life has had kills OOM kills.
func (l *oomLedger) note(id, life string, kills int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if kills <= 0 || life == "" {
		delete(l.m, id)
		return
	}
	if l.m == nil {
		l.m = make(map[string]oomMark)
	}
	l.m[id] = oomMark{life: life, kills: kills}
}

// forget drops what is known of a container that is gone.
func (l *oomLedger) forget(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, id)
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
	// The script prints the count just before it exits 0, and nothing else: the output, whole once the stream has
	// ended, is the answer. The exec's exit code is not asked for: the engine may record it only after it closed the
	// stream, and a read that fails on that race used to send the check to the events.
	n, err := strconv.ParseInt(string(bytes.TrimSpace(out.buf)), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// oomEvent tells from the engine's events whether the exec was OOM-killed: whether more "oom" events of the
// container came after the exec's "exec_start" than the before kills of the container's life (life, its
// State.StartedAt; "": unknown) that had not had theirs by then, waiting up to oomEventWait for them. The engine
// orders its events, so this holds whatever the clocks of the two hosts say; an earlier exec's OOM kill, whether
// its event came before this exec started or late, after it, does not count.
func (d *Docker) oomEvent(ctx context.Context, id, execID string, since time.Time, life string, before int64) bool {
	ctx, cancel := context.WithTimeout(ctx, oomEventWait+5*time.Second)
	defer cancel() // also ends the client's reading goroutine
	from := since.Add(-time.Minute).UTC().Format(time.RFC3339Nano)
	if _, err := time.Parse(time.RFC3339Nano, life); err == nil {
		from = life // the engine's clock, as the events'
	}
	ev := d.cli.Events(ctx, client.EventsListOptions{
		Since: from,
		Until: time.Now().Add(oomEventWait).UTC().Format(time.RFC3339Nano),
		Filters: client.Filters{}.Add("type", "container").Add("container", id).
			Add("event", string(events.ActionOOM), string(events.ActionExecStart)),
	})
	tally := oomTally{execID: execID, before: before}
	for {
		select {
		case m := <-ev.Messages:
			if tally.see(m) {
				return true
			}
		case <-ev.Err:
			return false
		}
	}
}

// oomTally counts, in the engine's order, the "oom" events of a container before and after the "exec_start" of the
// exec being judged.
type oomTally struct {
	execID string
	before int64 // the OOM kills earlier execs account for
	prior  int64 // "oom" events before the exec started
	after  int64 // and since
	seen   bool  // the exec's "exec_start"
}

// see takes the next event and reports whether the exec is now known to have been OOM-killed: more "oom" events
// came after it started than there are earlier kills whose events had not come by then (they may come late).
func (o *oomTally) see(m events.Message) bool {
	switch {
	case strings.HasPrefix(string(m.Action), string(events.ActionExecStart)) && m.Actor.Attributes["execID"] == o.execID:
		o.seen = true
	case m.Action == events.ActionOOM && o.seen:
		o.after++
	case m.Action == events.ActionOOM:
		o.prior++
	}
	return o.seen && o.after > max(0, o.before-o.prior)
}
