package localredis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A writer killed at any point leaves a state that opens without a warning and holds every key it was told was
// saved: the unfinished last record of a save is dropped silently, a compaction cut short leaves a pair that loads.
func TestKillWriterAtRandomPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 40 processes")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	const size = 3000
	var acked []string
	for i := range 40 {
		// Compacting whenever the journal outgrows the snapshot, so that some kills land in a compaction.
		w := startChild(t, "writer", dir, fmt.Sprintf("it%d", i), size, childCompact+"=1")
		if i%4 == 0 {
			w.waitAcks(1) // some kills after writing for sure; the others anywhere, opening included
		}
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		w.kill()
		acked = append(acked, w.acked()...)
		checkAcked(t, dir, size, acked)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp*")); len(tmps) != 0 {
		t.Errorf("temporary files left behind: %v", tmps)
	}
	snap, err := decodeSnapshot(readFile(t, filepath.Join(dir, snapshotFile)))
	if err != nil {
		t.Fatal(err)
	}
	if len(acked) < 40 || snap.JournalGen < 5 {
		t.Fatalf("only %d keys were written and %d snapshots in all", len(acked), snap.JournalGen)
	}
	t.Logf("%d acknowledged keys survived 40 kills; %d snapshots were written", len(acked), snap.JournalGen)
}

func permutations(n int) [][]int {
	if n == 1 {
		return [][]int{{0}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// Processes sharing a state dir end in every order while the others keep writing: whichever serves the store hands it
// over on its way out, and no write acknowledged by Sync is lost.
func TestProcessesHandOverInEveryOrder(t *testing.T) {
	for _, n := range []int{2, 3} {
		for _, order := range permutations(n) {
			t.Run(fmt.Sprintf("%d processes, ending %v", n, order), func(t *testing.T) {
				dir := t.TempDir()
				kids := startWriters(t, dir, n)
				for step, i := range order {
					kids[i].stop()
					waitServedAndWriting(t, kids, order[step+1:])
				}
				var keys []string
				for _, k := range kids {
					keys = append(keys, k.acked()...)
					if strings.Contains(k.stderr.String(), "ended without saving") {
						t.Errorf("process %s was told a clean handover lost writes", k.name)
					}
				}
				checkAcked(t, dir, 100, keys)
			})
		}
	}
}

// The serving process is killed: another one takes over from what was saved and goes on writing.
func TestServingProcessKilled(t *testing.T) {
	dir := t.TempDir()
	kids := startWriters(t, dir, 3)
	kids[0].kill()
	waitServedAndWriting(t, kids, []int{1, 2})
	kids[1].stop()
	waitServedAndWriting(t, kids, []int{2})
	kids[2].stop()
	var keys []string
	for _, k := range kids {
		keys = append(keys, k.acked()...)
	}
	checkAcked(t, dir, 100, keys)
}

// startWriters starts n writers one after the other; the first serves the store.
func startWriters(t *testing.T, dir string, n int) []*child {
	t.Helper()
	kids := make([]*child, n)
	for i := range kids {
		kids[i] = startChild(t, "writer", dir, fmt.Sprintf("p%d", i), 100)
		kids[i].waitAcks(1)
		if _, owner, _ := kids[i].state(); owner != (i == 0) {
			t.Fatalf("process %d serves the store: %v", i, owner)
		}
	}
	return kids
}

// waitServedAndWriting waits until exactly one of the processes alive serves the store, and each has written more.
func waitServedAndWriting(t *testing.T, kids []*child, alive []int) {
	t.Helper()
	if len(alive) == 0 {
		return
	}
	for _, i := range alive {
		n, _, _ := kids[i].state()
		kids[i].waitAcks(n + 5)
	}
	waitFor(t, "one process to serve the store", func() bool {
		serving := 0
		for _, i := range alive {
			if _, owner, _ := kids[i].state(); owner {
				serving++
			}
		}
		return serving == 1
	})
}

// A process whose writes went through a serving process that then died without saving is told so by its next
// Sync, once: those writes may be lost.
func TestSyncReportsWritesThroughALostServer(t *testing.T) {
	dir := t.TempDir()
	srv := startChild(t, "serve", dir, "server", 0)
	srv.waitLine("open owner=true")
	e, _ := open(t, dir)
	defer e.Close()
	if e.Owner() {
		t.Fatal("the second process serves the store too")
	}
	c := clientOf(t, e)
	ctx := context.Background()
	if err := c.Set(ctx, "saved", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	mustSync(t, e)
	if err := c.Set(ctx, "maybe", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	srv.kill()
	err := e.Sync(ctx)
	pid := fmt.Sprintf("pid %d", srv.cmd.Process.Pid)
	if err == nil || !strings.Contains(err.Error(), "ended without saving") || !strings.Contains(err.Error(), pid) {
		t.Fatalf("Sync after the server died: %v", err)
	}
	if !e.Owner() {
		t.Fatal("the surviving process did not take over")
	}
	mustSync(t, e) // told once
	if v := c.Get(ctx, "saved").Val(); v != "1" {
		t.Fatalf("a synced write was lost: %q", v)
	}
	if err := c.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	mustSync(t, e)
	mustClose(t, e)
	e, _ = open(t, dir)
	if v := clientOf(t, e).Get(ctx, "after").Val(); v != "1" {
		t.Fatalf("after reopening: %q", v)
	}
}
