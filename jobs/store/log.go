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

func (s *Store) appendEvents(ctx context.Context, p redis.Pipeliner, runID string, events []jobs.Event) error {
	// Stamped in place: what observers see of a committed change is what the log holds.
	for i := range events {
		e := &events[i]
		if e.Time.IsZero() {
			e.Time = s.now().UTC()
		}
		e.RunID = runID
		data, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encoding event %s: %w", e.Type(), err)
		}
		id := e.ID
		if id == "" {
			id = "*"
		}
		p.XAdd(ctx, &redis.XAddArgs{Stream: eventsKey(runID), ID: id, MaxLen: maxEvents, Approx: true, Values: []any{eventField, data}})
	}
	return nil
}

// Append writes events to a run's log outside of any other change.
func (s *Store) Append(ctx context.Context, runID string, events ...jobs.Event) error {
	_, err := s.change(ctx, runID, func(r *jobs.Run, c *jobs.Change) error {
		for _, e := range events {
			c.Emit(e)
		}
		return nil
	}, false)
	if err != nil {
		return fmt.Errorf("appending events to run %s: %w", runID, err)
	}
	return nil
}

// Events reads a run's events after the stream id after ("" or "0" = from the start). With block > 0 it waits up to
// block for new events when there are none. A run kept compact while it waits, and an archived run, have their events
// read from where they are kept (compact.go, history.go).
func (s *Store) Events(ctx context.Context, runID, after string, block time.Duration) ([]jobs.Event, error) {
	if after == "" {
		after = "0"
	}
	if after == "$" { // only what comes next
		return s.events(ctx, runID, after, block)
	}
	if block > 0 && after != "0" { // a follower that has read the log so far waits on its stream first
		events, err := s.events(ctx, runID, after, block)
		if err != nil || len(events) > 0 {
			return events, err
		}
		return s.eventsNow(ctx, runID, after)
	}
	events, err := s.eventsNow(ctx, runID, after)
	if err != nil || len(events) > 0 || block <= 0 {
		return events, err
	}
	return s.events(ctx, runID, after, block)
}

// eventsNow reads the events after the stream id after, from the stream or from where the run's log is kept.
func (s *Store) eventsNow(ctx context.Context, runID, after string) ([]jobs.Event, error) {
	msgs, kept, err := s.readLog(ctx, runID, false, func(p redis.Pipeliner) *redis.XMessageSliceCmd {
		return p.XRangeN(ctx, eventsKey(runID), exclusive(after), "+", 1000)
	})
	if err != nil || kept == nil {
		return decodeEvents(msgs), err
	}
	if after != "0" {
		i := slices.IndexFunc(kept, func(e archivedEntry) bool { return streamIDAfter(e.ID, after) })
		if i < 0 {
			return nil, nil
		}
		kept = kept[i:]
	}
	return decodeEvents(entriesAsMessages(kept[:min(len(kept), 1000)])), nil
}

// readLog reads a run's event stream (or audit trail) with read, and the first bytes of its stored value in the same
// round trip. When the stream has nothing, those tell whether its log is kept elsewhere (kept): compact, or
// archived. kept is nil when the stream is the log, or when nothing is kept.
func (s *Store) readLog(ctx context.Context, runID string, audit bool, read func(p redis.Pipeliner) *redis.XMessageSliceCmd) (msgs []redis.XMessage, kept []archivedEntry, err error) {
	var xs *redis.XMessageSliceCmd
	var head *redis.StringCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		xs = read(p)
		head = p.GetRange(ctx, runKey(runID), 0, 1)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, fmt.Errorf("reading the log of run %s: %w", runID, err)
	}
	if msgs = xs.Val(); len(msgs) > 0 {
		return msgs, nil, nil
	}
	kept, err = s.kept(ctx, runID, head.Val(), audit)
	return nil, kept, err
}

// streamIDAfter reports whether stream id a comes after b ("<ms>-<seq>").
func streamIDAfter(a, b string) bool {
	am, as := parseStreamID(a)
	bm, bs := parseStreamID(b)
	if am != bm {
		return am > bm
	}
	return as > bs
}

func (s *Store) events(ctx context.Context, runID, after string, block time.Duration) ([]jobs.Event, error) {
	var msgs []redis.XMessage
	if block > 0 && s.pollEvents > 0 {
		return s.pollFor(ctx, runID, after, block)
	}
	if block > 0 {
		res, err := s.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{eventsKey(runID), after}, Block: block, Count: 500}).Result()
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading events of run %s: %w", runID, err)
		}
		for _, st := range res {
			msgs = append(msgs, st.Messages...)
		}
	} else {
		var err error
		msgs, err = s.rdb.XRangeN(ctx, eventsKey(runID), exclusive(after), "+", 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("reading events of run %s: %w", runID, err)
		}
	}
	return decodeEvents(msgs), nil
}

// pollFor waits up to block for events after the stream id after, by reading the stream's length every
// s.pollEvents, and reads them once it moved. The embedded store's server answers a blocked XREAD by scanning the
// whole stream again after every command any client sends, which made a long run's every step slower than the last
// while anyone followed it; its XLEN costs the same at any length.
func (s *Store) pollFor(ctx context.Context, runID, after string, block time.Duration) ([]jobs.Event, error) {
	key := eventsKey(runID)
	fail := func(err error) ([]jobs.Event, error) {
		return nil, fmt.Errorf("reading events of run %s: %w", runID, err)
	}
	if after == "$" {
		last, err := s.rdb.XRevRangeN(ctx, key, "+", "-", 1).Result()
		if err != nil {
			return fail(err)
		}
		after = "0-0"
		if len(last) > 0 {
			after = last[0].ID
		}
	}
	wait := time.NewTimer(block)
	defer wait.Stop()
	tick := time.NewTicker(s.pollEvents)
	defer tick.Stop()
	seen := int64(-1)
	for {
		n, err := s.rdb.XLen(ctx, key).Result()
		if err != nil {
			return fail(err)
		}
		if n != seen {
			seen = n
			// The newest first, so that only what is new is read; but never past the oldest new one unread.
			const most = 500
			msgs, err := s.rdb.XRevRangeN(ctx, key, "+", exclusive(after), most).Result()
			if err == nil && len(msgs) == most {
				msgs, err = s.rdb.XRangeN(ctx, key, exclusive(after), "+", most).Result()
			} else {
				slices.Reverse(msgs)
			}
			if err != nil {
				return fail(err)
			}
			if len(msgs) > 0 {
				return decodeEvents(msgs), nil
			}
		}
		select {
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-wait.C:
			return nil, nil
		case <-tick.C:
		}
	}
}

func decodeEvents(msgs []redis.XMessage) []jobs.Event {
	out := make([]jobs.Event, 0, len(msgs))
	for _, m := range msgs {
		raw, _ := m.Values[eventField].(string)
		var e jobs.Event
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			continue // an entry orch did not write; the log stays readable
		}
		e.ID = m.ID
		out = append(out, e)
	}
	return out
}

// Recent returns a run's last n events, oldest first: what a progress view shows, without reading the whole log.
func (s *Store) Recent(ctx context.Context, runID string, n int) ([]jobs.Event, error) {
	msgs, kept, err := s.readLog(ctx, runID, false, func(p redis.Pipeliner) *redis.XMessageSliceCmd {
		return p.XRevRangeN(ctx, eventsKey(runID), "+", "-", int64(n))
	})
	if err != nil {
		return nil, err
	}
	if kept != nil {
		return decodeEvents(entriesAsMessages(kept[max(0, len(kept)-n):])), nil
	}
	slices.Reverse(msgs)
	return decodeEvents(msgs), nil
}

// LastEventID is the id of a run's newest event, "0" when it has none: where a follower starts to see only what
// happens next.
func (s *Store) LastEventID(ctx context.Context, runID string) (string, error) {
	msgs, kept, err := s.readLog(ctx, runID, false, func(p redis.Pipeliner) *redis.XMessageSliceCmd {
		return p.XRevRangeN(ctx, eventsKey(runID), "+", "-", 1)
	})
	switch {
	case err != nil:
		return "", err
	case len(msgs) > 0:
		return msgs[0].ID, nil
	case len(kept) > 0:
		return kept[len(kept)-1].ID, nil
	}
	return "0", nil
}

func exclusive(id string) string {
	if id == "0" || id == "-" {
		return "-"
	}
	return "(" + id
}

func (s *Store) appendAudit(ctx context.Context, p redis.Pipeliner, runID string, entries []jobs.AuditEntry) error {
	for _, a := range entries {
		if a.Time.IsZero() {
			a.Time = s.now().UTC()
		}
		a.RunID = runID
		data, err := json.Marshal(a)
		if err != nil {
			return fmt.Errorf("encoding audit entry: %w", err)
		}
		p.XAdd(ctx, &redis.XAddArgs{Stream: auditKey(runID), Values: []any{eventField, data}})
	}
	return nil
}

// Audit returns a run's audit trail, oldest first; a compact or archived run's comes from where it is kept.
func (s *Store) Audit(ctx context.Context, runID string) ([]jobs.AuditEntry, error) {
	msgs, kept, err := s.readLog(ctx, runID, true, func(p redis.Pipeliner) *redis.XMessageSliceCmd {
		return p.XRange(ctx, auditKey(runID), "-", "+")
	})
	if kept != nil {
		msgs = entriesAsMessages(kept)
	}
	return decodeAudit(msgs), err
}

func (s *Store) readAudit(ctx context.Context, key string) ([]jobs.AuditEntry, error) {
	msgs, err := s.rdb.XRange(ctx, key, "-", "+").Result()
	if err != nil {
		return nil, fmt.Errorf("reading the audit trail %s: %w", key, err)
	}
	return decodeAudit(msgs), nil
}

func decodeAudit(msgs []redis.XMessage) []jobs.AuditEntry {
	out := make([]jobs.AuditEntry, 0, len(msgs))
	for _, m := range msgs {
		raw, _ := m.Values[eventField].(string)
		var a jobs.AuditEntry
		if err := json.Unmarshal([]byte(raw), &a); err == nil {
			out = append(out, a)
		}
	}
	slices.SortStableFunc(out, func(a, b jobs.AuditEntry) int { return a.Time.Compare(b.Time) })
	return out
}

// keyAudit is the audit trail of what belongs to no run (e.g. a refused request to start one).
const keyAudit = "orch:audit"

// AuditOutsideRuns records an entry that belongs to no run.
func (s *Store) AuditOutsideRuns(ctx context.Context, a jobs.AuditEntry) error {
	if a.Time.IsZero() {
		a.Time = s.now().UTC()
	}
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: keyAudit, MaxLen: maxEvents, Approx: true, Values: []any{eventField, data}}).Err()
}

// AuditOutside returns the audit entries that belong to no run, oldest first.
func (s *Store) AuditOutside(ctx context.Context) ([]jobs.AuditEntry, error) {
	return s.readAudit(ctx, keyAudit)
}
