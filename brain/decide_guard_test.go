package brain

import (
	"context"
	"strings"
	"testing"
)

// An LLM's retry that would get the agent around a safeguard does not stand: the heuristic decides, and says why.
func TestFallbackDecideOverridesUnsafeRetries(t *testing.T) {
	scanned := DecideInput{TaskID: "1", TaskTitle: "t", AttemptHistory: []string{
		"remote: error: GH013: Repository rule violations found for refs/heads/fix.\nremote: - GITHUB PUSH PROTECTION\nremote:     - Push cannot contain secrets"}}
	failing := DecideInput{TaskID: "1", TaskTitle: "t", AttemptHistory: []string{"--- FAIL: TestX (0.00s)\n    x_test.go:3: got 1, want 2"}}
	for _, c := range []struct {
		name     string
		in       DecideInput
		llm      Decision
		want     Verdict
		override bool
	}{
		{"a retry of a push a scanner blocked", scanned,
			Decision{Decision: Retry, Reason: "fixable", GuidanceForRetry: "Remove the key from config/dev.env and push again."}, Escalate, true},
		{"guidance to rewrite history", failing,
			Decision{Decision: Retry, Reason: "r", GuidanceForRetry: "Squash the commits with an interactive rebase and force-push the branch."}, Retry, true},
		{"guidance to skip the hooks", failing,
			Decision{Decision: Retry, Reason: "r", GuidanceForRetry: "Commit with --no-verify to skip the pre-commit hook."}, Retry, true},
		{"ordinary guidance stands", failing,
			Decision{Decision: Retry, Reason: "r", GuidanceForRetry: "Fix the off-by-one in the loop and run the tests."}, Retry, false},
		{"an escalation stands", scanned,
			Decision{Decision: Escalate, Reason: "a secret is in the commit"}, Escalate, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.llm.Via = "claude"
			d, err := (&Fallback{LLM: &fakeLLM{decision: c.llm}}).Decide(context.Background(), c.in)
			if err != nil {
				t.Fatal(err)
			}
			if d.Decision != c.want || (d.Via == viaHeuristic) != c.override || c.override && d.Fallback == "" {
				t.Errorf("got %s via %s (fallback %q), want %s, overridden %v", d.Decision, d.Via, d.Fallback, c.want, c.override)
			}
			if c.override && strings.Contains(strings.ToLower(d.GuidanceForRetry), "force") {
				t.Errorf("guidance %q still steers around the safeguard", d.GuidanceForRetry)
			}
		})
	}
}

// The words of the permanent causes, in text that is none: a test of the code's own token expiry, the agent telling
// its own bug or its doubts about a fixable fault. Each is a failure a retry can fix.
func TestOrdinaryTextIsNoPermanentCause(t *testing.T) {
	for _, s := range []string{
		"FAILED tests/test_auth.py::test_refresh - jwt.exceptions.ExpiredSignatureError: Signature has expired",
		"The bug: the session has expired check is inverted, so every request logs out.",
		"It is unclear whether the cache or the network is at fault; retrying with tracing on.",
		"We need to know whether the migration ran before the seed, so I added a check.",
		"I couldn't determine which Node version is required by the lockfile; using the .nvmrc one.",
		"The new value contradicted the cached one, so the test compared stale data.",
	} {
		if c := permanentCause(s); c != "" {
			t.Errorf("%q read as permanent: %s", s, c)
		}
	}
}
