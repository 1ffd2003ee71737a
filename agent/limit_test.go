package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/quota"
)

// limitNow is a Sunday afternoon: 13:00 UTC, 14:00 in Belgrade; belgrade440 is 4:40pm in Belgrade that day.
var (
	limitNow    = time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	belgrade440 = time.Date(2026, 11, 29, 15, 40, 0, 0, time.UTC)
)

// setNow sets the clock limits are read against for the test.
func setNow(t *testing.T, now time.Time) {
	t.Helper()
	old := timeNow
	timeNow = func() time.Time { return now }
	t.Cleanup(func() { timeNow = old })
}

func assertLimit(t *testing.T, got, want *quota.Limit) {
	t.Helper()
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		t.Errorf("Limit = %+v, want %+v", got, want)
	case !got.Reset.Equal(want.Reset) || got.Text != want.Text || got.Provider != want.Provider:
		t.Errorf("Limit = {%v %q %q}, want {%v %q %q}", got.Reset.UTC(), got.Text, got.Provider, want.Reset.UTC(), want.Text, want.Provider)
	}
}

// Lines in the shapes Claude Code 2.1.x prints them: the rate_limit_event as the Claude Agent SDK types it
// (anthropics/claude-agent-sdk-python types.py RateLimitInfo; the rejected line as paperclipai/paperclip #5776
// quotes it), the synthetic assistant message and the 429 result as captured (shared reference 04, C and E).
const (
	rlInit      = `{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-5","claude_code_version":"2.1.220"}`
	rlRejected  = `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795966800,"rateLimitType":"five_hour","overageStatus":"rejected","overageDisabledReason":"org_level_disabled","isUsingOverage":false},"uuid":"76258cfb","session_id":"s1"}`
	rlRejected7 = `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796223600,"rateLimitType":"seven_day","utilization":1},"uuid":"7","session_id":"s1"}`
	rlAllowed   = `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1795966800,"rateLimitType":"five_hour","overageStatus":"rejected","overageDisabledReason":"org_level_disabled","isUsingOverage":false},"uuid":"a","session_id":"s1"}`
	rlWarning   = `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1796223600,"rateLimitType":"seven_day","utilization":0.8},"uuid":"w","session_id":"s1"}`
	rlSynthetic = `{"type":"assistant","message":{"id":"m0","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"You've hit your session limit · resets 4:40pm (Europe/Belgrade)"}]},"session_id":"s1","error":"rate_limit","is_api_error_message":true}`
	rlSynthNoT  = `{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"You've hit your session limit"}]},"error":"rate_limit","is_api_error_message":true}`
	rlResult429 = `{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"num_turns":3,"result":"You've hit your session limit · resets 4:40pm (Europe/Belgrade)","stop_reason":"stop_sequence","session_id":"s1","terminal_reason":"api_error"}`
	rlResultNoT = `{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"num_turns":3,"result":"You've hit your session limit","session_id":"s1","terminal_reason":"api_error"}`
	rlAnswer    = `{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-5","content":[{"type":"text","text":"Added a token bucket: the API now answers 429 with Retry-After: 60 once the rate limit is hit."}],"usage":{"input_tokens":5,"output_tokens":7}},"session_id":"s1"}`
	rlOK        = `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"Added a token bucket: the API now answers 429 with Retry-After: 60 once the rate limit is hit.","session_id":"s1"}`
	rlMaxTurns  = `{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":3,"terminal_reason":"max_turns","errors":["Reached maximum number of turns (2)"],"session_id":"s1"}`
)

func TestClaudeLimit(t *testing.T) {
	setNow(t, limitNow)
	const sessionText = "You've hit your session limit · resets 4:40pm (Europe/Belgrade)"
	tests := []struct {
		name   string
		lines  []string
		exit   int
		stderr string
		want   *quota.Limit
	}{
		{"rejected event and limit result", []string{rlInit, rlRejected, rlSynthetic, rlResult429}, 1, "",
			&quota.Limit{Reset: belgrade440, Text: sessionText, Provider: "claude"}},
		{"rejected event alone", []string{rlInit, rlRejected, rlResultNoT}, 1, "",
			&quota.Limit{Reset: belgrade440, Text: "rate_limit_event: five_hour limit rejected, resets 2026-11-29T15:40:00Z", Provider: "claude"}},
		{"rejected event, no result line", []string{rlInit, rlRejected}, 1, "",
			&quota.Limit{Reset: belgrade440, Text: "rate_limit_event: five_hour limit rejected, resets 2026-11-29T15:40:00Z", Provider: "claude"}},
		{"two windows rejected: the later reset", []string{rlInit, rlRejected, rlRejected7, rlResultNoT}, 1, "",
			&quota.Limit{Reset: time.Unix(1796223600, 0), Text: "rate_limit_event: seven_day limit rejected, resets 2026-12-02T15:00:00Z", Provider: "claude"}},
		{"result text only", []string{rlInit, rlResult429}, 1, "",
			&quota.Limit{Reset: belgrade440, Text: sessionText, Provider: "claude"}},
		{"synthetic message only", []string{rlInit, rlSynthetic}, 1, "",
			&quota.Limit{Reset: belgrade440, Text: sessionText, Provider: "claude"}},
		{"a long error result, the limit at its end", []string{rlInit, `{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"` + strings.Repeat(`line\n`, 5000) + `You've hit your limit · resets 3pm (Europe/Belgrade)","session_id":"s1"}`}, 1, "",
			&quota.Limit{Reset: time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC), Text: "You've hit your limit · resets 3pm (Europe/Belgrade)", Provider: "claude"}},
		// Text the agent can write says no limit: a limit parks the run for as long as it says.
		{"a limit on stderr", []string{rlInit, rlMaxTurns}, 1, "Error: You've hit your limit · resets 3pm (Europe/Belgrade)\n", nil},
		{"a limit in stdout's stray lines", []string{rlInit, "You've hit your limit · resets 3pm (Europe/Belgrade)", rlMaxTurns}, 1, "", nil},
		{"a limit in the agent's answer", []string{rlInit, `{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-5","content":[{"type":"text","text":"You've hit your session limit · resets 4:40pm (Europe/Belgrade)"}]},"session_id":"s1"}`}, 1, "", nil},
		{"a limit in a finished turn's result", []string{rlInit, `{"type":"result","subtype":"success","is_error":false,"result":"You've hit your session limit · resets 4:40pm (Europe/Belgrade)","session_id":"s1"}`}, 1, "", nil},
		{"limit without reset", []string{rlInit, rlSynthNoT, rlResultNoT}, 1, "", nil},
		{"rejected then allowed, failed otherwise", []string{rlInit, rlRejected, rlAllowed, rlMaxTurns}, 1, "", nil},
		{"success after a warning", []string{rlInit, rlWarning, rlAnswer, rlOK}, 0, "", nil},
		{"success after a rejection (fallback model)", []string{rlInit, rlRejected, rlAnswer, rlOK}, 0, "", nil},
		{"failure that talks about rate limits", []string{rlInit, rlAnswer, rlMaxTurns}, 1, "", nil},
		{"rejected event without reset", []string{rlInit, `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","rateLimitType":"five_hour"}}`, rlResultNoT}, 1, "", nil},
		{"rejected event reset too far", []string{rlInit, `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1896050800,"rateLimitType":"seven_day"}}`, rlResultNoT}, 1, "", nil},
		{"malformed event", []string{rlInit, `{"type":"rate_limit_event","rate_limit_info":"rejected"}`, `{"type":"rate_limit_event","rate_limit_info":{"status":7,"resetsAt":"soon"}}`, rlResultNoT}, 1, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newClaudeParser()
			for _, l := range tt.lines {
				p.Line([]byte(l))
			}
			r := p.Finish(tt.exit, []byte(tt.stderr))
			if r.Success && r.Limit != nil {
				t.Error("a successful run is limited")
			}
			assertLimit(t, r.Limit, tt.want)
		})
	}
}

// The JSON array form (--output-format json with verbose on) carries the same events.
func TestClaudeLimitArray(t *testing.T) {
	setNow(t, limitNow)
	p := newClaudeParser()
	p.Line([]byte("[" + strings.Join([]string{rlInit, rlRejected, rlSynthetic, rlResult429}, ",") + "]"))
	r := p.Finish(1, nil)
	assertLimit(t, r.Limit, &quota.Limit{Reset: belgrade440, Text: "You've hit your session limit · resets 4:40pm (Europe/Belgrade)", Provider: "claude"})
}

func TestTemplateLimit(t *testing.T) {
	setNow(t, limitNow)
	tests := []struct {
		name   string
		stdout []string
		exit   int
		stderr string
		want   *quota.Limit
	}{
		{"codex exec --json turn.failed", []string{
			`{"type":"thread.started","thread_id":"0199a213"}`,
			`{"type":"turn.started"}`,
			`{"type":"turn.failed","error":{"message":"You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at 4:05 PM."}}`,
		}, 1, "", &quota.Limit{Reset: time.Date(2026, 11, 29, 16, 5, 0, 0, time.UTC),
			Text: "You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at 4:05 PM.", Provider: "codex"}},
		{"codex text on stderr", nil, 1, "■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 2 days 3 hours 4 minutes.\n",
			&quota.Limit{Reset: limitNow.Add(51*time.Hour + 4*time.Minute),
				Text: "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 2 days 3 hours 4 minutes.", Provider: "codex"}},
		{"gemini cli", []string{"Working…"}, 1, "✕ [API Error: You have exhausted your capacity on this model. Your quota will reset after 2h0m0s.]\n",
			&quota.Limit{Reset: limitNow.Add(2 * time.Hour), Text: "You have exhausted your capacity on this model. Your quota will reset after 2h0m0s.", Provider: "gemini"}},
		{"limit printed but exit 0", nil, 0, "You've hit your usage limit. Try again at 4:05 PM.\n", nil},
		{"failing test output", []string{"--- FAIL: TestRateLimit (0.00s)", "    got 429, want 200; Retry-After: 60"}, 1, "", nil},
	}
	tmpl, err := NewTemplate("cmd:agent {prompt}")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tmpl.NewParser()
			for _, l := range tt.stdout {
				p.Line([]byte(l))
			}
			r := p.Finish(tt.exit, []byte(tt.stderr))
			assertLimit(t, r.Limit, tt.want)
		})
	}
}
