package brain

import (
	"reflect"
	"testing"
)

func TestExplicitMarkers(t *testing.T) {
	tests := []struct {
		name   string
		output string
		ok     bool
		want   Interpretation // Summary is not compared
	}{
		{
			name:   "status needs_human with structured block",
			output: "STATUS: needs_human\nQUESTION: Should the new endpoint require authentication?\nOPTIONS:\n1. Yes, reuse the session middleware\n2. No, it is public\nRECOMMENDATION: 1",
			ok:     true,
			want: Interpretation{Status: StatusNeedsHelp, Question: "Should the new endpoint require authentication?",
				Options: []string{"Yes, reuse the session middleware", "No, it is public"}, Recommendation: "Yes, reuse the session middleware"},
		},
		{
			name:   "options and recommendation without QUESTION: the question comes from the prose",
			output: "The task says to add caching but doesn't specify the type.\n\nOPTIONS:\nA) Redis\nB) In-memory\n\nRECOMMENDATION: B for simplicity\n\nWhat would you prefer?",
			ok:     true,
			want: Interpretation{Status: StatusNeedsHelp,
				Question:       "The task says to add caching but doesn't specify the type. What would you prefer?",
				Options:        []string{"Redis", "In-memory"},
				Recommendation: "In-memory"},
		},
		{
			name:   "options on one line",
			output: "QUESTION: Which cache should I use?\nOPTIONS:\nA) Redis  B) In-memory  C) File-based\nRECOMMENDATION: B",
			ok:     true,
			want: Interpretation{Status: StatusNeedsHelp, Question: "Which cache should I use?",
				Options: []string{"Redis", "In-memory", "File-based"}, Recommendation: "In-memory"},
		},
		{
			name:   "NEEDS_HUMAN line is the question",
			output: "Looked at both loaders.\nNEEDS_HUMAN: config/v1 and config/v2 both load settings; do you want me to consolidate on v2?",
			ok:     true,
			want:   Interpretation{Status: StatusNeedsHelp, Question: "config/v1 and config/v2 both load settings; do you want me to consolidate on v2?"},
		},
		{
			name:   "multi-line question",
			output: "QUESTION: The spec names PostgreSQL and SQLite.\nShould I support both?\n\nOPTIONS:\n- Both\n- PostgreSQL only\nRECOMMENDATION: PostgreSQL only",
			ok:     true,
			want: Interpretation{Status: StatusNeedsHelp, Question: "The spec names PostgreSQL and SQLite. Should I support both?",
				Options: []string{"Both", "PostgreSQL only"}, Recommendation: "PostgreSQL only"},
		},
		{
			name:   "completed",
			output: "Created orchestrator/models.py.\n\nSTATUS: completed",
			ok:     true,
			want:   Interpretation{Status: StatusCompleted},
		},
		{
			name:   "markdown status",
			output: "## Result\n**Status:** ✅ Complete\nAll done.",
			ok:     true,
			want:   Interpretation{Status: StatusCompleted},
		},
		{
			name:   "failed with ERROR line",
			output: "STATUS: failed\nERROR: permission denied while writing to /etc/app/config.yaml",
			ok:     true,
			want:   Interpretation{Status: StatusFailed, Error: "permission denied while writing to /etc/app/config.yaml"},
		},
		{
			name:   "failed without ERROR takes the error lines",
			output: "./main.go:14:2: undefined: NewServer\nSTATUS: failed",
			ok:     true,
			want:   Interpretation{Status: StatusFailed, Error: "./main.go:14:2: undefined: NewServer"},
		},
		{
			name:   "last status wins",
			output: "STATUS: failed\nERROR: flaky network\nRetried.\nSTATUS: completed",
			ok:     true,
			want:   Interpretation{Status: StatusCompleted},
		},
		{
			name:   "completed next to a question is needs_help",
			output: "STATUS: completed\nQUESTION: Should I also delete the old table?",
			ok:     true,
			want:   Interpretation{Status: StatusNeedsHelp, Question: "Should I also delete the old table?"},
		},
		{
			name:   "marker inside a fenced block does not count",
			output: "Documented the protocol:\n```\nSTATUS: needs_human\n```\nTests pass.",
			ok:     false,
		},
		{
			name:   "marker in the middle of a line does not count",
			output: "Agents should print STATUS: completed at the end.",
			ok:     false,
		},
		{
			name:   "GUIDANCE echo is orch's input, not a marker",
			output: "Implemented the cache.\nGUIDANCE: answer with STATUS: completed when done",
			ok:     false,
		},
		{
			name:   "OPTIONS alone is not a protocol block (could be help text)",
			output: "Added the flags.\nOPTIONS:\n  -v, --verbose\n  -n, --dry-run",
			ok:     false,
		},
		{
			name:   "bare mixed-case status is tool output",
			output: "kubectl describe pod api-0\nStatus:  Failed\nReason:  Evicted",
			ok:     false,
		},
		{
			name:   "unknown status word",
			output: "STATUS: in progress",
			ok:     false,
		},
		{name: "no markers", output: "All tests pass.", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ExplicitMarkers(tt.output)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (got %+v)", ok, tt.ok, got)
			}
			if !ok {
				return
			}
			if got.Via != "marker" {
				t.Errorf("Via = %q, want marker", got.Via)
			}
			if got.Summary == "" {
				t.Errorf("empty summary")
			}
			got.Summary, got.Via = "", ""
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}
