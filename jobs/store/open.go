package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/jobs"
)

// The runs that wait for a human are indexed apart (keyOpen), written in the same transaction as each run's document,
// so that listing the questions reads the page's runs and nothing else, however many runs there are or wait: the
// questions page, the API's list, `orch escalation show` and the Home tabs cost the same at ten parked runs as at a
// hundred thousand.
//
// A store written by an orch from before the index has none: the first listing builds it from the runs' summaries
// (buildOpen), and marks it built. A run a change closed while the index was being built may be left in it: a listing
// that reads such a run takes it out (healOpen), unless its summary changed again meanwhile.

const (
	// keyOpen is a sorted set: the id of every run that waits for a human, by its creation time (µs: runs created in
	// the same millisecond keep their order).
	keyOpen = "orch:runs:open"
	// keyOpenBuilt marks keyOpen as holding every such run.
	keyOpenBuilt = "orch:runs:open:built"
)

// indexOpen writes in pipeline p whether run r waits for a human.
func indexOpen(ctx context.Context, p redis.Pipeliner, r *jobs.Run) {
	if factsOf(r).open {
		p.ZAdd(ctx, keyOpen, redis.Z{Score: float64(r.CreatedAt.UnixMicro()), Member: r.ID})
	} else {
		p.ZRem(ctx, keyOpen, r.ID)
	}
}

// buildOpen builds the index of the runs that wait from their summaries, once per store.
func (s *Store) buildOpen(ctx context.Context) error {
	if n, err := s.rdb.Exists(ctx, keyOpenBuilt).Result(); err != nil || n == 1 {
		return err
	}
	sums, err := s.rdb.HGetAll(ctx, keySummaries).Result()
	if err != nil {
		return fmt.Errorf("indexing the runs that wait: %w", err)
	}
	var open []string
	for id, sum := range sums {
		if f, ok := parseSummary(sum); ok && f.open {
			open = append(open, id)
		}
	}
	scores := make([]*redis.FloatCmd, len(open))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range open {
			scores[i] = p.ZScore(ctx, keyRuns, id)
		}
		return nil
	}); err != nil && err != redis.Nil {
		return fmt.Errorf("indexing the runs that wait: %w", err)
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range open {
			if ms, err := scores[i].Result(); err == nil {
				// The runs' index keeps milliseconds; a run a change indexed meanwhile keeps its own, finer score.
				p.ZAddNX(ctx, keyOpen, redis.Z{Score: ms * 1000, Member: id})
			}
		}
		p.Set(ctx, keyOpenBuilt, "1", 0)
		return nil
	})
	return err
}

// healOpen takes run id out of the index when its summary still says what the listing read (sum) and that it does
// not wait, or when it has none (archived or pruned: over).
var healOpen = redis.NewScript(`local cur = redis.call("HGET", KEYS[1], ARGV[1])
if cur == false or cur == ARGV[2] then return redis.call("ZREM", KEYS[2], ARGV[1]) end return 0`)

// findOpen is Find for the runs that wait for a human and nothing else: a page of the index, newest first.
func (s *Store) findOpen(ctx context.Context, offset, limit int) ([]*jobs.Run, bool, error) {
	return s.waiting(ctx, offset, limit, true)
}

// Questions returns a page of the runs that wait for a human, the oldest first (by when the run was created): limit of
// them after offset, and whether there are more. Only the page's runs are read.
func (s *Store) Questions(ctx context.Context, offset, limit int) ([]*jobs.Run, bool, error) {
	if limit <= 0 {
		limit = 20
	}
	return s.waiting(ctx, max(offset, 0), limit, false)
}

func (s *Store) waiting(ctx context.Context, offset, limit int, newest bool) ([]*jobs.Run, bool, error) {
	if err := s.buildOpen(ctx); err != nil {
		return nil, false, err
	}
	page := s.rdb.ZRange
	if newest {
		page = s.rdb.ZRevRange
	}
	ids, err := page(ctx, keyOpen, int64(offset), int64(offset+limit)).Result()
	if err != nil {
		return nil, false, fmt.Errorf("listing the runs that wait: %w", err)
	}
	more := len(ids) > limit
	ids = ids[:min(len(ids), limit)]
	if len(ids) == 0 {
		return nil, more, nil
	}
	want := make([]found, len(ids))
	for i, id := range ids {
		want[i] = found{id: id}
	}
	runs, err := s.load(ctx, want)
	if err != nil {
		return nil, false, err
	}
	loaded := make(map[string]bool, len(runs))
	for _, r := range runs {
		loaded[r.ID] = true
	}
	for _, id := range ids {
		if !loaded[id] {
			// Gone (pruned, or deleted by hand as damaged) or unreadable: not a run anyone can answer.
			healOpen.Run(ctx, s.rdb, []string{keySummaries, keyOpen}, id, "") // best effort
		}
	}
	out := runs[:0]
	for _, r := range runs {
		if factsOf(r).open {
			out = append(out, r)
			continue
		}
		healOpen.Run(ctx, s.rdb, []string{keySummaries, keyOpen}, r.ID, summarize(r)) // best effort
	}
	return out, more, nil
}

// Waiting counts the runs that wait for a human.
func (s *Store) Waiting(ctx context.Context) (int, error) {
	if err := s.buildOpen(ctx); err != nil {
		return 0, err
	}
	n, err := s.rdb.ZCard(ctx, keyOpen).Result()
	return int(n), err
}
