package localredis

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// savedKeys writes keys prefix0, prefix1, … (n of them) with a Sync after each, and returns the journal's size after
// each Sync: the ends of its records.
func savedKeys(t *testing.T, e *Embedded, dir, prefix string, n int) []int64 {
	t.Helper()
	c := clientOf(t, e)
	var ends []int64
	for i := range n {
		if err := c.Set(context.Background(), fmt.Sprintf("%s%d", prefix, i), strings.Repeat("v", 20+i*7), 0).Err(); err != nil {
			t.Fatal(err)
		}
		mustSync(t, e)
		st, err := os.Stat(filepath.Join(dir, journalFile))
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, st.Size())
	}
	return ends
}

// stateOf opens dir and returns which of keys prefix0…prefix(n-1) it has, as a string of 0s and 1s, with the warnings.
func stateOf(t *testing.T, dir, prefix string, n int) (string, []string) {
	t.Helper()
	e, _ := open(t, dir)
	defer e.Close()
	c := clientOf(t, e)
	var b strings.Builder
	for i := range n {
		if v, err := c.Get(context.Background(), fmt.Sprintf("%s%d", prefix, i)).Result(); err == nil && v == strings.Repeat("v", 20+i*7) {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	w := e.Warnings()
	mustClose(t, e)
	return b.String(), w
}

func prefixOnes(m, n int) string { return strings.Repeat("1", m) + strings.Repeat("0", n-m) }

// withFiles makes a new state dir holding files.
func withFiles(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A journal cut anywhere after its header is what a process killed while appending leaves: it opens without a
// warning, with every record before the cut.
func TestTornJournalTail(t *testing.T) {
	src := t.TempDir()
	e, _ := open(t, src)
	const n = 8
	ends := savedKeys(t, e, src, "k", n)
	mustClose(t, e)
	snap, journal := readFile(t, filepath.Join(src, snapshotFile)), readFile(t, filepath.Join(src, journalFile))
	if int64(len(journal)) != ends[n-1] {
		t.Fatalf("journal of %d bytes, records end at %v", len(journal), ends)
	}
	for off := int64(journalHeaderLen); off <= ends[n-1]; off++ {
		complete := 0
		for complete < n && ends[complete] <= off {
			complete++
		}
		// Every offset near a record boundary, and a sample of the others.
		near := complete > 0 && off-ends[complete-1] < 16 || complete < n && ends[complete]-off < 16
		if !near && off%5 != 0 {
			continue
		}
		dir := withFiles(t, map[string][]byte{snapshotFile: snap, journalFile: journal[:off]})
		got, warnings := stateOf(t, dir, "k", n)
		if got != prefixOnes(complete, n) || len(warnings) != 0 {
			t.Fatalf("journal cut at byte %d: keys %s, want %s; warnings %q", off, got, prefixOnes(complete, n), warnings)
		}
	}
}

// A damaged journal (a byte flipped anywhere, or the header cut) is moved aside as it is, with a warning naming it;
// orch starts from the records before the damage, and the files are good again after.
func TestDamagedJournal(t *testing.T) {
	src := t.TempDir()
	e, _ := open(t, src)
	const n = 6
	ends := savedKeys(t, e, src, "k", n)
	mustClose(t, e)
	snap, journal := readFile(t, filepath.Join(src, snapshotFile)), readFile(t, filepath.Join(src, journalFile))

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	type damage struct {
		name     string
		data     []byte
		complete int // records before the damage
	}
	var cases []damage
	for range 60 {
		pos := rng.IntN(len(journal))
		data := bytes.Clone(journal)
		data[pos] ^= byte(1 + rng.IntN(255))
		complete := 0
		for complete < n && ends[complete] <= int64(pos) {
			complete++
		}
		cases = append(cases, damage{fmt.Sprintf("byte %d flipped (seed %d)", pos, seed), data, complete})
	}
	cases = append(cases, damage{"header cut", journal[:journalHeaderLen-3], 0})
	for _, c := range cases {
		dir := withFiles(t, map[string][]byte{snapshotFile: snap, journalFile: c.data})
		path := filepath.Join(dir, journalFile)
		got, warnings := stateOf(t, dir, "k", n)
		if got != prefixOnes(c.complete, n) {
			t.Fatalf("%s: keys %s, want %s", c.name, got, prefixOnes(c.complete, n))
		}
		if len(warnings) != 1 || !strings.Contains(warnings[0], path) || !strings.Contains(warnings[0], "orch started from") {
			t.Fatalf("%s: warnings %q", c.name, warnings)
		}
		moved := damagedFiles(t, dir, journalFile)
		if len(moved) != 1 || !bytes.Equal(readFile(t, moved[0]), c.data) || !strings.Contains(warnings[0], moved[0]) {
			t.Fatalf("%s: moved aside %v", c.name, moved)
		}
		if again, w := stateOf(t, dir, "k", n); again != got || len(w) != 0 {
			t.Fatalf("%s: opened again: keys %s, warnings %q", c.name, again, w)
		}
	}
}

// A damaged snapshot is moved aside, and orch starts from the previous snapshot and its journal; the journal written
// over the damaged snapshot, which applies to nothing orch has, is moved aside with it.
func TestDamagedSnapshotFallsBack(t *testing.T) {
	src := t.TempDir()
	e, _ := open(t, src)
	savedKeys(t, e, src, "a", 4)
	compactNow(t, e) // the snapshot holds a0…a3; the previous pair too, as the empty snapshot and a journal
	savedKeys(t, e, src, "b", 3)
	mustClose(t, e)
	files := map[string][]byte{}
	for _, f := range []string{snapshotFile, journalFile, prevSnapshotFile, prevJournalFile} {
		files[f] = readFile(t, filepath.Join(src, f))
	}
	if got, w := stateOf(t, withFiles(t, files), "a", 4); got != "1111" || len(w) != 0 {
		t.Fatalf("undamaged: %s %q", got, w)
	}

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 2))
	for range 40 {
		pos := rng.IntN(len(files[snapshotFile]))
		damaged := bytes.Clone(files[snapshotFile])
		damaged[pos] ^= byte(1 + rng.IntN(255))
		name := fmt.Sprintf("byte %d flipped (seed %d)", pos, seed)
		dir := withFiles(t, map[string][]byte{snapshotFile: damaged, journalFile: files[journalFile],
			prevSnapshotFile: files[prevSnapshotFile], prevJournalFile: files[prevJournalFile]})
		a, warnings := stateOf(t, dir, "a", 4)
		if a != "1111" {
			t.Fatalf("%s: keys %s", name, a)
		}
		if b, _ := stateOf(t, dir, "b", 3); b != "000" {
			t.Fatalf("%s: keys written over the damaged snapshot: %s", name, b)
		}
		snapPath, journalPath := filepath.Join(dir, snapshotFile), filepath.Join(dir, journalFile)
		if len(warnings) != 2 || !strings.Contains(warnings[0], snapPath) || !strings.Contains(warnings[1], journalPath) ||
			!strings.Contains(warnings[0], "orch started from the previous snapshot "+filepath.Join(dir, prevSnapshotFile)) {
			t.Fatalf("%s: warnings %q", name, warnings)
		}
		if moved := damagedFiles(t, dir, snapshotFile); len(moved) != 1 || !bytes.Equal(readFile(t, moved[0]), damaged) {
			t.Fatalf("%s: snapshot moved aside: %v", name, moved)
		}
		if moved := damagedFiles(t, dir, journalFile); len(moved) != 1 || !bytes.Equal(readFile(t, moved[0]), files[journalFile]) {
			t.Fatalf("%s: journal moved aside: %v", name, moved)
		}
	}

	// Both snapshots damaged: an empty store, and a warning that says so.
	broken := func(b []byte) []byte { b = bytes.Clone(b); b[len(b)/2] ^= 1; return b }
	dir := withFiles(t, map[string][]byte{snapshotFile: broken(files[snapshotFile]), prevSnapshotFile: broken(files[prevSnapshotFile]),
		journalFile: files[journalFile], prevJournalFile: files[prevJournalFile]})
	a, warnings := stateOf(t, dir, "a", 4)
	if a != "0000" || len(warnings) != 4 {
		t.Fatalf("both snapshots damaged: keys %s, warnings %q", a, warnings)
	}
	for _, w := range warnings {
		if !strings.Contains(w, "an empty store") {
			t.Fatalf("warning %q", w)
		}
	}
}
