package brain

import (
	"context"
	"math"
	"strings"
	"testing"
)

func TestDecideInputErrors(t *testing.T) {
	var h Heuristic
	if _, err := h.Decide(context.Background(), DecideInput{TaskID: "1.1"}); err == nil {
		t.Error("empty history: want an error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Decide(ctx, DecideInput{AttemptHistory: []string{"boom"}}); err == nil {
		t.Error("cancelled context: want an error")
	}
}

func TestDecide(t *testing.T) {
	same := "Failed: ModuleNotFoundError: No module named 'yaml'"
	tests := []struct {
		name      string
		threshold float64
		history   []string
		verdict   Verdict
		permanent bool
		// Every string must appear in the reason (escalate) or the guidance (retry).
		mention []string
	}{
		{
			name:    "missing python module names it and the manifest",
			history: []string{"Failed: ImportError - no module named pandas"},
			verdict: Retry,
			mention: []string{"pandas", "requirements.txt", `Latest error: "ImportError - no module named pandas"`},
		},
		{
			name:    "missing node module",
			history: []string{"Error: Cannot find module 'left-pad'\nRequire stack:\n- /app/index.js"},
			verdict: Retry,
			mention: []string{"left-pad", "package.json"},
		},
		{
			name:    "go compile error names the symbol and place",
			history: []string{"./main.go:14:2: undefined: NewServer"},
			verdict: Retry,
			mention: []string{"NewServer", "./main.go:14:2"},
		},
		{
			name:    "timeout is transient",
			history: []string{"Failed: TestUpload timed out after 30s"},
			verdict: Retry,
			mention: []string{"transient", "fixtures"},
		},
		{
			name:    "same error twice: retry differently",
			history: []string{same, same},
			verdict: Retry,
			mention: []string{"different approach", "yaml"},
		},
		{
			name:    "same error three times: loop",
			history: []string{same, same, same},
			verdict: Escalate,
			mention: []string{"3 times", "100%"},
		},
		{
			name:    "only the trailing run counts",
			history: []string{same, same, "Failed: TypeError: expected str, got int", "Failed: TypeError: expected str, got int"},
			verdict: Retry,
		},
		{
			name:      "a stricter threshold keeps drifting errors apart",
			threshold: 0.99,
			history:   []string{"./a.go:1:1: undefined: Xa", "./a.go:2:1: undefined: Xb", "./a.go:3:1: undefined: Xc"},
			verdict:   Retry,
		},
		{
			name:      "the same failure where only its location moved is a loop at any threshold",
			threshold: 0.99,
			history:   []string{"./a.go:1:1: undefined: X", "./a.go:2:1: undefined: X", "./a.go:3:1: undefined: X"},
			verdict:   Escalate,
		},
		{
			name:    "a limit in the code under test is not a usage limit",
			history: []string{"--- FAIL: TestSessionLimit (0.00s)\n    session_test.go:40: session limit not enforced: got 6 sessions, want 5"},
			verdict: Retry,
		},
		{
			name:      "a usage limit that resets at a stated time",
			history:   []string{"You've hit your usage limit · resets 6pm (Europe/Paris)"},
			verdict:   Escalate,
			permanent: true,
			mention:   []string{"usage limit"},
		},
		{
			name:    "oscillation",
			history: []string{"--- FAIL: TestA: got 1, want 2", "panic: nil map write in store.go:88", "--- FAIL: TestA: got 1, want 2"},
			verdict: Escalate,
			mention: []string{"oscillate"},
		},
		{name: "permission", history: []string{"cp: cannot create regular file '/usr/local/bin/orch': Permission denied"}, verdict: Escalate, permanent: true, mention: []string{"permission"}},
		{name: "http 403", history: []string{"POST /v1/deploy: HTTP 403: caller lacks deploy rights"}, verdict: Escalate, permanent: true},
		{name: "401 in a test assertion is a bug", history: []string{"--- FAIL: TestLogin: expected status 200, got 401"}, verdict: Retry},
		{name: "api key", history: []string{"Invalid API key · Fix external API key"}, verdict: Escalate, permanent: true, mention: []string{"credentials"}},
		{name: "not logged in", history: []string{"Error: not logged in. Run `gh auth login`."}, verdict: Escalate, permanent: true},
		{name: "design conflict", history: []string{"changing the schema conflicts with the existing design of the sync protocol"}, verdict: Escalate, permanent: true},
		{name: "contradiction", history: []string{"the spec requires both synchronous and fire-and-forget delivery, which is contradictory"}, verdict: Escalate, permanent: true},
		{name: "clarification", history: []string{"I need clarification: which timezone should reports use?"}, verdict: Escalate, permanent: true},
		{name: "earlier permanent errors do not matter once fixed", history: []string{"permission denied", "./x.go:1:1: undefined: Y"}, verdict: Retry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Heuristic{SimilarityThreshold: tt.threshold}
			got, err := h.Decide(context.Background(), DecideInput{TaskID: "1.1", TaskTitle: "Task", AttemptHistory: tt.history})
			if err != nil {
				t.Fatal(err)
			}
			if got.Decision != tt.verdict || got.Permanent != tt.permanent {
				t.Fatalf("got %s permanent=%v, want %s permanent=%v (reason %q)", got.Decision, got.Permanent, tt.verdict, tt.permanent, got.Reason)
			}
			if got.Reason == "" {
				t.Error("empty reason")
			}
			if want := MeanSimilarity(tt.history); math.Abs(got.Similarity-want) > 1e-12 {
				t.Errorf("Similarity = %v, want MeanSimilarity %v", got.Similarity, want)
			}
			text := got.Reason
			switch got.Decision {
			case Retry:
				if got.GuidanceForRetry == "" {
					t.Fatal("retry without guidance")
				}
				text = got.GuidanceForRetry
			case Escalate:
				if got.GuidanceForRetry != "" {
					t.Errorf("escalation with guidance %q", got.GuidanceForRetry)
				}
			}
			for _, m := range tt.mention {
				if !strings.Contains(text, m) {
					t.Errorf("%q does not mention %q", text, m)
				}
			}
		})
	}
}
