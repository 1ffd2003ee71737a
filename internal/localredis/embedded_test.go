package localredis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchrun/orch/internal/owned"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// logBuffer collects what the store logs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func open(t *testing.T, dir string) (*Embedded, *logBuffer) {
	t.Helper()
	var logs logBuffer
	e, err := Open(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return e, &logs
}

// clientOf connects to e the way orch does.
func clientOf(t *testing.T, e *Embedded) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Dialer: e.Dial, DialerRetries: HandoverDialRetries, DialerRetryTimeout: HandoverDialBackoff})
	t.Cleanup(func() { c.Close() })
	return c
}

func mustSync(t *testing.T, e *Embedded) {
	t.Helper()
	if err := e.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func mustClose(t *testing.T, e *Embedded) {
	t.Helper()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// compactNow writes a new snapshot of the serving store, as when the journal has grown.
func compactNow(t *testing.T, e *Embedded) {
	t.Helper()
	e.own.sem <- struct{}{}
	defer func() { <-e.own.sem }()
	c, err := e.own.readStore(true)
	if err == nil {
		err = e.own.compact(c.keys)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// setCompactMin changes when the serving store compacts, between save passes.
func setCompactMin(e *Embedded, n int64) {
	e.own.sem <- struct{}{}
	e.own.compactMin = n
	<-e.own.sem
}

// saveOnlyWhenAsked stops e's timed saves, so that each Sync writes one journal record with everything since the
// last: a test that counts records does not depend on when the timer fired.
func saveOnlyWhenAsked(e *Embedded) {
	e.own.sem <- struct{}{}
	e.own.askedOnly = true
	<-e.own.sem
}

const nonUTF8 = "\x00\xff\xfe proto \x80\x81"

// writeEveryType stores one key of each type the store saves, in several saves, so that the journal gets puts,
// stream appends and deletions.
func writeEveryType(t *testing.T, e *Embedded, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	for _, err := range []error{
		c.Set(ctx, "str", "plain", 0).Err(),
		c.Set(ctx, "bin", nonUTF8, 0).Err(),
		c.Set(ctx, nonUTF8, "nonUTF8 key", 0).Err(),
		c.Set(ctx, "ttl", "soon", time.Hour).Err(),
		c.HSet(ctx, "hash", "f1", "v1", "f2", nonUTF8).Err(),
		c.Expire(ctx, "hash", 2*time.Hour).Err(),
		c.RPush(ctx, "list", "b", "a", "b", nonUTF8).Err(),
		c.SAdd(ctx, "set", "x", "y", nonUTF8).Err(),
		c.ZAdd(ctx, "zset", redis.Z{Score: 1.5, Member: "a"}, redis.Z{Score: -3, Member: "b"},
			redis.Z{Score: 1e300, Member: nonUTF8}, redis.Z{Score: 0.1, Member: "tenth"}, redis.Z{Score: math.Inf(1), Member: "inf"}).Err(),
		c.XAdd(ctx, &redis.XAddArgs{Stream: "stream", ID: "1-1", Values: []string{"z", "1", "a", nonUTF8}}).Err(),
		c.XAdd(ctx, &redis.XAddArgs{Stream: "stream", ID: "1-2", Values: []string{"only", "one"}}).Err(),
		c.Set(ctx, "doomed", "x", 0).Err(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	mustSync(t, e)
	for _, err := range []error{
		c.XAdd(ctx, &redis.XAddArgs{Stream: "stream", ID: "2-0", Values: []string{"later", "entry", "k", "v"}}).Err(),
		c.Del(ctx, "doomed").Err(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	mustSync(t, e)
}

func checkEveryType(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	eq := func(what string, got, want any) {
		t.Helper()
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Errorf("%s = %q, want %q", what, got, want)
		}
	}
	eq("str", c.Get(ctx, "str").Val(), "plain")
	eq("bin", c.Get(ctx, "bin").Val(), nonUTF8)
	eq("nonUTF8 key", c.Get(ctx, nonUTF8).Val(), "nonUTF8 key")
	eq("hash", c.HGetAll(ctx, "hash").Val(), map[string]string{"f1": "v1", "f2": nonUTF8})
	eq("list", c.LRange(ctx, "list", 0, -1).Val(), []string{"b", "a", "b", nonUTF8})
	members := c.SMembers(ctx, "set").Val()
	slices.Sort(members)
	eq("set", members, []string{nonUTF8, "x", "y"})
	eq("zset", c.ZRangeWithScores(ctx, "zset", 0, -1).Val(), []redis.Z{{Score: -3, Member: "b"}, {Score: 0.1, Member: "tenth"},
		{Score: 1.5, Member: "a"}, {Score: 1e300, Member: nonUTF8}, {Score: math.Inf(1), Member: "inf"}})
	raw, err := c.Do(ctx, "XRANGE", "stream", "-", "+").Slice()
	if err != nil {
		t.Fatal(err)
	}
	eq("stream", raw, []any{
		[]any{"1-1", []any{"z", "1", "a", nonUTF8}},
		[]any{"1-2", []any{"only", "one"}},
		[]any{"2-0", []any{"later", "entry", "k", "v"}},
	})
	if c.Exists(ctx, "doomed").Val() != 0 {
		t.Error("a deleted key came back")
	}
	if ttl := c.TTL(ctx, "ttl").Val(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Errorf("ttl = %v", ttl)
	}
	if ttl := c.TTL(ctx, "hash").Val(); ttl <= time.Hour || ttl > 2*time.Hour {
		t.Errorf("hash ttl = %v", ttl)
	}
	if ttl := c.TTL(ctx, "str").Val(); ttl != -1 {
		t.Errorf("str ttl = %v", ttl)
	}
	if n := c.DBSize(ctx).Val(); n != 9 {
		t.Errorf("%d keys, want 9: %v", n, c.Keys(ctx, "*").Val())
	}
}

// journalRecords decodes the records of a journal file.
func journalRecords(t *testing.T, path string) []*journalRecord {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := readJournalHeader(data); err != nil {
		t.Fatal(err)
	}
	scan := scanJournal(data)
	if scan.torn || scan.damage != nil {
		t.Fatalf("journal %s: torn %v, damage %v", path, scan.torn, scan.damage)
	}
	var out []*journalRecord
	for _, p := range scan.records {
		r, err := decodeRecord(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestRoundTripThroughJournal(t *testing.T) {
	dir := t.TempDir()
	e, _ := open(t, dir)
	saveOnlyWhenAsked(e)
	writeEveryType(t, e, clientOf(t, e))
	mustClose(t, e)

	// Everything is in the journal: the snapshot is the empty one written when the directory was new.
	recs := journalRecords(t, filepath.Join(dir, journalFile))
	if len(recs) != 2 || len(recs[0].Put) != 10 || len(recs[1].Append) != 1 || len(recs[1].Del) != 1 || len(recs[1].Put) != 0 {
		t.Fatalf("journal records: %+v", recs)
	}
	if got := recs[1].Append[0]; string(got.Key) != "stream" || len(got.Entries) != 1 || got.Entries[0].ID != "2-0" {
		t.Fatalf("stream append: %+v", got)
	}
	snap, err := os.ReadFile(filepath.Join(dir, snapshotFile))
	if err != nil || bytes.Contains(snap, []byte("plain")) {
		t.Fatalf("snapshot: %s, %v", snap, err)
	}

	e, logs := open(t, dir)
	defer e.Close()
	checkEveryType(t, clientOf(t, e))
	if w := e.Warnings(); len(w) != 0 || logs.String() != "" {
		t.Fatalf("warnings %q, log %s", w, logs)
	}
}

func TestRoundTripThroughCompactionAndFallback(t *testing.T) {
	dir := t.TempDir()
	e, _ := open(t, dir)
	setCompactMin(e, 0) // a save that grows the journal past the snapshot compacts
	saveOnlyWhenAsked(e)
	writeEveryType(t, e, clientOf(t, e))
	// The first save above compacted; the second one appended to the new journal. Compacting again keeps the
	// snapshot and journal of the second save as the fallback pair.
	compactNow(t, e)
	if recs := journalRecords(t, filepath.Join(dir, prevJournalFile)); len(recs) != 1 || len(recs[0].Append) != 1 || len(recs[0].Del) != 1 {
		t.Fatalf("previous journal: %+v", recs)
	}
	mustClose(t, e)

	// The snapshot holds everything and the journal nothing.
	if st, err := os.Stat(filepath.Join(dir, journalFile)); err != nil || st.Size() != int64(journalHeaderLen) {
		t.Fatalf("journal after compaction: %v, %v", st, err)
	}
	snap, err := os.ReadFile(filepath.Join(dir, snapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := decodeSnapshot(snap); err != nil || len(s.Keys) != 9 {
		t.Fatalf("snapshot: %v", err)
	}
	t.Run("compaction", func(t *testing.T) {
		e, logs := open(t, dir)
		defer e.Close()
		checkEveryType(t, clientOf(t, e))
		if len(e.Warnings()) != 0 || logs.String() != "" {
			t.Fatalf("warnings %q, log %s", e.Warnings(), logs)
		}
	})

	t.Run("fallback pair", func(t *testing.T) {
		// The previous pair (the one the last compaction replaced) holds the same state as of before it.
		fb := t.TempDir()
		for _, f := range []string{prevSnapshotFile, prevJournalFile} {
			copyFile(t, filepath.Join(dir, f), filepath.Join(fb, f))
		}
		damaged := append([]byte(nil), snap...)
		damaged[len(damaged)/2] ^= 0x20
		if err := os.WriteFile(filepath.Join(fb, snapshotFile), damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		e, logs := open(t, fb)
		defer e.Close()
		checkEveryType(t, clientOf(t, e))
		w := e.Warnings()
		if len(w) != 1 || !strings.Contains(w[0], filepath.Join(fb, snapshotFile)) || !strings.Contains(w[0], filepath.Join(fb, prevSnapshotFile)) ||
			!strings.Contains(logs.String(), "level=WARN") {
			t.Fatalf("warnings %q\nlog %s", w, logs)
		}
		moved := damagedFiles(t, fb, snapshotFile)
		if len(moved) != 1 || !bytes.Equal(readFile(t, moved[0]), damaged) {
			t.Fatalf("damaged snapshot not kept as it was: %v", moved)
		}
	})
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	if err := os.WriteFile(to, readFile(t, from), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// damagedFiles lists the files name was moved aside to.
func damagedFiles(t *testing.T, dir, name string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, name+".damaged-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOpensStateWrittenBeforeTheJournal(t *testing.T) {
	legacy := readFile(t, filepath.Join("..", "..", "jobs", "store", "testdata", "redis-before-archive.json"))
	var want snapshot
	if err := json.Unmarshal(legacy, &want); err != nil || want.Version != 2 {
		t.Fatalf("test data: version %d, %v", want.Version, err)
	}
	live := 0
	for _, k := range want.Keys {
		if k.TTLms == 0 || want.SavedAt.Add(time.Duration(k.TTLms)*time.Millisecond).After(time.Now()) {
			live++
		}
	}
	if live < 20 {
		t.Fatalf("test data has %d live keys", live)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, snapshotFile), legacy, 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T) {
		e, logs := open(t, dir)
		defer e.Close()
		c := clientOf(t, e)
		ctx := context.Background()
		if n := c.DBSize(ctx).Val(); n != int64(live) {
			t.Errorf("%d keys, want %d", n, live)
		}
		if m := c.SMembers(ctx, "asynq:queues").Val(); len(m) != 2 {
			t.Errorf("asynq:queues = %v", m)
		}
		if v := c.Get(ctx, "asynq:{orch-steps}:processed").Val(); v != "12" {
			t.Errorf("processed = %q", v)
		}
		if z := c.ZRangeWithScores(ctx, "asynq:{orch-steps}:retry", 0, -1).Val(); len(z) != 2 || z[0].Score != 1795484651 {
			t.Errorf("retry = %v", z)
		}
		// asynq's tasks are protobuf: the bytes must come back exactly.
		msg := c.HGet(ctx, "asynq:{orch-control}:t:resume:r-llsg5os22e:e1", "msg").Val()
		if !strings.HasPrefix(msg, "\n\vorch:resume\x12") || !strings.Contains(msg, "r-llsg5os22e") {
			t.Errorf("task message = %q", msg)
		}
		if ttl := c.TTL(ctx, "asynq:{orch-steps}:processed:2026-11-24").Val(); ttl != -2 && (ttl <= 0 || ttl > 90*24*time.Hour) {
			t.Errorf("ttl = %v", ttl)
		}
		for _, k := range want.Keys {
			if k.Type == "stream" {
				if n := c.XLen(ctx, string(k.Key)).Val(); n != int64(len(k.Stream)) {
					t.Errorf("stream %s has %d entries, want %d", k.Key, n, len(k.Stream))
				}
			}
		}
		if len(e.Warnings()) != 0 || logs.String() != "" {
			t.Errorf("warnings %q, log %s", e.Warnings(), logs)
		}
	}
	t.Run("first open", check)
	// The first open rewrote the state in the current format and kept the old file as the fallback.
	if s, err := decodeSnapshot(readFile(t, filepath.Join(dir, snapshotFile))); err != nil || s.Version != snapshotVersion {
		t.Fatalf("rewritten snapshot: %v", err)
	}
	if !bytes.Equal(readFile(t, filepath.Join(dir, prevSnapshotFile)), legacy) {
		t.Fatal("the old state file was not kept")
	}
	t.Run("second open", check)
}

func TestSaveWritesOnlyTheChange(t *testing.T) {
	dir := t.TempDir()
	e, _ := open(t, dir)
	defer e.Close()
	saveOnlyWhenAsked(e)
	c := clientOf(t, e)
	ctx := context.Background()
	for i := range 1000 {
		if err := c.HSet(ctx, fmt.Sprintf("run:%04d", i), "status", "running", "doc", strings.Repeat("x", 200)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 1000 {
		c.XAdd(ctx, &redis.XAddArgs{Stream: "events", Values: []string{"n", fmt.Sprint(i), "body", strings.Repeat("e", 100)}})
	}
	setCompactMin(e, 0)
	mustSync(t, e) // persisted, and compacted: everything is in the snapshot
	setCompactMin(e, compactAtLeast)
	snapSize := int64(len(readFile(t, filepath.Join(dir, snapshotFile))))
	journalSize := func() int64 {
		st, err := os.Stat(filepath.Join(dir, journalFile))
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	before := journalSize()
	if before != int64(journalHeaderLen) {
		t.Fatalf("journal not compacted: %d bytes", before)
	}

	c.HSet(ctx, "run:0500", "status", "done")
	mustSync(t, e)
	one := journalSize() - before
	c.XAdd(ctx, &redis.XAddArgs{Stream: "events", Values: []string{"n", "1000", "body", "last"}})
	mustSync(t, e)
	appended := journalSize() - before - one
	t.Logf("snapshot %d bytes; one hash changed: %d bytes appended; one stream entry added: %d bytes appended", snapSize, one, appended)
	if one <= 0 || one > 1024 || one > snapSize/100 {
		t.Errorf("changing one key appended %d bytes (snapshot: %d)", one, snapSize)
	}
	if appended <= 0 || appended > 256 {
		t.Errorf("adding one stream entry appended %d bytes", appended)
	}
	if recs := journalRecords(t, filepath.Join(dir, journalFile)); len(recs) != 2 || len(recs[0].Put) != 1 || len(recs[1].Append) != 1 {
		t.Errorf("records: %+v", recs)
	}

	// Nothing changed: nothing is written, whether a save runs for a Sync or for a read.
	size := journalSize()
	c.Get(ctx, "run:0001")
	mustSync(t, e)
	mustSync(t, e)
	if got := journalSize(); got != size {
		t.Errorf("an unchanged store wrote %d bytes", got-size)
	}
}

func TestDamagedSnapshotIsMovedAside(t *testing.T) {
	cases := map[string]string{
		"not json":        "{not json",
		"unknown version": `{"version":9,"keys":[]}`,
		"bad key":         `{"version":2,"saved_at":"2026-01-01T00:00:00Z","keys":[{"key":"s","type":"stream","stream":[{"id":"5-0","values":["a","b"]},{"id":"1-0","values":["a","b"]}]}]}`,
		"unknown type":    `{"version":2,"saved_at":"2026-01-01T00:00:00Z","keys":[{"key":"h","type":"hyperloglog"}]}`,
		"empty":           ``,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, snapshotFile)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			e, logs := open(t, dir)
			defer e.Close()
			w := e.Warnings()
			if len(w) != 1 || !strings.Contains(w[0], path) || !strings.Contains(w[0], "an empty store") || !strings.Contains(w[0], "delete") {
				t.Fatalf("warnings %q", w)
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), path) {
				t.Fatalf("log: %s", logs)
			}
			moved := damagedFiles(t, dir, snapshotFile)
			if len(moved) != 1 || string(readFile(t, moved[0])) != content || !strings.Contains(w[0], moved[0]) {
				t.Fatalf("moved aside: %v", moved)
			}
			// The state on disk is good again, and the store works.
			c := clientOf(t, e)
			if err := c.Set(context.Background(), "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			mustClose(t, e)
			e, _ = open(t, dir)
			if len(e.Warnings()) != 0 || clientOf(t, e).Get(context.Background(), "k").Val() != "v" {
				t.Fatalf("after the move: warnings %q", e.Warnings())
			}
		})
	}
}

// A second damaged snapshot of the same second does not replace the first one moved aside.
func TestMovedAsideNeverOverwritten(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, snapshotFile)
	files, err := owned.OpenDir(dir, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	stamp := time.Now().UTC().Format("20060102T150405Z")
	for i := range 3 {
		if err := os.WriteFile(path, []byte(fmt.Sprint(i)), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := moveAside(files, snapshotFile, stamp); err != nil {
			t.Fatal(err)
		}
	}
	moved := damagedFiles(t, dir, snapshotFile)
	var got []string
	for _, m := range moved {
		got = append(got, string(readFile(t, m)))
	}
	slices.Sort(got)
	if fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("moved files hold %v", got)
	}
}

// TestASnapshotOfDeletedKeysIsRewritten deletes most of a store (runs moved to the archive after a busy spell): the
// next save rewrites the snapshot, so that the next process to open the store does not read what is gone.
func TestASnapshotOfDeletedKeysIsRewritten(t *testing.T) {
	dir := t.TempDir()
	e, _ := open(t, dir)
	c := clientOf(t, e)
	ctx := context.Background()
	for i := range 2000 {
		c.Set(ctx, fmt.Sprintf("run:%04d", i), strings.Repeat("x", 300), 0)
	}
	setCompactMin(e, 0)
	mustSync(t, e) // everything in the snapshot
	setCompactMin(e, compactAtLeast)
	full := len(readFile(t, filepath.Join(dir, snapshotFile)))
	// Deleted together (as one archiving pass's transactions can all fall between two saves), so that the next save
	// sees the store as it is left: a snapshot under compactAtLeast/4 is not worth rewriting by itself.
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i := range 1900 {
			p.Del(ctx, fmt.Sprintf("run:%04d", i))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mustSync(t, e)
	mustClose(t, e)
	if now := len(readFile(t, filepath.Join(dir, snapshotFile))); now > full/5 {
		t.Fatalf("the snapshot is %d bytes after 95%% of its keys were deleted (was %d)", now, full)
	}
	e, _ = open(t, dir)
	defer e.Close()
	if n, _ := clientOf(t, e).DBSize(ctx).Result(); n != 100 {
		t.Fatalf("%d keys after reopening, want 100", n)
	}
}

// Two stores over one directory in one process: the second uses the first's server, and when the first closes
// while the second's goroutines write, the second takes over from what the first saved, losing nothing.
func TestHandoverInProcess(t *testing.T) {
	dir := t.TempDir()
	a, _ := open(t, dir)
	b, _ := open(t, dir)
	defer b.Close()
	if !a.Owner() || b.Owner() {
		t.Fatalf("owners: %v %v", a.Owner(), b.Owner())
	}
	cb := clientOf(t, b)
	ctx := context.Background()
	if err := cb.Set(ctx, "first", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	mustSync(t, b)

	var wg sync.WaitGroup
	acked := make([][]string, 4)
	stop := make(chan struct{})
	for g := range acked {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("g%d:%d", g, i)
				if err := cb.Set(ctx, key, key, 0).Err(); err != nil {
					t.Errorf("writing %s during the handover: %v", key, err)
					return
				}
				if err := b.Sync(ctx); err != nil {
					t.Errorf("syncing %s during the handover: %v", key, err)
					return
				}
				acked[g] = append(acked[g], key)
			}
		})
	}
	waitFor(t, "writes before the handover", func() bool { return cb.DBSize(ctx).Val() > 20 })
	mustClose(t, a)
	waitFor(t, "the second store to take over", b.Owner)
	n := cb.DBSize(ctx).Val()
	waitFor(t, "writes after the handover", func() bool { return cb.DBSize(ctx).Val() > n+20 })
	close(stop)
	wg.Wait()
	mustClose(t, b)

	var keys []string
	for _, a := range acked {
		keys = append(keys, a...)
	}
	e, _ := open(t, dir)
	defer e.Close()
	c := clientOf(t, e)
	for _, k := range append(keys, "first") {
		if v, err := c.Get(ctx, k).Result(); err != nil || (k != "first" && v != k) {
			t.Fatalf("acknowledged %s: %q, %v", k, v, err)
		}
	}
	t.Logf("%d keys acknowledged across the handover", len(keys))
}

// A Sync that reaches the serving process as it closes waits for the handover and is confirmed by the next one.
func TestSyncDuringHandover(t *testing.T) {
	dir := t.TempDir()
	a, _ := open(t, dir)
	b, _ := open(t, dir)
	defer b.Close()
	cb := clientOf(t, b)
	ctx := context.Background()
	if err := cb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	a.own.sem <- struct{}{} // a save pass in progress: the Sync below waits for it, and so does Close
	synced := make(chan error)
	go func() { synced <- b.Sync(ctx) }()
	waitFor(t, "the Sync to reach the serving process", func() bool { return strings.Contains(goroutines(), "serveSync") })
	closed := make(chan error)
	go func() { closed <- a.Close() }()
	waitFor(t, "the serving process to start closing", func() bool { return strings.Contains(goroutines(), "owner).close") })
	<-a.own.sem
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := <-synced; err != nil {
		t.Fatalf("Sync across the handover: %v", err)
	}
	if !b.Owner() || cb.Get(ctx, "k").Val() != "v" {
		t.Fatalf("after the handover: owner %v, k %q", b.Owner(), cb.Get(ctx, "k").Val())
	}
}

func goroutines() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
