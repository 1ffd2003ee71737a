package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// claudeParser reads Claude Code's stream-json (and the single-object or array form of --output-format json).
// Every field is decoded on its own, leniently: a CLI release that changes one field's type must cost that
// field, not the whole line, and nothing the agent prints can make parsing fail.
type claudeParser struct {
	sessionID string // last seen on any line
	initModel string
	lastModel string // from assistant messages, for transcripts without an init line

	assistant boundedText // top-level assistant text blocks
	deltas    boundedText // stream_event text deltas, for runs cut off before a whole message arrived
	plain     boundedText // lines that are not stream-json, kept as text

	msgUsage map[string]usage // by message id (one per turn): the CLI repeats a message's usage on each of its content lines
	// folded sums the usage of the messages msgUsage held when it was full, foldedTurns counts them.
	folded      usage
	foldedTurns int
	anonUsage   usage // assistant lines without a message id

	errs    errorList
	retries map[string]*retryInfo // by status and error, so a retry storm stays one line

	res     *resultInfo // the last result line
	unknown int

	// rejected holds, by rateLimitType, the reset of each rate limit window the CLI last said was rejected.
	rejected map[string]time.Time
	// limitTexts are the texts of the messages the CLI made up for an API error (assistant lines with "error"):
	// "You've hit your session limit · resets 4:40pm (Europe/Belgrade)" when the limit is the error.
	limitTexts boundedText

	version   string          // the CLI's version, from the init line
	calls     map[string]Call // the latest tool calls by id, to name what was denied (keepCall)
	callOrder []string        // their ids, oldest first
	callBytes int             // what they hold
	denied    []Call          // calls orch's hook refused for want of an approval
	onTool    func(Call)

	// A JSON value pretty-printed over several lines (the json output format, hand-made fixtures) is
	// gathered here until its brackets balance.
	pending     []byte
	pendingScan jsonScan
}

type usage struct {
	input, output, cacheRead, cacheCreation int64
}

func (u *usage) add(v usage) {
	u.input += v.input
	u.output += v.output
	u.cacheRead += v.cacheRead
	u.cacheCreation += v.cacheCreation
}

type resultInfo struct {
	subtype        string
	isError        bool
	text           string
	errors         []string
	apiStatus      int64
	terminalReason string
	numTurns       int64
	hasNumTurns    bool
	cost           float64
	hasCost        bool
	usage          usage
	hasUsage       bool
	modelUsage     usage
	modelCost      float64
	topModel       string // the model that cost the most: the main one, not a helper model
	sessionID      string
	stopReason     string
	deferred       *Call
	denials        []Call
}

type retryInfo struct {
	index int // in errs
	count int
}

// maxPending bounds a multi-line JSON value; past it the lines are kept as text. It is the sandbox's bound on one
// line (sandbox.MaxLine): a value pretty-printed over lines is held to what the same value gets on one.
const maxPending = 4 << 20

// maxMessagesKept bounds the messages whose usage is kept by id. A session has hundreds of turns; past the bound the
// usage kept so far is summed and the map starts again, so a message whose lines straddle that moment (once in
// thousands) counts twice.
const maxMessagesKept = 4096

func newClaudeParser() *claudeParser {
	return &claudeParser{msgUsage: map[string]usage{}, retries: map[string]*retryInfo{}, calls: map[string]Call{}, rejected: map[string]time.Time{}}
}

// Line implements Parser.
func (p *claudeParser) Line(line []byte) {
	line = bytes.TrimRight(line, "\r\n")
	t := bytes.TrimSpace(line)
	if p.pending != nil {
		p.continuePending(line, t)
		return
	}
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		if p.value(t) {
			return
		}
		var s jsonScan
		s.feed(t)
		if !s.bad && s.depth > 0 && !s.inString {
			p.pending = append(append([]byte(nil), line...), '\n')
			p.pendingScan = s
			return
		}
	}
	p.plainLine(line)
}

func (p *claudeParser) continuePending(line, t []byte) {
	// A whole stream-json object on one line cannot be part of a pretty-printed value (its inner objects
	// span lines), so the pending lines were not JSON: keep them as text and go on.
	if len(t) > 0 && t[0] == '{' && isTypedObject(t) {
		p.flushPending()
		p.Line(line)
		return
	}
	p.pending = append(append(p.pending, line...), '\n')
	p.pendingScan.feed(t)
	s := &p.pendingScan
	switch {
	case s.bad || s.inString || len(p.pending) > maxPending:
		p.flushPending()
	case s.depth == 0:
		if p.value(bytes.TrimSpace(p.pending)) {
			p.pending = nil
		} else {
			p.flushPending()
		}
	}
}

func (p *claudeParser) flushPending() {
	lines := bytes.Split(bytes.TrimSuffix(p.pending, []byte("\n")), []byte("\n"))
	p.pending = nil
	for _, l := range lines {
		p.plainLine(l)
	}
}

func (p *claudeParser) plainLine(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		if p.plain.Len() > 0 {
			p.plain.WriteString("\n")
		}
		return
	}
	p.unknown++
	p.plain.WriteString(string(line) + "\n")
}

// value handles one complete JSON object, or an array of them (--output-format json with verbose on).
// It reports false when t is not JSON at all.
func (p *claudeParser) value(t []byte) bool {
	if t[0] == '[' {
		var elems []json.RawMessage
		if json.Unmarshal(t, &elems) != nil {
			return false
		}
		objects := make([]map[string]json.RawMessage, len(elems))
		found := false
		for i, e := range elems {
			if json.Unmarshal(e, &objects[i]) == nil && objects[i] != nil {
				found = true
			}
		}
		if !found {
			return false // "[1, 2]" or "[]" is something the agent printed, not a transcript
		}
		for i, m := range objects {
			if m == nil {
				p.unknown++
				continue
			}
			p.object(m, elems[i])
		}
		return true
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(t, &m) != nil || m == nil {
		return false
	}
	p.object(m, t)
	return true
}

func (p *claudeParser) object(m map[string]json.RawMessage, raw []byte) {
	if sid := ident(jsonString(m["session_id"])); sid != "" {
		p.sessionID = sid
	}
	typ := jsonString(m["type"])
	if typ == "" {
		typ = guessType(m)
	}
	switch typ {
	case "system":
		p.system(m)
	case "assistant":
		p.assistantLine(m)
	case "user":
		p.userLine(m)
	case "stream_event":
		p.streamEvent(m)
	case "result":
		p.result(m)
	case "rate_limit_event":
		p.rateLimit(m)
	case "tool_progress", "auth_status", "keep_alive",
		"control_request", "control_response", "control_cancel_request":
		// Known, and nothing in them changes the result.
	default:
		p.unknown++
		p.plain.WriteString(string(raw) + "\n")
	}
}

// guessType names objects that lost their "type" (CLI versions and log excerpts that strip it).
func guessType(m map[string]json.RawMessage) string {
	switch jsonString(m["subtype"]) {
	case "api_retry", "init", "hook_response":
		return "system"
	}
	for _, k := range []string{"is_error", "result", "num_turns", "total_cost_usd", "terminal_reason"} {
		if _, ok := m[k]; ok {
			return "result"
		}
	}
	return ""
}

func (p *claudeParser) system(m map[string]json.RawMessage) {
	switch jsonString(m["subtype"]) {
	case "init":
		if model := ident(jsonString(m["model"])); model != "" {
			p.initModel = model
		}
		if v := ident(jsonString(m["claude_code_version"])); v != "" {
			p.version = v
		}
	case "api_retry":
		p.apiRetry(m)
	}
}

// apiRetry folds the CLI's retries of one failing API call into one line of Errors.
func (p *claudeParser) apiRetry(m map[string]json.RawMessage) {
	status, _ := jsonInt(m["error_status"])
	errText := jsonText(m["error"])
	var what []string
	if status != 0 {
		what = append(what, "HTTP "+strconv.FormatInt(status, 10))
	}
	if errText != "" {
		what = append(what, errText)
	}
	if len(what) == 0 {
		what = append(what, "unknown error")
	}
	attempt := "?"
	if a, ok := jsonInt(m["attempt"]); ok {
		attempt = strconv.FormatInt(a, 10)
	}
	if mx, ok := jsonInt(m["max_retries"]); ok {
		attempt += "/" + strconv.FormatInt(mx, 10)
	}
	key := clipError(strings.Join(what, " "))
	ri := p.retries[key]
	if ri == nil {
		i := p.errs.push("")
		if i < 0 {
			return
		}
		ri = &retryInfo{index: i}
		p.retries[key] = ri
	}
	ri.count++
	p.errs.errs[ri.index] = fmt.Sprintf("api_retry: %s (%s, last attempt %s)", key, plural(ri.count, "retry", "retries"), attempt)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// messageUsage records the usage of message id, folding what is kept into a sum when the map is full.
func (p *claudeParser) messageUsage(id string, u usage) {
	if _, ok := p.msgUsage[id]; !ok && len(p.msgUsage) >= maxMessagesKept {
		for _, v := range p.msgUsage {
			p.folded.add(v)
		}
		p.foldedTurns += len(p.msgUsage)
		clear(p.msgUsage)
	}
	p.msgUsage[id] = u
}

func (p *claudeParser) assistantLine(m map[string]json.RawMessage) {
	msg := jsonObject(m["message"])
	p.toolUses(msg["content"])
	texts := contentTexts(msg["content"])
	// "<synthetic>" messages are made up by the CLI without calling a model: no model, no usage, no turn.
	model := ident(jsonString(msg["model"]))
	if model != "" && model != "<synthetic>" {
		p.lastModel = model
	}
	if model != "<synthetic>" {
		raw, hasUsage := msg["usage"]
		switch id := ident(jsonString(msg["id"])); {
		case id != "" && hasUsage:
			p.messageUsage(id, decodeUsage(raw))
		case id != "":
			if _, seen := p.msgUsage[id]; !seen {
				p.messageUsage(id, usage{}) // still a turn
			}
		case hasUsage:
			p.anonUsage.add(decodeUsage(raw))
		}
	}
	// A top-level "error" marks a message the CLI made up itself (not logged in, rate limited): its text is
	// the error, not the agent's answer.
	if e := jsonText(m["error"]); e != "" {
		if t := strings.Join(texts, " "); t != "" {
			e += ": " + t
			p.limitTexts.WriteString(strings.Join(texts, "\n") + "\n")
		}
		p.errs.add(e)
		return
	}
	// Sub-agent chatter (parent_tool_use_id set) is not the answer either.
	if jsonString(m["parent_tool_use_id"]) != "" {
		return
	}
	for _, t := range texts {
		if strings.TrimSpace(t) == "" {
			continue
		}
		if p.assistant.Len() > 0 {
			p.assistant.WriteString("\n\n")
		}
		p.assistant.WriteString(t)
	}
}

// userLine only looks for the CLI's note that the run was interrupted: tool results are the bulk of a
// transcript and none of them change the result.
func (p *claudeParser) userLine(m map[string]json.RawMessage) {
	p.toolResults(jsonObject(m["message"])["content"])
	const interrupted = "[Request interrupted"
	if !bytes.Contains(m["message"], []byte(interrupted)) {
		return
	}
	for _, t := range contentTexts(jsonObject(m["message"])["content"]) {
		if strings.HasPrefix(t, interrupted) {
			p.errs.add(t)
		}
	}
}

func (p *claudeParser) streamEvent(m map[string]json.RawMessage) {
	if jsonString(m["parent_tool_use_id"]) != "" {
		return
	}
	var ev struct {
		Delta struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"delta"`
	}
	if json.Unmarshal(m["event"], &ev) == nil && ev.Delta.Type == "text_delta" {
		p.deltas.WriteString(ev.Delta.Text)
	}
}

func (p *claudeParser) result(m map[string]json.RawMessage) {
	r := &resultInfo{
		subtype:        jsonString(m["subtype"]),
		text:           jsonString(m["result"]),
		terminalReason: jsonString(m["terminal_reason"]),
		sessionID:      jsonString(m["session_id"]),
	}
	r.isError, _ = jsonBool(m["is_error"])
	p.resultCalls(m, r)
	r.apiStatus, _ = jsonInt(m["api_error_status"])
	r.numTurns, r.hasNumTurns = jsonInt(m["num_turns"])
	r.cost, r.hasCost = jsonFloat(m["total_cost_usd"])
	if raw, ok := m["usage"]; ok && len(jsonObject(raw)) > 0 {
		r.usage, r.hasUsage = decodeUsage(raw), true
	}
	var errs []json.RawMessage
	if json.Unmarshal(m["errors"], &errs) == nil {
		var kept errorList
		for _, e := range errs {
			if s := jsonText(e); s != "" {
				kept.add(s)
			}
		}
		r.errors = kept.list()
	}
	var topCost float64
	for model, raw := range jsonObject(m["modelUsage"]) {
		mu := jsonObject(raw)
		r.modelUsage.add(usage{
			input:         jsonInt64(mu["inputTokens"]),
			output:        jsonInt64(mu["outputTokens"]),
			cacheRead:     jsonInt64(mu["cacheReadInputTokens"]),
			cacheCreation: jsonInt64(mu["cacheCreationInputTokens"]),
		})
		c, _ := jsonFloat(mu["costUSD"])
		r.modelCost += c
		if r.topModel == "" || c > topCost || (c == topCost && model < r.topModel) {
			r.topModel, topCost = model, c
		}
	}
	p.res = r
}

// resultErrors says why a result line reports failure, in the CLI's own words where it gives them.
func (r *resultInfo) resultErrors() []string {
	errs := append([]string(nil), r.errors...)
	if !r.isError {
		return errs
	}
	if r.apiStatus != 0 {
		e := "API error " + strconv.FormatInt(r.apiStatus, 10)
		if r.text != "" {
			e += ": " + r.text
		}
		errs = appendUnique(errs, e)
	} else if len(errs) == 0 && r.text != "" && (r.subtype == "success" || r.subtype == "") {
		// An API failure reported as a "successful" turn: the result text is the error prose.
		errs = append(errs, r.text)
	}
	if len(errs) == 0 {
		e := r.subtype
		if e == "" {
			e = "error"
		}
		if r.terminalReason != "" {
			e += " (" + r.terminalReason + ")"
		}
		errs = append(errs, e)
	}
	return errs
}

// Finish implements Parser.
func (p *claudeParser) Finish(exitCode int, stderr []byte) Result {
	if p.pending != nil {
		p.flushPending()
	}
	r := Result{Unknown: p.unknown, SessionID: p.sessionID, Model: p.initModel, Version: p.version}
	r.Denied = append(r.Denied, p.denied...)
	total := p.folded
	for _, u := range p.msgUsage {
		total.add(u)
	}
	total.add(p.anonUsage)
	r.NumTurns = p.foldedTurns + len(p.msgUsage)
	errs := p.errs.list()
	if p.res != nil {
		errs = p.res.apply(&r, &total, exitCode, errs)
	}
	if r.Model == "" {
		r.Model = p.lastModel
	}
	r.InputTokens, r.OutputTokens = total.input, total.output
	r.CacheReadTokens, r.CacheCreationTokens = total.cacheRead, total.cacheCreation

	for _, t := range []*boundedText{&p.assistant, &p.deltas, &p.plain} {
		if r.Text == "" {
			r.Text = strings.TrimSpace(t.String())
		}
	}
	if !r.Success {
		r.Limit = p.limit(timeNow())
		errs = failure(p.res, exitCode, stderr, errs)
	}
	if len(errs) > 0 {
		r.Errors = clipErrors(errs)
	}
	if !r.Success {
		r.Text = withErrors(r.Text, r.Errors)
	}
	return r
}

// apply writes what the result line says onto r: it speaks for the session that finished, whatever other lines said
// before it. It returns errs with the result's own errors added.
func (res *resultInfo) apply(r *Result, total *usage, exitCode int, errs []string) []string {
	if res.sessionID != "" {
		r.SessionID = res.sessionID
	}
	r.Subtype = res.subtype
	r.Success = res.subtype == "success" && !res.isError && exitCode == 0
	r.StopReason = res.stopReason
	if res.stopReason == "tool_deferred" && res.deferred != nil {
		r.Paused = res.deferred
	}
	for _, d := range res.denials {
		r.Denied = appendCall(r.Denied, d)
	}
	switch {
	case res.hasUsage:
		*total = res.usage
	case res.modelUsage != usage{}:
		*total = res.modelUsage
	}
	r.CostUSD = res.modelCost
	if res.hasCost {
		r.CostUSD = res.cost
	}
	if res.hasNumTurns {
		r.NumTurns = int(res.numTurns)
	}
	if r.Model == "" {
		r.Model = res.topModel
	}
	for _, e := range res.resultErrors() {
		errs = appendUnique(errs, e)
	}
	r.Text = res.text
	return errs
}

// failure adds to errs why a run that did not succeed failed, beside what it said: no result line, a result that is
// not a success, the exit status, the end of stderr.
func failure(res *resultInfo, exitCode int, stderr []byte, errs []string) []string {
	if res == nil {
		errs = append(errs, "no result line: the agent stopped before it finished")
	} else if !res.isError && res.subtype != "success" {
		errs = append(errs, fmt.Sprintf("result subtype %q is not success", res.subtype))
	}
	if exitCode != 0 {
		errs = append(errs, fmt.Sprintf("exit status %d", exitCode))
	}
	if s := stderrTail(stderr); s != "" {
		errs = append(errs, "stderr: "+s)
	}
	return errs
}

// contentTexts returns the text blocks of a message's content, which is a string or a list of blocks.
func contentTexts(raw json.RawMessage) []string {
	if s := jsonString(raw); s != "" {
		return []string{s}
	}
	// The blocks are decoded in one pass, straight into their texts: a text of megabytes is copied once, not once per
	// level of the JSON. A block of another shape (a string, a number) costs only itself: Unmarshal goes on past a
	// value of the wrong type and reports it at the end.
	var blocks []struct {
		Type lenientString `json:"type"`
		Text lenientString `json:"text"`
	}
	var typeErr *json.UnmarshalTypeError
	if err := json.Unmarshal(raw, &blocks); err != nil && !errors.As(err, &typeErr) {
		return nil
	}
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			texts = append(texts, string(b.Text))
		}
	}
	return texts
}

// lenientString decodes a JSON string, and leaves any other value (a number, an object, null) as "" without an
// error, so that one field of an unexpected type does not cost the value around it.
type lenientString string

func (s *lenientString) UnmarshalJSON(b []byte) error {
	var v string
	if len(b) > 0 && b[0] == '"' && json.Unmarshal(b, &v) == nil {
		*s = lenientString(v)
	}
	return nil
}

func decodeUsage(raw json.RawMessage) usage {
	m := jsonObject(raw)
	return usage{
		input:         jsonInt64(m["input_tokens"]),
		output:        jsonInt64(m["output_tokens"]),
		cacheRead:     jsonInt64(m["cache_read_input_tokens"]),
		cacheCreation: jsonInt64(m["cache_creation_input_tokens"]),
	}
}

func jsonObject(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// jsonText is a string field, or any other JSON value in compact form, for fields documented as strings
// that may one day become objects.
func jsonText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	if raw[0] == '"' {
		return jsonString(raw)
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return ""
	}
	return b.String()
}

func jsonBool(raw json.RawMessage) (bool, bool) {
	var b bool
	if len(raw) == 0 || json.Unmarshal(raw, &b) != nil {
		return false, false
	}
	return b, true
}

func jsonFloat(raw json.RawMessage) (float64, bool) {
	var f float64
	if len(raw) == 0 {
		return 0, false
	}
	if json.Unmarshal(raw, &f) == nil {
		return f, true
	}
	if s := jsonString(raw); s != "" {
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, true
		}
	}
	return 0, false
}

// jsonInt reads a count. Negative or absurd values are clamped: they can only come from a broken line, and
// they must not wrap the totals around.
func jsonInt(raw json.RawMessage) (int64, bool) {
	f, ok := jsonFloat(raw)
	if !ok {
		return 0, false
	}
	return int64(max(0, min(f, 1<<53))), true
}

func jsonInt64(raw json.RawMessage) int64 {
	n, _ := jsonInt(raw)
	return n
}

// isTypedObject reports whether t is one complete JSON object with a "type" key: a stream-json line.
func isTypedObject(t []byte) bool {
	var v struct {
		Type json.RawMessage `json:"type"`
	}
	return json.Unmarshal(t, &v) == nil && v.Type != nil
}

// jsonScan follows bracket depth across lines, outside strings, to tell when a multi-line value ends.
type jsonScan struct {
	depth    int
	inString bool
	escaped  bool
	bad      bool
}

func (s *jsonScan) feed(b []byte) {
	for _, c := range b {
		if s.bad {
			return
		}
		if s.inString {
			switch {
			case s.escaped:
				s.escaped = false
			case c == '\\':
				s.escaped = true
			case c == '"':
				s.inString = false
			}
			continue
		}
		switch c {
		case '"':
			s.inString = true
		case '{', '[':
			s.depth++
		case '}', ']':
			s.depth--
			if s.depth < 0 {
				s.bad = true
			}
		}
	}
}
