package main

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/orchrun/orch/jobs"
)

// longRunning names the commands that run as services: their logs are the operator's record.
var longRunning = map[string]bool{"serve": true, "bot": true, "worker": true}

// newLogger is the process's logger. Services log at info, as JSON unless stderr is a terminal (where people read
// text); the one-shot commands log warnings and errors as text, since their output is for the person at the
// terminal. ORCH_LOG_LEVEL and ORCH_LOG_FORMAT (json or text) override.
func newLogger(w io.Writer, command, level, format string, terminal bool) (*slog.Logger, error) {
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
	if asJSON {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
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
			attrs := append([]any{}, ids...)
			level, msg := slog.LevelDebug, e.Type
			switch e.Type {
			case jobs.EventRunStarted, jobs.EventRunCompleted, jobs.EventTaskStarted, jobs.EventTaskCompleted,
				jobs.EventTaskForced, jobs.EventResumed, jobs.EventPipelineStarted:
				level = slog.LevelInfo
				attrs = append(attrs, pick(e, "title", "attempt", "summary", "duration_ms", "cost_usd", "resolution")...)
			case jobs.EventEscalation:
				level = slog.LevelInfo
				attrs = append(attrs, pick(e, "escalation_id", "trigger", "source")...)
				attrs = append(attrs, "question", firstLine(e.String("question")))
				log.Debug("escalation context", append(ids, pick(e, "escalation_id", "attempt", "failures", "similarity",
					"recommendation", "options")...)...)
			case jobs.EventResolution:
				level = slog.LevelInfo
				attrs = append(attrs, pick(e, "escalation_id", "resolution", "by", "via", "wait_seconds", "summary")...)
			case jobs.EventRunAborted:
				level = slog.LevelWarn
				attrs = append(attrs, pick(e, "by", "reason")...)
			case jobs.EventRunFailed, jobs.EventRunPaused, jobs.EventSandboxError, jobs.EventLoopDetected:
				level = slog.LevelWarn
				attrs = append(attrs, pick(e, "reason", "error", "failures", "similarity")...)
			case jobs.EventTaskFailed, jobs.EventBrainFallback, jobs.EventTimeout:
				level = slog.LevelInfo
				attrs = append(attrs, pick(e, "attempt", "error", "reason", "escalation_id", "next")...)
			default:
				attrs = append(attrs, pick(e, "handler", "status", "next", "node_id")...)
			}
			log.Log(context.Background(), level, msg, attrs...)
		}
	}
}

// pick returns the event's fields that are set, as key/value pairs.
func pick(e jobs.Event, keys ...string) []any {
	var out []any
	for _, k := range keys {
		if v, ok := e.Fields[k]; ok && v != nil && v != "" {
			if s, isString := v.(string); isString {
				v = oneLine(s, 300)
			}
			out = append(out, k, v)
		}
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
