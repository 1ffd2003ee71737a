package localredis

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The store on disk is a snapshot (redis.json) plus a journal (redis.journal) of what changed since.
//
// The snapshot is one JSON document: {"version":3,"saved_at":…,"journal_gen":G,"keys":[…],"crc32c":"…"}. The
// checksum is the last field and covers every byte before it, so a damaged snapshot is noticed rather than loaded
// with a wrong value. Version 2 (no generation, no checksum, TTLs relative to saved_at) is what orch wrote before the
// journal existed; it is still read.
//
// The journal starts with a header (magic, generation, CRC-32C of both) and then holds one framed record per save:
//
//	length uint32 LE | CRC-32C of payload uint32 LE | CRC-32C of the 8 bytes before uint32 LE | payload (JSON)
//
// A record lists the keys a save found changed: their full state ("put"), entries added to a stream ("append"), a
// large string as a patch against its value at the save before ("patch", delta.go), and deleted keys ("del"). Replaying the records in order over the snapshot gives the state of the last save. A journal
// is replayed only over the snapshot whose journal_gen equals the journal's generation, so a crash while a new
// snapshot replaces the old one can never apply an old journal to a newer snapshot.

const (
	snapshotVersion = 3
	legacyVersion   = 2 // written by orch before the journal; read only

	journalMagic = "orchjnl2"
	// journalMagicV1 is a journal without patches, written by orch before them: read, then replaced by a new
	// snapshot and journal, so that an orch that knows no patches never reads one as a journal it knows.
	journalMagicV1   = "orchjnl1"
	journalHeaderLen = len(journalMagic) + 8 + 4
	frameHeaderLen   = 12
	// maxRecord bounds a record's length field, so garbage in it is recognised as such.
	maxRecord = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

type snapshot struct {
	Version    int           `json:"version"`
	SavedAt    time.Time     `json:"saved_at"`
	JournalGen uint64        `json:"journal_gen,omitempty"`
	Keys       []snapshotKey `json:"keys"`
}

// snapshotKey is one key with its full state, in the snapshot and in the journal's "put".
type snapshotKey struct {
	Key       blob          `json:"key"`
	Type      string        `json:"type"`
	TTLms     int64         `json:"ttl_ms,omitempty"`        // version 2 only: time to live when saved
	ExpiresAt int64         `json:"expires_at_ms,omitempty"` // unix milliseconds; 0 means no TTL
	String    *blob         `json:"string,omitempty"`
	Hash      [][2]blob     `json:"hash,omitempty"`
	List      []blob        `json:"list,omitempty"`
	Set       []blob        `json:"set,omitempty"`
	ZSet      []zmember     `json:"zset,omitempty"`
	Stream    []streamEntry `json:"stream,omitempty"`
}

type zmember struct {
	Member blob  `json:"m"`
	Score  score `json:"s"`
}

// score is a sorted set score: a JSON number, or "inf" or "-inf", which JSON numbers cannot be.
type score float64

func (s score) MarshalJSON() ([]byte, error) {
	switch f := float64(s); {
	case math.IsInf(f, 1):
		return []byte(`"inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-inf"`), nil
	default:
		return json.Marshal(f)
	}
}

func (s *score) UnmarshalJSON(data []byte) error {
	var f float64
	if err := json.Unmarshal(data, &f); err == nil {
		*s = score(f)
		return nil
	}
	var inf string
	if err := json.Unmarshal(data, &inf); err != nil || (inf != "inf" && inf != "-inf") {
		return fmt.Errorf("score %s is not a number", data)
	}
	*s = score(math.Inf(map[string]int{"inf": 1, "-inf": -1}[inf]))
	return nil
}

type streamEntry struct {
	ID     string `json:"id"`
	Values []blob `json:"values"`
}

// journalRecord is what one save found changed. A key appears in at most one of the lists.
type journalRecord struct {
	Put    []snapshotKey  `json:"put,omitempty"`
	Append []streamAppend `json:"append,omitempty"`
	Patch  []stringPatch  `json:"patch,omitempty"`
	Del    []blob         `json:"del,omitempty"`
}

// streamAppend is entries added at the end of a stream whose earlier entries and TTL did not change.
type streamAppend struct {
	Key     blob          `json:"key"`
	Entries []streamEntry `json:"entries"`
}

// blob is a Redis string in the snapshot. Redis strings are bytes (asynq stores protobuf): text that is valid UTF-8
// stays readable JSON, anything else is kept exactly, as base64.
type blob string

func (b blob) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(b)) {
		return json.Marshal(string(b))
	}
	return json.Marshal(map[string]string{"b64": base64.StdEncoding.EncodeToString([]byte(b))})
}

func (b *blob) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*b = blob(s)
		return nil
	}
	var m struct {
		B64 string `json:"b64"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(m.B64)
	if err != nil {
		return err
	}
	*b = blob(raw)
	return nil
}

func blobs(ss []string) []blob {
	out := make([]blob, len(ss))
	for i, s := range ss {
		out[i] = blob(s)
	}
	return out
}

func strs(bs []blob) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// checksumSuffix ends every version 3 snapshot: `,"crc32c":"xxxxxxxx"}` and a newline.
const checksumSuffixLen = len(`,"crc32c":"00000000"}`) + 1

func encodeSnapshot(s *snapshot) ([]byte, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding snapshot: %w", err)
	}
	body = body[:len(body)-1] // reopen the object to add the checksum as its last field
	return fmt.Appendf(body, `,"crc32c":"%08x"}`+"\n", crc(body)), nil
}

// decodeSnapshot checks and parses a snapshot. Its errors describe the damage.
func decodeSnapshot(data []byte) (*snapshot, error) {
	var s *snapshot
	var err error
	if n := len(data) - checksumSuffixLen; n > 0 && bytes.HasPrefix(data[n:], []byte(`,"crc32c":"`)) {
		s, err = decodeChecked(data, n)
	} else {
		s, err = decodeLegacy(data)
	}
	if err != nil {
		return nil, err
	}
	for i := range s.Keys {
		if err := validKey(&s.Keys[i]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// decodeChecked decodes a snapshot of the current version, whose checksum starts at data[n:].
func decodeChecked(data []byte, n int) (*snapshot, error) {
	var s snapshot
	want, err := strconv.ParseUint(string(data[n+len(`,"crc32c":"`):len(data)-3]), 16, 32)
	if err != nil || !bytes.HasSuffix(data, []byte("\"}\n")) {
		return nil, errors.New("its checksum is unreadable")
	}
	if got := crc(data[:n]); got != uint32(want) {
		return nil, fmt.Errorf("its checksum does not match its content (%08x, want %08x)", got, want)
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("it is not valid JSON: %v", err)
	}
	if s.Version != snapshotVersion {
		return nil, fmt.Errorf("it has version %d; this orch reads versions %d and %d", s.Version, legacyVersion, snapshotVersion)
	}
	if s.JournalGen == 0 {
		return nil, errors.New("it has no journal generation")
	}
	return &s, nil
}

// decodeLegacy decodes a snapshot without a checksum: only the legacy version has none.
func decodeLegacy(data []byte) (*snapshot, error) {
	var s snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("it is not valid JSON: %v", err)
	}
	switch s.Version {
	case legacyVersion:
		// Written before TTLs were absolute: what was left of a TTL counts from when the file was saved.
		for i := range s.Keys {
			if k := &s.Keys[i]; k.TTLms > 0 {
				k.ExpiresAt = s.SavedAt.Add(time.Duration(k.TTLms) * time.Millisecond).UnixMilli()
				k.TTLms = 0
			}
		}
		s.JournalGen = 0
		return &s, nil
	case snapshotVersion:
		return nil, errors.New("its checksum is missing")
	}
	return nil, fmt.Errorf("it has version %d; this orch reads versions %d and %d", s.Version, legacyVersion, snapshotVersion)
}

// validKey reports a key that could not be restored as it was saved.
func validKey(k *snapshotKey) error {
	bad := func(what string) error { return fmt.Errorf("key %q (%s) %s", string(k.Key), k.Type, what) }
	if k.ExpiresAt < 0 {
		return bad("has a negative expiry")
	}
	switch k.Type {
	case "string":
		if k.String == nil {
			return bad("has no value")
		}
	case "hash":
		if len(k.Hash) == 0 {
			return bad("is empty")
		}
	case "list":
		if len(k.List) == 0 {
			return bad("is empty")
		}
	case "set":
		if len(k.Set) == 0 {
			return bad("is empty")
		}
	case "zset":
		if len(k.ZSet) == 0 {
			return bad("is empty")
		}
		for _, z := range k.ZSet {
			if math.IsNaN(float64(z.Score)) {
				return bad("has a score that is not a number")
			}
		}
	case "stream":
		// An empty stream is saved but not restored (there is no way to create one without an entry).
		return validEntries(k.Stream, "0-0", bad)
	default:
		return bad("has a type orch does not restore")
	}
	return nil
}

// validEntries checks that stream entries have well-formed IDs, each greater than the one before (after).
func validEntries(entries []streamEntry, after string, bad func(string) error) error {
	last, _ := parseStreamID(after)
	for _, e := range entries {
		id, ok := parseStreamID(e.ID)
		if !ok {
			return bad(fmt.Sprintf("has a malformed entry id %q", e.ID))
		}
		if !last.less(id) {
			return bad(fmt.Sprintf("has entry id %s out of order", e.ID))
		}
		if len(e.Values) == 0 || len(e.Values)%2 != 0 {
			return bad(fmt.Sprintf("has entry %s with an odd number of values", e.ID))
		}
		last = id
	}
	return nil
}

type streamID struct{ ms, seq uint64 }

func (a streamID) less(b streamID) bool { return a.ms < b.ms || a.ms == b.ms && a.seq < b.seq }

func parseStreamID(s string) (streamID, bool) {
	ms, seq, ok := strings.Cut(s, "-")
	if !ok {
		return streamID{}, false
	}
	a, err1 := strconv.ParseUint(ms, 10, 64)
	b, err2 := strconv.ParseUint(seq, 10, 64)
	return streamID{a, b}, err1 == nil && err2 == nil
}

func journalHeader(gen uint64) []byte {
	h := make([]byte, 0, journalHeaderLen)
	h = append(h, journalMagic...)
	h = binary.LittleEndian.AppendUint64(h, gen)
	return binary.LittleEndian.AppendUint32(h, crc(h))
}

// readJournalHeader returns a journal's generation, and whether it is of the first version.
func readJournalHeader(data []byte) (gen uint64, v1 bool, err error) {
	if len(data) < journalHeaderLen {
		return 0, false, errors.New("its header is incomplete")
	}
	h := data[:journalHeaderLen]
	magic := string(h[:len(journalMagic)])
	if magic != journalMagic && magic != journalMagicV1 {
		return 0, false, errors.New("it does not start like an orch journal")
	}
	if crc(h[:journalHeaderLen-4]) != binary.LittleEndian.Uint32(h[journalHeaderLen-4:]) {
		return 0, false, errors.New("its header checksum does not match")
	}
	return binary.LittleEndian.Uint64(h[len(journalMagic):]), magic == journalMagicV1, nil
}

func frame(payload []byte) []byte {
	f := make([]byte, frameHeaderLen, frameHeaderLen+len(payload))
	binary.LittleEndian.PutUint32(f[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(f[4:], crc(payload))
	binary.LittleEndian.PutUint32(f[8:], crc(f[:8]))
	return append(f, payload...)
}

// journalScan is what reading a journal's records found.
type journalScan struct {
	records [][]byte // payloads of the intact records, in order
	ends    []int64  // offset just after each of them
	good    int64    // offset just after the last intact record
	// torn: the bytes after good are the unfinished last write of a process that stopped mid-save. That write was
	// never acknowledged, so dropping it loses nothing.
	torn bool
	// damage, when set, says what is wrong at offset good, with more of the file after it: the file was damaged
	// after it was written, and the records from there on cannot be trusted.
	damage error
}

// scanJournal reads the records after a journal's header.
func scanJournal(data []byte) journalScan {
	s := journalScan{good: int64(journalHeaderLen)}
	off := journalHeaderLen
	for off < len(data) {
		rest := data[off:]
		if len(rest) < frameHeaderLen {
			s.torn = true // the write stopped inside the frame header
			return s
		}
		n := binary.LittleEndian.Uint32(rest[0:])
		sum := binary.LittleEndian.Uint32(rest[4:])
		if crc(rest[:8]) != binary.LittleEndian.Uint32(rest[8:]) || n == 0 || n > maxRecord {
			s.torn = unwritten(rest)
			if !s.torn {
				s.damage = fmt.Errorf("the record header at byte %d is damaged", off)
			}
			return s
		}
		if int(n) > len(rest)-frameHeaderLen {
			s.torn = true // the write stopped inside the payload
			return s
		}
		payload := rest[frameHeaderLen : frameHeaderLen+int(n)]
		end := off + frameHeaderLen + int(n)
		if crc(payload) != sum {
			// A record that ends the file, with a zero-filled end, is a write the disk had not finished (some file
			// systems extend the file before its data is on disk). Anything else was damaged after it was written.
			s.torn = end == len(data) && unwritten(data[max(off, end-16):end])
			if !s.torn {
				s.damage = fmt.Errorf("the record at byte %d does not match its checksum", off)
			}
			return s
		}
		s.records = append(s.records, payload)
		off = end
		s.ends = append(s.ends, int64(off))
		s.good = int64(off)
	}
	return s
}

// unwritten reports whether b is all zero bytes: space a file system allocated for a write it had not finished.
func unwritten(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func decodeRecord(payload []byte) (*journalRecord, error) {
	var r journalRecord
	if err := json.Unmarshal(payload, &r); err != nil {
		return nil, fmt.Errorf("it is not valid JSON: %v", err)
	}
	for i := range r.Put {
		if err := validKey(&r.Put[i]); err != nil {
			return nil, err
		}
	}
	return &r, nil
}
