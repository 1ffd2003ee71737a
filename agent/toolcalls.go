package agent

import (
	"bytes"
	"encoding/json"
	"strings"
)

// What the claude parser learns about tool calls: each call as the agent makes it (for live progress), the call a
// session paused at (the result's deferred_tool_use), and the calls that were refused for want of a person's
// approval (the result's permission_denials, and the tool results carrying ApprovalMarker).

// ToolWatcher is implemented by parsers that can report each tool call as the agent makes it.
type ToolWatcher interface {
	WatchTools(fn func(Call))
}

// The calls a parser remembers to match refusals against their inputs are the latest ones, within these bounds: the
// hook refuses a call as the agent makes it, and the refusal's tool result comes right after the call.
const (
	maxCallsKept = 4096
	// maxCallBytes bounds the inputs they hold: a refused call's input is what a person reads to approve it, and
	// 8 MiB holds thousands of commands or a few whole files being written.
	maxCallBytes = 8 << 20
	// maxDeniedKept bounds the refused calls reported: each is put to a person, and a session with more than this
	// refused is one to look at as a whole.
	maxDeniedKept = 64
)

// WatchTools implements ToolWatcher.
func (p *claudeParser) WatchTools(fn func(Call)) { p.onTool = fn }

// toolUses records the tool_use blocks of an assistant message (sub-agents' included: their calls are the run's too).
func (p *claudeParser) toolUses(content json.RawMessage) {
	if !bytes.Contains(content, []byte(`"tool_use"`)) {
		return
	}
	var blocks []struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return
	}
	for _, b := range blocks {
		if b.Type != "tool_use" || b.Name == "" {
			continue
		}
		c := Call{ID: b.ID, Tool: b.Name, Input: append(json.RawMessage(nil), b.Input...)}
		p.keepCall(c)
		if p.onTool != nil {
			p.onTool(c)
		}
	}
}

// toolResults finds the calls orch's hook refused because a person must approve them first.
func (p *claudeParser) toolResults(content json.RawMessage) {
	if !bytes.Contains(content, []byte(ApprovalMarker)) {
		return
	}
	var blocks []struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return
	}
	for _, b := range blocks {
		if b.Type != "tool_result" || !b.IsError || !bytes.Contains(b.Content, []byte(ApprovalMarker)) {
			continue
		}
		c, ok := p.calls[b.ToolUseID]
		if !ok {
			c = Call{ID: b.ToolUseID}
		}
		p.denied = appendCall(p.denied, c)
	}
}

// resultCalls reads the result line's paused call and its permission denials.
func (p *claudeParser) resultCalls(m map[string]json.RawMessage, r *resultInfo) {
	r.stopReason = jsonString(m["stop_reason"])
	if r.stopReason == "" && jsonString(m["terminal_reason"]) == "tool_deferred" {
		r.stopReason = "tool_deferred" // seen in one recorded transcript: stop_reason "tool_use", terminal_reason "tool_deferred"
	}
	var d struct {
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	if raw, ok := m["deferred_tool_use"]; ok && json.Unmarshal(raw, &d) == nil && d.Name != "" {
		r.deferred = &Call{ID: d.ID, Tool: d.Name, Input: d.Input}
	}
	var denials []struct {
		ToolName  string          `json:"tool_name"`
		ToolUseID string          `json:"tool_use_id"`
		ToolInput json.RawMessage `json:"tool_input"`
	}
	if json.Unmarshal(m["permission_denials"], &denials) == nil {
		for _, dn := range denials {
			if dn.ToolName != "" {
				r.denials = appendCall(r.denials, Call{ID: dn.ToolUseID, Tool: dn.ToolName, Input: dn.ToolInput})
			}
		}
	}
}

// keepCall remembers c, forgetting the oldest calls beyond the bounds.
func (p *claudeParser) keepCall(c Call) {
	size := len(c.ID) + len(c.Tool) + len(c.Input)
	if _, seen := p.calls[c.ID]; seen || c.ID != ident(c.ID) || c.ID == "" || size > maxCallBytes {
		return
	}
	p.calls[c.ID] = c
	p.callOrder = append(p.callOrder, c.ID)
	p.callBytes += size
	for len(p.callOrder) > maxCallsKept || p.callBytes > maxCallBytes {
		old := p.calls[p.callOrder[0]]
		p.callBytes -= len(old.ID) + len(old.Tool) + len(old.Input)
		delete(p.calls, old.ID)
		p.callOrder = p.callOrder[1:]
	}
}

// appendCall adds c unless a call with its id is there already, or maxDeniedKept calls are.
func appendCall(calls []Call, c Call) []Call {
	if len(calls) >= maxDeniedKept {
		return calls
	}
	for _, x := range calls {
		if c.ID != "" && x.ID == c.ID {
			return calls
		}
	}
	return append(calls, c)
}

// Describe says what a call does, in a line, for progress: "Bash: npm test", "Edit: src/x.go".
func (c Call) Describe() string {
	in := map[string]any{}
	_ = json.Unmarshal(c.Input, &in)
	var what string
	switch c.Tool {
	case "Bash":
		what, _ = in["command"].(string)
	case "Edit", "Write", "MultiEdit", "Read", "NotebookEdit":
		what, _ = in["file_path"].(string)
		if what == "" {
			what, _ = in["notebook_path"].(string)
		}
	case "Glob", "Grep":
		what, _ = in["pattern"].(string)
	case "WebFetch":
		what, _ = in["url"].(string)
	case "WebSearch":
		what, _ = in["query"].(string)
	case askTool:
		what = firstQuestion(c)
	case "Task", "Agent":
		what, _ = in["description"].(string)
	default:
		what = inputString(in)
	}
	what = strings.Join(strings.Fields(what), " ")
	if what == "" {
		return c.Tool
	}
	if len(what) > 120 {
		what = strings.ToValidUTF8(what[:117], "") + "…"
	}
	return c.Tool + ": " + what
}

// firstQuestion is the first question of a call to AskUserQuestion.
func firstQuestion(c Call) string {
	var in struct {
		Questions []struct {
			Question string `json:"question"`
		} `json:"questions"`
	}
	if json.Unmarshal(c.Input, &in) != nil || len(in.Questions) == 0 {
		return ""
	}
	return in.Questions[0].Question
}

// IsQuestion reports whether c is Claude asking the user (AskUserQuestion).
func (c Call) IsQuestion() bool { return c.Tool == askTool }
