package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/orchrun/orch/jobs"
)

func TestNewLogger(t *testing.T) {
	cases := []struct {
		command, level, format string
		terminal               bool
		wantJSON               bool
		wantInfo               bool // does an info line get through
	}{
		{"serve", "", "", false, true, true},
		{"worker", "", "", false, true, true},
		{"bot", "", "", true, false, true},   // a person watches: text
		{"run", "", "", false, false, false}, // one-shot: warnings only, as text
		{"run", "info", "json", false, true, true},
		{"worker", "warn", "text", false, false, false},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		log, err := newLogger(&buf, c.command, c.level, c.format, c.terminal, nil)
		if err != nil {
			t.Fatal(err)
		}
		log.Info("hello", "run_id", "r-1")
		out := buf.String()
		if got := out != ""; got != c.wantInfo {
			t.Errorf("%+v: info logged = %v (%q)", c, got, out)
			continue
		}
		if out != "" && json.Valid([]byte(strings.TrimSpace(out))) != c.wantJSON {
			t.Errorf("%+v: JSON = %v: %q", c, !c.wantJSON, out)
		}
	}
	for _, bad := range [][2]string{{"loud", ""}, {"", "xml"}} {
		if _, err := newLogger(&bytes.Buffer{}, "serve", bad[0], bad[1], false, nil); err == nil || exitCode(err, true) != exitUsage {
			t.Errorf("level %q format %q: err = %v, want a usage error", bad[0], bad[1], err)
		}
	}
}

// Every event becomes a log line with run_id (and task_id when it has one) at the level an operator expects.
func TestLogEvents(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	logEvents(log)([]jobs.Event{
		jobs.NewEvent("r-1", "1.1", jobs.EscalationEvent{EscalationID: "e1", Trigger: jobs.TriggerNeedsHelp,
			Question: "Which cache?\nA) Redis", Similarity: 0.5}),
		jobs.NewEvent("r-1", "1.1", jobs.ResolutionEvent{EscalationID: "e1", Resolution: jobs.ResolveChoose, By: "U1", Via: "slack"}),
		jobs.NewEvent("r-1", "1.1", jobs.RunAbortedEvent{By: "U1", Reason: "wrong plan"}),
		jobs.NewEvent("r-1", "1.2", jobs.StageStartedEvent{Handler: "codergen"}),
		jobs.NewEvent("r-2", "", jobs.RunCompletedEvent{}),
	})
	var got []string
	for _, raw := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatalf("not JSON: %q", raw)
		}
		if m["run_id"] == nil || (m["run_id"] == "r-1" && m["task_id"] == nil) {
			t.Errorf("line without run_id/task_id: %s", raw)
		}
		if m["msg"] == "escalation" && (m["question"] != "Which cache? A) Redis" || m["similarity"] != 0.5) {
			t.Errorf("escalation's fields: question %v, similarity %v", m["question"], m["similarity"])
		}
		if m["msg"] == "run_aborted" && m["text"] != "Run r-1 aborted by U1: wrong plan" {
			t.Errorf("run_aborted's text: %v", m["text"])
		}
		got = append(got, m["level"].(string)+" "+m["msg"].(string))
	}
	want := "INFO escalation|INFO resolution|WARN run_aborted|DEBUG stage_started|INFO run_completed"
	if strings.Join(got, "|") != want {
		t.Fatalf("levels:\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
}
