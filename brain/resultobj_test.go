package brain

import (
	"strings"
	"testing"
)

func TestAResultObjectIsReadByItsText(t *testing.T) {
	for _, c := range []struct {
		name, output string
		status       Status
		summary      string
	}{
		{"a success", `{"type":"result","subtype":"success","is_error":false,"result":"Added the retry. All 14 tests pass.","session_id":"s1","total_cost_usd":0.01}`,
			StatusCompleted, "Added the retry. All 14 tests pass."},
		{"an error with no text", `{"type":"result","subtype":"error_during_execution","is_error":true,"session_id":"s1"}`,
			StatusFailed, "The agent's session ended in error (error_during_execution) with no answer."},
		{"turns ran out over a claim of success", `{"type":"result","subtype":"error_max_turns","is_error":true,"result":"Done, all green."}`,
			StatusFailed, "Done, all green."},
		{"a question inside", `{"type":"result","subtype":"success","is_error":false,"result":"Should the cache be per tenant or global?"}`,
			StatusNeedsHelp, "Should the cache be per tenant or global?"},
	} {
		in := interpret(c.output)
		if in.Status != c.status || !strings.Contains(in.Summary, c.summary) || strings.Contains(in.Summary+in.Error, `"type"`) {
			t.Errorf("%s: %+v, want %s with summary %q and no JSON", c.name, in, c.status, c.summary)
		}
	}
	// JSON that is not a result object is an answer like any other.
	if _, ok := resultObject(`{"type":"assistant","message":{}}`); ok {
		t.Error("an assistant line read as a result")
	}
}
