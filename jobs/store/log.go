package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
// block for new events when there are none. An archived run's events come from the archive.
func (s *Store) Events(ctx context.Context, runID, after string, block time.Duration) ([]jobs.Event, error) {
	if after == "" {
		after = "0"
	}
	if after == "$" || s.archive == nil { // only what comes next, or no archive to look in: one read, as it was
		return s.events(ctx, runID, after, block)
	}
	events, err := s.events(ctx, runID, after, 0)
	if err != nil || len(events) > 0 {
		return events, err
	}
	entries, ok, err := s.archived(ctx, runID, false)
	if err != nil {
		return nil, err
	}
	if !ok {
		if block > 0 {
			return s.events(ctx, runID, after, block)
		}
		return nil, nil
	}
	msgs := entriesAsMessages(entries)
	if after != "0" {
		i := slices.IndexFunc(msgs, func(m redis.XMessage) bool { return streamIDAfter(m.ID, after) })
		if i < 0 {
			return nil, nil
		}
		msgs = msgs[i:]
	}
	return decodeEvents(msgs[:min(len(msgs), 1000)]), nil
}

// streamIDAfter reports whether stream id a comes after b ("<ms>-<seq>").
func streamIDAfter(a, b string) bool {
	am, as, _ := strings.Cut(a, "-")
	bm, bs, _ := strings.Cut(b, "-")
	ami, _ := strconv.ParseUint(am, 10, 64)
	bmi, _ := strconv.ParseUint(bm, 10, 64)
	if ami != bmi {
		return ami > bmi
	}
	asi, _ := strconv.ParseUint(as, 10, 64)
	bsi, _ := strconv.ParseUint(bs, 10, 64)
	return asi > bsi
}

func (s *Store) events(ctx context.Context, runID, after string, block time.Duration) ([]jobs.Event, error) {
	var msgs []redis.XMessage
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
	msgs, err := s.rdb.XRevRangeN(ctx, eventsKey(runID), "+", "-", int64(n)).Result()
	if err != nil {
		return nil, fmt.Errorf("reading events of run %s: %w", runID, err)
	}
	if len(msgs) == 0 {
		entries, ok, err := s.archived(ctx, runID, false)
		if err != nil {
			return nil, err
		}
		if ok {
			return decodeEvents(entriesAsMessages(entries[max(0, len(entries)-n):])), nil
		}
	}
	slices.Reverse(msgs)
	return decodeEvents(msgs), nil
}

// LastEventID is the id of a run's newest event, "0" when it has none: where a follower starts to see only what
// happens next.
func (s *Store) LastEventID(ctx context.Context, runID string) (string, error) {
	msgs, err := s.rdb.XRevRangeN(ctx, eventsKey(runID), "+", "-", 1).Result()
	if err != nil {
		return "", fmt.Errorf("reading events of run %s: %w", runID, err)
	}
	if len(msgs) == 0 {
		entries, ok, err := s.archived(ctx, runID, false)
		if err != nil || !ok || len(entries) == 0 {
			return "0", err
		}
		return entries[len(entries)-1].ID, nil
	}
	return msgs[0].ID, nil
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

// Audit returns a run's audit trail, oldest first; an archived run's comes from the archive.
func (s *Store) Audit(ctx context.Context, runID string) ([]jobs.AuditEntry, error) {
	out, err := s.readAudit(ctx, auditKey(runID))
	if err != nil || len(out) > 0 {
		return out, err
	}
	entries, ok, err := s.archived(ctx, runID, true)
	if !ok || err != nil {
		return out, err
	}
	return decodeAudit(entriesAsMessages(entries)), nil
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
