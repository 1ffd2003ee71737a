package embedded

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
func loadState(files *owned.Dir, mr *miniredis.Miniredis) (*loaded, error) {
	l := &loaded{}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	removeTemps(files)
	var problems []string // what was wrong, each completed below with what orch started from
	deadlines := map[string]int64{}

	type journal struct {
		name, path string
		data       []byte
		gen        uint64
	}
	var journals []*journal
	for _, name := range []string{journalFile, prevJournalFile} {
		path := files.Path(name)
		data, err := files.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fileError("reading", path, err)
		}
		gen, err := readJournalHeader(data)
		if err != nil {
			moved, merr := moveAside(files, name, stamp)
			if merr != nil {
				return nil, merr
			}
			problems = append(problems, fmt.Sprintf("%s is damaged (%v); it was moved to %s.", path, err, moved))
			l.compact = true
			continue
		}
		l.gen = max(l.gen, gen)
		journals = append(journals, &journal{name, path, data, gen})
	}

	var base *snapshot
	var basePath string
	for _, name := range []string{snapshotFile, prevSnapshotFile} {
		path := files.Path(name)
		data, err := files.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fileError("reading", path, err)
		}
		snap, err := decodeSnapshot(data)
		if err == nil {
			l.gen = max(l.gen, snap.JournalGen)
			err = restoreKeys(mr, snap.Keys, deadlines)
		}
		if err != nil {
			mr.FlushAll()
			clear(deadlines)
			moved, merr := moveAside(files, name, stamp)
			if merr != nil {
				return nil, merr
			}
			problems = append(problems, fmt.Sprintf("%s is damaged (%v); it was moved to %s.", path, err, moved))
			l.compact = true
			continue
		}
		base, basePath = snap, path
		l.snapSize, l.snapKeys = int64(len(data)), len(snap.Keys)
		l.compact = l.compact || name != snapshotFile || snap.Version != snapshotVersion
		break
	}

	// The journal written over the snapshot just restored, if any, and any journal written over a newer snapshot
	// that is gone: it cannot be applied to anything orch has, so it is kept aside for a person to look at.
	var replay *journal
	for _, j := range journals {
		switch {
		case base != nil && base.JournalGen > 0 && j.gen == base.JournalGen && replay == nil:
			replay = j
		case base == nil || j.gen > base.JournalGen:
			moved, err := moveAside(files, j.name, stamp)
			if err != nil {
				return nil, err
			}
			problems = append(problems, fmt.Sprintf("%s holds changes to a snapshot that is damaged or missing; it was moved to %s.", j.path, moved))
			l.compact = true
		}
	}

	startedFrom := "an empty store"
	switch {
	case base != nil && filepath.Base(basePath) == prevSnapshotFile:
		startedFrom = "the previous snapshot " + basePath
	case base != nil:
		startedFrom = "the snapshot " + basePath
	}
	if replay != nil {
		scan := scanJournal(replay.data)
		applied := 0
		for i, payload := range scan.records {
			rec, err := decodeRecord(payload)
			if err == nil {
				err = applyRecord(mr, rec, deadlines)
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
		switch {
		case scan.damage != nil:
			moved, err := moveAside(files, replay.name, stamp)
			if err != nil {
				return nil, err
			}
			problems = append(problems, fmt.Sprintf("%s is damaged: %v; it was moved to %s.", replay.path, scan.damage, moved))
			startedFrom += fmt.Sprintf(" and the %d changes saved in %s before the damage", applied, replay.path)
			l.compact = true
		case scan.torn:
			// The last save of a process that stopped in the middle of it; nobody was told it was saved.
			if err := truncate(files, replay.name, scan.good); err != nil {
				l.compact = true // the rewrite leaves the torn bytes behind with the old journal
			}
			startedFrom += " and its journal " + replay.path
		default:
			startedFrom += " and its journal " + replay.path
		}
		if replay.name == journalFile && !l.compact {
			l.journal, l.journalEnd = replay.name, scan.good
		}
	}
	l.compact = l.compact || l.journal == ""

	now := time.Now().UnixMilli()
	for key, at := range deadlines {
		if at <= now {
			mr.Del(key) // expired while nobody ran
			continue
		}
		mr.SetTTL(key, time.Duration(at-now)*time.Millisecond)
	}

	for _, p := range problems {
		l.warnings = append(l.warnings, fmt.Sprintf("embedded store: %s orch started from %s. Inspect or delete the moved file.", p, startedFrom))
	}
	return l, nil
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
