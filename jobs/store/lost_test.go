package store

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/jobs"
)

// cutter is a TCP proxy in front of a Redis server that, once armed, cuts the connection that sends EXEC: before
// EXEC reaches the server (nothing of the transaction is applied), or after the server applied it and before its
// reply reaches the client — the two ways a server that dies, or fails over, or hands the embedded store over, leaves
// a write.
type cutter struct {
	ln     net.Listener
	server string
	armed  atomic.Value // "", "before", "after"
	cuts   atomic.Int32
}

func newCutter(t *testing.T, server string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, server: server}
	c.armed.Store("")
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go c.serve(conn)
		}
	}()
	return c
}

func (c *cutter) arm(when string) { c.armed.Store(when) }

func (c *cutter) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", c.server)
	if err != nil {
		return
	}
	defer server.Close()
	var cut sync.Once
	replies, dropped := make(chan struct{}), make(chan struct{})
	go func() { io.Copy(client, &replyGate{r: server, stop: replies, dropped: dropped}); client.Close() }()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if err != nil {
			return
		}
		chunk := buf[:n]
		when := c.armed.Load().(string)
		if when != "" && bytes.Contains(bytes.ToUpper(chunk), []byte("EXEC")) {
			cut.Do(func() { c.armed.Store(""); c.cuts.Add(1) })
			if when == "before" {
				return
			}
			close(replies) // the server's replies stop here: it applies EXEC, the client never hears of it
			if _, err := server.Write(chunk); err == nil {
				<-dropped // the server answered: EXEC was applied
			}
			return
		}
		if _, err := server.Write(chunk); err != nil {
			return
		}
	}
}

// replyGate copies the server's replies until stop is closed; the first reply after that is dropped, and said so on
// dropped.
type replyGate struct {
	r       io.Reader
	stop    chan struct{}
	dropped chan struct{}
}

func (g *replyGate) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	select {
	case <-g.stop:
		close(g.dropped)
		return 0, io.EOF
	default:
	}
	return n, err
}

// A write whose connection is lost as it is sent is neither reported failed when it was applied nor applied twice
// when it was not: Create and Update find out from the run which it was, on a new connection.
func TestAWriteOutlivesItsLostConnection(t *testing.T) {
	mr := miniredis.RunT(t)
	c := newCutter(t, mr.Addr())
	rdb := redis.NewClient(&redis.Options{Addr: c.ln.Addr().String()})
	t.Cleanup(func() { rdb.Close() })
	s := New(rdb, nil)
	var seen atomic.Int32
	s.Observe(func(evs []jobs.Event) { seen.Add(int32(len(evs))) })
	ctx := context.Background()

	for _, when := range []string{"before", "after"} {
		t.Run(when, func(t *testing.T) {
			r := newRun()
			c.arm(when)
			if err := s.Create(ctx, r, jobs.NewEvent(r.ID, "", jobs.RunStartedEvent{})); err != nil {
				t.Fatalf("create: %v", err)
			}
			bump := func(r *jobs.Run, ch *jobs.Change) error {
				r.Tasks[0].Failures++
				ch.Emit(jobs.NewEvent(r.ID, "1.1", jobs.TaskStartedEvent{}))
				return nil
			}
			before := seen.Load()
			c.arm(when)
			got, err := s.Update(ctx, r.ID, bump)
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			if got.Tasks[0].Failures != 1 || got.Version != 2 {
				t.Fatalf("the update returned failures %d, version %d", got.Tasks[0].Failures, got.Version)
			}
			stored, err := s.Get(ctx, r.ID)
			if err != nil || stored.Tasks[0].Failures != 1 || stored.Version != 2 {
				t.Fatalf("the run holds failures %d, version %d (%v): the update was applied %d times", stored.Tasks[0].Failures,
					stored.Version, err, stored.Tasks[0].Failures)
			}
			evs, err := s.Events(ctx, r.ID, "", 0)
			if err != nil || len(evs) != 2 {
				t.Fatalf("%d events (%v), want the run's start and one task start", len(evs), err)
			}
			if n := seen.Load() - before; n != 1 {
				t.Fatalf("observers saw %d events of the update, want 1", n)
			}
		})
	}
	if n := c.cuts.Load(); n != 4 {
		t.Fatalf("%d connections cut, want 4", n)
	}
}
