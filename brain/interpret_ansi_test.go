package brain

import (
	"strings"
	"testing"
)

func TestStripANSI(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain text is untouched", "42 passed in 0.31s", "42 passed in 0.31s"},
		{"SGR colours", "\x1b[1m\x1b[32m42 passed\x1b[39m\x1b[22m, 42 total", "42 passed, 42 total"},
		{"cursor moves and erasing", "\x1b[2K\x1b[1G ✓ src/a.test.ts\x1b[0K", " ✓ src/a.test.ts"},
		{"OSC 8 hyperlink keeps its text", "see \x1b]8;;https://ci.example.com/1\x1b\\run 1\x1b]8;;\x1b\\ now", "see run 1 now"},
		{"OSC ended by BEL", "\x1b]0;title\aok", "ok"},
		{"charset escape", "\x1b(Bdone", "done"},
		{"8-bit CSI", "\u009b31mFAIL\u009b0m", "FAIL"},
		{"overstrike", "b\bbold", "bold"},
		{"backspace keeps a line break", "a\n\bb", "a\nb"},
		{"unterminated OSC stops at the line end", "\x1b]8;;http://x\nnext", "\nnext"},
		{"lone ESC at the end", "done\x1b", "done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stripANSI(tt.in); got != tt.want {
				t.Errorf("stripANSI(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestInterpretColouredOutput: a coloured summary reads as the same summary without colour, and what is shown to a
// person carries no escape codes.
func TestInterpretColouredOutput(t *testing.T) {
	tests := []struct {
		name   string
		output string
		want   Status
	}{
		{"green jest summary", "\x1b[1mTests:       \x1b[22m\x1b[1m\x1b[32m31 passed\x1b[39m\x1b[22m, 31 total\n", StatusCompleted},
		{"red go test failure", "\x1b[31m--- FAIL: TestRefill (0.00s)\x1b[0m\n    bucket_test.go:44: tokens = 3, want 5\n\x1b[31mFAIL\x1b[0m\n", StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := interpret(tt.output)
			if got.Status != tt.want {
				t.Errorf("status %s, want %s", got.Status, tt.want)
			}
			for _, s := range []string{got.Summary, got.Error, got.Question} {
				if strings.ContainsRune(s, esc) {
					t.Errorf("escape code shown to a person: %q", s)
				}
			}
		})
	}
}

// TestInterpretAsks: a request for a decision without a question mark asks; an offer of work marked as outside the
// task, after finished work, does not.
func TestInterpretAsks(t *testing.T) {
	tests := []struct {
		name, output string
		want         Status
	}{
		{"awaiting approval of a plan", "Plan: a token bucket per key, kept in Redis. No code changes yet. Awaiting your OK on the approach above.", StatusNeedsHelp},
		{"waiting for a decision", "Two fixes are possible: grant the role, or move the bucket.\n\nWaiting for the decision above before I change anything.", StatusNeedsHelp},
		{"a blocking need handed to a person", "Blocked on credentials. I need someone with access to the bucket to provide them.", StatusNeedsHelp},
		{"optional offer marked not required", "Added the filter. `pytest` → 27 passed.\n\nWould you like me to also add `--until`? (Not required for this task.)", StatusCompleted},
		{"follow-up question for a separate ticket", "Done. Tests: 14 passed, 0 failed.\n\nPossible follow-ups:\n- Should we rate-limit by IP? That is a separate ticket.", StatusCompleted},
		{"an unmarked offer still asks", "Done. Tests: 14 passed.\n\nDo you want me to also add an integration test?", StatusNeedsHelp},
		{"a failure told as history after it", "`test_x` was the test failing before my change; it passes now.\n\n3 passed in 0.02s", StatusCompleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := interpret(tt.output); got.Status != tt.want {
				t.Errorf("status %s, want %s (%+v)", got.Status, tt.want, got)
			}
		})
	}
}
