package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	segjson "github.com/segmentio/encoding/json"

	"github.com/orchrun/orch/jobs"
)

// A run that waits for a person may wait for weeks, and a team may have thousands waiting, while nobody reads their
// logs but a person looking. Redis gives each stream a node of stream-node-max-bytes (4 KiB by default) from its first
// entry, so a waiting run's two streams alone took more than the whole run needs. A run that has waited quietly for a
// while (RestingQuiet) is therefore kept compact: its document, event log and audit trail in one gzip'd value under the
// document's key, in its archive file's format, and no streams.
//
// Every reader of a run goes through decodeRun, and every reader of a log falls back on the compact value when the
// stream is empty (kept), so nothing outside this package sees the difference. Any change to a compact run (the
// answer, a reminder, an audit entry) writes its log back as streams, with the entries' own ids, in the change's own
// transaction and before the change's entries: a follower blocked on the stream is woken by it as by any write, and
// a run that still waits after the change is compacted again once it has been quiet for RestingQuiet.
//
// The runs to compact are indexed (keyResting) by when they began to wait or last changed while waiting, in the
// transaction that parks or changes them, so the pass that compacts them (CompactResting, every worker's) reads the
// runs due and nothing else.

const (
	// keyResting is a sorted set: the id of every waiting run whose log is in streams, by when it began to wait or
	// last changed while waiting (ms, the store's clock).
	keyResting = "orch:runs:resting"
	// RestingQuiet is how long a run waits before it is compacted: the moments in which front ends post its question
	// and followers read it from the streams, and in which most approvals are answered.
	RestingQuiet = 30 * time.Second
	// compactMost bounds the log of a run kept compact: a longer one stays in streams, where its nodes are full and
	// their overhead small, and its answer does not write it all back at once.
	compactMost = 1000
	// compactBatch is how many runs one pass compacts at most.
	compactBatch = 500
)

// resting reports whether a run in status st waits for someone, and so may be kept compact.
func resting(st jobs.RunStatus) bool { return st == jobs.RunParked || st == jobs.RunPaused }

// compact reports whether a run's stored value is its compact form (gzip's magic) rather than its JSON document.
func compact(data []byte) bool { return len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b }

// encodeKept is a run's file: its document, log and audit trail, as JSON in gzip at level. A gzip writer holds
// hundreds of KB of tables, so they are kept for the next run rather than made anew for each.
func encodeKept(ar *archivedRun, level int) ([]byte, error) {
	var buf bytes.Buffer
	pool := &gzipWriters[level-gzip.HuffmanOnly]
	zw, _ := pool.Get().(*gzip.Writer)
	if zw == nil {
		var err error
		if zw, err = gzip.NewWriterLevel(&buf, level); err != nil {
			return nil, err
		}
	} else {
		zw.Reset(&buf)
	}
	defer pool.Put(zw)
	if err := json.NewEncoder(zw).Encode(ar); err != nil {
		return nil, fmt.Errorf("encoding run: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing run: %w", err)
	}
	return buf.Bytes(), nil
}

// gzipWriters are the writers kept, by level from gzip.HuffmanOnly to gzip.BestCompression.
var gzipWriters [gzip.BestCompression - gzip.HuffmanOnly + 1]sync.Pool

// decodeStored reads a run's stored value: its document, or its compact form, whose whole log is returned too.
func decodeStored(id string, data []byte) (*jobs.Run, *archivedRun, error) {
	if !compact(data) {
		r, err := decodeDoc(id, data)
		return r, nil, err
	}
	ar, err := decodeCompact(id, data, true)
	if err != nil {
		return nil, nil, err
	}
	r, err := decodeDoc(id, ar.Run)
	return r, ar, err
}

// decodeCompact reads a run's compact value; with full false, only its document. A compact value is small (its log
// is at most compactMost entries), so it is inflated whole and decoded at once: a listing of waiting runs reads one
// for every run it shows, and the streamed read of the first fields that a large archive file needs took a fifth
// longer here (53–60 µs against 44).
func decodeCompact(id string, data []byte, full bool) (*archivedRun, error) {
	ar, err := inflateKept(data, full)
	if err != nil {
		return nil, fmt.Errorf("run %s: its compact value (Redis key %s) is %w (%v); delete the key to skip it", id,
			runKey(id), ErrDamaged, err)
	}
	return ar, nil
}

func inflateKept(data []byte, full bool) (*archivedRun, error) {
	zr, err := gzipReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer gzipReaders.Put(zr)
	raw, err := io.ReadAll(zr) // checks gzip's checksum at the end
	if err != nil {
		return nil, err
	}
	var ar archivedRun
	if full {
		err = segjson.Unmarshal(raw, &ar)
	} else {
		var head struct {
			Version int             `json:"version"`
			Run     json.RawMessage `json:"run"`
		}
		err = segjson.Unmarshal(raw, &head)
		ar.Version, ar.Run = head.Version, head.Run
	}
	if err != nil {
		return nil, err
	}
	return &ar, ar.check()
}

// entries counts the entries of a run's log and audit trail.
func (ar *archivedRun) entries() int { return len(ar.Events) + len(ar.Audit) }

func parseStreamID(id string) (ms, seq uint64) {
	a, b, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(a, 10, 64)
	seq, _ = strconv.ParseUint(b, 10, 64)
	return ms, seq
}

// writeBack writes a kept log back as the run's streams, with the entries' own ids, in pipeline p: what a change to a
// compact run does before adding its own entries, and what bringing a run back from the archive does.
func writeBack(ctx context.Context, p redis.Pipeliner, runID string, ar *archivedRun) {
	for _, e := range ar.Events {
		p.XAdd(ctx, &redis.XAddArgs{Stream: eventsKey(runID), ID: e.ID, Values: []any{eventField, string(e.Data)}})
	}
	for _, e := range ar.Audit {
		p.XAdd(ctx, &redis.XAddArgs{Stream: auditKey(runID), ID: e.ID, Values: []any{eventField, string(e.Data)}})
	}
}

// indexResting writes in pipeline p whether run r, which was in status was, is to be compacted once quiet: a run that
// waits is, from now (its quiet starts again at every change), a run that stops waiting no longer is.
func indexResting(ctx context.Context, p redis.Pipeliner, r *jobs.Run, was jobs.RunStatus, now time.Time) {
	switch {
	case resting(r.Status):
		p.ZAdd(ctx, keyResting, redis.Z{Score: float64(now.UnixMilli()), Member: r.ID})
	case resting(was):
		p.ZRem(ctx, keyResting, r.ID)
	}
}

// CompactResting compacts the runs that have waited quietly for at least quiet, up to a batch of them, and returns how
// many it compacted. Every worker runs it every few seconds; two at once compact each run once.
func (s *Store) CompactResting(ctx context.Context, quiet time.Duration) (int, error) {
	due := strconv.FormatInt(s.now().Add(-quiet).UnixMilli(), 10)
	ids, err := s.rdb.ZRangeByScore(ctx, keyResting, &redis.ZRangeBy{Min: "-inf", Max: due, Count: compactBatch}).Result()
	if err != nil {
		return 0, fmt.Errorf("listing the runs that wait: %w", err)
	}
	n := 0
	for _, id := range ids {
		done, err := s.compactRun(ctx, id)
		if errors.Is(err, redis.TxFailedErr) {
			continue // changed meanwhile: the next pass looks again
		}
		if err != nil {
			return n, err
		}
		if done {
			n++
		}
	}
	return n, nil
}

// compactRun keeps run id compact when it still waits and its log is short enough, and takes it out of the index
// either way.
func (s *Store) compactRun(ctx context.Context, id string) (bool, error) {
	key := runKey(id)
	done := false
	err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
		data, err := tx.Get(ctx, key).Bytes()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		var r *jobs.Run
		if err == nil && !compact(data) {
			if r, err = decodeDoc(id, data); err != nil {
				s.log.Warn("not compacting a damaged run", "run", id, "err", err)
				r = nil
			}
		}
		var ar *archivedRun
		if r != nil && resting(r.Status) {
			ar = &archivedRun{Version: archiveVersion, Run: data}
			if ar.Events, err = readEntries(ctx, tx, eventsKey(id)); err != nil {
				return err
			}
			if ar.Audit, err = readEntries(ctx, tx, auditKey(id)); err != nil {
				return err
			}
			if ar.entries() > compactMost {
				ar = nil
			}
		}
		var kept []byte
		if ar != nil {
			if kept, err = encodeKept(ar, gzip.BestCompression); err != nil {
				return err
			}
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if kept != nil {
				p.Set(ctx, key, kept, 0)
				p.Del(ctx, eventsKey(id), auditKey(id))
			}
			p.ZRem(ctx, keyResting, id)
			return nil
		})
		done = err == nil && kept != nil
		return err
	}, key)
	if err != nil && !errors.Is(err, redis.TxFailedErr) {
		return false, fmt.Errorf("compacting run %s: %w", id, err)
	}
	return done, err
}
