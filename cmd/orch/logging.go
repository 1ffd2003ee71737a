package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sort"
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

// logEvents logs what happens to runs as it is committed, with run_id and task_id on every line: each event at its
// description's level (the pipeline's bookkeeping at debug; failures, aborts and pauses at warn), with its text and
// its fields. Events are redacted when they are made, so no secret reaches the log.
func logEvents(log *slog.Logger) func([]jobs.Event) {
	return func(events []jobs.Event) {
		for _, e := range events {
			d := e.Describe()
			// Logged from inside the store's transaction: an event below the log's level costs no encoding.
			if !log.Enabled(context.Background(), d.Level) {
				continue
			}
			attrs := []any{"run_id", e.RunID}
			if e.TaskID != "" {
				attrs = append(attrs, "task_id", e.TaskID)
			}
			attrs = append(attrs, "text", d.String())
			log.Log(context.Background(), d.Level, e.Type(), append(attrs, eventFields(e)...)...)
		}
	}
}

// eventFields are the key/value pairs of an event's own fields that say something in a log line: its strings (on
// one line, bounded) and numbers; its lists and objects (options, tool calls) are for --json.
func eventFields(e jobs.Event) []any {
	data, err := json.Marshal(e)
	if err != nil {
		return nil
	}
	var fields map[string]any
	if json.Unmarshal(data, &fields) != nil {
		return nil
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		switch k {
		case "type", "run_id", "task_id", "time":
		default:
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []any
	for _, k := range keys {
		switch v := fields[k].(type) {
		case string:
			if v != "" {
				out = append(out, k, safetext.OneLine(v, 300))
			}
		case float64, bool:
			out = append(out, k, v)
		}
	}
	return out
}
