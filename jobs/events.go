package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// Event types in a run's event log. Front ends (the terminal, Slack) render them.
const (
	EventRunStarted    = "run_started"
	EventTaskStarted   = "task_started"
	EventTaskCompleted = "task_completed"
	EventTaskFailed    = "task_failed"
	EventTaskForced    = "task_forced"
	EventRetrying      = "retrying"
	EventLoopDetected  = "loop_detected"
	EventEscalation    = "escalation"
	EventResolution    = "resolution"
	EventResumed       = "resumed"
	EventBrainFallback = "brain_fallback"
	EventSandboxError  = "sandbox_error"
	EventRunCompleted  = "run_completed"
	EventRunFailed     = "run_failed"
	EventRunAborted    = "run_aborted"
	EventRunPaused     = "run_paused"
	EventTimeout       = "escalation_timeout"

	// Pipeline events (attractor spec §9.6), for every run: a milestone is a linear pipeline.
	EventPipelineStarted   = "pipeline_started"
	EventPipelineCompleted = "pipeline_completed"
	EventPipelineFailed    = "pipeline_failed"
	EventStageStarted      = "stage_started"
	EventStageCompleted    = "stage_completed"
	EventStageFailed       = "stage_failed"
	EventStageRetrying     = "stage_retrying"
	EventInterviewStarted  = "interview_started"
	EventInterviewDone     = "interview_completed"
	EventInterviewTimeout  = "interview_timeout"
	EventCheckpointSaved   = "checkpoint_saved"
)

// Event is one entry of a run's append-only event log.
type Event struct {
	ID     string         // stream id, set when read back
	Type   string         // one of the Event* constants
	RunID  string         //
	TaskID string         //
	Time   time.Time      //
	Fields map[string]any // the event's own fields
}

// NewEvent builds an event; kv are key/value pairs.
func NewEvent(typ, runID, taskID string, kv ...any) Event {
	e := Event{Type: typ, RunID: runID, TaskID: taskID, Fields: map[string]any{}}
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		e.Fields[k] = kv[i+1]
	}
	return e
}

// String returns the named field as a string ("" when absent).
func (e Event) String(k string) string {
	switch v := e.Fields[k].(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

// Float returns the named numeric field.
func (e Event) Float(k string) float64 {
	switch v := e.Fields[k].(type) {
	case float64:
		return v
	case int:
		return float64(v)
	case int64:
		return float64(v)
	}
	return 0
}

// Int returns the named numeric field.
func (e Event) Int(k string) int { return int(e.Float(k)) }

// MarshalJSON flattens the event: type, run_id, task_id, time, then the fields.
func (e Event) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(e.Fields)+4)
	maps.Copy(m, e.Fields)
	m["type"] = e.Type
	m["run_id"] = e.RunID
	if e.TaskID != "" {
		m["task_id"] = e.TaskID
	}
	m["time"] = e.Time.UTC().Format(time.RFC3339Nano)
	return json.Marshal(m)
}

// UnmarshalJSON is the inverse of MarshalJSON.
func (e *Event) UnmarshalJSON(data []byte) error {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	e.Type, _ = m["type"].(string)
	e.RunID, _ = m["run_id"].(string)
	e.TaskID, _ = m["task_id"].(string)
	if t, ok := m["time"].(string); ok {
		e.Time, _ = time.Parse(time.RFC3339Nano, t)
	}
	for _, k := range []string{"type", "run_id", "task_id", "time"} {
		delete(m, k)
	}
	e.Fields = m
	return nil
}

func (s *Store) appendEvents(ctx context.Context, p redis.Pipeliner, runID string, events []Event) error {
	for _, e := range events {
		if e.Time.IsZero() {
			e.Time = s.now().UTC()
		}
		e.RunID = runID
		data, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encoding event %s: %w", e.Type, err)
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
func (s *Store) Append(ctx context.Context, runID string, events ...Event) error {
	_, err := s.Update(ctx, runID, func(r *Run, c *Change) error {
		for _, e := range events {
			c.Emit(e)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("appending events to run %s: %w", runID, err)
	}
	return nil
}

// Events reads a run's events after the stream id after ("" or "0" = from the start). With block > 0 it waits up to
// block for new events when there are none.
func (s *Store) Events(ctx context.Context, runID, after string, block time.Duration) ([]Event, error) {
	if after == "" {
		after = "0"
	}
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

func decodeEvents(msgs []redis.XMessage) []Event {
	out := make([]Event, 0, len(msgs))
	for _, m := range msgs {
		raw, _ := m.Values[eventField].(string)
		var e Event
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			continue // an entry orch did not write; the log stays readable
		}
		e.ID = m.ID
		out = append(out, e)
	}
	return out
}

// Recent returns a run's last n events, oldest first: what a progress view shows, without reading the whole log.
func (s *Store) Recent(ctx context.Context, runID string, n int) ([]Event, error) {
	msgs, err := s.rdb.XRevRangeN(ctx, eventsKey(runID), "+", "-", int64(n)).Result()
	if err != nil {
		return nil, fmt.Errorf("reading events of run %s: %w", runID, err)
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
		return "0", nil
	}
	return msgs[0].ID, nil
}

func exclusive(id string) string {
	if id == "0" || id == "-" {
		return "-"
	}
	return "(" + id
}

// AuditEntry records an escalation or a resolution: who, when, what.
type AuditEntry struct {
	Time         time.Time `json:"time"`
	RunID        string    `json:"run_id"`
	TaskID       string    `json:"task_id,omitempty"`
	EscalationID string    `json:"escalation_id"`
	Action       string    `json:"action"` // "escalated" or "resolved" or "rejected"
	Trigger      Trigger   `json:"trigger,omitempty"`
	Resolution   string    `json:"resolution,omitempty"`
	Detail       string    `json:"detail,omitempty"`
	By           string    `json:"by"`
	Via          string    `json:"via,omitempty"`
}

func (s *Store) appendAudit(ctx context.Context, p redis.Pipeliner, runID string, entries []AuditEntry) error {
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

// Audit returns a run's audit trail, oldest first.
func (s *Store) Audit(ctx context.Context, runID string) ([]AuditEntry, error) {
	return s.readAudit(ctx, auditKey(runID))
}

func (s *Store) readAudit(ctx context.Context, key string) ([]AuditEntry, error) {
	msgs, err := s.rdb.XRange(ctx, key, "-", "+").Result()
	if err != nil {
		return nil, fmt.Errorf("reading the audit trail %s: %w", key, err)
	}
	out := make([]AuditEntry, 0, len(msgs))
	for _, m := range msgs {
		raw, _ := m.Values[eventField].(string)
		var a AuditEntry
		if err := json.Unmarshal([]byte(raw), &a); err == nil {
			out = append(out, a)
		}
	}
	slices.SortStableFunc(out, func(a, b AuditEntry) int { return a.Time.Compare(b.Time) })
	return out, nil
}

// keyAudit is the audit trail of what belongs to no run (e.g. a refused request to start one).
const keyAudit = "orch:audit"

// AuditOutsideRuns records an entry that belongs to no run.
func (s *Store) AuditOutsideRuns(ctx context.Context, a AuditEntry) error {
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
func (s *Store) AuditOutside(ctx context.Context) ([]AuditEntry, error) {
	return s.readAudit(ctx, keyAudit)
}

// AuditRun appends entries to a run's audit trail on their own.
func (s *Store) AuditRun(ctx context.Context, runID string, entries ...AuditEntry) error {
	_, err := s.Update(ctx, runID, func(r *Run, c *Change) error {
		c.Audit = append(c.Audit, entries...)
		return nil
	})
	return err
}
