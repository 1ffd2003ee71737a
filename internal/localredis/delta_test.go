package localredis

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
)

func TestDiffMakesTheNewValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	text := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString([]string{`{"id":"`, `task `, `","status":"pending"}`, "\n", `é`, "\x00\xff"}[rng.IntN(6)])
			b.WriteByte(byte('a' + rng.IntN(26)))
		}
		return b.String()
	}
	for round := range 200 {
		old := text(1 + rng.IntN(200_000))
		value := old
		edits := 1 + rng.IntN(4)
		for range edits {
			at := rng.IntN(len(value) + 1)
			cut := min(len(value)-at, rng.IntN(64))
			value = value[:at] + text(rng.IntN(64)) + value[at+cut:]
		}
		if round%20 == 0 {
			value = text(rng.IntN(50_000)) // nothing in common
		}
		ops, added := diff(old, value)
		got, err := patch(old, ops)
		if err != nil || got != value {
			t.Fatalf("round %d: patch gives %d bytes (%v), want %d", round, len(got), err, len(value))
		}
		if round%20 != 0 && len(old) > 64<<10 && added > edits*3*pieceMax {
			t.Errorf("round %d: %d edits to %d bytes add %d bytes", round, edits, len(old), added)
		}
	}
}

func TestPatchRefusesPiecesThatDoNotFit(t *testing.T) {
	for _, ops := range [][]patchOp{
		{{At: 2, Len: 5}},
		{{At: -1, Len: 1}},
		{{At: 0, Len: 1, Add: "x"}},
		{{}},
	} {
		if got, err := patch("abcd", ops); err == nil {
			t.Errorf("%+v: %q, no error", ops, got)
		}
	}
}

// A large string changed in one place is journaled as a patch of about that change, and reads back whole.
func TestALargeStringIsSavedAsAPatch(t *testing.T) {
	dir := t.TempDir()
	e, _ := open(t, dir)
	saveOnlyWhenAsked(e)
	c := clientOf(t, e)
	ctx := context.Background()
	var doc strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&doc, `{"id":"%d","status":"pending","title":"Step %d"},`, i, i)
	}
	value := doc.String()
	c.Set(ctx, "doc", value, 0)
	mustSync(t, e)
	value = strings.Replace(value, "pending", "completed", 1)
	value = value[:len(value)/2] + `"seq":42` + value[len(value)/2:]
	c.Set(ctx, "doc", value, 0)
	mustSync(t, e)

	recs := journalRecords(t, filepath.Join(dir, journalFile))
	last := recs[len(recs)-1]
	if len(last.Patch) != 1 || len(last.Put) != 0 {
		t.Fatalf("the change was saved as %d puts and %d patches", len(last.Put), len(last.Patch))
	}
	added := 0
	for _, op := range last.Patch[0].Ops {
		added += len(op.Add)
	}
	t.Logf("a %d-byte string with two edits: a patch of %d ops adding %d bytes", len(value), len(last.Patch[0].Ops), added)
	if added > 4*pieceMax {
		t.Errorf("the patch adds %d bytes", added)
	}
	mustClose(t, e)

	e, _ = open(t, dir)
	defer e.Close()
	if got := clientOf(t, e).Get(ctx, "doc").Val(); got != value {
		t.Errorf("read back %d bytes, want %d", len(got), len(value))
	}
}

// A patch made against another value than the one replayed is refused, with the rest of the journal after it.
func TestAPatchOverTheWrongValueIsRefused(t *testing.T) {
	mr := miniredis.NewMiniRedis()
	mr.Set("doc", strings.Repeat("a", 10000))
	from := stringSum(strings.Repeat("b", 10000))
	err := applyRecord(mr, &journalRecord{Patch: []stringPatch{{Key: "doc", From: blob(from[:]), Ops: []patchOp{{At: 0, Len: 10}}}}}, map[string]int64{})
	if err == nil || !strings.Contains(err.Error(), "not the one the patch was made against") {
		t.Fatalf("err = %v", err)
	}
	if v, _ := mr.Get("doc"); v != strings.Repeat("a", 10000) {
		t.Error("a refused record changed the store")
	}
}

// A journal of the first version (no patches) is read, then replaced, so that no orch that knows no patches finds a
// journal it would misread.
func TestAFirstVersionJournalIsReadAndReplaced(t *testing.T) {
	dir := t.TempDir()
	e, _ := open(t, dir)
	saveOnlyWhenAsked(e)
	c := clientOf(t, e)
	ctx := context.Background()
	c.Set(ctx, "k", "before", 0)
	mustSync(t, e)
	c.Set(ctx, "k", "in the journal", 0)
	mustSync(t, e)
	mustClose(t, e)

	path := filepath.Join(dir, journalFile)
	data := readFile(t, path)
	copy(data, journalMagicV1)
	binary.LittleEndian.PutUint32(data[journalHeaderLen-4:], crc(data[:journalHeaderLen-4]))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	e, _ = open(t, dir)
	defer e.Close()
	if got := clientOf(t, e).Get(ctx, "k").Val(); got != "in the journal" {
		t.Errorf("k = %q", got)
	}
	if _, v1, err := readJournalHeader(readFile(t, path)); err != nil || v1 {
		t.Errorf("the journal was not replaced: first version %v, %v", v1, err)
	}
}
