package localredis

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// readTails runs a save pass's read, as a save would, and returns what it read.
func readTails(t *testing.T, e *Embedded) *storeCopy {
	t.Helper()
	e.own.sem <- struct{}{}
	defer func() { <-e.own.sem }()
	c, err := e.own.readStore(false)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// streams reads every stream of c's database whole.
func streams(t *testing.T, c *redis.Client) map[string][]redis.XMessage {
	t.Helper()
	ctx := context.Background()
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]redis.XMessage{}
	for _, k := range keys {
		if c.Type(ctx, k).Val() != "stream" {
			continue
		}
		out[k] = c.XRange(ctx, k, "-", "+").Val()
	}
	return out
}

func xadd(t *testing.T, c redis.Cmdable, key, value string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := c.XAdd(context.Background(), &redis.XAddArgs{Stream: key, ID: id, Values: []string{"v", value}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAStreamIsSavedFromItsTail(t *testing.T) {
	e, _ := open(t, t.TempDir())
	defer e.Close()
	saveOnlyWhenAsked(e)
	c := clientOf(t, e)
	ctx := context.Background()
	for i := range 500 {
		c.XAdd(ctx, &redis.XAddArgs{Stream: "events", Values: []string{"n", fmt.Sprint(i)}})
	}
	mustSync(t, e)
	c.XAdd(ctx, &redis.XAddArgs{Stream: "events", Values: []string{"n", "500"}})
	c.Set(ctx, "doc", "x", 0)

	read := readTails(t, e)
	if got := read.tails["events"]; len(got) != 1 || got[0].Values[1] != "500" {
		t.Errorf("the pass read %d new entries of the stream (%v), want the one added", len(got), got)
	}
	for _, k := range read.keys {
		if k.Key == "events" {
			t.Errorf("the pass read the stream whole: %d entries", len(k.Stream))
		}
	}
	if _, ok := read.tails["doc"]; ok {
		t.Error("a string was read as a tail")
	}
}

// Every way a stream can change other than by appending is saved as it is, even when it ends up with as many
// entries as before and the same last id, which is all a read of the tail could check.
func TestAStreamChangedOtherwiseIsSavedWhole(t *testing.T) {
	ids := []string{"1-1", "1-2", "1-3", "1-4", "1-5"}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, c *redis.Client, other *redis.Client)
	}{
		{"appended", func(t *testing.T, c, _ *redis.Client) {
			xadd(t, c, "s", "b", "2-1", "2-2")
		}},
		{"an entry deleted, one appended", func(t *testing.T, c, _ *redis.Client) {
			c.XDel(context.Background(), "s", "1-2")
			xadd(t, c, "s", "b", "2-1")
		}},
		{"trimmed, then as many appended", func(t *testing.T, c, _ *redis.Client) {
			c.XTrimMaxLen(context.Background(), "s", 2)
			xadd(t, c, "s", "b", "2-1", "2-2", "2-3")
		}},
		{"trimmed by XADD MAXLEN", func(t *testing.T, c, _ *redis.Client) {
			c.XAdd(context.Background(), &redis.XAddArgs{Stream: "s", MaxLen: 2, ID: "2-1", Values: []string{"v", "b"}})
		}},
		{"its last entry deleted and added again", func(t *testing.T, c, _ *redis.Client) {
			c.XDel(context.Background(), "s", "1-5")
			xadd(t, c, "s", "b", "1-5") // the embedded server takes any id after the last entry left
		}},
		{"trimmed to nothing and filled again", func(t *testing.T, c, _ *redis.Client) {
			c.XTrimMaxLen(context.Background(), "s", 0)
			xadd(t, c, "s", "b", ids...)
		}},
		{"deleted and made again with the same ids", func(t *testing.T, c, _ *redis.Client) {
			c.Del(context.Background(), "s")
			xadd(t, c, "s", "b", ids...)
		}},
		{"the same, in a transaction", func(t *testing.T, c, _ *redis.Client) {
			_, err := c.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
				p.Unlink(context.Background(), "s")
				for _, id := range ids {
					p.XAdd(context.Background(), &redis.XAddArgs{Stream: "s", ID: id, Values: []string{"v", "b"}})
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}},
		{"the same, by a script", func(t *testing.T, c, _ *redis.Client) {
			script := `redis.call('DEL', ARGV[1]) for i = 1, 5 do redis.call('XADD', ARGV[1], '1-' .. i, 'v', 'b') end`
			if err := c.Eval(context.Background(), script, nil, "s").Err(); err != nil && err != redis.Nil {
				t.Fatal(err)
			}
		}},
		{"replaced by a renamed stream", func(t *testing.T, c, _ *redis.Client) {
			xadd(t, c, "t", "b", ids...)
			c.Rename(context.Background(), "t", "s")
		}},
		{"expired, then made again", func(t *testing.T, c, _ *redis.Client) {
			c.PExpireAt(context.Background(), "s", c.Time(context.Background()).Val().AddDate(0, 0, -1))
			xadd(t, c, "s", "b", ids...)
		}},
		{"swapped in from another database", func(t *testing.T, c, other *redis.Client) {
			xadd(t, other, "s", "b", ids...) // appending, in database 1
			if err := c.Do(context.Background(), "SWAPDB", 0, 1).Err(); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			e, _ := open(t, dir)
			saveOnlyWhenAsked(e)
			c := clientOf(t, e)
			other := redis.NewClient(&redis.Options{Dialer: e.Dial, DB: 1})
			defer other.Close()
			xadd(t, c, "s", "a", ids...)
			mustSync(t, e)
			before := streams(t, c)
			tc.change(t, c, other)
			mustSync(t, e)
			want := streams(t, c)
			if reflect.DeepEqual(want, before) {
				t.Fatalf("the change did not change the stream: %v", want)
			}
			mustClose(t, e)

			e, _ = open(t, dir)
			defer e.Close()
			if got := streams(t, clientOf(t, e)); !reflect.DeepEqual(got, want) {
				t.Errorf("saved:\n%v\nin memory before closing:\n%v", got, want)
			}
		})
	}
}

// Streams made again under passes that run all the while are saved as they are at the end.
func TestStreamsChangedDuringSavesAreSavedAsTheyAre(t *testing.T) {
	dir := t.TempDir()
	e, _ := open(t, dir)
	c := clientOf(t, e)
	ctx := context.Background()
	const rounds = 200
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			key := fmt.Sprintf("s%d", w)
			for i := range rounds {
				value := fmt.Sprintf("round %d", i)
				var err error
				switch i % 3 {
				case 0: // appended
					err = c.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"v", value}}).Err()
				case 1: // made again with the same ids, in a transaction
					_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
						msgs := c.XRange(ctx, key, "-", "+").Val()
						p.Del(ctx, key)
						for _, m := range msgs {
							p.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: m.ID, Values: []string{"v", value}})
						}
						return nil
					})
				case 2: // the same, by a script
					err = c.Eval(ctx, `local all = redis.call('XRANGE', KEYS[1], '-', '+')
						redis.call('DEL', KEYS[1])
						for _, m in ipairs(all) do redis.call('XADD', KEYS[1], m[1], 'v', ARGV[1]) end`, []string{key}, value).Err()
				}
				if err != nil && err != redis.Nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range rounds / 4 {
			if err := e.Sync(ctx); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	mustSync(t, e)
	want := streams(t, c)
	mustClose(t, e)
	e, _ = open(t, dir)
	defer e.Close()
	if got := streams(t, clientOf(t, e)); !reflect.DeepEqual(got, want) {
		for k := range want {
			if !reflect.DeepEqual(got[k], want[k]) {
				t.Errorf("stream %s saved:\n%v\nin memory before closing:\n%v", k, got[k], want[k])
			}
		}
	}
}

func TestChangesStreams(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		keys []string
		all  bool
	}{
		{"XADD s * v 1", nil, false},
		{"XADD s NOMKSTREAM 1-1 MINID x", nil, false}, // MINID here is a field
		{"XADD s MAXLEN ~ 10 * v 1", nil, false},      // a trim leaves fewer entries, which a pass sees
		{"XADD s MAXLEN 0 * v 1", []string{"s"}, false},
		{"XADD s NOMKSTREAM MINID ~ 5 * v 1", []string{"s"}, false},
		{"XDEL s 1-1", []string{"s"}, false},
		{"XADD s MAXLEN", []string{"s"}, false},
		{"DEL a b", []string{"a", "b"}, false},
		{"MSET a 1 b 2", []string{"a", "b"}, false},
		{"SET a 1", []string{"a"}, false},
		{"PEXPIREAT a 1", []string{"a"}, false},
		{"BITOP AND dest a b", []string{"dest"}, false},
		{"RENAME a b", []string{"a", "b"}, false},
		{"HSET h f v", nil, false},
		{"EVALSHA abc 1 k", nil, false},
		{"FLUSHALL", nil, true},
		{"SORT a STORE b", nil, true},
		{"SOMETHINGNEW a", nil, true},
	} {
		f := strings.Fields(tc.cmd)
		keys, all := changesStreams(f[0], f[1:])
		if !reflect.DeepEqual(keys, tc.keys) || all != tc.all {
			t.Errorf("%s: keys %v, all %v; want %v, %v", tc.cmd, keys, all, tc.keys, tc.all)
		}
	}
}

// Every journal record leaves the store as it was at one moment: a script that makes a stream again (same ids, new
// values) and sets a key to match is never saved half done, even when it runs while a pass reads.
func TestEveryRecordIsAMomentOfTheStore(t *testing.T) {
	dir := t.TempDir()
	e, _ := open(t, dir)
	defer e.Close()
	c := clientOf(t, e)
	ctx := context.Background()
	ids := []string{"1-1", "1-2", "1-3"}
	xadd(t, c, "s", "0", ids...)
	c.Set(ctx, "version", "0", 0)
	setCompactMin(e, 1<<40)
	compactNow(t, e)

	const script = `redis.call('DEL', KEYS[1])
		for _, id in ipairs(ARGV) do if id ~= ARGV[1] then redis.call('XADD', KEYS[1], id, 'v', ARGV[1]) end end
		redis.call('SET', KEYS[2], ARGV[1])`
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			args := append([]any{fmt.Sprint(i)}, func() (a []any) {
				for _, id := range ids {
					a = append(a, id)
				}
				return a
			}()...)
			if err := c.Eval(ctx, script, []string{"s", "version"}, args...).Err(); err != nil && err != redis.Nil {
				t.Error(err)
				return
			}
		}
	})
	for range 300 {
		mustSync(t, e)
	}
	close(stop)
	wg.Wait()
	mustSync(t, e)

	snap, err := decodeSnapshot(readFile(t, filepath.Join(dir, snapshotFile)))
	if err != nil {
		t.Fatal(err)
	}
	mr := miniredis.NewMiniRedis()
	deadlines := map[string]int64{}
	if err := restoreKeys(mr, snap.Keys, deadlines); err != nil {
		t.Fatal(err)
	}
	recs := journalRecords(t, filepath.Join(dir, journalFile))
	if len(recs) < 2 {
		t.Fatalf("%d records: the test needs passes while the script runs", len(recs))
	}
	for i, r := range recs {
		if err := applyRecord(mr, r, deadlines); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		version, _ := mr.Get("version")
		entries, _ := mr.Stream("s")
		for _, en := range entries {
			if en.Values[1] != version {
				t.Fatalf("after record %d of %d, version is %s and stream s holds %v", i, len(recs), version, entries)
			}
		}
	}
}
