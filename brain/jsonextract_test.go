package brain

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestExtractJSON(t *testing.T) {
	tests := []struct {
		name    string
		reply   string
		kind    byte
		want    string
		wantErr error
	}{
		{"bare object", `{"status":"completed"}`, '{', `{"status":"completed"}`, nil},
		{"fenced with prose", "Here you go:\n```json\n{\"a\": [1, {\"b\": \"}\"}]}\n```\nHope that helps {really}.", '{', `{"a": [1, {"b": "}"}]}`, nil},
		{"braces in prose first", `The {status} field is set: {"status":"failed"}`, '{', `{"status":"failed"}`, nil},
		{"escaped quotes in strings", `{"q":"say \"{hi}\" \\"}`, '{', `{"q":"say \"{hi}\" \\"}`, nil},
		{"array for tasks", "Tasks:\n[{\"id\":\"1.1\",\"title\":\"x\"}]\nDone.", '[', `[{"id":"1.1","title":"x"}]`, nil},
		{"array inside an object", `{"tasks":[{"id":"1"}]}`, '[', `[{"id":"1"}]`, nil},
		{"object inside an array", `[{"status":"completed"}]`, '{', `{"status":"completed"}`, nil},
		{"bracket in prose before the array", "See [1] below.\n[{\"id\":\"1\",\"title\":\"t\"}]", '[', `[1]`, nil},
		{"cut off", `{"status": "completed", "summary": "Done`, '{', "", errPartialJSON},
		{"no JSON", "I think the task is done.", '{', "", errNoJSON},
		{"empty", "", '[', "", errNoJSON},
		{"second value is the good one", `{"status": oops} then {"status":"failed"}`, '{', `{"status":"failed"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := extractJSON(tt.reply, tt.kind)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("error %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("got %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func FuzzExtractJSON(f *testing.F) {
	for _, seed := range []string{
		`{"status":"completed"}`,
		"```json\n{\"a\":1}\n```",
		`[{"id":"1.1","title":"t"}]`,
		`{"a":"\"}"}`,
		`{{{{{{{{`,
		`[[[[[[]]]`,
		"{\"a\":\"\xff\"}",
		`text {"a": [1, 2, {"b": null}]} text`,
		`{"status": "compl`,
		strings.Repeat("{", 500),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		for _, kind := range []byte{'{', '['} {
			got, err := extractJSON(reply, kind)
			if err != nil {
				if !errors.Is(err, errNoJSON) && !errors.Is(err, errPartialJSON) {
					t.Fatalf("unexpected error %v", err)
				}
				continue
			}
			if len(got) == 0 || got[0] != kind || !json.Valid(got) || !strings.Contains(reply, string(got)) {
				t.Fatalf("extractJSON(%q, %q) = %q: not a valid value of the kind from the reply", reply, kind, got)
			}
			// What the judges parse must not panic either.
			_, _ = parseInterpretation(got)
			_, _ = parseDecision(got)
			_, _ = parseTasks(got)
		}
	})
}
