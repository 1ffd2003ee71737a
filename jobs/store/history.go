package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/orchrun/orch/jobs"
	"github.com/redis/go-redis/v9"
)

// ArchiveFinished moves the runs that ended at least minAge ago from Redis to the archive, and returns how many it
// moved. It reads only what Redis holds, so it costs what is live, not what is history. A run that changes while it
// is being moved stays in Redis for the next time. Without an archive it does nothing.
func (s *Store) ArchiveFinished(ctx context.Context, minAge time.Duration) (int, error) {
	if s.archive == nil {
		return 0, nil
	}
	ids, err := s.rdb.ZRange(ctx, keyRuns, 0, -1).Result()
	if err != nil {
		return 0, fmt.Errorf("listing runs to archive: %w", err)
	}
	moved := 0
	for _, id := range ids {
		// A run that changes while it is being moved is tried again: it may have ended just now.
		for range updateRetries {
			ok, err := s.archiveRun(ctx, id, minAge)
			if errors.Is(err, redis.TxFailedErr) {
				continue
			}
			if err != nil {
				return moved, err
			}
			if ok {
				moved++
			}
			break
		}
	}
	return moved, nil
}

func (s *Store) archiveRun(ctx context.Context, id string, minAge time.Duration) (bool, error) {
	key := runKey(id)
	moved := false
	err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
		data, err := tx.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err != nil {
			return err
		}
		r, err := decodeRun(id, data)
		if err != nil {
			s.log.Warn("not archiving a damaged run", "run", id, "err", err)
			return nil
		}
		ended := r.EndedAt
		if ended.IsZero() {
			ended = r.UpdatedAt
		}
		if !r.Status.Terminal() || s.now().Sub(ended) < minAge {
			return nil
		}
		ar := &archivedRun{Version: archiveVersion, Run: data}
		if ar.Events, err = readEntries(ctx, tx, eventsKey(id)); err != nil {
			return err
		}
		if ar.Audit, err = readEntries(ctx, tx, auditKey(id)); err != nil {
			return err
		}
		if err := s.archive.put(ar, entryOf(r, s.now())); err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, key, eventsKey(id), auditKey(id))
			p.ZRem(ctx, keyRuns, id)
			p.HDel(ctx, keySummaries, id)
			p.ZRem(ctx, keyOpen, id)
			return nil
		})
		moved = err == nil
		return err
	}, key)
	if errors.Is(err, redis.TxFailedErr) {
		return false, err // changed while being archived: it stays live for now, and its file is written again
	}
	if err != nil {
		return false, fmt.Errorf("archiving run %s: %w", id, err)
	}
	return moved, nil
}

// entryOf is the archive's index line of run r, archived at archived.
func entryOf(r *jobs.Run, archived time.Time) indexEntry {
	ended := r.EndedAt
	if ended.IsZero() {
		ended = r.UpdatedAt
	}
	return indexEntry{ID: r.ID, Created: r.CreatedAt.UnixMilli(), Archived: archived.UnixMilli(), Ended: ended.UnixMilli(),
		Status: string(r.Status), V: indexChannel, Plan: r.PlanPath, Title: r.PlanTitle, User: r.Origin.User,
		Channel: r.Origin.Channel}
}

func readEntries(ctx context.Context, rdb redis.Cmdable, key string) ([]archivedEntry, error) {
	msgs, err := rdb.XRange(ctx, key, "-", "+").Result()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	out := make([]archivedEntry, 0, len(msgs))
	for _, m := range msgs {
		raw, _ := m.Values[eventField].(string)
		if !json.Valid([]byte(raw)) {
			continue // an entry orch did not write: readers skip it too
		}
		out = append(out, archivedEntry{ID: m.ID, Data: json.RawMessage(raw)})
	}
	return out, nil
}

// restore brings an archived run back to Redis for fn to change it, when fn would change it: a change fn refuses
// (a resolution of a run that is over) leaves the archive as it is.
func (s *Store) restore(ctx context.Context, id string, fn func(r *jobs.Run, c *jobs.Change) error) error {
	ar, err := s.archive.read(id, true)
	if err != nil {
		return err
	}
	r, err := decodeRun(id, ar.Run)
	if err != nil {
		return err
	}
	sum := summarize(r) // of the document put back, before fn changes r
	put := *r           // what the index is told of it, likewise
	states := jobs.StatesOf(r)
	c := jobs.NewChange(r)
	if err := fn(r, c); err != nil {
		return err
	}
	if err := refused(states, r, c); err != nil {
		return err // refused as update refuses it, before the run comes back
	}
	created, err := s.rdb.SetNX(ctx, runKey(id), []byte(ar.Run), 0).Result()
	if err != nil || !created {
		return err // someone else brought it back first
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, keyRuns, redis.Z{Score: float64(r.CreatedAt.UnixMilli()), Member: id})
		p.HSet(ctx, keySummaries, id, sum)
		indexOpen(ctx, p, &put)
		writeBack(ctx, p, id, ar)
		return nil
	})
	if err != nil {
		return fmt.Errorf("bringing run %s back from the archive: %w", id, err)
	}
	return nil
}

// kept returns a run's event log (or audit trail) when no stream holds it: kept compact while the run waits, or
// archived. head is the first bytes of the run's stored value ("" when Redis has none), read with the stream. It is
// nil when the run's log is in its streams, or the run is nowhere.
func (s *Store) kept(ctx context.Context, runID, head string, audit bool) (entries []archivedEntry, err error) {
	var ar *archivedRun
	switch {
	case head != "" && !compact([]byte(head)):
		return nil, nil // the streams are the log
	case head != "":
		data, gerr := s.rdb.Get(ctx, runKey(runID)).Bytes()
		switch {
		case errors.Is(gerr, redis.Nil):
			return nil, nil // archived meanwhile, or pruned: the next read finds it
		case gerr != nil:
			return nil, fmt.Errorf("reading run %s: %w", runID, gerr)
		case !compact(data):
			return nil, nil // its log went back to streams meanwhile
		}
		ar, err = decodeCompact(runID, data, true)
	case s.archive == nil:
		return nil, nil
	default:
		if ar, err = s.archive.read(runID, true); errors.Is(err, jobs.ErrRunNotFound) {
			return nil, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if audit {
		return ar.Audit, nil
	}
	return ar.Events, nil
}

func entriesAsMessages(entries []archivedEntry) []redis.XMessage {
	out := make([]redis.XMessage, len(entries))
	for i, e := range entries {
		out[i] = redis.XMessage{ID: e.ID, Values: map[string]any{eventField: string(e.Data)}}
	}
	return out
}

// Prune removes the finished runs that keep does not keep, and returns their ids, oldest first. With an archive it
// prunes the archive; with Redis alone it deletes the runs' keys, and what front ends kept of them.
func (s *Store) Prune(ctx context.Context, keep Keep) ([]string, error) {
	if keep.IsZero() {
		return nil, nil
	}
	if s.archive != nil {
		return s.archive.prune(keep, s.now())
	}
	return s.pruneRedis(ctx, keep)
}

func (s *Store) pruneRedis(ctx context.Context, keep Keep) ([]string, error) {
	const batch = 200
	var gone []string
	finished := 0
	now := s.now()
	for start := int64(0); ; start += batch {
		ids, err := s.rdb.ZRevRange(ctx, keyRuns, start, start+batch-1).Result()
		if err != nil {
			return nil, fmt.Errorf("listing runs to prune: %w", err)
		}
		cmds, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, id := range ids {
				p.Get(ctx, runKey(id))
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("reading runs to prune: %w", err)
		}
		for i, c := range cmds {
			data, err := c.(*redis.StringCmd).Bytes()
			if err != nil {
				continue // gone meanwhile
			}
			r, err := decodeRun(ids[i], data)
			if err != nil || !r.Status.Terminal() {
				continue
			}
			if keep.drops(finished, r.EndedAt, now) {
				gone = append(gone, r.ID)
			}
			finished++
		}
		if len(ids) < batch {
			break
		}
	}
	for chunk := range slices.Chunk(gone, batch) {
		if err := s.deleteRuns(ctx, chunk); err != nil {
			return nil, err
		}
	}
	slices.Reverse(gone)
	return gone, nil
}

// deleteRuns deletes runs from Redis with what front ends kept of them.
func (s *Store) deleteRuns(ctx context.Context, ids []string) error {
	mirrors, err := s.rdb.SMembers(ctx, keyMirrors).Result()
	if err != nil {
		return fmt.Errorf("pruning runs: %w", err)
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			p.Del(ctx, runKey(id), eventsKey(id), auditKey(id))
			p.ZRem(ctx, keyRuns, id)
			p.HDel(ctx, keySummaries, id)
			p.ZRem(ctx, keyOpen, id)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pruning runs: %w", err)
	}
	for _, name := range mirrors {
		if err := s.Mirror(name).Forget(ctx, ids); err != nil {
			return err
		}
	}
	return nil
}
