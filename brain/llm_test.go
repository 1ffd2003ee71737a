package brain

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestParseInterpretation(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    Interpretation
		wantErr string
	}{
		{"normalised status", `{"status":" Completed ","summary":"ok","error":"stale"}`,
			Interpretation{Status: StatusCompleted, Summary: "ok"}, ""},
		{"a failure without an error takes the summary", `{"status":"failed","summary":"Tests fail."}`,
			Interpretation{Status: StatusFailed, Summary: "Tests fail.", Error: "Tests fail."}, ""},
		{"needs_help without a question gets one", `{"status":"needs_help","options":["A", " ", "B"]}`,
			Interpretation{Status: StatusNeedsHelp, Question: "The agent's result is unclear. Please review the output and advise.", Options: []string{"A", "B"}}, ""},
		{"missing status", `{"summary":"x"}`, Interpretation{}, `"status" is missing`},
		{"unknown status", `{"status":"done"}`, Interpretation{}, `"status" is "done"`},
		{"wrong types", `{"status":"failed","options":"A or B"}`, Interpretation{}, "field types"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseInterpretation(json.RawMessage(tt.raw))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tt.want) {
				t.Errorf("got %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
}

func TestParseDecision(t *testing.T) {
	tests := []struct {
		raw, wantErr string
		want         Decision
	}{
		{raw: `{"decision":"ESCALATE","reason":"stuck","guidance_for_retry":"try harder"}`, want: Decision{Decision: Escalate, Reason: "stuck"}},
		{raw: `{"decision":"retry","reason":"new error","guidance_for_retry":null}`, want: Decision{Decision: Retry, Reason: "new error"}},
		{raw: `{"decision":"maybe","reason":"r"}`, wantErr: `"decision" is "maybe"`},
		{raw: `{"reason":"r"}`, wantErr: `"decision" is missing`},
		{raw: `{"decision":"retry","reason":"  "}`, wantErr: `"reason" is missing`},
	}
	for _, tt := range tests {
		got, err := parseDecision(json.RawMessage(tt.raw))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want %q", tt.raw, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got.Decision != tt.want.Decision || got.Reason != tt.want.Reason || got.GuidanceForRetry != tt.want.GuidanceForRetry {
			t.Errorf("%s: got %+v, %v; want %+v", tt.raw, got, err, tt.want)
		}
	}
}

func TestParseTasks(t *testing.T) {
	got, err := parseTasks(json.RawMessage(`[{"id":1.10,"title":" A "},{"id":"2","title":"B","description":"d"}]`))
	if err != nil || fmt.Sprint(got) != fmt.Sprint([]Task{{"1.10", "A", ""}, {"2", "B", "d"}}) {
		t.Errorf("got %v, %v", got, err)
	}
	for raw, wantErr := range map[string]string{
		`[]`:                        "empty",
		`[{"title":"x"}]`:           `no "id"`,
		`[{"id":"","title":"x"}]`:   `"id" is empty`,
		`[{"id":true,"title":"x"}]`: `"id" is true`,
		`[{"id":"1"}]`:              `no "title"`,
		`[{"id":"1","title":"a"},{"id":"1","title":"b"}]`: "more than once",
		`[1, 2]`: "not an array of task objects",
	} {
		if _, err := parseTasks(json.RawMessage(raw)); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: error %v, want %q", raw, err, wantErr)
		}
	}
}
