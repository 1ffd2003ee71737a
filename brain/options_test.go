package brain

import (
	"reflect"
	"testing"
)

func TestParseOptions(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"lettered on lines", "A) Redis (distributed, persistent)\nB) In-memory (fast, local only)\nC) File-based (simple, persistent)",
			[]string{"Redis (distributed, persistent)", "In-memory (fast, local only)", "File-based (simple, persistent)"}},
		{"lettered on one line", "A) Redis  B) In-memory  C) File-based", []string{"Redis", "In-memory", "File-based"}},
		{"lettered with dots", "A. Keep the column\nB. Drop it", []string{"Keep the column", "Drop it"}},
		{"lettered with dots on one line", "A. Keep the column B. Drop it", []string{"Keep the column", "Drop it"}},
		{"bracketed", "[A] Approve\n[B] Reject\n[C] Ask the author", []string{"Approve", "Reject", "Ask the author"}},
		{"parenthesised", "(a) stdout (b) a rotating file", []string{"stdout", "a rotating file"}},
		{"option prefix in bold", "**Option A:** Redis\n**Option B:** Postgres", []string{"Redis", "Postgres"}},
		{"numbered with dots", "1. Yes, reuse the session middleware\n2. No, it is public", []string{"Yes, reuse the session middleware", "No, it is public"}},
		{"numbered with parens", "1) Offset/limit\n2) Cursor-based\n3) Keyset", []string{"Offset/limit", "Cursor-based", "Keyset"}},
		{"dash bullets", "- Redis, which we already run\n- Postgres", []string{"Redis, which we already run", "Postgres"}},
		{"star bullets with continuation", "* Google Workspace SSO\n  (the team already uses it)\n* GitHub OAuth", []string{"Google Workspace SSO (the team already uses it)", "GitHub OAuth"}},
		{"bullets carrying letter keys", "- A) Redis\n- B) In-memory", []string{"Redis", "In-memory"}},
		{"wrapped lettered option", "A) Redis: distributed and\n   persistent\nB) In-memory", []string{"Redis: distributed and persistent", "In-memory"}},
		{"letters out of order are text", "A) Use plan B. It is simpler\nB) Keep plan A", []string{"Use plan B. It is simpler", "Keep plan A"}},
		{"decimal is not a key", "1. Pin to v1.2. It works\n2. Upgrade", []string{"Pin to v1.2. It works", "Upgrade"}},
		{"inline list ends with its sentence", "Logs can go to A) stdout  B) a file. I'd pick A.", []string{"stdout", "a file"}},
		{"blank lines between options", "A) Redis\n\nB) In-memory", []string{"Redis", "In-memory"}},
		{"no options", "Redis or in-memory, your call", nil},
		{"empty", "   ", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseOptions(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseOptions(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}
