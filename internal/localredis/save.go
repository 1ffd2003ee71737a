package localredis

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orchrun/orch/internal/owned"
)

// A save pass reads the store in one transaction, compares every key with what was last persisted, and appends what
// changed to the journal as one record, with one write and one fsync. It reads every key but a stream whole; of a
// stream that nothing but appending can have changed since the last pass, it reads only the new entries (see
// touched.go). Writing is in proportion to the change. When the journal has grown past the size of the snapshot (and
// at least compactAtLeast), the pass reads the whole store, writes it as a new snapshot and starts a new journal.

const compactAtLeast = 1 << 20

// readAttempts bounds how often a pass re-reads the store because keys appeared while it read (see readStore).
// After that many, the pass saves what it read consistently and leaves the new keys to the next pass.
const readAttempts = 5

// mark is what a save remembers of a persisted key, to tell whether it changed.
type mark struct {
	typ     string
	expires int64    // deadline in unix seconds; 0 for none. Rounded, as a TTL read twice differs by milliseconds.
	sum     [32]byte // SHA-256 of the content; of a stream's first n entries, or of an earlier sum and entries since
	n       int      // streams: entries covered by sum
	last    string   // streams: the id of entry n
}

// storeCopy is the store as one save pass read it.
type storeCopy struct {
	keys  []snapshotKey            // sorted by key
	tails map[string][]streamEntry // streams read from their last saved entry on: the entries after it
	flags flagMark                 // the flags as the pass began: every stream flagged until then was read whole
	// unsure lists keys whose state this copy does not know, when the store kept changing under every read
	// attempt: they are neither saved nor deleted by this pass. Empty for a complete copy.
	unsure map[string]bool
}

func (c *storeCopy) complete() bool { return len(c.unsure) == 0 }

// whole reports whether the copy holds every key whole, as a snapshot needs.
func (c *storeCopy) whole() bool { return c.complete() && len(c.tails) == 0 }

// readStore reads every key with MULTI/EXEC, so the copy is consistent across keys: a script that moves a task from
// one list to another is seen before or after, never half done. The commands for a key depend on its type, known
// before the transaction runs; a key that appears or changes type in between makes the pass read again, and so does
// a stream read from its tail that turns out to have changed otherwise. With whole, every stream is read whole.
func (o *owner) readStore(whole bool) (*storeCopy, error) {
	known := make(map[string]string, len(o.marks))
	for k, m := range o.marks {
		known[k] = m.typ
	}
	r := &storeRead{known: known, force: map[string]bool{}, whole: whole}
	for attempt := 1; ; attempt++ {
		c, err := o.readPass(r)
		if err != nil {
			return nil, err
		}
		if c.complete() || attempt == readAttempts {
			return c, nil
		}
	}
}

// storeRead is what the passes of one readStore share.
type storeRead struct {
	known map[string]string // key types
	force map[string]bool   // streams to read whole: their tail did not add up
	whole bool
	flags flagMark // as this attempt began
}

// tail reports whether key is read from its last saved entry on: a stream saved with entries and no TTL, that no
// command has flagged since. A TTL's end deletes a stream with no command, so a stream with one is read whole.
func (o *owner) tail(r *storeRead, key string) *mark {
	if r.whole || r.known[key] != "stream" || r.force[key] || r.flags.whole(key) {
		return nil
	}
	if m := o.marks[key]; m != nil && m.typ == "stream" && m.expires == 0 && m.n > 0 && m.last != "" {
		return m
	}
	return nil
}

// readPass is one pass of readStore: the key list, the types not known yet, then every key in one transaction.
func (o *owner) readPass(r *storeRead) (*storeCopy, error) {
	known := r.known
	list, err := o.local.run([]string{"KEYS", "*"})
	if err != nil {
		return nil, err
	}
	keys, err := list[0].strings()
	if err != nil {
		return nil, err
	}
	if err := o.learnTypes(keys, known); err != nil {
		return nil, err
	}
	r.flags = o.flags.mark()
	cmds := [][]string{{"MULTI"}, {"KEYS", "*"}}
	for _, k := range keys {
		cmds = append(cmds, []string{"TYPE", k}, []string{"PEXPIRETIME", k})
		if m := o.tail(r, k); m != nil {
			cmds = append(cmds, []string{"XLEN", k}, []string{"XREVRANGE", k, "+", "(" + m.last})
		} else if rc := readCommand(k, known[k]); rc != nil {
			cmds = append(cmds, rc)
		}
	}
	cmds = append(cmds, []string{"EXEC"})
	rs, err := o.local.run(cmds...)
	if err != nil {
		return nil, err
	}
	exec := rs[len(rs)-1]
	if err := exec.err(); err != nil || exec.kind != '*' || len(exec.arr) != len(cmds)-2 {
		return nil, fmt.Errorf("reading the store in a transaction: %v (reply %q with %d parts)", err, exec.kind, len(exec.arr))
	}
	all, err := exec.arr[0].strings()
	if err != nil {
		return nil, err
	}
	// A command that may change streams otherwise and was flagged since the pass began may have run before its
	// read: the streams it names were read from their tail, wrongly. Once every command running has raised its
	// flags, the pass knows.
	o.flags.settle()
	c := &storeCopy{unsure: map[string]bool{}, flags: r.flags}
	asked := make(map[string]bool, len(keys))
	for _, k := range keys {
		asked[k] = true
	}
	for _, k := range all {
		if !asked[k] {
			c.unsure[k] = true // created after the key list was read
		}
	}
	return c, o.decodeKeys(c, r, keys, exec.arr[1:])
}

// decodeKeys reads the transaction's replies for keys (TYPE, PEXPIRETIME, and the value when the type is one orch
// saves) into c: a key gone is skipped, a key whose type changed since the pass began is unsure, and so is a stream
// whose tail does not add up to what was saved of it.
func (o *owner) decodeKeys(c *storeCopy, r *storeRead, keys []string, replies []reply) error {
	known := r.known
	for _, k := range keys {
		t, expires := replies[0].str, replies[1]
		var value *reply
		if prev := o.tail(r, k); prev != nil {
			length, entries := replies[2], replies[3]
			replies = replies[4:]
			if t == "none" {
				continue
			}
			if t != known[k] {
				known[k] = t // read by its type next time
			}
			if !o.addTail(c, k, prev, t, expires, length, entries) {
				c.unsure[k] = true
				r.force[k] = true
			}
			continue
		}
		if readCommand(k, known[k]) != nil {
			value = &replies[2]
			replies = replies[3:]
		} else {
			replies = replies[2:]
		}
		switch {
		case t == "none":
			continue // deleted or expired
		case t != known[k]:
			c.unsure[k] = true
			known[k] = t
			continue
		case value == nil:
			o.warnUnsaved(k, t)
			continue
		}
		sk, err := toKey(k, t, expires, *value)
		if err != nil {
			return fmt.Errorf("reading key %q: %w", k, err)
		}
		c.keys = append(c.keys, sk)
	}
	return nil
}

// addTail adds to c the entries of stream k after its saved entry prev.last, read with XLEN and XREVRANGE, and
// reports whether they add up: the stream is still one, with no TTL, no command flagged it since the pass began,
// and it holds the saved entries and these, no fewer.
func (o *owner) addTail(c *storeCopy, k string, prev *mark, t string, expires, length, entries reply) bool {
	if t != "stream" || expires.err() != nil || expires.n > 0 || length.err() != nil || o.flags.since(c.flags, k) {
		return false
	}
	added, err := toStream(entries)
	if err != nil || entries.err() != nil || length.n != int64(prev.n+len(added)) {
		return false
	}
	slices.Reverse(added)
	if c.tails == nil {
		c.tails = map[string][]streamEntry{}
	}
	c.tails[k] = added
	return true
}

// learnTypes adds the types of keys not seen before to known.
func (o *owner) learnTypes(keys []string, known map[string]string) error {
	var cmds [][]string
	for _, k := range keys {
		if _, ok := known[k]; !ok {
			cmds = append(cmds, []string{"TYPE", k})
		}
	}
	if len(cmds) == 0 {
		return nil
	}
	rs, err := o.local.run(cmds...)
	if err != nil {
		return err
	}
	for i, c := range cmds {
		known[c[1]] = rs[i].str
	}
	return nil
}

// readCommand is the command that reads a key of type t; nil for a type orch does not save.
func readCommand(k, t string) []string {
	switch t {
	case "string":
		return []string{"GET", k}
	case "hash":
		return []string{"HGETALL", k}
	case "list":
		return []string{"LRANGE", k, "0", "-1"}
	case "set":
		return []string{"SMEMBERS", k}
	case "zset":
		return []string{"ZRANGE", k, "0", "-1", "WITHSCORES"}
	case "stream":
		return []string{"XRANGE", k, "-", "+"}
	}
	return nil
}

// toKey is key k of type t as a snapshot holds it, from its PEXPIRETIME and the reply of its readCommand.
func toKey(k, t string, expires, value reply) (snapshotKey, error) {
	sk := snapshotKey{Key: blob(k), Type: t}
	if err := expires.err(); err != nil {
		return sk, err
	}
	if expires.n > 0 {
		sk.ExpiresAt = expires.n
	}
	if err := value.err(); err != nil {
		return sk, err
	}
	switch t {
	case "string":
		b := blob(value.str)
		sk.String = &b
		return sk, nil
	case "stream":
		var err error
		sk.Stream, err = toStream(value)
		return sk, err
	}
	l, err := value.strings()
	if err != nil {
		return sk, err
	}
	return sk, sk.setCollection(l)
}

// toStream is the entries of an XRANGE reply.
func toStream(value reply) ([]streamEntry, error) {
	var entries []streamEntry
	for _, r := range value.arr {
		if len(r.arr) != 2 {
			return entries, fmt.Errorf("unexpected stream entry %+v", r)
		}
		vals, err := r.arr[1].strings()
		if err != nil {
			return entries, err
		}
		entries = append(entries, streamEntry{ID: r.arr[0].str, Values: blobs(vals)})
	}
	return entries, nil
}

// setCollection sets the value of a hash, list, set or sorted set from its reply's strings, in an order of their
// own where Redis gives none (hash fields, set members, sorted set members by name).
func (sk *snapshotKey) setCollection(l []string) error {
	switch sk.Type {
	case "hash":
		for i := 0; i+1 < len(l); i += 2 {
			sk.Hash = append(sk.Hash, [2]blob{blob(l[i]), blob(l[i+1])})
		}
		slices.SortFunc(sk.Hash, func(a, b [2]blob) int { return strings.Compare(string(a[0]), string(b[0])) })
	case "list":
		sk.List = blobs(l)
	case "set":
		sort.Strings(l)
		sk.Set = blobs(l)
	case "zset":
		for i := 0; i+1 < len(l); i += 2 {
			f, err := strconv.ParseFloat(l[i+1], 64)
			if err != nil {
				return fmt.Errorf("score of %q: %w", l[i], err)
			}
			sk.ZSet = append(sk.ZSet, zmember{blob(l[i]), score(f)})
		}
		slices.SortFunc(sk.ZSet, func(a, b zmember) int { return strings.Compare(string(a.Member), string(b.Member)) })
	}
	return nil
}

// markKey computes a key's mark. For a stream whose first prev.n entries and TTL are unchanged, it also returns the
// entries added since, and appendable.
func markKey(k *snapshotKey, prev *mark) (m mark, added []streamEntry, appendable bool) {
	m = mark{typ: k.Type, expires: (k.ExpiresAt + 500) / 1000}
	h := sha256.New()
	if k.Type == "stream" {
		appendable = hashStream(h, k.Stream, prev, m.expires)
		m.n = len(k.Stream)
		if m.n > 0 {
			m.last = k.Stream[m.n-1].ID
		}
		if appendable {
			added = k.Stream[prev.n:]
		}
	} else {
		hashValue(h, k)
	}
	m.sum = [32]byte(h.Sum(nil))
	return m, added, appendable
}

// markTail is the mark of a stream read from its tail: the entries added after prev's.
func markTail(prev *mark, added []streamEntry) mark {
	if len(added) == 0 {
		return *prev
	}
	m := *prev
	h := sha256.New()
	h.Write(prev.sum[:])
	hashEntries(h, added)
	m.sum = [32]byte(h.Sum(nil))
	m.n += len(added)
	m.last = added[len(added)-1].ID
	return m
}

// hashValue hashes the value of a key that is not a stream.
func hashValue(h hash.Hash, k *snapshotKey) {
	switch k.Type {
	case "string":
		field(h, string(*k.String))
	case "hash":
		for _, p := range k.Hash {
			field(h, string(p[0]))
			field(h, string(p[1]))
		}
	case "list":
		for _, v := range k.List {
			field(h, string(v))
		}
	case "set":
		for _, v := range k.Set {
			field(h, string(v))
		}
	case "zset":
		for _, z := range k.ZSet {
			field(h, string(z.Member))
			h.Write(binary.LittleEndian.AppendUint64(nil, math.Float64bits(float64(z.Score))))
		}
	}
}

// hashStream hashes a stream's entries, and reports whether its first prev.n entries hash as prev did (with the same
// TTL): then only the entries after them are new.
func hashStream(h hash.Hash, entries []streamEntry, prev *mark, expires int64) (appendable bool) {
	candidate := prev != nil && prev.typ == "stream" && prev.expires == expires && prev.n > 0 && prev.n <= len(entries)
	for i := range entries {
		if candidate && i == prev.n {
			appendable = [32]byte(h.Sum(nil)) == prev.sum
		}
		hashEntries(h, entries[i:i+1])
	}
	if candidate && prev.n == len(entries) {
		appendable = [32]byte(h.Sum(nil)) == prev.sum
	}
	return appendable
}

func hashEntries(h hash.Hash, entries []streamEntry) {
	for _, e := range entries {
		field(h, e.ID)
		for _, v := range e.Values {
			field(h, string(v))
		}
	}
}

// field writes one length-prefixed string, so that different contents never hash the same bytes.
func field(h hash.Hash, s string) {
	h.Write(binary.AppendUvarint(nil, uint64(len(s))))
	h.Write([]byte(s))
}

// changes compares the copy with what was persisted: the record to append, and the marks it makes true (nil: the
// key is gone).
func (o *owner) changes(c *storeCopy) (*journalRecord, map[string]*mark) {
	rec := &journalRecord{}
	next := map[string]*mark{}
	seen := make(map[string]bool, len(c.keys)+len(c.tails))
	for i := range c.keys {
		k := &c.keys[i]
		name := string(k.Key)
		seen[name] = true
		prev := o.marks[name]
		m, added, appendable := markKey(k, prev)
		if prev != nil && *prev == m {
			continue
		}
		switch {
		case appendable:
			rec.Append = append(rec.Append, streamAppend{Key: k.Key, Entries: added})
		case k.Type == "string" && prev != nil && prev.typ == "string" && prev.expires == m.expires:
			if p, ok := o.patchOf(name, prev, string(*k.String)); ok {
				rec.Patch = append(rec.Patch, p)
				break
			}
			fallthrough
		default:
			rec.Put = append(rec.Put, *k)
		}
		next[name] = &m
	}
	for name, added := range c.tails {
		seen[name] = true
		if len(added) > 0 {
			rec.Append = append(rec.Append, streamAppend{Key: blob(name), Entries: added})
			m := markTail(o.marks[name], added)
			next[name] = &m
		}
	}
	slices.SortFunc(rec.Append, func(a, b streamAppend) int { return strings.Compare(string(a.Key), string(b.Key)) })
	for name := range o.marks {
		if !seen[name] && !c.unsure[name] {
			rec.Del = append(rec.Del, blob(name))
			next[name] = nil
		}
	}
	slices.Sort(rec.Del)
	return rec, next
}

func (r *journalRecord) empty() bool { return len(r.Put)+len(r.Append)+len(r.Patch)+len(r.Del) == 0 }

// save runs one save pass. The caller holds o.sem.
func (o *owner) save() error {
	writes := o.writes.Load()
	c, err := o.readStore(false)
	if err != nil {
		return fmt.Errorf("saving the embedded store in %s: reading it: %w", o.dir, err)
	}
	rec, next := o.changes(c)
	mustCompact := o.journal == nil || o.journal.broken
	if !mustCompact && !rec.empty() {
		payload, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("saving the embedded store: encoding: %w", err)
		}
		if err := o.journal.append(payload); err != nil {
			return fmt.Errorf("saving the embedded store: %w", err)
		}
		for k, m := range next {
			if m == nil {
				delete(o.marks, k)
			} else {
				o.marks[k] = m
			}
		}
		o.keepSaved(c.keys, next)
	}
	saved := !mustCompact // what c holds is on disk
	// A snapshot that holds mostly keys deleted since (runs moved to the archive after a busy spell) is rewritten
	// too: every process that opens the store reads it whole.
	shrunk := o.snapSize > o.compactMin/4 && 2*(len(c.keys)+len(c.tails)) < o.snapKeys
	if mustCompact || shrunk || o.journal.size > max(o.compactMin, o.snapSize) {
		if c.complete() && !c.whole() {
			if c, err = o.readStore(true); err != nil {
				return fmt.Errorf("saving the embedded store in %s: reading it: %w", o.dir, err)
			}
		}
		if !c.complete() {
			// A snapshot must hold every key; the journal keeps what this pass read until a complete read.
			o.trailing = true
			if mustCompact {
				return fmt.Errorf("saving the embedded store in %s: it changed under every one of %d reads; trying again", o.dir, readAttempts)
			}
			return nil
		}
		if err := o.compact(c.keys); err != nil {
			if mustCompact {
				return fmt.Errorf("saving the embedded store: %w", err)
			}
			return fmt.Errorf("compacting the embedded store: %w (the changes are saved in %s, which grows until this works)", err, o.journal.path)
		}
		saved = true
	}
	if saved {
		o.flags.clear(c.flags, c.unsure)
	}
	// One more pass after a change: a command counted just before this pass may have run just after its read.
	o.trailing = writes != o.savedWrites || !c.complete()
	o.savedWrites = writes
	return nil
}

// patchOf is the patch that makes value from the saved value of key, whose mark is prev; ok when there is one and
// it is less than half the value's size.
func (o *owner) patchOf(key string, prev *mark, value string) (p stringPatch, ok bool) {
	old, kept := o.saved[key]
	if !kept || len(value) < patchMin {
		return p, false
	}
	ops, added := diff(old, value)
	if added+16*len(ops) > len(value)/2 {
		return p, false
	}
	return stringPatch{Key: blob(key), From: blob(prev.sum[:]), Ops: ops}, true
}

// keepSaved keeps the values of the large strings of keys, as saved, for the next patches; names lists the keys
// whose saved state changed (nil: every key of keys, and only those).
func (o *owner) keepSaved(keys []snapshotKey, names map[string]*mark) {
	if names == nil {
		o.saved = map[string]string{}
	}
	for name := range names {
		delete(o.saved, name)
	}
	for i := range keys {
		k := &keys[i]
		if k.Type != "string" || len(*k.String) < patchMin {
			continue
		}
		if _, changed := names[string(k.Key)]; changed || names == nil {
			o.saved[string(k.Key)] = string(*k.String)
		}
	}
}

// compact writes keys as a new snapshot with a new journal, keeping the pair it replaces as the fallback. Each
// step leaves a state Open restores completely (see loadState): the renames are made durable one by one, and a
// journal is replayed only over the snapshot of its generation.
func (o *owner) compact(keys []snapshotKey) error {
	// Every attempt takes a new generation, so that two different snapshots never share one, even when an attempt
	// fails halfway and the next one starts over.
	o.gen++
	gen := o.gen
	data, err := encodeSnapshot(&snapshot{Version: snapshotVersion, SavedAt: time.Now().UTC(), JournalGen: gen, Keys: keys})
	if err != nil {
		return err
	}
	snapTmp, err := writeTemp(o.files, snapshotFile, data)
	if err != nil {
		return err
	}
	defer o.files.Remove(snapTmp) // a no-op once renamed
	journalTmp, err := writeTemp(o.files, journalFile, journalHeader(gen))
	if err != nil {
		return err
	}
	defer o.files.Remove(journalTmp)
	if o.journal != nil {
		o.journal.broken = true // until the new one is in place, appending to the old one would be wrong
	}
	for _, mv := range []struct {
		from, to string
		optional bool // the pair being replaced may be incomplete: a fresh directory, or a damaged file moved aside
	}{
		{snapshotFile, prevSnapshotFile, true},
		{journalFile, prevJournalFile, true},
		{snapTmp, snapshotFile, false},
		{journalTmp, journalFile, false},
	} {
		if err := o.files.Rename(mv.from, mv.to); err != nil && !(mv.optional && errors.Is(err, os.ErrNotExist)) {
			return fileError("writing", o.files.Path(mv.to), err)
		}
		if err := syncDir(o.files); err != nil {
			return err
		}
	}
	j, err := openJournal(o.files, journalFile, int64(journalHeaderLen))
	if err != nil {
		return err
	}
	if o.journal != nil {
		o.journal.f.Close()
	}
	o.journal, o.snapSize, o.snapKeys = j, int64(len(data)), len(keys)
	o.marks = make(map[string]*mark, len(keys))
	for i := range keys {
		m, _, _ := markKey(&keys[i], nil)
		o.marks[string(keys[i].Key)] = &m
	}
	o.keepSaved(keys, nil)
	return nil
}

// journalWriter appends records to the journal.
type journalWriter struct {
	f    *os.File
	path string // for messages
	size int64  // offset just after the last record written and synced
	// broken: a failed fsync may have lost what it was to make durable, and the file cannot be trusted to hold the
	// records before it; the next pass writes a new snapshot instead.
	broken bool
}

func openJournal(files *owned.Dir, name string, end int64) (*journalWriter, error) {
	path := files.Path(name)
	f, err := files.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return nil, fileError("opening", path, err)
	}
	return &journalWriter{f: f, path: path, size: end}, nil
}

// append writes one record and syncs it. On failure the file is cut back to the last good record, so the next
// append follows it.
func (j *journalWriter) append(payload []byte) error {
	rec := frame(payload)
	_, err := j.f.WriteAt(rec, j.size)
	if err == nil {
		if err = j.f.Sync(); err != nil {
			j.broken = true
		}
	}
	if err != nil {
		if terr := j.f.Truncate(j.size); terr != nil {
			j.broken = true
		}
		return fileError("writing", j.path, err)
	}
	j.size += int64(len(rec))
	return nil
}

// writeTemp writes data to a new temporary file next to name, synced, and returns its name. Every file of the store
// comes into place by a rename of one of these, already the directory owner's (see owned.Dir.CreateTemp).
func writeTemp(files *owned.Dir, name string, data []byte) (string, error) {
	path := files.Path(name)
	tmp, tmpName, err := files.CreateTemp(".", name+".tmp*")
	if err != nil {
		return "", fileError("writing", path, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		files.Remove(tmpName)
		return "", fileError("writing", path, err)
	}
	return tmpName, nil
}

// writeFileAtomic replaces the file name with data: a crash leaves the old file or the new one.
func writeFileAtomic(files *owned.Dir, name string, data []byte) error {
	tmp, err := writeTemp(files, name, data)
	if err != nil {
		return err
	}
	if err := files.Rename(tmp, name); err != nil {
		files.Remove(tmp)
		return fileError("writing", files.Path(name), err)
	}
	return nil
}

// syncDir makes the renames and creations in the directory durable.
func syncDir(files *owned.Dir) error {
	if err := files.SyncDir("."); err != nil {
		return fileError("syncing", files.Path("."), err)
	}
	return nil
}

// fileError says what could not be done to which file, and why, naming the file once.
func fileError(doing, path string, err error) error {
	return fmt.Errorf("%s %s: %w", doing, path, bare(err))
}

// bare is err without the file name it carries (a relative one, in the directory), which the message names better.
func bare(err error) error {
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		return pe.Err
	} else if le, ok := errors.AsType[*os.LinkError](err); ok {
		return le.Err
	}
	return err
}
