package store

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
)

func TestParseRedisURL(t *testing.T) {
	for _, tt := range []struct {
		url, where, err string
		user, pass      string
		db              int
	}{
		{url: "redis://127.0.0.1:6379/2", where: "127.0.0.1:6379", db: 2},
		{url: "redis+sentinel://s1:26379,s2:26380,s3/orch/3", where: `the primary "orch" of sentinels s1:26379,s2:26380,s3:26379`, db: 3},
		{url: "redis+sentinel://:pa%40ss@s1/orch", where: `the primary "orch" of sentinels s1:26379`, pass: "pa@ss"},
		{url: "redis+sentinel://orch:pw@[::1]:5000/m?sentinel_password=x", where: `the primary "m" of sentinels [::1]:5000`, user: "orch", pass: "pw"},
		{url: "redis+sentinel://s1:26379", err: "no master name"},
		{url: "redis+sentinel:///orch", err: "no sentinel"},
		{url: "redis+sentinel://s1:x/orch", err: "not a port number"},
		{url: "redis+sentinel://s1/orch/x", err: `database "x"`},
		{url: "redis+sentinel://s1/orch/1/2", err: "more than /MASTER/DB"},
		{url: "redis+sentinel://s1/orch?master_name=y", err: `unknown parameter "master_name"`},
		{url: "redis://u:secret@h:port/0", err: "invalid port"},
	} {
		u, err := ParseRedisURL(tt.url)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.url, err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("%s: the error shows the password: %v", tt.url, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.url, err)
			continue
		}
		if got := u.Where(); got != tt.where {
			t.Errorf("%s: where %q, want %q", tt.url, got, tt.where)
		}
		if u.failover != nil {
			if u.failover.Username != tt.user || u.failover.Password != tt.pass || u.failover.DB != tt.db {
				t.Errorf("%s: user %q password %q db %d", tt.url, u.failover.Username, u.failover.Password, u.failover.DB)
			}
		} else if u.server.DB != tt.db {
			t.Errorf("%s: db %d", tt.url, u.server.DB)
		}
	}
}

// sentinels is a primary, its replica and three sentinels watching them, all redis-server processes of the test's own
// on loopback.
type sentinels struct {
	t        *testing.T
	dir      string
	ports    [2]int // the two data servers; which is primary changes
	procs    [2]*exec.Cmd
	sentinel [3]int
}

const masterName = "orchtest"

func startSentinels(t *testing.T) *sentinels {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed")
		}
		t.Skip("needs redis-server")
	}
	s := &sentinels{t: t, dir: t.TempDir()}
	for i := range s.ports {
		s.ports[i] = freePort(t)
	}
	s.startData(0, "")
	s.startData(1, fmt.Sprintf("127.0.0.1 %d", s.ports[0]))
	for i := range s.sentinel {
		s.sentinel[i] = freePort(t)
		conf := filepath.Join(s.dir, fmt.Sprintf("sentinel-%d.conf", i))
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %s 1000\nsentinel failover-timeout %s 10000\n",
			s.sentinel[i], s.dir, masterName, s.ports[0], masterName, masterName)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("redis-server", conf, "--sentinel")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		waitPing(t, s.sentinel[i])
	}
	// The replica is in sync with the primary before anything is written: a replica that is still loading takes no
	// change (WAIT would time out), as in any deployment's first seconds.
	rc := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.ports[1])})
	defer rc.Close()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if info, err := rc.Info(context.Background(), "replication").Result(); err == nil && strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica did not sync with the primary")
		}
	}
	// The sentinels know the replica once they asked the primary: until then a failover has no one to promote.
	c := redis.NewSentinelClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.sentinel[0])})
	defer c.Close()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if r, err := c.Replicas(context.Background(), masterName).Result(); err == nil && len(r) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sentinels did not find the replica")
		}
	}
	return s
}

func (s *sentinels) startData(i int, replicaOf string) {
	s.t.Helper()
	args := []string{"--port", fmt.Sprint(s.ports[i]), "--bind", "127.0.0.1", "--dir", s.dir,
		"--dbfilename", fmt.Sprintf("dump-%d.rdb", i), "--appendonly", "yes", "--appendfilename", fmt.Sprintf("aof-%d", i),
		"--appenddirname", fmt.Sprintf("aof-%d", i), "--save", ""}
	if replicaOf != "" {
		args = append(args, "--replicaof", replicaOf)
	}
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.procs[i] = cmd
	s.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitPing(s.t, s.ports[i])
}

// primary is the index of the data server the sentinels name primary.
func (s *sentinels) primary() int {
	c := redis.NewSentinelClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.sentinel[0])})
	defer c.Close()
	addr, err := c.GetMasterAddrByName(context.Background(), masterName).Result()
	if err != nil || len(addr) != 2 {
		return -1
	}
	for i, p := range s.ports {
		if addr[1] == fmt.Sprint(p) {
			return i
		}
	}
	return -1
}

func (s *sentinels) url() string {
	hosts := make([]string, len(s.sentinel))
	for i, p := range s.sentinel {
		hosts[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	return "redis+sentinel://" + strings.Join(hosts, ",") + "/" + masterName + "/0"
}

func waitPing(t *testing.T, port int) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer c.Close()
	for deadline := time.Now().Add(30 * time.Second); c.Ping(context.Background()).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on port %d did not start", port)
		}
	}
}

func freePort(t *testing.T) int { return jobstest.FreePort(t) }

// With a Sentinel URL, orch follows the primary through a failover and a fail-back without a restart: every change it
// acknowledged before the primary died is on the promoted replica (each waited for a replica), changes go through
// again once the replica is promoted, and the old primary, back as a replica, is never written to (no READONLY spin).
func TestFailoverLosesNoAcknowledgedChange(t *testing.T) {
	s := startSentinels(t)
	ctx := context.Background()
	var log strings.Builder
	b, err := Connect(ctx, ConnectConfig{URL: s.url(), Log: slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Store.repl == nil {
		t.Fatal("a Sentinel-managed store does not wait for its replica")
	}
	var ids []string
	want := map[string]jobs.RunStatus{}
	create := func() {
		t.Helper()
		r := newRun()
		if err := b.Store.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Store.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
			r.Status = jobs.RunParked
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
		want[r.ID] = jobs.RunParked
	}
	for range 20 {
		create()
	}
	check := func(when string) {
		t.Helper()
		for _, id := range ids {
			r, err := b.Store.Get(ctx, id)
			if err != nil || r.Status != cmp.Or(want[id], jobs.RunQueued) {
				t.Fatalf("%s: run %s: %v, %+v\n%s", when, id, err, r, log.String())
			}
		}
	}
	// Each change waits for the replica on the connection that made it: with the replica stopped, a change cannot
	// be acknowledged as replicated (a wait on any other connection would find nothing to wait for), and the store
	// says so.
	old := s.primary()
	stopped := s.procs[1-old].Process
	stopped.Signal(syscall.SIGSTOP)
	create()
	stopped.Signal(syscall.SIGCONT)
	if !strings.Contains(log.String(), "reached no replica") {
		t.Fatalf("a change made while the replica was stopped was acknowledged as replicated:\n%s", log.String())
	}
	b.Store.repl.until = time.Time{} // wait again at once
	create()

	// The primary dies; the sentinels promote the replica; orch's next change goes to it.
	s.procs[old].Process.Kill()
	s.procs[old].Wait()
	killed := time.Now()
	promoted := time.Time{}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if promoted.IsZero() && s.primary() == 1-old {
			promoted = time.Now()
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		r := newRun()
		err := b.Store.Create(wctx, r)
		cancel()
		if err == nil {
			ids = append(ids, r.ID)
			if promoted.IsZero() {
				promoted = time.Now()
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no change went through within two minutes of the primary's death: %v", err)
		}
	}
	t.Logf("primary killed; promoted after %s; the first change went through %s after the kill",
		promoted.Sub(killed).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	check("after the failover")

	// The old primary comes back; the sentinels make it a replica of the new one. orch keeps writing to the primary.
	// A sentinel looks at a server's role every 10 s, and one whose timers ran late (a loaded machine) stops acting for
	// 30 s (its TILT mode): the wait is for the sentinels to act at all, not a measure of how fast they do.
	s.startData(old, "")
	back := time.Now()
	for deadline := back.Add(4 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.ports[old])})
		info, _ := c.Info(ctx, "replication").Result()
		c.Close()
		if strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up") {
			break
		}
		// On a loaded machine the sentinels may find the new primary slow to answer and fail over again, back to the
		// old one: it is then the primary, with its replica in sync. orch follows either way.
		if strings.Contains(info, "role:master") && strings.Contains(info, "state=online") && s.primary() == old {
			t.Log("the sentinels failed back to the old primary on their own")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the old primary did not become a replica in sync within 4 minutes:\n%s", info)
		}
	}
	t.Logf("the old primary was a replica in sync %s after it came back", time.Since(back).Round(time.Millisecond))
	// Changes made while it was away or syncing were the primary's alone (the store said so); from now on each waits
	// for it again.
	b.Store.repl.until = time.Time{}
	for range 10 {
		create()
	}
	check("with the old primary back as a replica")

	// A failover, as an operator asks for one (a fail-back when the sentinels have not failed back themselves): orch
	// follows again.
	sc := redis.NewSentinelClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.sentinel[0])})
	defer sc.Close()
	from := s.primary()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if err := sc.Failover(ctx, masterName).Err(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sentinels refused a failover")
		}
	}
	for deadline := time.Now().Add(2 * time.Minute); s.primary() == from; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the failover an operator asked for did not happen")
		}
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		r := newRun()
		err := b.Store.Create(wctx, r)
		cancel()
		if err == nil {
			ids = append(ids, r.ID)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no change went through after the fail-back: %v", err)
		}
	}
	for range 5 {
		create()
	}
	check("after the fail-back")
	// While the one replica is down or syncing again, changes are the primary's alone, and the store says so once.
	t.Logf("the store's log:\n%s", log.String())
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
