package brain

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestInterpretEmptyOutput(t *testing.T) {
	for _, output := range []string{"", "   \n\t\n", "GUIDANCE: use Redis\n"} {
		t.Run(strings.TrimSpace(output), func(t *testing.T) {
			var h Heuristic
			got, err := h.Interpret(context.Background(), output)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != StatusFailed || got.Error != "agent produced no output" {
				t.Errorf("got %+v, want failed with %q", got, "agent produced no output")
			}
		})
	}
}

func TestInterpretHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var h Heuristic
	if _, err := h.Interpret(ctx, "Done."); err == nil {
		t.Fatal("want an error for a cancelled context")
	}
}

func TestInterpret(t *testing.T) {
	tests := []struct {
		name   string
		output string
		want   Interpretation // compared on the fields that are set, plus Status always
	}{
		{
			name:   "question mid-output after completion evidence",
			output: "Implemented the export and tests pass. However, should the CSV use cents or dollars? I used cents for now.",
			want: Interpretation{Status: StatusNeedsHelp, Question: "Implemented the export and tests pass. However, should the CSV use cents or dollars?",
				Options: []string{"cents", "dollars"}},
		},
		{
			name:   "short question takes its paragraph",
			output: "I'm not sure whether `legacy_id` should be dropped. Older clients still read it. Which way do you want to go?",
			want:   Interpretation{Status: StatusNeedsHelp, Question: "I'm not sure whether `legacy_id` should be dropped. Older clients still read it. Which way do you want to go?"},
		},
		{
			name:   "bullet options around a question with a recommendation",
			output: "Which auth provider should the admin panel use?\n* Google Workspace SSO\n* GitHub OAuth\n\nI'd recommend Google Workspace SSO since the team uses it.",
			want: Interpretation{Status: StatusNeedsHelp, Question: "Which auth provider should the admin panel use?",
				Options:        []string{"Google Workspace SSO", "GitHub OAuth"},
				Recommendation: "Google Workspace SSO"},
		},
		{
			name:   "lettered options with a marked recommendation",
			output: "Where should sessions live?\n\nA) Redis (recommended)\nB) Postgres",
			want: Interpretation{Status: StatusNeedsHelp, Question: "Where should sessions live?",
				Options: []string{"Redis", "Postgres"}, Recommendation: "Redis"},
		},
		{
			name:   "a changes list far from the question is not the options",
			output: "Changes:\n- added cache.go\n- added cache_test.go\n\nThe tests pass.\n\nThe spec is silent on eviction.\n\nShould entries expire after an hour or a day?",
			want: Interpretation{Status: StatusNeedsHelp, Question: "The spec is silent on eviction. Should entries expire after an hour or a day?",
				Options: []string{"an hour", "a day"}},
		},
		{
			name:   "courtesy offer after completion",
			output: "Implemented retry with backoff. All 31 tests pass. Let me know if you'd like me to also add jitter.",
			want:   Interpretation{Status: StatusCompleted},
		},
		{
			name:   "an offer put as a question after completion waits for its answer",
			output: "Implemented retry with backoff. All 31 tests pass. Would you like me to also add jitter?",
			want: Interpretation{Status: StatusNeedsHelp,
				Question: "Implemented retry with backoff. All 31 tests pass. Would you like me to also add jitter?"},
		},
		{
			name:   "an offer to explain is courtesy, question or not",
			output: "Implemented retry with backoff. All 31 tests pass. Would you like me to explain the backoff formula?",
			want:   Interpretation{Status: StatusCompleted},
		},
		{
			name:   "a side check's success does not undo a failing test",
			output: "--- FAIL: TestTTL (0.00s)\n    ttl_test.go:12: expired too early\nFAIL\n\n$ golangci-lint run\n0 issues.\n\nThe build is clean.",
			want:   Interpretation{Status: StatusFailed, Error: "--- FAIL: TestTTL (0.00s)\nttl_test.go:12: expired too early"},
		},
		{
			name:   "offer with nothing done is the question",
			output: "Would you like me to use Redis for the queue?",
			want:   Interpretation{Status: StatusNeedsHelp, Question: "Would you like me to use Redis for the queue?"},
		},
		{
			name:   "uncertainty inside a courtesy sentence still asks",
			output: "Added the handler. Let me know if that's fine, I'm not sure whether 404 or 410 is right for deleted items.",
			want:   Interpretation{Status: StatusNeedsHelp, Options: []string{"404", "410"}},
		},
		{
			name:   "GUIDANCE echo is ignored",
			output: "Done. The cache is in-memory as requested; tests pass.\nGUIDANCE: Should I use Redis? The human answered B",
			want:   Interpretation{Status: StatusCompleted},
		},
		{
			name:   "failure fixed later in the output",
			output: "--- FAIL: TestTTL (0.00s)\n    ttl_test.go:12: expired too early\nFAIL\n\nFixed the comparison in ttl.go; go test ./... now passes.",
			want:   Interpretation{Status: StatusCompleted},
		},
		{
			name:   "a suite summary with failures is not a pass",
			output: "Tests:       2 failed, 30 passed, 32 total",
			want:   Interpretation{Status: StatusFailed},
		},
		{
			name:   "negated completion is no completion",
			output: "I was not able to make the tests pass: TestTTL still fails.",
			want:   Interpretation{Status: StatusFailed},
		},
		{
			name:   "python traceback keeps the last frame and the exception",
			output: "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    main()\n  File \"app.py\", line 2, in main\n    import yaml\nModuleNotFoundError: No module named 'yaml'",
			want:   Interpretation{Status: StatusFailed, Error: "File \"app.py\", line 2, in main\nModuleNotFoundError: No module named 'yaml'"},
		},
		{
			name:   "rust error keeps its location",
			output: "error[E0425]: cannot find value `x` in this scope\n --> src/main.rs:3:5\n\nThe build still fails.",
			want:   Interpretation{Status: StatusFailed, Error: "error[E0425]: cannot find value `x` in this scope\n--> src/main.rs:3:5"},
		},
		{
			name:   "a tool's question is not the agent's",
			output: "I couldn't start the database:\n\ndocker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
			want:   Interpretation{Status: StatusFailed},
		},
		{
			name:   "error words in the agent's own question",
			output: "Should deleted items return 403 Forbidden or 404 Not Found?",
			want:   Interpretation{Status: StatusNeedsHelp, Question: "Should deleted items return 403 Forbidden or 404 Not Found?"},
		},
		{
			name:   "a failure the code handles is not the run failing",
			output: "Added validation to the orders handler: it returns 422 when the payload fails validation. The tests pass.",
			want:   Interpretation{Status: StatusCompleted},
		},
		{
			name:   "no evidence at all",
			output: "I read the code.",
			want:   Interpretation{Status: StatusNeedsHelp, Question: unclearQuestion},
		},
		{
			name:   "courtesy alone is not a result",
			output: "Let me know if you need anything else.",
			want:   Interpretation{Status: StatusNeedsHelp, Question: unclearQuestion},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Heuristic
			got, err := h.Interpret(context.Background(), tt.output)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.want.Status {
				t.Fatalf("Status = %s, want %s (%+v)", got.Status, tt.want.Status, got)
			}
			if got.Via != "heuristic" {
				t.Errorf("Via = %q, want heuristic", got.Via)
			}
			if got.Summary == "" {
				t.Error("empty summary")
			}
			if tt.want.Question != "" && got.Question != tt.want.Question {
				t.Errorf("Question = %q, want %q", got.Question, tt.want.Question)
			}
			if tt.want.Error != "" && got.Error != tt.want.Error {
				t.Errorf("Error = %q, want %q", got.Error, tt.want.Error)
			}
			if tt.want.Recommendation != "" && got.Recommendation != tt.want.Recommendation {
				t.Errorf("Recommendation = %q, want %q", got.Recommendation, tt.want.Recommendation)
			}
			if tt.want.Status == StatusNeedsHelp && !reflect.DeepEqual(got.Options, tt.want.Options) {
				t.Errorf("Options = %q, want %q", got.Options, tt.want.Options)
			}
			if got.Status == StatusFailed && got.Error == "" {
				t.Error("failed without an error")
			}
			if got.Status == StatusNeedsHelp && got.Question == "" {
				t.Error("needs_help without a question")
			}
		})
	}
}

func TestInterpretBoundsLongOutput(t *testing.T) {
	var b strings.Builder
	for i := range 120 {
		b.WriteString("--- FAIL: TestCase")
		b.WriteString(strings.Repeat("x", i%50))
		fmt.Fprintf(&b, " (0.00s)\n    case_test.go:%d: got 1, want 2 ", i)
		b.WriteString(strings.Repeat("detail ", 100))
		b.WriteString("\n")
	}
	b.WriteString("FAIL\nexit status 1\n")
	var h Heuristic
	got, err := h.Interpret(context.Background(), b.String())
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusFailed {
		t.Fatalf("Status = %s, want failed", got.Status)
	}
	// Eight error lines of 500 runes would be 4000: the bound must cut them.
	if n := utf8.RuneCountInString(got.Error); n < maxErrorLen/2 || n > maxErrorLen {
		t.Errorf("Error has %d runes, want %d..%d", n, maxErrorLen/2, maxErrorLen)
	}
	if n := utf8.RuneCountInString(got.Summary); n > 300 {
		t.Errorf("Summary has %d runes, want at most 300", n)
	}
}

func TestInterpretHugeOutputReadsTheTail(t *testing.T) {
	var b strings.Builder
	b.WriteString("Starting on the task.\n")
	for b.Len() < 1<<20 {
		b.WriteString("=== RUN   TestWorkerPool/case\n--- PASS: TestWorkerPool/case (0.00s)\n")
	}
	b.WriteString("--- FAIL: TestShutdown (0.00s)\n    pool_test.go:9: goroutine leak\nFAIL\n\nI could not fix the leak.")
	var h Heuristic
	got, err := h.Interpret(context.Background(), b.String())
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusFailed || !strings.Contains(got.Error, "TestShutdown") {
		t.Errorf("got %s with error %q, want failed naming TestShutdown", got.Status, got.Error)
	}
}
