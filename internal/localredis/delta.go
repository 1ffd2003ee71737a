package localredis

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
)

// A large string that changed in a few places (a run's document, where a step changes one task and a few counters)
// is journaled as a patch against the value saved before it: pieces of the old value, by offset and length, and the
// bytes that are new. Both values are cut where their content says (a rolling hash over the last bytes), so an edit
// moves no cut but its own; a piece of the new value is copied only when its bytes equal a piece of the old. Content
// that repeats with a short period may give the hash no cut, and pieces of the largest size, which an insertion
// shifts: such a value is written whole (patchOf), as before.

const (
	// patchMin is the size from which a string is kept to be patched: smaller ones are written whole.
	patchMin = 4 << 10
	// Pieces are cut at a rolling hash with its low 10 bits zero (about 1 KiB apart), never closer than pieceMin nor
	// further than pieceMax.
	pieceMask = 1<<10 - 1
	pieceMin  = 256
	pieceMax  = 8 << 10
)

// gear holds one pseudo-random number per byte value for the rolling hash; fixed, so that cuts are reproducible.
var gear = func() (g [256]uint64) {
	x := uint64(0x9e3779b97f4a7c15)
	for i := range g {
		// splitmix64
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		g[i] = z ^ z>>31
	}
	return g
}()

// pieces returns the ends of data's pieces.
func pieces(data string) []int {
	var ends []int
	start := 0
	var h uint64
	for i := 0; i < len(data); i++ {
		h = h<<1 + gear[data[i]]
		if n := i + 1 - start; (n >= pieceMin && h&pieceMask == 0) || n >= pieceMax {
			ends = append(ends, i+1)
			start, h = i+1, 0
		}
	}
	if start < len(data) {
		ends = append(ends, len(data))
	}
	return ends
}

// patchOp is one part of a new value: Len bytes of the old value from At, or Add.
type patchOp struct {
	At  int  `json:"at,omitempty"`
	Len int  `json:"len,omitempty"`
	Add blob `json:"add,omitempty"`
}

// diff returns the ops that make new from old, and how many bytes they add.
func diff(old, new string) (ops []patchOp, added int) {
	seed := maphash.MakeSeed()
	at := map[uint64][]int{} // piece hash → starts in old
	start := 0
	for _, end := range pieces(old) {
		h := maphash.String(seed, old[start:end])
		at[h] = append(at[h], start)
		start = end
	}
	start = 0
	for _, end := range pieces(new) {
		p := new[start:end]
		found := -1
		for _, s := range at[maphash.String(seed, p)] {
			if s+len(p) <= len(old) && old[s:s+len(p)] == p {
				found = s
				break
			}
		}
		last := len(ops) - 1
		switch {
		case found >= 0 && last >= 0 && ops[last].Add == "" && ops[last].At+ops[last].Len == found:
			ops[last].Len += len(p)
		case found >= 0:
			ops = append(ops, patchOp{At: found, Len: len(p)})
		case last >= 0 && ops[last].Add != "":
			ops[last].Add += blob(p)
			added += len(p)
		default:
			ops = append(ops, patchOp{Add: blob(p)})
			added += len(p)
		}
		start = end
	}
	return ops, added
}

// patch applies ops to old.
func patch(old string, ops []patchOp) (string, error) {
	var b bytes.Buffer
	for _, op := range ops {
		switch {
		case op.Add != "" && op.Len == 0 && op.At == 0:
			b.WriteString(string(op.Add))
		case op.Add == "" && op.Len > 0 && op.At >= 0 && op.At <= len(old)-op.Len:
			b.WriteString(old[op.At : op.At+op.Len])
		default:
			return "", fmt.Errorf("a patch piece (at %d, %d bytes, %d added) does not fit a value of %d bytes", op.At, op.Len, len(op.Add), len(old))
		}
	}
	return b.String(), nil
}

// stringPatch is a string key written as a patch against its value at the save before: a value whose mark's sum
// is From.
type stringPatch struct {
	Key  blob      `json:"key"`
	From blob      `json:"from"` // the old value's mark sum, as bytes
	Ops  []patchOp `json:"ops"`
}

var errPatchBase = errors.New("its value is not the one the patch was made against")

// stringSum is the sum of a string's mark (markKey).
func stringSum(v string) [32]byte {
	k := snapshotKey{Type: "string", String: (*blob)(&v)}
	m, _, _ := markKey(&k, nil)
	return m.sum
}
