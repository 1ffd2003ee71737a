package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orchrun/orch/internal/owned"
)

// The index is what lists the archive's runs, but the run files are what holds them: an index damaged (lines
// unreadable, a part cut off) must never hide a run, nor have a prune delete the files it failed to list. So the
// first reader in a process checks, under the archive's lock, that every run file is listed and every line reads;
// when not, the index is rebuilt from the lines that read and the run files it lacks, and the log says what was
// repaired. Prunes check the same way before they decide anything, and delete only the runs they drop.

// ensureIndex repairs the index, once per process, when it fails to list a run file or holds lines that do not read.
func (a *Archive) ensureIndex() error {
	if a.checked.Load() {
		return nil
	}
	if _, err := os.Stat(a.dir); errors.Is(err, os.ErrNotExist) {
		return nil // nothing archived yet: nothing to check (and nothing made by looking)
	}
	// The common case, cheaply: an index with at least as many lines as there are run files (a run archived again
	// has two) is taken as whole; the full check reads and decodes every line, which a command that shows one page of
	// history should not pay for. A prune always checks in full.
	if files, err := os.ReadDir(filepath.Join(a.dir, "runs")); err == nil {
		if data, err := os.ReadFile(a.indexPath()); err == nil && bytes.Count(data, []byte{'\n'}) >= len(files) {
			a.checked.Store(true)
			return nil
		}
	}
	err := a.withLock(a.repairIndex)
	if err == nil {
		a.checked.Store(true)
	}
	return err
}

// repairIndex does ensureIndex's work; the caller holds the archive's lock.
func (a *Archive) repairIndex(d *owned.Dir) error {
	files, err := fs.ReadDir(d.FS(), a.name("runs"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading the archive: %w", err)
	}
	data, err := fs.ReadFile(d.FS(), a.indexName())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading the archive's index: %w", err)
	}
	good, listed, bad := readableLines(data)
	missing, unreadable := a.unlisted(files, listed)
	if bad == 0 && len(missing) == 0 {
		return nil
	}
	// Oldest archived first: the order the index is read back in.
	slices.SortFunc(missing, func(x, y indexEntry) int { return cmpArchived(x, y) })
	for _, e := range missing {
		line, _ := json.Marshal(e)
		good.Write(append(line, '\n'))
	}
	if err := writeFileAtomic(d, a.indexName(), good.Bytes()); err != nil {
		return fmt.Errorf("repairing the archive's index: %w", err)
	}
	ids := make([]string, 0, len(missing))
	for _, e := range missing {
		ids = append(ids, e.ID)
	}
	a.log.Warn("the history index was damaged; rebuilt it from the run files", "index", a.indexPath(),
		"unreadable_lines", bad, "runs_relisted", len(missing), "relisted", firstIDs(ids), "damaged_files", firstIDs(unreadable))
	return nil
}

// readableLines are the index's lines that read, and the runs they list; bad counts those that do not.
func readableLines(data []byte) (good bytes.Buffer, listed map[string]bool, bad int) {
	listed = map[string]bool{}
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e indexEntry
		if json.Unmarshal(line, &e) != nil || !validID(e.ID) {
			bad++
			continue
		}
		listed[e.ID] = true
		good.Write(line)
		good.WriteByte('\n')
	}
	return good, listed, bad
}

// unlisted reads the archived runs among files that the index does not list: their entries, and the ids of those
// whose file does not read (a damaged file stays, unlisted, for a person to look at).
func (a *Archive) unlisted(files []fs.DirEntry, listed map[string]bool) (missing []indexEntry, unreadable []string) {
	for _, f := range files {
		id, ok := strings.CutSuffix(f.Name(), ".json.gz")
		if !ok || !validID(id) || listed[id] {
			continue
		}
		r, err := a.get(id)
		if err != nil {
			unreadable = append(unreadable, id)
			continue
		}
		archived := r.UpdatedAt
		if info, err := f.Info(); err == nil {
			archived = info.ModTime()
		}
		missing = append(missing, entryOf(r, archived))
	}
	return missing, unreadable
}

func cmpArchived(x, y indexEntry) int {
	if x.Archived != y.Archived {
		if x.Archived < y.Archived {
			return -1
		}
		return 1
	}
	return strings.Compare(x.ID, y.ID)
}

// firstIDs names up to ten runs, and how many more there are.
func firstIDs(ids []string) string {
	if len(ids) <= 10 {
		return strings.Join(ids, ",")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:10], ","), len(ids)-10)
}
