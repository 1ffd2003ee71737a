package agent

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/orchrun/orch/quota"
)

// timeNow is the clock limits are read against (tests set it).
var timeNow = time.Now

// rateLimit follows Claude Code's rate_limit_event lines. Their shape is the Claude Agent SDK's RateLimitEvent
// (anthropics/claude-agent-sdk-python src/claude_agent_sdk/types.py RateLimitInfo, parsed in
// _internal/message_parser.py; SDKRateLimitEvent in the TypeScript SDK):
//
//	{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1778565600,
//	 "rateLimitType":"five_hour","overageStatus":"rejected","overageDisabledReason":"org_level_disabled",
//	 "isUsingOverage":false},"uuid":"…","session_id":"…"}
//
// status is "allowed", "allowed_warning" (nearing the limit) or "rejected" (the limit is hit); resetsAt is when the
// window resets, in Unix seconds; rateLimitType is "five_hour", "seven_day", "seven_day_opus", "seven_day_sonnet"
// or "overage". The CLI emits one whenever a window's status changes, so a later allowed event for the same window
// lifts an earlier rejection.
func (p *claudeParser) rateLimit(m map[string]json.RawMessage) {
	info := jsonObject(m["rate_limit_info"])
	if info == nil {
		return
	}
	typ := ident(jsonString(info["rateLimitType"]))
	switch jsonString(info["status"]) {
	case "rejected":
		var reset time.Time
		if at, ok := jsonInt(info["resetsAt"]); ok && at > 0 {
			reset = time.Unix(at, 0)
		}
		if _, ok := p.rejected[typ]; ok || len(p.rejected) < 16 {
			p.rejected[typ] = reset
		}
	case "allowed", "allowed_warning":
		delete(p.rejected, typ)
	}
}

// limit says whether the run that did not succeed stopped on a limit with a known reset: a window the CLI said
// was rejected, else the CLI's limit message in its error result or in the error messages it made up.
//
// Only what the CLI itself writes counts. A limit parks the run until its reset, up to days, so text the agent can
// write must not be able to say one: not stderr (every process the agent starts may inherit and write it), not
// stdout's stray lines (no stream-json CLI prints them), and not a result's text unless the result is an error, whose
// text is the CLI's (Claude Code puts the API's error there, reference 04 C; a finished turn's answer is the model's).
func (p *claudeParser) limit(now time.Time) *quota.Limit {
	// What the CLI said, each read on its own: a long answer before the limit must not push the limit out of what
	// quota.Parse reads.
	var said []string
	if p.res != nil && p.res.isError {
		said = append(said, textTail(p.res.text), strings.Join(p.res.errors, "\n"))
	}
	said = append(said, textTail(p.limitTexts.String()))
	l, parsed := firstLimit(said, now)

	// A rejected window speaks in data: its reset is exact. When several are rejected the run waits for all.
	var latest time.Time
	window := ""
	for typ, reset := range p.rejected {
		if reset.After(latest) {
			latest, window = reset, typ
		}
	}
	if quota.Trusted(latest, now) {
		if !parsed || l.Provider != quota.Claude {
			l.Text = "rate_limit_event: " + window + " limit rejected, resets " + latest.UTC().Format(time.RFC3339)
		}
		l.Reset, l.Provider = latest, quota.Claude
		return &l
	}
	if parsed {
		return &l
	}
	return nil
}

// firstLimit is the limit the first of texts that says one says.
func firstLimit(texts []string, now time.Time) (quota.Limit, bool) {
	for _, t := range texts {
		if l, ok := quota.Parse(t, now); ok {
			return l, true
		}
	}
	return quota.Limit{}, false
}

// limit says whether a CLI run that did not succeed stopped on a limit with a known reset, by what it printed last:
// its stdout's end, its stderr's end, the errors it reported (codex exec --json: turn.failed and error events).
func (p *plainParser) limit(stderr []byte, now time.Time) *quota.Limit {
	said := []string{strings.Join(p.errs.list(), "\n"), stderrTail(stderr), textTail(p.codex.String()), textTail(p.text.String())}
	if l, ok := firstLimit(said, now); ok {
		return &l
	}
	return nil
}

// limitScan is how much of the end of a text is handed to quota.Parse, which reads no more than that.
const limitScan = 16 << 10

// textTail is the end of s that quota.Parse reads, so that joining texts for it copies kilobytes, not megabytes.
func textTail(s string) string {
	if len(s) > limitScan {
		return s[len(s)-limitScan:]
	}
	return s
}
