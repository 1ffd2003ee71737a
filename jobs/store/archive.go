package store

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orchrun/orch/internal/flock"
	"github.com/orchrun/orch/internal/owned"
	"github.com/orchrun/orch/jobs"
)

// Archive keeps the runs that are over out of the live store, so that what every orch process loads and saves is what
// is still going on, however many runs came before. It is a directory:
//
//	runs/<run id>.json.gz  one run: its document, event log and audit trail, written once, atomically
//	index                  one JSON line per archived run, appended in the order they were archived
//	lock                   taken by whoever appends to or rewrites the index
//
// A run's file is read only when that run is asked for. The index answers "the newest runs" by reading from its end
// only as far as the page needs: a run is archived after it was created, so once the lines read were archived before
// the oldest run a page holds, the lines further back cannot hold a newer one.
type Archive struct {
	dir   string
	log   *slog.Logger
	index indexCache // for Find
	// checked is set once the index was found to list every run file, or was rebuilt to (archiverepair.go).
	checked atomic.Bool
}

// ErrDamaged marks a run whose saved form cannot be read; the other runs are still readable.
var ErrDamaged = errors.New("damaged")

const archiveVersion = 1

// NewArchive returns the archive in dir (created when first written to). log may be nil.
func NewArchive(dir string, log *slog.Logger) *Archive {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Archive{dir: dir, log: log}
}

// Dir is where the archive lives.
func (a *Archive) Dir() string { return a.dir }

// archivedRun is a run's file. Run comes first, so a reader that wants only the document stops there.
type archivedRun struct {
	Version int             `json:"version"`
	Run     json.RawMessage `json:"run"`
	Events  []archivedEntry `json:"events"`
	Audit   []archivedEntry `json:"audit"`
}

// archivedEntry is a stream entry as the live store held it: its id and the JSON orch wrote.
type archivedEntry struct {
	ID   string          `json:"id"`
	Data json.RawMessage `json:"e"`
}

// indexEntry is a run's line in the index. Times are Unix milliseconds.
type indexEntry struct {
	ID       string `json:"id"`
	Created  int64  `json:"created"`
	Archived int64  `json:"archived"`
	Ended    int64  `json:"ended,omitempty"` // when it ended (its last change, for a run that never recorded an end)
	Status   string `json:"status"`
	// V says which of what Find filters on the line carries (an empty field it carries is then empty): indexChannel
	// on lines with plan, title, user and channel; indexFields on lines written before the channel was added; 0 on
	// lines with none of them. Find reads such a run's file when a filter needs what its line lacks.
	V       int    `json:"v,omitempty"`
	Plan    string `json:"plan,omitempty"`    // the run's PlanPath
	Title   string `json:"title,omitempty"`   // its PlanTitle
	User    string `json:"user,omitempty"`    // its Origin.User
	Channel string `json:"channel,omitempty"` // its Origin.Channel
}

// Versions of an index line: indexFields carries plan, title and user; indexChannel the channel as well.
const (
	indexFields  = 2
	indexChannel = 3
)

func (a *Archive) runPath(id string) string { return filepath.Join(a.dir, "runs", id+".json.gz") }
func (a *Archive) indexPath() string        { return filepath.Join(a.dir, "index") }

// The names of the archive's files in the directory it is in (see withLock).
func (a *Archive) name(parts ...string) string {
	return filepath.Join(append([]string{filepath.Base(a.dir)}, parts...)...)
}
func (a *Archive) runName(id string) string { return a.name("runs", id+".json.gz") }
func (a *Archive) indexName() string        { return a.name("index") }

// validID reports whether id can name a run's file: run ids are short words of letters, digits, '-' and '_'. Anything
// else (a path, a name from a forged request) is no run at all.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// put writes a run's file and then its index line, holding the lock so that a prune never sees the file without its
// line; a crash between the two leaves a file the next archiving of the same run writes again.
func (a *Archive) put(ar *archivedRun, e indexEntry) error {
	file, err := encodeKept(ar, gzip.BestSpeed)
	if err != nil {
		return fmt.Errorf("run %s for the archive: %w", e.ID, err)
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return a.withLock(func(d *owned.Dir) error {
		if err := d.MkdirAll(a.name("runs"), 0o700); err != nil {
			return fmt.Errorf("creating the archive: %w", err)
		}
		if err := writeFileAtomic(d, a.runName(e.ID), file); err != nil {
			return err
		}
		return appendSync(d, a.indexName(), append(line, '\n'))
	})
}

// withLock runs fn holding the archive's lock, which orders writers of the index across processes. Everything the
// archive writes goes through d, the directory the archive is in (the state directory) held open: when orch runs as
// root in someone else's directory, what it makes there is theirs, and no link they put in it leads anywhere else
// (see owned.Dir).
func (a *Archive) withLock(fn func(d *owned.Dir) error) error {
	d, err := owned.OpenDir(filepath.Dir(a.dir), 0o700)
	if err != nil {
		return fmt.Errorf("opening the archive's directory: %w", err)
	}
	defer d.Close()
	if err := d.MkdirAll(a.name(), 0o700); err != nil {
		return fmt.Errorf("creating the archive: %w", err)
	}
	f, err := d.OpenFile(a.name("lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("locking the archive: %w", err)
	}
	defer f.Close()
	if err := flock.Lock(f); err != nil {
		return fmt.Errorf("locking the archive: %w", err)
	}
	defer flock.Unlock(f)
	return fn(d)
}

func appendSync(d *owned.Dir, name string, data []byte) error {
	path := d.Path(name)
	f, err := d.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// writeFileAtomic replaces the file name in d with data so that a crash at any point leaves either the old file or
// the new one, whole: the data goes to a temporary file beside it (already the owner's, see owned.Dir.CreateTemp),
// is synced, renamed over name, and the directory is synced.
func writeFileAtomic(d *owned.Dir, name string, data []byte) error {
	path := d.Path(name)
	tmp, tmpName, err := d.CreateTemp(filepath.Dir(name), filepath.Base(name)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer d.Remove(tmpName)
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.Rename(tmpName, name)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	d.SyncDir(filepath.Dir(name)) // the rename itself: without it a crash may bring the old file back
	return nil
}

// read loads a run's file; with full false, only the run's document. A file that cannot be read whole is ErrDamaged.
func (a *Archive) read(id string, full bool) (*archivedRun, error) {
	if !validID(id) {
		return nil, fmt.Errorf("%w: %s", jobs.ErrRunNotFound, id)
	}
	path := a.runPath(id)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", jobs.ErrRunNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("reading run %s from the archive: %w", id, err)
	}
	defer f.Close()
	damaged := func(err error) error {
		return fmt.Errorf("run %s: its archived file %s is %w (%v); move it away to skip it", id, path, ErrDamaged, err)
	}
	ar, err := readKept(bufio.NewReader(f), full)
	if err != nil {
		return nil, damaged(err)
	}
	return ar, nil
}

// gzipReaders are the gzip readers kept for the next file: each holds a 32 KiB window and its tables.
var gzipReaders sync.Pool

// gzipReader is a kept gzip reader reading r; put it back with gzipReaders.Put.
func gzipReader(r io.Reader) (*gzip.Reader, error) {
	if zr, _ := gzipReaders.Get().(*gzip.Reader); zr != nil {
		return zr, zr.Reset(r)
	}
	return gzip.NewReader(r)
}

// check refuses a run's file this orch cannot read.
func (ar *archivedRun) check() error {
	if ar.Version != archiveVersion || len(ar.Run) == 0 {
		return fmt.Errorf("version %d, this orch reads %d", ar.Version, archiveVersion)
	}
	return nil
}

// readKept reads a run's archived file, streaming: with full false, only as far as the run's document.
func readKept(r io.Reader, full bool) (*archivedRun, error) {
	zr, err := gzipReader(r)
	if err != nil {
		return nil, err
	}
	defer gzipReaders.Put(zr)
	var ar archivedRun
	if full {
		if err := json.NewDecoder(zr).Decode(&ar); err != nil {
			return nil, err
		}
		if _, err := io.Copy(io.Discard, zr); err != nil { // the checksum at the end
			return nil, err
		}
	} else if err := decodeFirstFields(json.NewDecoder(zr), &ar); err != nil {
		return nil, err
	}
	return &ar, ar.check()
}

// decodeFirstFields reads the version and the run's document and stops: the event log after them is not needed.
func decodeFirstFields(dec *json.Decoder, ar *archivedRun) error {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("not a run's file (%v)", err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case "version":
			err = dec.Decode(&ar.Version)
		case "run":
			err = dec.Decode(&ar.Run)
			if err == nil {
				return nil
			}
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return err
		}
	}
	return errors.New("no run in the file")
}

// get loads an archived run's document.
func (a *Archive) get(id string) (*jobs.Run, error) {
	ar, err := a.read(id, false)
	if err != nil {
		return nil, err
	}
	var r jobs.Run
	if err := json.Unmarshal(ar.Run, &r); err != nil {
		return nil, fmt.Errorf("run %s: its archived document in %s is %w (%v); move it away to skip it", id, a.runPath(id), ErrDamaged, err)
	}
	return &r, nil
}

// newest calls keep with the index's entries from the newest run down, each run once (a run archived twice, after it
// was reopened, by its latest line), and stops when keep returns false. bound is the creation time (ms) below which
// the caller needs nothing more; -1 reads to the start. Damaged lines are skipped: the run's file is still there.
func (a *Archive) newest(bound func() int64, keep func(indexEntry) bool) error {
	f, err := os.Open(a.indexPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the archive's index: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reading the archive's index: %w", err)
	}
	seen := map[string]bool{}
	const chunk = 64 << 10
	end := st.Size()
	var tail []byte // the start of a line whose beginning is in the next chunk back
	for end > 0 {
		start := max(0, end-chunk)
		buf := make([]byte, end-start, end-start+int64(len(tail)))
		if _, err := f.ReadAt(buf, start); err != nil {
			return fmt.Errorf("reading the archive's index: %w", err)
		}
		buf = append(buf, tail...)
		lines := bytes.Split(buf, []byte{'\n'})
		if start > 0 {
			tail, lines = lines[0], lines[1:]
		} else {
			tail = nil
		}
		for i := len(lines) - 1; i >= 0; i-- {
			line := lines[i]
			if len(line) == 0 {
				continue
			}
			var e indexEntry
			if err := json.Unmarshal(line, &e); err != nil || e.ID == "" {
				continue // a line torn by a crash while it was appended, or damage: its run's file is intact
			}
			if seen[e.ID] {
				continue
			}
			seen[e.ID] = true
			if b := bound(); b >= 0 && e.Archived < b {
				return nil
			}
			if !keep(e) {
				return nil
			}
		}
		end = start
	}
	return nil
}

// page returns the ids of the n newest archived runs by creation, newest first, skipping the ids in skip (runs that
// are live again).
func (a *Archive) page(n int, skip func(string) bool) ([]indexEntry, error) {
	if err := a.ensureIndex(); err != nil {
		return nil, err
	}
	return a.top(matcher{}, n, skip, a.log, a.newest)
}

func cmpCreated(x, y indexEntry) int {
	if x.Created != y.Created {
		if x.Created < y.Created {
			return -1
		}
		return 1
	}
	return strings.Compare(x.ID, y.ID)
}

// Keep says which finished runs history keeps: the newest Count of them (0: no limit) and those that ended within Age
// (0: no limit). The zero Keep keeps everything.
type Keep struct {
	Count int
	Age   time.Duration
}

// IsZero reports whether k keeps everything.
func (k Keep) IsZero() bool { return k.Count <= 0 && k.Age <= 0 }

// String says what k keeps, in the words of orch.yaml.
func (k Keep) String() string {
	var parts []string
	if k.Count > 0 {
		parts = append(parts, fmt.Sprintf("the newest %d finished runs", k.Count))
	}
	if k.Age > 0 {
		parts = append(parts, "runs that ended within "+FormatAge(k.Age))
	}
	if len(parts) == 0 {
		return "every run"
	}
	return strings.Join(parts, " and ")
}

// FormatAge writes an age in days when it is whole days ("90d"), else as a duration.
func FormatAge(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// drops reports, for finished runs sorted newest first, whether the i-th (ended at ended) goes.
func (k Keep) drops(i int, ended, now time.Time) bool {
	return k.Count > 0 && i >= k.Count || k.Age > 0 && !ended.IsZero() && now.Sub(ended) > k.Age
}

// prune removes the archived runs keep does not keep, and returns their ids.
func (a *Archive) prune(keep Keep, now time.Time) ([]string, error) {
	if keep.IsZero() {
		return nil, nil
	}
	var gone []string
	err := a.withLock(func(d *owned.Dir) error {
		// Decided on an index that lists every run: a run it failed to list is never dropped for that.
		if err := a.repairIndex(d); err != nil {
			return err
		}
		a.checked.Store(true)
		var all []indexEntry
		if err := a.newest(func() int64 { return -1 }, func(e indexEntry) bool { all = append(all, e); return true }); err != nil {
			return err
		}
		slices.SortFunc(all, func(x, y indexEntry) int { return -cmpCreated(x, y) })
		var kept bytes.Buffer
		for i := len(all) - 1; i >= 0; i-- { // oldest first: the order the index is read back in
			e := all[i]
			var ended time.Time // an entry without an end (none is written so now) is never too old
			if e.Ended > 0 {
				ended = time.UnixMilli(e.Ended)
			}
			if keep.drops(i, ended, now) {
				gone = append(gone, e.ID)
				continue
			}
			line, _ := json.Marshal(e)
			kept.Write(append(line, '\n'))
		}
		if len(gone) == 0 {
			return nil
		}
		// The index first: a crash after it leaves files nothing lists, which the next check lists again and the
		// next prune drops.
		if err := writeFileAtomic(d, a.indexName(), kept.Bytes()); err != nil {
			return err
		}
		for _, id := range gone {
			if err := d.Remove(a.runName(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("removing run %s from the archive: %w", id, err)
			}
		}
		return nil
	})
	return gone, err
}
