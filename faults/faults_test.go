package faults

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/orchrun/orch/jobs"
)

// One deployment goes through every fault in turn; each fault's runs must come out as if nothing had happened.
func TestFaults(t *testing.T) {
	c := newCluster(t)
	seconds := func(s string) { c.write("agent-seconds", s) }

	t.Run("a worker killed mid-task", func(t *testing.T) {
		c.t = t
		seconds("4")
		id := c.submit()
		w := c.started(id, "1.1")
		c.docker("kill", c.name(w)) // SIGKILL: no word to anyone
		killed := time.Now()
		r := c.waitStatus(id, jobs.RunCompleted, 3*time.Minute)
		t.Logf("the run completed %s after its worker was killed", time.Since(killed).Round(time.Second))
		c.check(r)
		c.docker("start", c.name(w))
	})

	t.Run("a worker cut off from Redis mid-task, back while the rescuer works", func(t *testing.T) {
		c.t = t
		seconds("12")
		id := c.submit()
		w := c.started(id, "1.1")
		c.docker("network", "disconnect", c.network, c.name(w))
		cut := time.Now()
		rescuer := c.started(id, "1.1", w)
		t.Logf("task 1.1 started again on %s %s after %s was cut off", rescuer, time.Since(cut).Round(time.Second), w)
		c.docker("network", "connect", "--alias", w, c.network, c.name(w))
		seconds("2")
		r := c.waitStatus(id, jobs.RunCompleted, 3*time.Minute)
		c.check(r)
	})

	t.Run("the Redis primary killed mid-run: a Sentinel failover, then a fail-back", func(t *testing.T) {
		c.t = t
		seconds("3")
		old := c.primary()
		id := c.submit()
		c.started(id, "1.1")
		c.docker("kill", c.name(old))
		killed := time.Now()
		c.waitFor(time.Minute, "a replica to be promoted", func() bool { p := c.primary(); return p != "" && p != old })
		t.Logf("%s promoted %s after %s was killed", c.primary(), time.Since(killed).Round(100*time.Millisecond), old)
		r := c.waitStatus(id, jobs.RunCompleted, 3*time.Minute)
		c.check(r)
		// The old primary comes back as a replica; then the operator fails back to it, while a run works.
		c.docker("start", c.name(old))
		c.waitReplicated()
		id = c.submit()
		c.started(id, "1.1")
		if out, err := c.redisCLI("-h", "s1", "-p", "26379", "sentinel", "failover", master); err != nil {
			t.Fatalf("sentinel failover: %v: %s", err, out)
		}
		c.waitFor(time.Minute, "the fail-back", func() bool { return c.primary() == old })
		r = c.waitStatus(id, jobs.RunCompleted, 3*time.Minute)
		c.check(r)
		c.waitReplicated()
	})

	t.Run("Redis killed and restarted (AOF) mid-run: the primary and its replica at once", func(t *testing.T) {
		c.t = t
		seconds("4")
		// The data servers come back as they were started: redis1 the primary, redis2 its replica (redisArgs).
		if p := c.primary(); p != "redis1" {
			t.Fatalf("the sentinels name %q primary, want redis1 as the suite started it", p)
		}
		id := c.submit()
		c.started(id, "1.1")
		c.docker("kill", c.name("redis1"), c.name("redis2")) // SIGKILL: what was written is in the append-only file
		killed := time.Now()
		time.Sleep(3 * time.Second) // past the sentinels' down-after: with no replica left, no failover can happen
		c.docker("start", c.name("redis1"))
		c.docker("start", c.name("redis2"))
		c.waitReplicated()
		t.Logf("Redis back and replicated %s after the kill", time.Since(killed).Round(100*time.Millisecond))
		r := c.waitStatus(id, jobs.RunCompleted, 3*time.Minute)
		c.check(r)
	})

	t.Run("a rolling restart of every worker mid-run", func(t *testing.T) {
		c.t = t
		seconds("3")
		id := c.submit()
		c.started(id, "1.1")
		for _, w := range c.workers {
			c.docker("restart", "-t", "10", c.name(w)) // SIGTERM, then SIGKILL after 10 s
		}
		r := c.waitStatus(id, jobs.RunCompleted, 3*time.Minute)
		c.check(r)
	})

	t.Run("an answer given while every worker is down", func(t *testing.T) {
		c.t = t
		seconds("1")
		c.write("ask-1.2", "")
		t.Cleanup(func() { os.Remove(filepath.Join(c.shared, "ask-1.2")) })
		id := c.submit()
		r := c.waitStatus(id, jobs.RunParked, 3*time.Minute)
		for _, w := range c.workers {
			c.docker("stop", "-t", "10", c.name(w))
		}
		e := r.OpenEscalation()
		if e == nil {
			t.Fatalf("run %s parked without a question", id)
		}
		if out, err := c.orch("escalation", "resolve", id, "--choose", "A"); err != nil {
			t.Fatalf("answering with every worker down: %v\n%s", err, out)
		}
		for _, w := range c.workers {
			c.docker("start", c.name(w))
		}
		r = c.waitStatus(id, jobs.RunCompleted, 3*time.Minute)
		c.check(r)
	})
}
