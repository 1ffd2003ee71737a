package store

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
)

// mirrorBackend is a Redis the mirror tests run against, with a way to let time pass for its TTLs.
type mirrorBackend struct {
	rdb  redis.UniversalClient
	pass func(d time.Duration) // lets d pass for the server's TTLs
}

// mirrorBackends are miniredis, whose clock the test moves, and the real server when there is one.
func mirrorBackends(t *testing.T) map[string]mirrorBackend {
	m := miniredis.RunT(t)
	mini := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { mini.Close() })
	out := map[string]mirrorBackend{"miniredis": {rdb: mini, pass: m.FastForward}}
	if rdb, ok := jobstest.Clients(t)["redis"]; ok {
		out["redis"] = mirrorBackend{rdb: rdb, pass: time.Sleep}
	}
	return out
}

// testMirror is a mirror of a name of its own, so that tests on a shared Redis do not see each other's runs; its keys
// are removed when the test ends.
func testMirror(t *testing.T, rdb redis.UniversalClient) *Mirror {
	name := "test-" + jobs.NewRunID()
	t.Cleanup(func() {
		ctx := context.Background()
		var keys []string
		iter := rdb.Scan(ctx, 0, "orch:"+name+":*", 100).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
	})
	return New(rdb, nil).Mirror(name)
}

func TestMirrorFollows(t *testing.T) {
	for name, b := range mirrorBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			m, other := testMirror(t, b.rdb), testMirror(t, b.rdb)
			a, c := jobs.NewRunID(), jobs.NewRunID()
			for _, id := range []string{a, c, a} {
				if err := m.Follow(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			ids, err := m.Followed(ctx)
			want := []string{a, c}
			slices.Sort(ids)
			slices.Sort(want)
			if err != nil || !slices.Equal(ids, want) {
				t.Fatalf("followed = %v, %v; want %v", ids, err, want)
			}
			if err := m.Unfollow(ctx, a); err != nil {
				t.Fatal(err)
			}
			if err := m.Unfollow(ctx, "r-notfollowed"); err != nil {
				t.Fatalf("unfollowing a run not followed: %v", err)
			}
			if ids, err := m.Followed(ctx); err != nil || !slices.Equal(ids, []string{c}) {
				t.Fatalf("followed after unfollowing %s = %v, %v", a, ids, err)
			}
			if ids, err := other.Followed(ctx); err != nil || len(ids) != 0 {
				t.Fatalf("another front end follows %v, %v; want its own runs only", ids, err)
			}
		})
	}
}

func TestMirrorState(t *testing.T) {
	for name, b := range mirrorBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			m := testMirror(t, b.rdb)
			id := jobs.NewRunID()
			if st, err := m.State(ctx, id); err != nil || len(st) != 0 {
				t.Fatalf("state of a run nothing was saved of = %v, %v; want empty", st, err)
			}
			if err := m.Save(ctx, id, "channel", "C1", "root_ts", "1700000000.000001"); err != nil {
				t.Fatal(err)
			}
			if err := m.Save(ctx, id, "cursor", "1-0", "esc:e1", "1700000000.000002"); err != nil {
				t.Fatal(err)
			}
			if err := m.Save(ctx, id, "cursor", "2-0"); err != nil {
				t.Fatal(err)
			}
			if err := m.Save(ctx, id); err != nil {
				t.Fatalf("saving nothing: %v", err)
			}
			if err := m.Save(ctx, id, "final"); err == nil {
				t.Fatal("a field without its value was saved")
			}
			st, err := m.State(ctx, id)
			want := map[string]string{"channel": "C1", "root_ts": "1700000000.000001", "cursor": "2-0",
				"esc:e1": "1700000000.000002"}
			if err != nil || len(st) != len(want) {
				t.Fatalf("state = %v, %v; want %v", st, err, want)
			}
			for k, v := range want {
				if st[k] != v {
					t.Errorf("state[%q] = %q, want %q", k, st[k], v)
				}
			}
		})
	}
}

func TestMirrorThreads(t *testing.T) {
	for name, b := range mirrorBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			m := testMirror(t, b.rdb)
			a, c := jobs.NewRunID(), jobs.NewRunID()
			if err := m.SetThread(ctx, "C1:1700000000.000001", a); err != nil {
				t.Fatal(err)
			}
			if err := m.SetThread(ctx, "C2:1700000000.000001", c); err != nil {
				t.Fatal(err)
			}
			for thread, want := range map[string]string{"C1:1700000000.000001": a, "C2:1700000000.000001": c,
				"C1:1700000000.000009": ""} {
				if got, err := m.RunOfThread(ctx, thread); err != nil || got != want {
					t.Errorf("run of thread %s = %q, %v; want %q", thread, got, err, want)
				}
			}
		})
	}
}

func TestMirrorLock(t *testing.T) {
	for name, b := range mirrorBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			m := testMirror(t, b.rdb)

			t.Run("one holder at a time", func(t *testing.T) {
				id := jobs.NewRunID()
				var (
					wg       sync.WaitGroup
					holders  atomic.Int32
					releases = make(chan func(), 8)
				)
				for range 8 {
					wg.Go(func() {
						release, ok, err := m.TryLock(ctx, id, time.Minute)
						if err != nil {
							t.Error(err)
						}
						if ok {
							holders.Add(1)
							releases <- release
						}
					})
				}
				wg.Wait()
				if n := holders.Load(); n != 1 {
					t.Fatalf("%d holders of one lock, want 1", n)
				}
				(<-releases)()
				release, ok, err := m.TryLock(ctx, id, time.Minute)
				if err != nil || !ok {
					t.Fatalf("lock not free after its holder released it: %v, %v", ok, err)
				}
				release()
			})

			t.Run("only the holder releases", func(t *testing.T) {
				id := jobs.NewRunID()
				releaseA, ok, err := m.TryLock(ctx, id, 200*time.Millisecond)
				if err != nil || !ok {
					t.Fatalf("taking a free lock: %v, %v", ok, err)
				}
				if _, ok, err := m.TryLock(ctx, id, time.Minute); err != nil || ok {
					t.Fatalf("a held lock was taken again: %v, %v", ok, err)
				}
				b.pass(300 * time.Millisecond)
				releaseB, ok, err := m.TryLock(ctx, id, time.Minute)
				if err != nil || !ok {
					t.Fatalf("an expired lock could not be taken: %v, %v", ok, err)
				}
				releaseA() // late: the lock is B's now
				if _, ok, err := m.TryLock(ctx, id, time.Minute); err != nil || ok {
					t.Fatalf("the expired holder's release freed the new holder's lock: %v, %v", ok, err)
				}
				releaseB()
				release, ok, err := m.TryLock(ctx, id, time.Minute)
				if err != nil || !ok {
					t.Fatalf("lock not free after its holder released it: %v, %v", ok, err)
				}
				release()
			})

			t.Run("release outlives the context", func(t *testing.T) {
				id := jobs.NewRunID()
				lctx, cancel := context.WithCancel(ctx)
				release, ok, err := m.TryLock(lctx, id, time.Minute)
				if err != nil || !ok {
					t.Fatalf("taking a free lock: %v, %v", ok, err)
				}
				cancel()
				release()
				release, ok, err = m.TryLock(ctx, id, time.Minute)
				if err != nil || !ok {
					t.Fatalf("lock not free after a release whose context was done: %v, %v", ok, err)
				}
				release()
			})
		})
	}
}

func TestMirrorOnce(t *testing.T) {
	for name, b := range mirrorBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			m := testMirror(t, b.rdb)
			var (
				wg     sync.WaitGroup
				firsts atomic.Int32
			)
			for range 8 {
				wg.Go(func() {
					first, err := m.Once(ctx, "event:Ev1", 200*time.Millisecond)
					if err != nil {
						t.Error(err)
					}
					if first {
						firsts.Add(1)
					}
				})
			}
			wg.Wait()
			if n := firsts.Load(); n != 1 {
				t.Fatalf("%d of 8 calls saw the key first, want 1", n)
			}
			if first, err := m.Once(ctx, "event:Ev2", 200*time.Millisecond); err != nil || !first {
				t.Fatalf("another key: first = %v, %v; want true", first, err)
			}
			b.pass(300 * time.Millisecond)
			if first, err := m.Once(ctx, "event:Ev1", time.Minute); err != nil || !first {
				t.Fatalf("a key whose time ran out: first = %v, %v; want true", first, err)
			}
			// Unseen, a key is a first again; other keys stay seen.
			if err := m.Unsee(ctx, "event:Ev1"); err != nil {
				t.Fatal(err)
			}
			if first, err := m.Once(ctx, "event:Ev1", time.Minute); err != nil || !first {
				t.Fatalf("an unseen key: first = %v, %v; want true", first, err)
			}
			if first, err := m.Once(ctx, "event:Ev1", time.Minute); err != nil || first {
				t.Fatalf("a key seen again after Unsee: first = %v, %v; want false", first, err)
			}
		})
	}
}

// The Slack front end's keys are the ones deployments have in Redis: a bot upgraded in place reads the state the last
// one wrote, threads and all, and writes where the last one read.
func TestMirrorSlackKeys(t *testing.T) {
	for name, b := range mirrorBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			rdb := b.rdb
			m := New(rdb, nil).Mirror("slack")
			old, id := jobs.NewRunID(), jobs.NewRunID()
			thread, newThread := "C"+old+":1700000000.000001", "C"+id+":1700000000.000001"
			once := "event:" + id
			t.Cleanup(func() {
				rdb.SRem(ctx, "orch:slack:active", old, id)
				rdb.HDel(ctx, "orch:slack:thread", thread, newThread)
				rdb.Del(ctx, "orch:slack:run:{"+old+"}", "orch:slack:run:{"+id+"}", "orch:slack:lock:{"+old+"}",
					"orch:slack:lock:{"+id+"}", "orch:slack:once:"+once)
			})

			// What an earlier bot wrote.
			rdb.SAdd(ctx, "orch:slack:active", old)
			rdb.HSet(ctx, "orch:slack:thread", thread, old)
			rdb.HSet(ctx, "orch:slack:run:{"+old+"}", "channel", "C1", "root_ts", "1700000000.000001")
			rdb.Set(ctx, "orch:slack:lock:{"+old+"}", "an earlier bot's token", time.Minute)
			rdb.Set(ctx, "orch:slack:once:"+once, "1", time.Minute)
			if ids, err := m.Followed(ctx); err != nil || !slices.Contains(ids, old) {
				t.Errorf("followed = %v, %v; want %s among them", ids, err, old)
			}
			if got, err := m.RunOfThread(ctx, thread); err != nil || got != old {
				t.Errorf("run of the thread = %q, %v; want %s", got, err, old)
			}
			if st, err := m.State(ctx, old); err != nil || st["root_ts"] != "1700000000.000001" {
				t.Errorf("state = %v, %v", st, err)
			}
			if _, ok, err := m.TryLock(ctx, old, time.Minute); err != nil || ok {
				t.Errorf("took a lock an earlier bot holds: %v, %v", ok, err)
			}
			if first, err := m.Once(ctx, once, time.Minute); err != nil || first {
				t.Errorf("a key an earlier bot saw counted as first: %v, %v", first, err)
			}

			// What this one writes.
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(m.Follow(ctx, id))
			must(m.SetThread(ctx, newThread, id))
			must(m.Save(ctx, id, "cursor", "1-0"))
			release, ok, err := m.TryLock(ctx, id, time.Minute)
			if err != nil || !ok {
				t.Fatalf("lock: %v, %v", ok, err)
			}
			defer release()
			if !rdb.SIsMember(ctx, "orch:slack:active", id).Val() {
				t.Error("the followed run is not in orch:slack:active")
			}
			if v := rdb.HGet(ctx, "orch:slack:thread", newThread).Val(); v != id {
				t.Errorf("orch:slack:thread[%s] = %q, want %s", newThread, v, id)
			}
			if v := rdb.HGet(ctx, "orch:slack:run:{"+id+"}", "cursor").Val(); v != "1-0" {
				t.Errorf("orch:slack:run:{%s} cursor = %q", id, v)
			}
			if rdb.Exists(ctx, "orch:slack:lock:{"+id+"}").Val() != 1 {
				t.Errorf("no orch:slack:lock:{%s} while the lock is held", id)
			}
		})
	}
}
