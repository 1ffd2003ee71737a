package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// step is one scripted assistant message: one tool call, several, or the final text.
type step struct {
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input"`
	ID    string          `json:"id"`
	Tools []step          `json:"tools"`
	Text  *string         `json:"text"`
}

// script is FAKE_CLAUDE_MODEL: the model's steps after each user prompt.
type script struct {
	Turns [][]step `json:"turns"`
}

// toolCall is one tool_use block.
type toolCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// sessionState is what a resume needs, stored as the last "fake_state" line of the session file.
type sessionState struct {
	Type       string    `json:"type"`
	Turn       int       `json:"turn"`
	Step       int       `json:"step"`
	ReadFiles  []string  `json:"read_files"`
	Pending    *toolCall `json:"pending,omitempty"`
	LastResult string    `json:"last_result"`
	LastPrompt string    `json:"last_prompt"`
}

// denial is one entry of the result's permission_denials.
type denial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// logHook and logRan are entries of the FAKE_CLAUDE_LOG line.
type logHook struct {
	ToolUseID string `json:"tool_use_id"`
	Tool      string `json:"tool"`
	Decision  string `json:"decision"`
}

type logRan struct {
	Tool string `json:"tool"`
	ID   string `json:"id"`
}

// runLog is the line appended to $FAKE_CLAUDE_LOG for each process.
type runLog struct {
	Args          []string          `json:"args"`
	Dir           string            `json:"dir"`
	Env           map[string]string `json:"env"`
	Session       string            `json:"session"`
	Resumed       bool              `json:"resumed"`
	Hooks         []logHook         `json:"hooks"`
	Ran           []logRan          `json:"ran"`
	Exit          int               `json:"exit"`
	StartUnixNano int64             `json:"start_unix_nano"`
}

// claude is one model-mode process.
type claude struct {
	opts      options
	version   string
	cwd       string
	model     string
	script    script
	settings  settings
	sessionID string
	path      string
	state     sessionState
	tools     []string
	mcp       map[string]*mcpClient
	denials   []denial
	turns     int
	start     time.Time
	out       *bufio.Writer
	log       runLog
	lastUUID  string
}

// runModel runs model mode and returns the exit code.
func runModel(args []string) int {
	c := &claude{start: time.Now(), out: bufio.NewWriter(os.Stdout), mcp: map[string]*mcpClient{}}
	c.version = os.Getenv("FAKE_CLAUDE_VERSION")
	if c.version == "" {
		c.version = "2.1.186"
	}
	c.cwd, _ = os.Getwd()
	c.log = runLog{Args: args, Dir: c.cwd, Env: map[string]string{}, Hooks: []logHook{}, Ran: []logRan{},
		StartUnixNano: c.start.UnixNano()}
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "ORCH_") {
			c.log.Env[k] = v
		}
	}
	code := c.run(args)
	c.out.Flush()
	for _, m := range c.mcp {
		m.close()
	}
	c.log.Exit = code
	if path := os.Getenv("FAKE_CLAUDE_LOG"); path != "" {
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.Write(marshalLine(c.log))
			f.Close()
		}
	}
	return code
}

// run does the work of runModel and maps errors to exit codes.
func (c *claude) run(args []string) int {
	err := c.session(args)
	var ue usageError
	var um unmodelled
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		c.out.Flush()
		fmt.Fprintln(os.Stderr, ue.msg)
		return 1
	case errors.As(err, &um):
		c.out.Flush()
		fmt.Fprintln(os.Stderr, "fakeclaude: not modelled:", um.msg)
		return 99
	default:
		c.out.Flush()
		fmt.Fprintln(os.Stderr, "fakeclaude:", err)
		return 99
	}
}

// session parses the command line, loads or creates the session and plays the model.
func (c *claude) session(args []string) error {
	o, err := parseArgs(args)
	if err != nil {
		return err
	}
	c.opts = o
	if o.version {
		fmt.Fprintf(c.out, "%s (Claude Code)\n", c.version)
		return nil
	}
	if err := c.loadScript(); err != nil {
		return err
	}
	if !o.print {
		return unmodelled{"interactive mode (no -p)"}
	}
	if o.outputFormat == "stream-json" && !o.verbose {
		return usageError{"When using --print, --output-format=stream-json requires --verbose"}
	}
	if strings.HasPrefix(o.promptTool, "stdio") {
		return unmodelled{"--permission-prompt-tool stdio (the SDK control protocol)"}
	}
	if !o.hasPrompt {
		if st, err := os.Stdin.Stat(); err == nil && st.Mode()&os.ModeCharDevice == 0 {
			data, _ := io.ReadAll(os.Stdin)
			if p := strings.TrimSpace(string(data)); p != "" {
				o.prompt, o.hasPrompt = p, true
				c.opts = o
			}
		}
	}
	c.model = o.model
	if c.model == "" {
		c.model = "claude-sonnet-4-6"
	}
	dir := filepath.Join(configDir(), "projects", regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString(c.cwd, "-"))
	if o.resume != "" {
		c.sessionID = o.resume
		c.path = filepath.Join(dir, o.resume+".jsonl")
		if err := c.loadState(); err != nil {
			return err
		}
		c.log.Resumed = true
	} else {
		if !o.hasPrompt {
			return usageError{"Error: Input must be provided either through stdin or as a prompt argument when using --print"}
		}
		c.sessionID = newUUID()
		c.path = filepath.Join(dir, c.sessionID+".jsonl")
		c.state = sessionState{Type: "fake_state", Turn: -1}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating the session directory: %w", err)
		}
	}
	c.log.Session = c.sessionID
	if !o.hasPrompt && c.state.Pending == nil {
		if versionAtLeast(c.version, "2.1.119") {
			return usageError{"Error: No deferred tool marker found in the resumed session. Either the session was not deferred, the marker is stale (tool already ran), or it exceeds the tail-scan window. Provide a prompt to continue the conversation."}
		}
		return usageError{"Error: Input must be provided either through stdin or as a prompt argument when using --print"}
	}
	if o.hasPrompt && c.state.Pending != nil {
		return unmodelled{"a new prompt while a deferred tool call is pending"}
	}
	if c.settings, err = loadSettings(o, c.cwd); err != nil {
		return err
	}
	if err := c.startMCP(); err != nil {
		return err
	}
	c.tools = c.offeredTools()
	c.emitInit()
	defer c.saveState()
	if o.hasPrompt {
		c.state.Turn++
		c.state.Step = 0
		c.state.LastPrompt = o.prompt
		c.record(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": o.prompt}})
	} else {
		call := *c.state.Pending
		c.state.Pending = nil
		deferred, err := c.handleCalls([]toolCall{call})
		if err != nil || deferred {
			return err
		}
	}
	return c.play()
}

// loadScript reads FAKE_CLAUDE_MODEL.
func (c *claude) loadScript() error {
	raw := os.Getenv("FAKE_CLAUDE_MODEL")
	data := []byte(raw)
	if path, ok := strings.CutPrefix(raw, "@"); ok {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return fmt.Errorf("FAKE_CLAUDE_MODEL: %w", err)
		}
	}
	if err := json.Unmarshal(data, &c.script); err != nil {
		return fmt.Errorf("FAKE_CLAUDE_MODEL is not a valid script: %w", err)
	}
	return nil
}

// loadState reads the session file of a resume.
func (c *claude) loadState() error {
	data, err := os.ReadFile(c.path)
	if err != nil {
		return usageError{"No conversation found with session ID: " + c.opts.resume}
	}
	found := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"type":"fake_state"`) {
			var st sessionState
			if err := json.Unmarshal([]byte(line), &st); err != nil {
				return fmt.Errorf("reading session %s: %w", c.path, err)
			}
			c.state, found = st, true
		}
	}
	if !found {
		return fmt.Errorf("session %s has no state line", c.path)
	}
	return nil
}

// saveState appends the state line to the session file.
func (c *claude) saveState() {
	c.state.Type = "fake_state"
	c.appendSession(c.state)
}

// appendSession appends one JSON line to the session file.
func (c *claude) appendSession(v any) {
	f, err := os.OpenFile(c.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeclaude: writing the session:", err)
		return
	}
	defer f.Close()
	f.Write(marshalLine(v))
}

// record stores a transcript message in the session file as Claude Code does (claude-directory).
func (c *claude) record(m map[string]any) {
	uuid := newUUID()
	m["uuid"], m["parentUuid"], m["sessionId"], m["cwd"] = uuid, nilIfEmpty(c.lastUUID), c.sessionID, c.cwd
	m["version"], m["timestamp"], m["isSidechain"], m["userType"] = c.version, time.Now().UTC().Format(time.RFC3339Nano), false, "external"
	c.lastUUID = uuid
	c.appendSession(m)
}

// nilIfEmpty is nil for "" so it marshals as null.
func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// play runs the scripted steps of the current turn until its text or a deferred call.
func (c *claude) play() error {
	for {
		var steps []step
		if c.state.Turn >= 0 && c.state.Turn < len(c.script.Turns) {
			steps = c.script.Turns[c.state.Turn]
		}
		if c.state.Step >= len(steps) {
			return c.finish("done")
		}
		s := steps[c.state.Step]
		c.state.Step++
		switch {
		case s.Text != nil:
			text := strings.ReplaceAll(*s.Text, "{{last_result}}", c.state.LastResult)
			text = strings.ReplaceAll(text, "{{prompt}}", c.state.LastPrompt)
			return c.finish(text)
		case s.Tool != "" || len(s.Tools) > 0:
			list := s.Tools
			if s.Tool != "" {
				list = []step{s}
			}
			var calls []toolCall
			msgID := "msg_01" + randomBase62(22)
			for _, t := range list {
				if t.Tool == "" {
					return fmt.Errorf("FAKE_CLAUDE_MODEL: turn %d step %d: a tool entry names no tool", c.state.Turn, c.state.Step-1)
				}
				id := t.ID
				if id == "" {
					id = "toolu_01" + randomBase62(22)
				}
				input := t.Input
				if len(input) == 0 {
					input = json.RawMessage("{}")
				}
				// {{cwd}} is the working directory, which a real model knows from its system prompt and puts in
				// the absolute paths its file tools take.
				cwd, _ := json.Marshal(c.cwd)
				input = json.RawMessage(strings.ReplaceAll(string(input), "{{cwd}}", strings.Trim(string(cwd), `"`)))
				calls = append(calls, toolCall{ID: id, Name: t.Tool, Input: input})
			}
			c.emitAssistant(msgID, calls, "")
			deferred, err := c.handleCalls(calls)
			if err != nil || deferred {
				return err
			}
		default:
			return fmt.Errorf("FAKE_CLAUDE_MODEL: turn %d step %d has neither tool, tools nor text", c.state.Turn, c.state.Step-1)
		}
	}
}

// handleCalls decides and runs the calls of one assistant message; deferred reports that the process ended at a
// deferred call.
func (c *claude) handleCalls(calls []toolCall) (deferred bool, err error) {
	for _, call := range calls {
		out, err := c.decide(call, len(calls))
		if err != nil {
			return false, err
		}
		if out.deferred {
			c.state.Pending = &call
			return true, c.finishDeferred(call)
		}
		var res toolResult
		if out.run {
			c.log.Ran = append(c.log.Ran, logRan{Tool: call.Name, ID: call.ID})
			if res, err = c.runTool(toolCall{ID: call.ID, Name: call.Name, Input: out.input}); err != nil {
				return false, err
			}
		} else {
			res = toolResult{content: out.message, isError: true, meta: "Error: " + out.message}
			if out.denied {
				c.denials = append(c.denials, denial{ToolName: call.Name, ToolUseID: call.ID, ToolInput: call.Input})
			}
		}
		c.emitToolResult(call.ID, res)
	}
	return false, nil
}

// finish emits the final text and the success result.
func (c *claude) finish(text string) error {
	c.emitAssistant("msg_01"+randomBase62(22), nil, text)
	res := c.result(text, "end_turn")
	return c.emitResult(res)
}

// finishDeferred ends the process at a deferred call (hooks, "Defer a tool call for later").
func (c *claude) finishDeferred(call toolCall) error {
	res := c.result("", "tool_deferred")
	res["deferred_tool_use"] = map[string]any{"id": call.ID, "name": call.Name, "input": call.Input}
	return c.emitResult(res)
}

// result builds the result line.
func (c *claude) result(text, stopReason string) map[string]any {
	ms := time.Since(c.start).Milliseconds()
	denials := c.denials
	if denials == nil {
		denials = []denial{}
	}
	usage := map[string]any{"input_tokens": 10 * c.turns, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
		"output_tokens": 5 * c.turns, "server_tool_use": map[string]any{"web_search_requests": 0, "web_fetch_requests": 0},
		"service_tier": "standard", "cache_creation": map[string]any{"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0}}
	return map[string]any{"type": "result", "subtype": "success", "is_error": false, "duration_ms": ms,
		"duration_api_ms": ms, "num_turns": c.turns, "result": text, "stop_reason": stopReason,
		"session_id": c.sessionID, "total_cost_usd": 0, "usage": usage,
		"modelUsage": map[string]any{c.model: map[string]any{"inputTokens": 10 * c.turns, "outputTokens": 5 * c.turns,
			"cacheReadInputTokens": 0, "cacheCreationInputTokens": 0, "webSearchRequests": 0, "costUSD": 0,
			"contextWindow": 200000, "maxOutputTokens": 64000}},
		"permission_denials": denials, "fast_mode_state": "off", "uuid": newUUID()}
}

// emitResult prints the result in the requested output format.
func (c *claude) emitResult(res map[string]any) error {
	switch c.opts.outputFormat {
	case "stream-json", "json":
		c.emit(res)
	default:
		fmt.Fprintln(c.out, res["result"])
	}
	return nil
}

// emit prints one stream-json line.
func (c *claude) emit(v any) {
	c.out.Write(marshalLine(v))
	c.out.Flush()
}

// streaming reports whether every message is printed.
func (c *claude) streaming() bool { return c.opts.outputFormat == "stream-json" }

// emitInit prints the system/init line (shape of 02_stream_claude-2.1.63.jsonl).
func (c *claude) emitInit() {
	servers := []map[string]string{}
	for name, m := range c.mcp {
		servers = append(servers, map[string]string{"name": name, "status": m.status})
	}
	keySource := "none"
	if os.Getenv("ANTHROPIC_API_KEY") != "" {
		keySource = "ANTHROPIC_API_KEY"
	}
	if !c.streaming() {
		return
	}
	c.emit(map[string]any{"type": "system", "subtype": "init", "cwd": c.cwd, "session_id": c.sessionID,
		"tools": c.tools, "mcp_servers": servers, "model": c.model, "permissionMode": c.settings.mode,
		"slash_commands": []string{"compact", "context", "cost", "init", "pr-comments", "release-notes", "review", "security-review"},
		"apiKeySource":   keySource, "claude_code_version": c.version, "output_style": "default",
		"agents": []string{"general-purpose", "statusline-setup", "Explore", "Plan"}, "skills": []string{},
		"plugins": []string{}, "uuid": newUUID(), "fast_mode_state": "off"})
}

// emitAssistant prints an assistant message, one line per content block as the real CLI does, and records it.
func (c *claude) emitAssistant(msgID string, calls []toolCall, text string) {
	c.turns++
	var blocks []map[string]any
	if calls == nil {
		blocks = append(blocks, map[string]any{"type": "text", "text": text})
	}
	for _, call := range calls {
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": call.ID, "name": call.Name, "input": call.Input})
	}
	for _, b := range blocks {
		msg := map[string]any{"model": c.model, "id": msgID, "type": "message", "role": "assistant",
			"content": []any{b}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
				"output_tokens": 5, "service_tier": "standard"}, "context_management": nil}
		line := map[string]any{"type": "assistant", "message": msg, "parent_tool_use_id": nil, "session_id": c.sessionID}
		c.record(map[string]any{"type": "assistant", "message": msg, "requestId": "req_01" + randomBase62(22)})
		line["uuid"] = c.lastUUID
		if c.streaming() {
			c.emit(line)
		}
	}
}

// emitToolResult prints the user message carrying one tool_result and records it.
func (c *claude) emitToolResult(id string, res toolResult) {
	block := map[string]any{"tool_use_id": id, "type": "tool_result", "content": res.content}
	if res.isError {
		block["is_error"] = true
	}
	c.state.LastResult = res.content
	msg := map[string]any{"role": "user", "content": []any{block}}
	c.record(map[string]any{"type": "user", "message": msg, "toolUseResult": res.meta})
	if c.streaming() {
		c.emit(map[string]any{"type": "user", "message": msg, "parent_tool_use_id": nil, "session_id": c.sessionID,
			"uuid": c.lastUUID, "tool_use_result": res.meta})
	}
}

// newUUID returns a random UUID v4.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// randomBase62 returns n random letters and digits, as in toolu_01… ids.
func randomBase62(n int) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// marshalLine encodes v as one JSON line without HTML escaping, as Node's JSON.stringify writes it.
func marshalLine(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return b.Bytes()
}
