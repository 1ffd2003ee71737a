package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// indexCache holds the archive's index decoded, for Find: a filter that matches few runs reads the whole index, and
// decoding ten thousand JSON lines on every request costs tens of milliseconds where matching them in memory costs
// well under one. The index only grows, by lines appended, except when a prune replaces it: each use reads only what
// was appended since the last, and the whole file again when it was replaced. It costs the process that uses Find
// its index in memory (some 150 bytes a run), and that process's first Find a read of the whole index; Page and the
// commands that list a page of runs read the index from its end as far as they need instead (Archive.newest).
type indexCache struct {
	mu   sync.Mutex
	snap *indexSnapshot
	// ids counts the lines of each run, to find the runs with several (archived again after they were reopened).
	ids map[string]int
}

// indexSnapshot is the index as read at one moment; it is never changed once published, but for its entries' backing
// array past its own length, where a later snapshot appends.
type indexSnapshot struct {
	file    os.FileInfo
	size    int64  // bytes decoded: the file up to the end of its last whole line
	tail    []byte // the bytes just before size, to tell a file replaced by one as long from the one read
	entries []indexEntry
	dups    map[string]bool // runs with more than one line
}

// load returns the index as it is now.
func (c *indexCache) load(path string) (*indexSnapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		c.snap, c.ids = nil, nil
		return &indexSnapshot{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the archive's index: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading the archive's index: %w", err)
	}
	old := c.snap
	if old != nil && !(os.SameFile(old.file, st) && st.Size() >= old.size && endsWith(f, old.size, old.tail)) {
		old = nil // replaced by a prune
	}
	if old != nil && st.Size() == old.size {
		return old, nil
	}
	next := &indexSnapshot{file: st}
	if old == nil {
		c.ids = map[string]int{}
		next.dups = map[string]bool{}
	} else {
		next.size, next.entries, next.dups = old.size, old.entries, old.dups
	}
	buf := make([]byte, st.Size()-next.size)
	if _, err := f.ReadAt(buf, next.size); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading the archive's index: %w", err)
	}
	c.decode(next, old, buf)
	next.tail = make([]byte, min(next.size, 64))
	if _, err := f.ReadAt(next.tail, next.size-int64(len(next.tail))); err != nil {
		return nil, fmt.Errorf("reading the archive's index: %w", err)
	}
	c.snap = next
	return next, nil
}

// decode adds buf's whole lines to next (which continues old, or starts afresh when old is nil): its entries, the
// runs seen twice. A line being appended is left for the next load; a line that does not read is skipped, as
// Archive.newest skips it. The previous snapshot's maps stay as they were.
func (c *indexCache) decode(next, old *indexSnapshot, buf []byte) {
	copied := false
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return
		}
		line := buf[:i]
		buf = buf[i+1:]
		next.size += int64(i + 1)
		var e indexEntry
		if len(line) == 0 || json.Unmarshal(line, &e) != nil || e.ID == "" {
			continue
		}
		next.entries = append(next.entries, e) // past the length of the previous snapshot's entries
		c.ids[e.ID]++
		if c.ids[e.ID] != 2 {
			continue
		}
		if !copied && old != nil {
			next.dups = make(map[string]bool, len(old.dups)+1)
			for id := range old.dups {
				next.dups[id] = true
			}
			copied = true
		}
		next.dups[e.ID] = true
	}
}

// endsWith reports whether f holds tail just before offset end.
func endsWith(f *os.File, end int64, tail []byte) bool {
	got := make([]byte, len(tail))
	if _, err := f.ReadAt(got, end-int64(len(got))); err != nil {
		return false
	}
	return bytes.Equal(got, tail)
}

// newest is Archive.newest on the snapshot.
func (s *indexSnapshot) newest(bound func() int64, keep func(indexEntry) bool) {
	var seen map[string]bool
	for i := len(s.entries) - 1; i >= 0; i-- {
		e := s.entries[i]
		if s.dups[e.ID] {
			if seen[e.ID] {
				continue
			}
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[e.ID] = true
		}
		if b := bound(); b >= 0 && e.Archived < b {
			return
		}
		if !keep(e) {
			return
		}
	}
}
