// Package quota recognizes the messages in which a coding agent (Claude Code, Codex, Gemini CLI) or an LLM API
// says it hit a usage or rate limit AND when that limit resets, so that a run can be parked until then and
// resumed by itself.
//
// It recognizes the tools' own message shapes, never words: an agent that explains it added rate limiting to an
// API, a test named TestRateLimit or a "429" in a test's expected output must not park a run. A limit whose reset
// time cannot be known is not reported at all: those keep going to a person.
package quota

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // reset times name IANA zones ("resets 4:40pm (Europe/Belgrade)"); the worker's image may have no zoneinfo
	"unicode/utf8"

	"github.com/orchrun/orch/internal/lazyre"
)

// Limit is a usage or rate limit with a known reset time.
type Limit struct {
	// Reset is when the limit lifts. It may lie up to a few minutes in the past (see pastGrace): the reset happened
	// between the message and now, and the run can resume at once.
	Reset time.Time
	// Text is the line that said it, trimmed, at most MaxText bytes.
	Text string
	// Provider is who said it: "claude", "codex", "gemini", "anthropic-api", "openai-api", or "" when only a
	// generic HTTP header said it.
	Provider string
}

// Provider names.
const (
	Claude       = "claude"
	Codex        = "codex"
	Gemini       = "gemini" // Gemini CLI and the Google Gemini / Vertex API
	AnthropicAPI = "anthropic-api"
	OpenAIAPI    = "openai-api"
)

// MaxText bounds Limit.Text.
const MaxText = 200

// Only the end of an agent's output is read: a CLI that stops on a limit says so last, and Parse runs over up to a
// megabyte of output on every failed run.
const (
	tailBytes = 16 << 10
	tailLines = 64
)

// maxAhead bounds a reset: the longest window the tools have is a week (Claude Code's and Codex's weekly limits),
// so a reset further than 8 days ahead is a misreading (a wrong year, a zone, milliseconds taken for seconds) or a
// limit that is not a window at all (a monthly spend cap). Parking a run for weeks on a guess is worse than
// asking a person, so such a reset is not trusted.
const maxAhead = 8 * 24 * time.Hour

// pastGrace is how far in the past a reset may lie and still be trusted. Parse runs when the run ends, a moment
// after the agent printed the message: "resets 4:40pm" read at 4:42pm is the reset that just happened, not
// tomorrow's. A reset further in the past is a stale message (an old epoch, a log replayed) and is not trusted.
const pastGrace = 5 * time.Minute

// Trusted reports whether reset is a plausible reset time seen at now: not more than 8 days ahead, not in the past
// (by more than a few minutes). Parse and FromHeaders report only trusted resets; callers that read a reset from
// data of their own (Claude Code's rate_limit_event) check theirs with it.
func Trusted(reset, now time.Time) bool {
	return trusted(reset, now)
}

func trusted(reset, now time.Time) bool {
	return !reset.IsZero() && !reset.Before(now.Add(-pastGrace)) && !reset.After(now.Add(maxAhead))
}

// Parse finds, in the last lines of text (an agent's output, its final message, its stderr), the latest message
// saying a usage or rate limit was hit with a known reset time. Times of day with an IANA zone in parentheses are
// read in that zone (now's location when it cannot be loaded), those without one in now's location; a time of day
// already past (by more than pastGrace) means tomorrow. A limit without a reset time, or with one more than 8 days
// ahead or in the past, is not reported.
func Parse(text string, now time.Time) (Limit, bool) {
	text = tail(text)
	if !mayHold(text) {
		return Limit{}, false
	}
	if strings.IndexByte(text, 0x1b) >= 0 {
		text = ansiRe.ReplaceAllString(text, "")
	}
	lines := strings.Split(text, "\n")
	// The latest message wins: a CLI that retried and hit a second limit reports the later reset last.
	for i := len(lines) - 1; i >= 0; i-- {
		if l, ok := parseLine(lines, i, now, 0); ok {
			return l, true
		}
	}
	return parseWindow(lines, now)
}

// tail is the end of text: its last tailBytes bytes, of those its last tailLines lines.
func tail(text string) string {
	if len(text) > tailBytes {
		text = text[len(text)-tailBytes:]
		for i := 0; i < utf8.UTFMax && len(text) > 0 && !utf8.RuneStart(text[0]); i++ {
			text = text[1:]
		}
	}
	text = strings.TrimRight(text, "\r\n\t ")
	n := 0
	for i := len(text) - 1; i >= 0; i-- {
		if text[i] == '\n' {
			n++
			if n == tailLines {
				return text[i+1:]
			}
		}
	}
	return text
}

// mayHold is a quick test that text can hold one of the messages, so that the usual failed run costs one pass.
func mayHold(text string) bool {
	for _, k := range []string{"imit", "IMIT", "uota", "etry", "ETRY", "ry again", "esets", "apacity"} {
		if strings.Contains(text, k) {
			return true
		}
	}
	return false
}

var ansiRe = lazyre.New("\x1b\\[[0-9;?]*[ -/]*[@-~]")

// parseLine matches lines[i], or the strings inside it when it is a JSON value (an API error body, a CLI's
// JSON event).
func parseLine(lines []string, i int, now time.Time, depth int) (Limit, bool) {
	raw := strings.TrimSpace(strings.TrimSuffix(lines[i], "\r"))
	if raw == "" {
		return Limit{}, false
	}
	if depth < 2 && (raw[0] == '{' || raw[0] == '[') {
		var v any
		if json.Unmarshal([]byte(raw), &v) == nil {
			return parseJSON(v, now, depth, new(int))
		}
	}
	for _, m := range matchers {
		if l, ok := m(lines, i, clean(raw), raw, now); ok {
			if l.Text == "" {
				l.Text = raw
			}
			l.Text = clip(l.Text)
			return l, true
		}
	}
	return Limit{}, false
}

// maxJSONStrings bounds the strings read from one JSON line.
const maxJSONStrings = 256

// parseJSON looks at the strings in a JSON value (the last ones first, as for lines) and at the structured limit
// errors APIs return.
func parseJSON(v any, now time.Time, depth int, seen *int) (Limit, bool) {
	switch v := v.(type) {
	case string:
		if *seen++; *seen > maxJSONStrings || !mayHold(v) {
			return Limit{}, false
		}
		sub := strings.Split(v, "\n")
		for i := len(sub) - 1; i >= 0; i-- {
			if l, ok := parseLine(sub, i, now, depth+1); ok {
				return l, true
			}
		}
		if l, ok := parseWindow(sub, now); ok {
			return l, true
		}
	case []any:
		for i := len(v) - 1; i >= 0; i-- {
			if l, ok := parseJSON(v[i], now, depth, seen); ok {
				return l, true
			}
		}
	case map[string]any:
		if l, ok := structured(v, now); ok {
			return l, true
		}
		for _, k := range []string{"result", "message", "error", "errors", "text", "details", "msg"} {
			if l, ok := parseJSON(v[k], now, depth, seen); ok {
				return l, true
			}
		}
	}
	return Limit{}, false
}

// structured reads limit errors that carry their reset as data.
func structured(m map[string]any, now time.Time) (Limit, bool) {
	// Google APIs (Gemini API, Vertex, Gemini CLI's Code Assist backend) answer a 429 RESOURCE_EXHAUSTED with a
	// google.rpc.RetryInfo detail: {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "27s"}
	// (https://ai.google.dev/gemini-api/docs/rate-limits; googleapis google/rpc/error_details.proto).
	if t, _ := m["@type"].(string); strings.HasSuffix(t, "google.rpc.RetryInfo") {
		if d, ok := m["retryDelay"].(string); ok {
			if dur, err := time.ParseDuration(d); err == nil && dur >= 0 {
				return limitIn(now, dur, `"retryDelay": "`+d+`"`, Gemini)
			}
		}
	}
	// The ChatGPT backend behind Codex answers a spent plan with
	// {"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"free",
	// "resets_at":1775317531,"resets_in_seconds":602705}} (openai/codex codex-rs/core/src/client.rs reads resets_at
	// into UsageLimitReachedError; body quoted in james-6-23/codex2api issue #9).
	if t, _ := m["type"].(string); t == "usage_limit_reached" {
		text, _ := m["message"].(string)
		if text == "" {
			text = "usage_limit_reached"
		}
		if at, ok := m["resets_at"].(float64); ok && at > 0 {
			return limitAt(time.Unix(int64(at), 0), now, text, Codex)
		}
		if in, ok := m["resets_in_seconds"].(float64); ok && in >= 0 {
			return limitIn(now, time.Duration(in*float64(time.Second)), text, Codex)
		}
	}
	return Limit{}, false
}

func limitAt(reset, now time.Time, text, provider string) (Limit, bool) {
	if !trusted(reset, now) {
		return Limit{}, false
	}
	return Limit{Reset: reset, Text: clip(text), Provider: provider}, true
}

func limitIn(now time.Time, d time.Duration, text, provider string) (Limit, bool) {
	if d < 0 || d > maxAhead {
		return Limit{}, false
	}
	return limitAt(now.Add(d), now, text, provider)
}

// clip trims s and bounds it to MaxText bytes, on a rune boundary.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= MaxText {
		return s
	}
	s = s[:MaxText]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// clean removes what the tools put before and after their messages: the glyphs a terminal UI draws ("■ " before
// Codex's errors, "⎿ " under Claude Code's, "✕ [API Error: …]" around Gemini CLI's, box borders), and the "Error: "
// prefixes CLIs and their wrappers add. Quotes and backticks are not removed: a quoted message is prose about it.
func clean(s string) string {
	for range 4 {
		s = strings.TrimSpace(s)
		r, n := utf8.DecodeRuneInString(s)
		if strings.ContainsRune("■✕✗✘×⎿⚠│┃║⏺●▶›»⏵", r) {
			s = s[n:]
			continue
		}
		cut := false
		for _, p := range []string{"[API Error: ", "API Error: ", "ERROR: ", "Error: ", "error: ", "codex: ", "[RATE_LIMIT] "} {
			if strings.HasPrefix(s, p) {
				s, cut = s[len(p):], true
				break
			}
		}
		if !cut {
			break
		}
	}
	return strings.TrimRightFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == ']' || r == '│' || r == '┃' || r == '║' })
}

// A matcher looks at lines[i]: c is the line cleaned, raw as given. It returns a Limit with an empty Text to mean
// raw.
type matcher func(lines []string, i int, c, raw string, now time.Time) (Limit, bool)

var matchers = []matcher{claudeLine, codexLine, geminiLine, googleLine, openAILine}

// parseWindow looks for what spans lines: HTTP headers printed by a client that logs its responses.
func parseWindow(lines []string, now time.Time) (Limit, bool) {
	var (
		h        http.Header
		text     string
		provider string
	)
	for _, line := range lines {
		c := clean(line)
		switch {
		case strings.Contains(c, "rate_limit_error"):
			// Anthropic's 429 body: {"type":"error","error":{"type":"rate_limit_error","message":"This request
			// would exceed your account's rate limit. Please try again later."}}
			// (https://docs.anthropic.com/en/api/errors); also in Python repr with single quotes.
			provider = AnthropicAPI
		case strings.Contains(c, "rate_limit_exceeded") && provider == "":
			// OpenAI's 429 body: {"error":{"message":"Rate limit reached for …","type":"requests",
			// "code":"rate_limit_exceeded"}} (https://platform.openai.com/docs/guides/error-codes).
			provider = OpenAIAPI
		}
		m := headerRe.FindStringSubmatch(c)
		if m == nil {
			continue
		}
		if h == nil {
			h = http.Header{}
		}
		h.Add(m[1], strings.TrimSpace(m[2]))
		if text == "" || strings.EqualFold(m[1], "retry-after") {
			text = c
		}
	}
	// A header line alone is an HTTP exchange, maybe the agent's own test server answering 429: only a limit
	// error from a provider's API makes it one of theirs.
	if h == nil || provider == "" {
		return Limit{}, false
	}
	reset, ok := FromHeaders(h, now)
	if !ok {
		return Limit{}, false
	}
	return Limit{Reset: reset, Text: clip(text), Provider: provider}, true
}

var headerRe = lazyre.New(`(?i)^(retry-after|retry-after-ms|anthropic-ratelimit-(?:requests|tokens|input-tokens|output-tokens)-(?:reset|remaining)|x-ratelimit-(?:reset|remaining)-(?:requests|tokens))\s*[:=]\s*"?([^"]{1,64})"?,?$`)

// FromHeaders reads when an HTTP 429 (or any limited response) may be retried from its headers: retry-after
// (seconds or an HTTP-date), retry-after-ms, Anthropic's anthropic-ratelimit-{requests,tokens,input-tokens,
// output-tokens}-reset (RFC 3339, https://docs.anthropic.com/en/api/rate-limits#response-headers) and OpenAI's
// x-ratelimit-reset-{requests,tokens} (a duration such as "1s" or "6m0s",
// https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers). A reset of a limit whose
// -remaining header says it is not spent is not relevant; of the others the latest is returned. A reset more than
// 8 days ahead or in the past is not trusted.
func FromHeaders(h http.Header, now time.Time) (time.Time, bool) {
	var latest time.Time
	consider := func(t time.Time) {
		if t.After(latest) {
			latest = t
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			if n >= 0 && n <= maxAhead.Seconds() {
				consider(now.Add(time.Duration(n * float64(time.Second))))
			}
		} else if t, err := http.ParseTime(v); err == nil {
			consider(t)
		}
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 && n <= float64(maxAhead.Milliseconds()) {
			consider(now.Add(time.Duration(n * float64(time.Millisecond))))
		}
	}
	spent := func(remaining string) bool {
		v := h.Get(remaining)
		n, err := strconv.ParseFloat(v, 64)
		return v == "" || err != nil || n <= 0
	}
	for _, k := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		v := h.Get("Anthropic-Ratelimit-" + k + "-Reset")
		if v == "" || !spent("Anthropic-Ratelimit-"+k+"-Remaining") {
			continue
		}
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			consider(t)
		}
	}
	for _, k := range []string{"requests", "tokens"} {
		v := h.Get("X-Ratelimit-Reset-" + k)
		if v == "" || !spent("X-Ratelimit-Remaining-"+k) {
			continue
		}
		if d, err := time.ParseDuration(v); err == nil && d >= 0 && d <= maxAhead {
			consider(now.Add(d))
		}
	}
	if !trusted(latest, now) {
		return time.Time{}, false
	}
	return latest, true
}

// The messages' separators: Claude Code writes " · " (U+00B7) and, in 1.0.x, " ∙ " (U+2219); "┬À" is U+00B7's
// UTF-8 read as code page 437, as a Windows console or log captures it (shared reference 04, section C).
const sep = `\s*(?:·|∙|•|┬À)\s*`

// when is a Claude Code reset: a time of day with an optional date before it and an optional zone after.
const when = `(?:(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* (?P<day>\d{1,2})(?:st|nd|rd|th)?(?:,| at) )?` +
	`(?P<hour>\d{1,2})(?::(?P<min>\d{2}))?\s?(?P<ampm>[ap]\.?m\.?)(?: \((?P<zone>[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+)*)\))?`

var (
	// Claude Code 2.x (2.0.x through 2.1.2xx), result text and interactive notice:
	//   "You've hit your session limit · resets 4:40pm (Europe/Belgrade)"   (shared reference 04 C, CLI 2.1.x)
	//   "You've hit your limit · resets 3pm", "You've hit your limit · resets 8pm (Africa/Cairo)"
	//                                                             (anthropics/claude-code #43551, 2.1.92)
	//   "You've hit your limit · resets Jan 30, 11:30am (Asia/Calcutta)"       (anthropics/claude-code #21562)
	//   "You've hit your weekly limit · resets Jul 27 at 4:30am (Asia/Calcutta)" (#80903, 2.1.218)
	//   "You've hit your weekly limit · resets Jul 31, 2am (UTC)"               (#81647, 2.1.220)
	//   "You've hit your weekly limit · resets Sep 15 at 7pm"                   (#92834, 2.1.263)
	// Anything after a further " · " (a hint to upgrade) is allowed; nothing else may follow.
	claudeHitRe = lazyre.New(`(?i)^You(?:'|’)ve hit your (?:[a-z0-9-]+ ){0,2}limit` + sep + `resets ` + when + `\.?(?:` + sep + `.*)?$`)
	// Claude Code 1.0.x (1.0.88 through 1.0.1xx): "5-hour limit reached ∙ resets 12pm" (#7641, 1.0.113; #6392),
	// and the same shape for the weekly and Opus limits ("Weekly limit reached ∙ resets Oct 6, 2pm").
	claudeReachedRe = lazyre.New(`(?i)^(?:[a-z0-9-]+ ){1,3}limit reached` + sep + `resets ` + when + `\.?(?:` + sep + `.*)?$`)
	// Claude Code 1.0.x before that: "Claude usage limit reached. Your limit will reset at 5pm (Europe/Warsaw)."
	// (anthropics/claude-code #6119, 1.0.84; CCAutoRenew #3 "…will reset at 12am.").
	claudeOldRe = lazyre.New(`(?i)^Claude (?:AI )?usage limit reached\. Your limit will reset at ` + when + `\.?$`)
	// Claude Code 1.0.x in print mode: "Claude AI usage limit reached|1755615600", epoch seconds
	// (anthropics/claude-code #6119, #9046, #11429, 1.0.69–1.0.84).
	claudeEpochRe = lazyre.New(`^Claude AI usage limit reached\|(\d{9,11})$`)
)

func claudeLine(_ []string, _ int, c, _ string, now time.Time) (Limit, bool) {
	if !strings.Contains(c, "imit") {
		return Limit{}, false
	}
	if m := claudeEpochRe.FindStringSubmatch(c); m != nil {
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		return limitAt(time.Unix(sec, 0), now, c, Claude)
	}
	for _, re := range []*lazyre.Regexp{claudeHitRe, claudeReachedRe, claudeOldRe} {
		if m := re.FindStringSubmatch(c); m != nil {
			reset, ok := clockTime(re, m, now)
			if !ok {
				return Limit{}, false
			}
			return limitAt(reset, now, c, Claude)
		}
	}
	return Limit{}, false
}

var months = map[string]time.Month{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}

// clockTime resolves the named groups of when (mon, day, year, hour, min, ampm, zone) at now.
func clockTime(re *lazyre.Regexp, m []string, now time.Time) (time.Time, bool) {
	g := func(name string) string {
		if i := re.SubexpIndex(name); i > 0 {
			return m[i]
		}
		return ""
	}
	hour, _ := strconv.Atoi(g("hour"))
	minute := 0
	if s := g("min"); s != "" {
		minute, _ = strconv.Atoi(s)
	}
	if ampm := strings.ToLower(strings.ReplaceAll(g("ampm"), ".", "")); ampm != "" {
		if hour < 1 || hour > 12 {
			return time.Time{}, false
		}
		hour %= 12
		if ampm == "pm" {
			hour += 12
		}
	}
	if hour > 23 || minute > 59 {
		return time.Time{}, false
	}
	loc := zone(g("zone"), now)
	local := now.In(loc)
	if mon := g("mon"); mon != "" {
		day, _ := strconv.Atoi(g("day"))
		month := months[strings.ToLower(mon[:3])]
		year := local.Year()
		if s := g("year"); s != "" {
			year, _ = strconv.Atoi(s)
		}
		t := time.Date(year, month, day, hour, minute, 0, 0, loc)
		if t.Day() != day {
			return time.Time{}, false // Feb 30
		}
		if g("year") == "" && t.Before(now.Add(-24*time.Hour)) {
			t = t.AddDate(1, 0, 0) // "resets Jan 2" read on Dec 30
		}
		return t, true
	}
	t := time.Date(local.Year(), local.Month(), local.Day(), hour, minute, 0, 0, loc)
	if t.Before(now.Add(-pastGrace)) {
		t = t.AddDate(0, 0, 1)
	}
	return t, true
}

// gmtRe is a zone as JavaScript's toLocaleTimeString names one it has no abbreviation for: "GMT+2", "GMT-3",
// "GMT+5:30".
var gmtRe = lazyre.New(`^(?:GMT|UTC)([+-])(\d{1,2})(?::?(\d{2}))?$`)

// abbreviations are the zone abbreviations en-US JavaScript prints (Gemini CLI's "Access resets at 3:45 PM PDT").
var abbreviations = map[string]int{
	"UTC": 0, "GMT": 0, "Z": 0,
	"EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
	"AKST": -9, "AKDT": -8, "HST": -10,
}

// zone is the location a message's zone names, now's when it names none or one that cannot be loaded.
func zone(name string, now time.Time) *time.Location {
	if name == "" {
		return now.Location()
	}
	if h, ok := abbreviations[name]; ok {
		return time.FixedZone(name, h*3600)
	}
	if m := gmtRe.FindStringSubmatch(name); m != nil {
		h, _ := strconv.Atoi(m[2])
		mi, _ := strconv.Atoi(m[3])
		off := h*3600 + mi*60
		if m[1] == "-" {
			off = -off
		}
		if h <= 14 && mi < 60 {
			return time.FixedZone(name, off)
		}
	}
	if strings.Contains(name, "/") || name == "UTC" {
		if loc, err := time.LoadLocation(name); err == nil {
			return loc
		}
	}
	return now.Location()
}

var (
	// Codex CLI, UsageLimitReachedError (openai/codex codex-rs/core/src/error.rs): "You've hit your usage limit."
	// then, by plan, "Upgrade to Pro (…), visit … to purchase more credits or try again at 4:05 PM." or
	// " Try again at Jul 9th, 2026 1:47 AM." The time is the machine's local time, "%-I:%M %p" on the same day,
	// else "%b %-d{st,nd,rd,th}, %Y %-I:%M %p". Seen as "■ You've hit your usage limit. …", "ERROR: You've hit …",
	// in `codex exec --json` as {"type":"turn.failed","error":{"message":"You've hit your usage limit. …"}}, and in
	// the Codex app as "try again at Aug 10, 2026, 11:12 AM." and "… usage limit for GPT-5.3-Codex-Spark. Switch
	// to another model now, or try again at …". Codex 0.3x said "… or try again in 5 days 22 hours 11 minutes."
	// (openai/codex #3899, 0.39.0; #3124, #4095).
	codexRe = lazyre.New(`^You(?:'|’)ve hit your usage limit(?: for \S{1,80}?)?\. .{0,400}?\b[Tt]ry again (?:at ` +
		`(?:(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (?P<day>\d{1,2})(?:st|nd|rd|th)?, (?P<year>\d{4}),? )?` +
		`(?P<hour>\d{1,2}):(?P<min>\d{2}) ?(?P<ampm>[AP]M)|in (?P<in>\d+ (?:days?|hours?|minutes?|seconds?)(?:,? (?:and )?\d+ (?:days?|hours?|minutes?|seconds?)){0,3}))\.?$`)
	durWordRe = lazyre.New(`(\d+) (day|hour|minute|second)`)
)

func codexLine(_ []string, _ int, c, _ string, now time.Time) (Limit, bool) {
	if !strings.Contains(c, "usage limit") {
		return Limit{}, false
	}
	m := codexRe.FindStringSubmatch(c)
	if m == nil {
		return Limit{}, false
	}
	if in := m[codexRe.SubexpIndex("in")]; in != "" {
		var d time.Duration
		for _, w := range durWordRe.FindAllStringSubmatch(in, -1) {
			n, _ := strconv.Atoi(w[1])
			unit := map[string]time.Duration{"day": 24 * time.Hour, "hour": time.Hour, "minute": time.Minute, "second": time.Second}[w[2]]
			if n > int(maxAhead/unit) {
				return Limit{}, false
			}
			d += time.Duration(n) * unit
		}
		return limitIn(now, d, c, Codex)
	}
	reset, ok := clockTime(codexRe, m, now)
	if !ok {
		return Limit{}, false
	}
	return limitAt(reset, now, c, Codex)
}

var (
	// Gemini CLI's TerminalQuotaError (google-gemini/gemini-cli packages/core/src/utils/googleQuotaErrors.ts), shown
	// as "✕ [API Error: You have exhausted your capacity on this model. Your quota will reset after 12h22m45s.]" and
	// logged as "RESOURCE_EXHAUSTED (code 429): You have exhausted your capacity on this model. Your quota will
	// reset after 42h1m20s." The whole sentence pair is the shape; it may sit anywhere in the line.
	geminiCapacityRe = lazyre.New(`You have exhausted your capacity on this model\.\s*Your quota will reset after ((?:\d+(?:\.\d+)?(?:h|m|s|ms))+)\.?`)
	// Gemini CLI 0.3x's quota dialog (packages/cli/src/ui/hooks/useQuotaAndFallback.ts, ProQuotaDialog):
	//   "Usage limit reached for gemini-3-flash-preview." / "Usage limit reached for all Pro models."
	//   "Access resets at 10:57 PM GMT-3."      (google-gemini/gemini-cli #22643, 0.33.1)
	// on two lines, or joined on one once the box is taken out.
	geminiUsageRe  = lazyre.New(`^Usage limit reached for [^\n]{1,120}?\.(?:\s+Access resets at (?P<rest>.*))?$`)
	geminiAccessRe = lazyre.New(`^Access resets at (?P<hour>\d{1,2}):(?P<min>\d{2}) ?(?P<ampm>[AP]M)(?: (?P<zone>[A-Z]{1,5}(?:[+-]\d{1,2}(?::?\d{2})?)?))?\.?$`)
)

func geminiLine(lines []string, i int, c, _ string, now time.Time) (Limit, bool) {
	if m := geminiCapacityRe.FindStringSubmatch(c); m != nil {
		d, err := time.ParseDuration(m[1])
		if err != nil {
			return Limit{}, false
		}
		return limitIn(now, d, c, Gemini)
	}
	access := ""
	switch {
	case strings.HasPrefix(c, "Access resets at "):
		// The dialog's line before it says which limit; without it an "Access resets at" is anybody's.
		for j := i - 1; j >= 0 && j >= i-3; j-- {
			if p := clean(lines[j]); p != "" {
				if geminiUsageRe.MatchString(p) {
					access = c
				}
				break
			}
		}
	case strings.HasPrefix(c, "Usage limit reached for "):
		if m := geminiUsageRe.FindStringSubmatch(c); m != nil && m[1] != "" {
			access = "Access resets at " + m[1]
		}
	}
	if access == "" {
		return Limit{}, false
	}
	m := geminiAccessRe.FindStringSubmatch(access)
	if m == nil {
		return Limit{}, false
	}
	reset, ok := clockTime(geminiAccessRe, m, now)
	if !ok {
		return Limit{}, false
	}
	return limitAt(reset, now, c, Gemini)
}

var (
	// The Gemini API's 429 message (https://ai.google.dev/gemini-api/docs/rate-limits; google-gemini/gemini-cli
	// #8883): "You exceeded your current quota, please check your plan and billing details. … * Quota exceeded for
	// metric: generativelanguage.googleapis.com/…, limit: 125000\nPlease retry in 15.002899939s." The retry is read
	// only beside one of Google's quota phrases on the same line.
	googleRetryRe = lazyre.New(`Please retry in (\d+(?:\.\d+)?(?:ms|s))\b`)
	googleQuotaRe = lazyre.New(`RESOURCE_EXHAUSTED|You exceeded your current quota|Quota exceeded for metric`)
	// Its RetryInfo detail pretty-printed over lines (Gemini CLI prints the whole error body):
	//   "@type": "type.googleapis.com/google.rpc.RetryInfo",
	//   "retryDelay": "27s"
	// possibly with escaped quotes when the body sits inside another string.
	googleDelayRe = lazyre.New(`^\\*"retryDelay\\*"\s*:\s*\\*"(\d+(?:\.\d+)?(?:ms|s))\\*"`)
)

func googleLine(lines []string, i int, c, raw string, now time.Time) (Limit, bool) {
	if strings.Contains(c, "retry in") {
		if m := googleRetryRe.FindStringSubmatch(c); m != nil && googleQuotaRe.MatchString(c) {
			if d, err := time.ParseDuration(m[1]); err == nil {
				return limitIn(now, d, c, Gemini)
			}
		}
		// The message split over lines: the quota phrase within the lines just before.
		if m := googleRetryRe.FindStringSubmatch(c); m != nil && strings.HasPrefix(c, "Please retry in") {
			for j := i - 1; j >= 0 && j >= i-4; j-- {
				if googleQuotaRe.MatchString(lines[j]) {
					if d, err := time.ParseDuration(m[1]); err == nil {
						return limitIn(now, d, c, Gemini)
					}
				}
			}
		}
	}
	if strings.Contains(c, "retryDelay") {
		if m := googleDelayRe.FindStringSubmatch(c); m != nil {
			// Only inside a RetryInfo detail: the @type line is just before.
			for j := i - 1; j >= 0 && j >= i-3; j-- {
				if strings.Contains(lines[j], "google.rpc.RetryInfo") {
					if d, err := time.ParseDuration(m[1]); err == nil {
						return limitIn(now, d, c, Gemini)
					}
				}
			}
		}
	}
	return Limit{}, false
}

// OpenAI's 429 message (https://platform.openai.com/docs/guides/rate-limits, error code rate_limit_exceeded):
// "Rate limit reached for gpt-4o in organization org-… on tokens per min (TPM): Limit 30000, Used 28000,
// Requested 4000. Please try again in 4.4s. Visit https://platform.openai.com/account/rate-limits to learn more."
// The retry is a Go-style duration: "20ms", "4.4s", "1m30s", "6m0s". The message may sit inside the body an SDK
// prints ("Error code: 429 - {'error': {'message': 'Rate limit reached …"), so it is looked for anywhere in the
// line, but whole: "Rate limit reached for <model> in organization <org> on …".
var openAIRe = lazyre.New(`Rate limit reached for \S{1,100} in (?:organization|project) \S{1,100} on [^.]{1,200}\..{0,200}?Please try again in ((?:\d+(?:\.\d+)?(?:h|m|s|ms))+)\.`)

func openAILine(_ []string, _ int, c, _ string, now time.Time) (Limit, bool) {
	if !strings.Contains(c, "Rate limit reached for") {
		return Limit{}, false
	}
	m := openAIRe.FindStringSubmatchIndex(c)
	if m == nil {
		return Limit{}, false
	}
	d, err := time.ParseDuration(c[m[2]:m[3]])
	if err != nil {
		return Limit{}, false
	}
	return limitIn(now, d, c[m[0]:m[1]], OpenAIAPI)
}
