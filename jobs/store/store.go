// Package store keeps runs in Redis: each run one document changed only by atomic updates, with its append-only
// event log and audit trail, what the front ends that mirror runs elsewhere (Slack) keep of them, and the connection
// (a Redis URL or the embedded store) that orch opens to reach them.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/orchrun/orch/jobs"
	"github.com/redis/go-redis/v9"
)

// ErrConflict is returned when a run kept changing under an update; the caller may try again.
var ErrConflict = errors.New("run changed concurrently; try again")

const (
	keyRuns       = "orch:runs" // zset: run id by creation time (ms)
	updateRetries = 50
	eventField    = "e"
	// maxEvents bounds each run's event stream; older entries are trimmed approximately.
	maxEvents = 10000
)

func runKey(id string) string    { return "orch:run:{" + id + "}" }
func eventsKey(id string) string { return "orch:run:{" + id + "}:events" }
func auditKey(id string) string  { return "orch:run:{" + id + "}:audit" }

// Store keeps runs, their event logs and audit trails in Redis.
type Store struct {
	rdb       redis.UniversalClient
	now       func() time.Time
	observers []func([]jobs.Event)
}

// Observe has fn called with the events of every change once it is committed (metrics and logs derive from them: a
// change retried under contention is seen once). Observers are added before the store is used.
func (s *Store) Observe(fn func([]jobs.Event)) { s.observers = append(s.observers, fn) }

// New returns a store on rdb. now may be nil (time.Now).
func New(rdb redis.UniversalClient, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{rdb: rdb, now: now}
}

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.now() }

// Create saves a new run. It fails if a run with the same id exists.
func (s *Store) Create(ctx context.Context, r *jobs.Run, events ...jobs.Event) error {
	now := s.now().UTC()
	r.CreatedAt, r.UpdatedAt, r.Version = now, now, 1
	c := jobs.NewChange(r)
	for _, e := range events {
		c.Emit(e)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding run: %w", err)
	}
	ok, err := s.rdb.SetNX(ctx, runKey(r.ID), data, 0).Result()
	if err != nil {
		return fmt.Errorf("saving run %s: %w", r.ID, err)
	}
	if !ok {
		return fmt.Errorf("saving run %s: a run with this id exists", r.ID)
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, keyRuns, redis.Z{Score: float64(now.UnixMilli()), Member: r.ID})
		return s.appendEvents(ctx, p, r.ID, c.Events)
	})
	if err != nil {
		return fmt.Errorf("indexing run %s: %w", r.ID, err)
	}
	return nil
}

// Get loads a run.
func (s *Store) Get(ctx context.Context, id string) (*jobs.Run, error) {
	data, err := s.rdb.Get(ctx, runKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: %s", jobs.ErrRunNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("loading run %s: %w", id, err)
	}
	var r jobs.Run
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decoding run %s: %w", id, err)
	}
	return &r, nil
}

// Update applies fn to the run atomically: fn sees the latest saved run, and its changes, events and audit entries are
// written together only if nobody changed the run meanwhile (otherwise fn runs again on the newer run). An error from
// fn aborts the update and is returned as is.
func (s *Store) Update(ctx context.Context, id string, fn func(r *jobs.Run, c *jobs.Change) error) (*jobs.Run, error) {
	key := runKey(id)
	var out *jobs.Run
	txf := func(tx *redis.Tx) error {
		data, err := tx.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			return fmt.Errorf("%w: %s", jobs.ErrRunNotFound, id)
		}
		if err != nil {
			return err
		}
		var r jobs.Run
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("decoding run %s: %w", id, err)
		}
		c := jobs.NewChange(&r)
		if err := fn(&r, c); err != nil {
			return err
		}
		r.Version++
		r.UpdatedAt = s.now().UTC()
		data, err = json.Marshal(&r)
		if err != nil {
			return fmt.Errorf("encoding run %s: %w", id, err)
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, data, 0)
			if err := s.appendEvents(ctx, p, id, c.Events); err != nil {
				return err
			}
			return s.appendAudit(ctx, p, id, c.Audit)
		})
		if err == nil {
			out = &r
			if len(c.Events) > 0 {
				for _, fn := range s.observers {
					fn(c.Events)
				}
			}
		}
		return err
	}
	for i := 0; i < updateRetries; i++ {
		err := s.rdb.Watch(ctx, txf, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		return out, err
	}
	return nil, fmt.Errorf("updating run %s: %w", id, ErrConflict)
}

// List returns up to limit runs, newest first.
func (s *Store) List(ctx context.Context, limit int) ([]*jobs.Run, error) {
	if limit <= 0 {
		limit = 20
	}
	ids, err := s.rdb.ZRevRange(ctx, keyRuns, 0, int64(limit-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	runs := make([]*jobs.Run, 0, len(ids))
	for _, id := range ids {
		r, err := s.Get(ctx, id)
		if errors.Is(err, jobs.ErrRunNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// Latest is the newest run matching keep, or ErrRunNotFound.
func (s *Store) Latest(ctx context.Context, keep func(*jobs.Run) bool) (*jobs.Run, error) {
	runs, err := s.List(ctx, 200)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if keep == nil || keep(r) {
			return r, nil
		}
	}
	return nil, jobs.ErrRunNotFound
}

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	return s.rdb.Ping(ctx).Err()
}
