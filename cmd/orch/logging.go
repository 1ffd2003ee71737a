package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/orchrun/orch/internal/repeatlog"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// longRunning names the commands that run as services: their logs are the operator's record.
var longRunning = map[string]bool{"serve": true, "bot": true, "worker": true}

// newLogger is the process's logger. Services log at info, as JSON unless stderr is a terminal (where people read
// text); the one-shot commands log warnings and errors as text, since their output is for the person at the
// terminal. ORCH_LOG_LEVEL and ORCH_LOG_FORMAT (json or text) override.
//
// Whatever is logged is redacted, and a failure that repeats (Redis away, as the queue library's loops report it
// several times a second) is logged once, then summarized once per window. While watch says Redis is away, a
// one-shot command at its default level holds its warnings back: the terminal's outage note says what orch waits for.
func newLogger(w io.Writer, command, level, format string, terminal bool, watch *redisWatch) (*slog.Logger, error) {
	lvl := slog.LevelWarn
	asJSON := false
	if longRunning[command] {
		lvl, asJSON = slog.LevelInfo, !terminal
	}
	if level != "" {
		if err := lvl.UnmarshalText([]byte(level)); err != nil {
			return nil, usageErr("ORCH_LOG_LEVEL: %v", err)
		}
	}
	switch strings.ToLower(format) {
	case "":
	case "json":
		asJSON = true
	case "text":
		asJSON = false
	default:
		return nil, usageErr("ORCH_LOG_FORMAT %q: want json or text", format)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if asJSON {
		h = slog.NewJSONHandler(w, opts)
	}
	h = repeatlog.New(h, repeatlog.Config{Window: repeatWindow, Redact: safetext.Redact, Summarize: summarized})
	if watch != nil && !longRunning[command] && level == "" {
		h = heldBack{next: h, watch: watch}
	}
	return slog.New(h), nil
}

// repeatWindow is how long the log counts repeats of a failure before it says how many there were.
const repeatWindow = 30 * time.Second

// summarized picks the records whose repeats are counted rather than logged: warnings and errors, and whatever the
// libraries say (they are tagged with their component). Records naming two runs (run_id) are never taken for one.
func summarized(r slog.Record) bool {
	if r.Level >= slog.LevelWarn {
		return true
	}
	lib := false
	r.Attrs(func(a slog.Attr) bool {
		lib = a.Key == "component"
		return !lib
	})
	return lib
}

// logEvents logs what happens to runs as it is committed, with run_id and task_id on every line: runs, tasks,
// escalations and resolutions at info, aborts and failures at warn, the pipeline's bookkeeping and an escalation's
// context at debug. Events are redacted when they are made, so no secret reaches the log.
func logEvents(log *slog.Logger) func([]jobs.Event) {
	return func(events []jobs.Event) {
		for _, e := range events {
			ids := []any{"run_id", e.RunID}
			if e.TaskID != "" {
				ids = append(ids, "task_id", e.TaskID)
			}
			level, attrs := eventLog(e)
			if b, ok := e.Body.(jobs.EscalationEvent); ok {
				log.Debug("escalation context", append(ids, kv("escalation_id", b.EscalationID, "attempt", b.Attempt,
					"failures", b.Failures, "similarity", b.Similarity, "recommendation", b.Recommendation,
					"options", b.Options)...)...)
			}
			log.Log(context.Background(), level, e.Type(), append(ids, attrs...)...)
		}
	}
}

// eventLog is the level of an event's log line and its attributes beside the ids. Its complexity is one case per
// event kind, a table kept flat on purpose.
func eventLog(e jobs.Event) (slog.Level, []any) {
	switch b := e.Body.(type) {
	case jobs.RunStartedEvent:
		return slog.LevelInfo, kv("title", b.Title)
	case jobs.RunCompletedEvent:
		return slog.LevelInfo, kv("duration_ms", b.DurationMS, "cost_usd", b.CostUSD)
	case jobs.TaskStartedEvent:
		return slog.LevelInfo, kv("title", b.Title, "attempt", b.Attempt)
	case jobs.TaskCompletedEvent:
		return slog.LevelInfo, kv("title", b.Title, "summary", b.Summary, "duration_ms", b.DurationMS, "cost_usd", b.CostUSD)
	case jobs.TaskForcedEvent:
		return slog.LevelInfo, kv("title", b.Title)
	case jobs.ResumedEvent:
		return slog.LevelInfo, kv("title", b.Title, "resolution", b.Resolution)
	case jobs.PipelineStartedEvent:
		return slog.LevelInfo, nil
	case jobs.EscalationEvent:
		return slog.LevelInfo, kv("escalation_id", b.EscalationID, "trigger", b.Trigger.String(), "source", b.Source,
			"question", firstLine(b.Question))
	case jobs.ResolutionEvent:
		return slog.LevelInfo, kv("escalation_id", b.EscalationID, "resolution", string(b.Resolution), "by", b.By,
			"via", b.Via, "wait_seconds", b.WaitSeconds, "summary", b.Summary)
	case jobs.RunAbortedEvent:
		return slog.LevelWarn, kv("by", b.By, "reason", b.Reason)
	case jobs.RunFailedEvent:
		return slog.LevelWarn, kv("reason", b.Reason)
	case jobs.RunPausedEvent:
		return slog.LevelWarn, kv("reason", b.Reason)
	case jobs.SandboxErrorEvent:
		return slog.LevelWarn, kv("error", b.Error)
	case jobs.LoopDetectedEvent:
		return slog.LevelWarn, kv("failures", b.Failures, "similarity", b.Similarity)
	case jobs.TaskFailedEvent:
		return slog.LevelInfo, kv("attempt", b.Attempt, "error", b.Error)
	case jobs.BrainFallbackEvent:
		return slog.LevelInfo, kv("reason", b.Reason)
	case jobs.EscalationTimeoutEvent:
		return slog.LevelInfo, kv("escalation_id", b.EscalationID, "next", b.Next)
	case jobs.StageCompletedEvent:
		return slog.LevelDebug, kv("handler", b.Handler, "status", b.Status, "next", b.Next)
	case jobs.StageFailedEvent:
		return slog.LevelDebug, kv("handler", b.Handler, "status", b.Status, "next", b.Next)
	case jobs.StageStartedEvent:
		return slog.LevelDebug, kv("handler", b.Handler)
	case jobs.CheckpointSavedEvent:
		return slog.LevelDebug, kv("node_id", b.NodeID)
	}
	return slog.LevelDebug, nil
}

// kv returns the key/value pairs whose value says something (an empty string says nothing), strings on one line.
func kv(pairs ...any) []any {
	out := make([]any, 0, len(pairs))
	for i := 0; i+1 < len(pairs); i += 2 {
		v := pairs[i+1]
		if s, ok := v.(string); ok {
			if s == "" {
				continue
			}
			v = oneLine(s, 300)
		}
		out = append(out, pairs[i], v)
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return oneLine(s, 300)
}
