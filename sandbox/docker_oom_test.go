package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// fakeEngine answers the calls the OOM check makes, as an engine would once an exec has ended by SIGKILL: the
// container's state, its events so far, and reads of its memory cgroup's OOM-kill count.
type fakeEngine struct {
	mu     sync.Mutex
	state  container.State
	events []events.Message
	counts []int64 // the next reads of the counter, in turn; -1: the read fails
}

func (f *fakeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := r.URL.Path[strings.Index(r.URL.Path[1:], "/")+1:] // without the API version
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/json") && strings.HasPrefix(path, "/containers/"):
		st := f.state
		_ = json.NewEncoder(w).Encode(container.InspectResponse{ID: "c1", State: &st})
	case r.Method == http.MethodGet && path == "/events":
		enc := json.NewEncoder(w)
		for _, m := range f.events {
			_ = enc.Encode(m)
		}
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/exec"):
		if len(f.counts) == 0 || f.counts[0] < 0 {
			if len(f.counts) > 0 {
				f.counts = f.counts[1:]
			}
			http.Error(w, `{"message":"engine too busy"}`, http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"Id": "count"})
	case r.Method == http.MethodPost && path == "/exec/count/start":
		n := f.counts[0]
		f.counts = f.counts[1:]
		_, _ = io.Copy(io.Discard, r.Body) // unread request bytes would make the close below a reset
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		// As the engine does when an exec's stream ends: its side closes, and the client's close ends the connection.
		// Closing at once could reset the connection before the client read the count.
		defer func() {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
				go func() { _, _ = io.Copy(io.Discard, conn); _ = conn.Close() }()
				return
			}
			_ = conn.Close()
		}()
		_, _ = buf.WriteString("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\n" +
			"Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
		_ = buf.Flush()
		out := strconv.FormatInt(n, 10) + "\n"
		frame := binary.BigEndian.AppendUint32([]byte{byte(stdcopy.Stdout), 0, 0, 0}, uint32(len(out)))
		_, _ = conn.Write(append(frame, out...))
	default:
		http.NotFound(w, r)
	}
}

func execStart(id string) events.Message {
	return events.Message{Type: events.ContainerEventType, Action: events.ActionExecStart + ": /bin/sh -c x",
		Actor: events.Actor{ID: "c1", Attributes: map[string]string{"execID": id}}}
}

var oomMsg = events.Message{Type: events.ContainerEventType, Action: events.ActionOOM, Actor: events.Actor{ID: "c1"}}

// TestOOMKilledBlamesNoExecForAnEarlierKill: after an exec of a container was OOM-killed, the next one, killed by
// SIGKILL for another cause while the engine is slow (its counter reads fail, the first kill's "oom" event comes
// only after the second exec started, and a newer engine's State.OOMKilled stays set for the container's life), is
// not reported as OOM-killed; a third exec that is, is.
func TestOOMKilledBlamesNoExecForAnEarlierKill(t *testing.T) {
	f := &fakeEngine{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	cli, err := client.New(client.WithHost("tcp://"+srv.Listener.Addr().String()), client.WithAPIVersion("1.41"))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	d := &Docker{cli: cli}
	tg := target{id: "c1", name: "orch-run"}
	life := "2026-01-02T03:04:05.000000006Z"
	set := func(st container.State, evs []events.Message, counts ...int64) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.state, f.events, f.counts = st, evs, counts
	}
	running := container.State{Running: true, StartedAt: life}

	// The first exec: the counter (0 before it, the container being fresh) says 1; the event has not come yet.
	set(running, []events.Message{execStart("e1")}, 1)
	if !d.oomKilled(t.Context(), tg, "e1", 0, time.Now()) {
		t.Fatal("the first exec was OOM-killed")
	}

	// The second: its counter reads fail (before it and after it); the first exec's kill shows late.
	for _, c := range []struct {
		name   string
		counts []int64
	}{{"the count read after it fails", []int64{-1}}, {"the count is read after it", []int64{1}}} {
		t.Run(c.name, func(t *testing.T) {
			sticky := running
			sticky.OOMKilled = true
			set(sticky, []events.Message{execStart("e1"), execStart("e2"), oomMsg}, c.counts...)
			if d.oomKilled(t.Context(), tg, "e2", -1, time.Now()) {
				t.Error("the second exec was blamed for the first one's OOM kill")
			}
		})
	}

	// The third is OOM-killed, with the counter still unreadable.
	set(running, []events.Message{execStart("e1"), execStart("e2"), oomMsg, execStart("e3"), oomMsg}, -1)
	if !d.oomKilled(t.Context(), tg, "e3", -1, time.Now()) {
		t.Error("the third exec's OOM kill was missed")
	}

	// The container stopped, its PID 1 OOM-killed, and was started again: a new life, whose first kill counts.
	set(container.State{OOMKilled: true, StartedAt: "2026-01-02T03:05:00Z"}, nil, -1)
	if !d.oomKilled(t.Context(), tg, "e4", -1, time.Now()) {
		t.Error("the OOM kill of the container's PID 1 in its new life was missed")
	}
}

func TestOOMTally(t *testing.T) {
	for _, c := range []struct {
		name   string
		before int64
		evs    []events.Message
		want   bool
	}{
		{"its own kill", 0, []events.Message{execStart("e2"), oomMsg}, true},
		{"a kill before it started", 0, []events.Message{oomMsg, execStart("e2")}, false},
		{"an earlier kill's late event", 1, []events.Message{execStart("e1"), execStart("e2"), oomMsg}, false},
		{"its own after an earlier one's", 1, []events.Message{oomMsg, execStart("e2"), oomMsg}, true},
		{"its own and an earlier one's late", 1, []events.Message{execStart("e2"), oomMsg, oomMsg}, true},
		{"another exec's start", 0, []events.Message{execStart("e3"), oomMsg}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := oomTally{execID: "e2", before: c.before}
			got := false
			for _, m := range c.evs {
				got = got || o.see(m)
			}
			if got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
