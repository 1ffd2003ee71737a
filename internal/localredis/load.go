package localredis

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/orchrun/orch/internal/owned"
)

// loaded is what loadState restored, and what the files on disk need next.
type loaded struct {
	gen        uint64 // the highest generation on disk: the next snapshot takes gen+1
	journal    string // name of the journal to keep appending to; "" when the files must be rewritten first
	journalEnd int64  // offset just after its last intact record
	snapSize   int64
	snapKeys   int  // keys in the snapshot
	compact    bool // write a new snapshot and journal before anything else
	warnings   []string
}

// loadState restores into mr the last good state saved in files: the newest intact snapshot, with the records of its
// journal up to the first damaged one. A damaged file is moved aside (never overwritten, never deleted) and reported
// in warnings, which say what orch started from; only a file that cannot be read at all (an I/O error) fails.
//
// It goes in three steps: read the journals (readJournals), restore the newest intact snapshot (restoreSnapshot) and
// replay the journal written over it (replay); TTLs are set last (setDeadlines), so that no key expires halfway.
func loadState(files *owned.Dir, mr *miniredis.Miniredis) (*loaded, error) {
	ld := &loader{files: files, mr: mr, stamp: time.Now().UTC().Format("20060102T150405Z"), out: &loaded{},
		deadlines: map[string]int64{}}
	removeTemps(files)
	journals, err := ld.readJournals()
	if err != nil {
		return nil, err
	}
	base, basePath, err := ld.restoreSnapshot()
	if err != nil {
		return nil, err
	}
	replay, err := ld.pickJournal(journals, base)
	if err != nil {
		return nil, err
	}
	startedFrom := "an empty store"
	switch {
	case base != nil && filepath.Base(basePath) == prevSnapshotFile:
		startedFrom = "the previous snapshot " + basePath
	case base != nil:
		startedFrom = "the snapshot " + basePath
	}
	if replay != nil {
		more, err := ld.replay(replay)
		if err != nil {
			return nil, err
		}
		startedFrom += more
	}
	l := ld.out
	l.compact = l.compact || l.journal == ""
	ld.setDeadlines()
	for _, p := range ld.problems {
		l.warnings = append(l.warnings, fmt.Sprintf("embedded store: %s orch started from %s. Inspect or delete the moved file.", p, startedFrom))
	}
	return l, nil
}

// loader is one loadState: what it restores into, and what it found wrong so far.
type loader struct {
	files     *owned.Dir
	mr        *miniredis.Miniredis
	stamp     string // names the files moved aside
	out       *loaded
	problems  []string         // what was wrong, each completed with what orch started from
	deadlines map[string]int64 // the TTLs to set once everything is loaded, as unix milliseconds
}

// savedJournal is a journal file read whole.
type savedJournal struct {
	name, path string
	data       []byte
	gen        uint64
}

// read returns file name's bytes and path; nil bytes when there is no such file.
func (ld *loader) read(name string) ([]byte, string, error) {
	path := ld.files.Path(name)
	data, err := ld.files.ReadFile(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, path, nil
	case err != nil:
		return nil, path, fileError("reading", path, err)
	}
	return data, path, nil
}

// damaged moves file name aside, says why, and has the files written anew.
func (ld *loader) damaged(name, why string) error {
	moved, err := moveAside(ld.files, name, ld.stamp)
	if err != nil {
		return err
	}
	ld.problems = append(ld.problems, fmt.Sprintf("%s %s; it was moved to %s.", ld.files.Path(name), why, moved))
	ld.out.compact = true
	return nil
}

// readJournals reads the journals whose header is intact.
func (ld *loader) readJournals() ([]*savedJournal, error) {
	var journals []*savedJournal
	for _, name := range []string{journalFile, prevJournalFile} {
		data, path, err := ld.read(name)
		if err != nil {
			return nil, err
		}
		if data == nil {
			continue
		}
		gen, v1, err := readJournalHeader(data)
		if err != nil {
			if err := ld.damaged(name, fmt.Sprintf("is damaged (%v)", err)); err != nil {
				return nil, err
			}
			continue
		}
		ld.out.compact = ld.out.compact || v1
		ld.out.gen = max(ld.out.gen, gen)
		journals = append(journals, &savedJournal{name, path, data, gen})
	}
	return journals, nil
}

// restoreSnapshot restores the newest snapshot that decodes and restores whole, and returns it with its path; nil when
// there is none.
func (ld *loader) restoreSnapshot() (*snapshot, string, error) {
	for _, name := range []string{snapshotFile, prevSnapshotFile} {
		data, path, err := ld.read(name)
		if err != nil {
			return nil, "", err
		}
		if data == nil {
			continue
		}
		snap, err := decodeSnapshot(data)
		if err == nil {
			ld.out.gen = max(ld.out.gen, snap.JournalGen)
			err = restoreKeys(ld.mr, snap.Keys, ld.deadlines)
		}
		if err != nil {
			ld.mr.FlushAll()
			clear(ld.deadlines)
			if err := ld.damaged(name, fmt.Sprintf("is damaged (%v)", err)); err != nil {
				return nil, "", err
			}
			continue
		}
		ld.out.snapSize, ld.out.snapKeys = int64(len(data)), len(snap.Keys)
		ld.out.compact = ld.out.compact || name != snapshotFile || snap.Version != snapshotVersion
		return snap, path, nil
	}
	return nil, "", nil
}

// pickJournal returns the journal written over base, if any. A journal written over a newer snapshot that is gone
// cannot be applied to anything orch has: it is kept aside for a person to look at.
func (ld *loader) pickJournal(journals []*savedJournal, base *snapshot) (*savedJournal, error) {
	var replay *savedJournal
	for _, j := range journals {
		switch {
		case base != nil && base.JournalGen > 0 && j.gen == base.JournalGen && replay == nil:
			replay = j
		case base == nil || j.gen > base.JournalGen:
			if err := ld.damaged(j.name, "holds changes to a snapshot that is damaged or missing"); err != nil {
				return nil, err
			}
		}
	}
	return replay, nil
}

// replay applies j's records up to the first that is damaged or cannot be applied, and returns what it adds to what
// orch started from.
func (ld *loader) replay(j *savedJournal) (string, error) {
	scan := scanJournal(j.data)
	applied := 0
	for i, payload := range scan.records {
		rec, err := decodeRecord(payload)
		if err == nil {
			err = applyRecord(ld.mr, rec, ld.deadlines)
		}
		if err != nil {
			if i > 0 {
				scan.good = scan.ends[i-1]
			} else {
				scan.good = int64(journalHeaderLen)
			}
			scan.damage = fmt.Errorf("its record at byte %d cannot be applied: %v", scan.good, err)
			break
		}
		applied++
	}
	more := " and its journal " + j.path
	switch {
	case scan.damage != nil:
		if err := ld.damaged(j.name, fmt.Sprintf("is damaged: %v", scan.damage)); err != nil {
			return "", err
		}
		more = fmt.Sprintf(" and the %d changes saved in %s before the damage", applied, j.path)
	case scan.torn:
		// The last save of a process that stopped in the middle of it; nobody was told it was saved.
		if err := truncate(ld.files, j.name, scan.good); err != nil {
			ld.out.compact = true // the rewrite leaves the torn bytes behind with the old journal
		}
	}
	if j.name == journalFile && !ld.out.compact {
		ld.out.journal, ld.out.journalEnd = j.name, scan.good
	}
	return more, nil
}

// setDeadlines gives the keys restored their TTLs, and removes those that expired while nobody ran.
func (ld *loader) setDeadlines() {
	now := time.Now().UnixMilli()
	for key, at := range ld.deadlines {
		if at <= now {
			ld.mr.Del(key)
			continue
		}
		ld.mr.SetTTL(key, time.Duration(at-now)*time.Millisecond)
	}
}

// restoreKeys adds keys to mr, replacing any key of the same name. TTLs are collected in deadlines and set once
// everything is loaded, so that no key expires halfway through a replay.
func restoreKeys(mr *miniredis.Miniredis, keys []snapshotKey, deadlines map[string]int64) error {
	for i := range keys {
		k := &keys[i]
		key := string(k.Key)
		mr.Del(key)
		delete(deadlines, key)
		var err error
		switch k.Type {
		case "string":
			err = mr.Set(key, string(*k.String))
		case "hash":
			fv := make([]string, 0, 2*len(k.Hash))
			for _, p := range k.Hash {
				fv = append(fv, string(p[0]), string(p[1]))
			}
			mr.HSet(key, fv...)
		case "list":
			_, err = mr.RPush(key, strs(k.List)...)
		case "set":
			_, err = mr.SAdd(key, strs(k.Set)...)
		case "zset":
			for _, z := range k.ZSet {
				if _, err = mr.ZAdd(key, float64(z.Score), string(z.Member)); err != nil {
					break
				}
			}
		case "stream":
			err = addEntries(mr, key, k.Stream)
		}
		if err != nil {
			return fmt.Errorf("key %q cannot be restored: %v", key, err)
		}
		if k.ExpiresAt > 0 {
			deadlines[key] = k.ExpiresAt
		}
	}
	return nil
}

func addEntries(mr *miniredis.Miniredis, key string, entries []streamEntry) error {
	for _, e := range entries {
		if _, err := mr.XAdd(key, e.ID, strs(e.Values)); err != nil {
			return err
		}
	}
	return nil
}

// applyRecord replays one journal record. It checks the whole record before changing anything, so a record that
// does not fit the state it is replayed over is refused whole.
func applyRecord(mr *miniredis.Miniredis, r *journalRecord, deadlines map[string]int64) error {
	for _, a := range r.Append {
		key := string(a.Key)
		bad := func(what string) error { return fmt.Errorf("stream %q %s", key, what) }
		entries, err := mr.Stream(key)
		if err != nil || len(entries) == 0 {
			return bad("gets entries appended but is not in the store")
		}
		if err := validEntries(a.Entries, entries[len(entries)-1].ID, bad); err != nil {
			return err
		}
	}
	patched := make([]string, len(r.Patch))
	for i, p := range r.Patch {
		key := string(p.Key)
		old, err := mr.Get(key)
		if sum := stringSum(old); err == nil && string(p.From) != string(sum[:]) {
			err = errPatchBase
		}
		if err == nil {
			patched[i], err = patch(old, p.Ops)
		}
		if err != nil {
			return fmt.Errorf("string %q cannot be patched: %v", key, err)
		}
	}
	for _, key := range r.Del {
		mr.Del(string(key))
		delete(deadlines, string(key))
	}
	if err := restoreKeys(mr, r.Put, deadlines); err != nil {
		return err
	}
	for _, a := range r.Append {
		if err := addEntries(mr, string(a.Key), a.Entries); err != nil {
			return fmt.Errorf("stream %q: %v", string(a.Key), err)
		}
	}
	for i, p := range r.Patch {
		if err := mr.Set(string(p.Key), patched[i]); err != nil {
			return fmt.Errorf("string %q: %v", string(p.Key), err)
		}
	}
	return nil
}

// moveAside renames the damaged file name to <name>.damaged-<UTC time>, never replacing a file already there, and
// returns the new path.
func moveAside(files *owned.Dir, name, stamp string) (string, error) {
	for i := 1; ; i++ {
		target := name + ".damaged-" + stamp
		if i > 1 {
			target += fmt.Sprintf("-%d", i)
		}
		// A hard link fails rather than replace an existing file, which a rename would do silently.
		err := files.Link(name, target)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			if _, serr := files.Lstat(target); serr == nil {
				continue
			}
			err = files.Rename(name, target)
		} else {
			err = files.Remove(name)
		}
		if err != nil {
			return "", fmt.Errorf("%s is damaged and could not be moved aside (%v): move it away yourself", files.Path(name), bare(err))
		}
		return files.Path(target), syncDir(files)
	}
}

// truncate cuts the file name back to size.
func truncate(files *owned.Dir, name string, size int64) error {
	f, err := files.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeTemps removes the temporary files of writes that a process ended before finishing (see writeTemp, and
// owned.Dir.OpenFile for the lock's); the caller holds the directory's lock, so nobody is writing them.
func removeTemps(files *owned.Dir) {
	for _, name := range []string{snapshotFile, journalFile, addrFile, ownersFile, lockFile} {
		tmps, _ := fs.Glob(files.FS(), name+".tmp*")
		for _, t := range tmps {
			files.Remove(t)
		}
	}
}

// oneLine makes an error fit a Redis error reply.
func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }
