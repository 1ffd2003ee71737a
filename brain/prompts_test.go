package brain

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPromptsRender(t *testing.T) {
	output := "Implemented X.\n{{.Output}} and <b>not</b> escaped & kept: \"quotes\"\nWhich approach should I take?"
	tests := []struct {
		name string
		data any
		want []string
		not  []string
	}{
		{"tasks.tmpl", tasksData{Plan: "## Task 1.1: Do it\n```\n## Task 9.9: Not a task\n```"}, []string{
			"CRITICAL: Only extract REAL tasks that should be executed.",
			"- Tasks mentioned inside fenced code blocks (```...```)",
			`- Tasks in "Example" or "E2E Test" sections that are illustrative, not actionable`,
			"Return ONLY the JSON array, no other text.",
			"Plan content:\n## Task 1.1: Do it\n```\n## Task 9.9: Not a task\n```",
		}, nil},
		{"interpret.tmpl", interpretData{Output: output, Marker: omittedMarker}, []string{
			"Analyze this Claude Code output and determine the task status.",
			`"status": "completed" | "failed" | "needs_help",`,
			`When in doubt between "completed" and "needs_help", prefer "needs_help" — it's safer to ask than to assume.`,
			"Return ONLY the JSON, no other text.\n\nClaude Code output:\n" + output,
		}, []string{"left out"}},
		{"interpret.tmpl", interpretData{Output: "head\n" + omittedMarker + "\ntail", Omitted: 1234, Marker: omittedMarker}, []string{
			"1234 bytes from the middle were left out where the line \"" + omittedMarker + "\" stands",
			"Claude Code output:\nhead\n",
		}, nil},
		{"decide.tmpl", DecideInput{TaskID: "1.2", TaskTitle: "Add endpoint", AttemptHistory: []string{"ImportError: a\nline 2", "ImportError: b"}}, []string{
			"You are deciding whether to retry a failed task or escalate to a human.",
			"Task: 1.2 - Add endpoint",
			"Attempt history:\nAttempt 1:\nImportError: a\nline 2\nAttempt 2:\nImportError: b\n\nCurrent attempt count: 2",
			"- Same or very similar error 3+ times (stuck in a loop)",
			`"guidance_for_retry": "If retrying, what to tell Claude differently (null if escalating)"`,
		}, nil},
		{"corrective.tmpl", correctiveData{Judgement: "tasks", Problem: "the array is empty"}, []string{
			"Your previous reply could not be used: the array is empty.", "ONLY the JSON array", `"id": "1.1"`,
		}, []string{`"status"`}},
		{"corrective.tmpl", correctiveData{Judgement: "interpret", Problem: "x"}, []string{"ONLY the JSON object", `"status" must be exactly one of`}, nil},
		{"corrective.tmpl", correctiveData{Judgement: "decide", Problem: "x"}, []string{`"decision" must be exactly "retry" or "escalate"`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := renderPrompt(tt.name, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q in:\n%s", w, got)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(got, w) {
					t.Errorf("has %q in:\n%s", w, got)
				}
			}
		})
	}
}

func TestClipMiddle(t *testing.T) {
	if got, n := clipMiddle("short", 100); got != "short" || n != 0 {
		t.Errorf("clipMiddle(short) = %q, %d", got, n)
	}
	var b strings.Builder
	for b.Len() < 100_000 {
		b.WriteString("line é ü 日本 of output\n")
	}
	s := "BEGIN\n" + b.String() + "END"
	got, n := clipMiddle(s, 30_000)
	if !strings.HasPrefix(got, "BEGIN\n") || !strings.HasSuffix(got, "END") || !strings.Contains(got, "\n"+omittedMarker+"\n") {
		t.Errorf("head, marker or tail missing")
	}
	if !utf8.ValidString(got) {
		t.Error("cut inside a UTF-8 sequence")
	}
	if len(got) > 30_000+len(omittedMarker)+4 || len(got) < 25_000 {
		t.Errorf("clipped to %d bytes for a budget of 30000", len(got))
	}
	if kept := len(got) - len(omittedMarker) - 3; len(s)-n != kept && len(s)-n != kept-1 {
		t.Errorf("omitted %d of %d, but %d bytes are kept", n, len(s), kept)
	}
	// No line breaks at all: the cut still lands on rune boundaries.
	got, _ = clipMiddle(strings.Repeat("日", 10_000), 1000)
	if !utf8.ValidString(got) {
		t.Error("cut inside a UTF-8 sequence")
	}
}
