package agent

import (
	"encoding/json"
	"errors"
)

// Claude Code's permission prompt tool (code.claude.com/docs/en/cli-reference, `--permission-prompt-tool`: "Specify
// an MCP tool to handle permission prompts in non-interactive mode"). Claude Code calls it for a tool call that
// would otherwise ask a person, with {tool_name, input, tool_use_id}, and reads the text of its answer as JSON:
// {"behavior":"allow","updatedInput":{…}} or {"behavior":"deny","message":"…"}. From 2.1.187 a `-p` session offers
// AskUserQuestion only when such a tool is given (QuestionsHiddenVersion), so orch gives one to every claude run it
// gives its hook: its questions then reach the hook, which pauses them for a person as before.
//
// The hook decides first (PreToolUse runs before the permission flow), so the tool is asked only about what the hook
// left undecided: a call in a message with several calls, where Claude Code ignores a pause. It cannot pause a call
// either, so it answers as the hook does for a CLI that cannot: the policy's allow and deny, a person's decision
// when there is one, and otherwise a denial marked ApprovalMarker that orch finds in the result and asks about.

// PromptServer is the MCP server name orch's permission prompt tool is served under, and PromptToolName the tool;
// Claude Code names it mcp__<server>__<tool>.
const (
	PromptServer   = "orch"
	PromptToolName = "approve"
	PromptTool     = "mcp__" + PromptServer + "__" + PromptToolName
)

// PromptCall is what Claude Code sends the permission prompt tool.
type PromptCall struct {
	ToolName  string          `json:"tool_name" jsonschema:"the tool Claude Code asks about"`
	Input     json.RawMessage `json:"input" jsonschema:"the call's input"`
	ToolUseID string          `json:"tool_use_id,omitempty" jsonschema:"the call's id"`
}

// promptAnswer is the tool's answer, which Claude Code reads from its text.
type promptAnswer struct {
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	Message      string          `json:"message,omitempty"`
}

// Prompt decides a call Claude Code asks the permission prompt tool about, from the state orch gave the run.
func (st HookState) Prompt(call PromptCall, home string) promptAnswer {
	st.Defer = false // a prompt tool answers now: what needs a person is denied and asked about afterwards
	d := st.decide(hookInput{ToolName: call.ToolName, ToolInput: call.Input, ToolUseID: call.ToolUseID, Cwd: st.Root}, home)
	if d.PermissionDecision == "allow" {
		in := d.UpdatedInput
		if len(in) == 0 {
			in = call.Input // Claude Code takes the input the tool answers with: the call as it was
		}
		return promptAnswer{Behavior: "allow", UpdatedInput: in}
	}
	msg := d.PermissionDecisionReason
	if msg == "" {
		msg = "Denied by orch's policy."
	}
	return promptAnswer{Behavior: "deny", Message: msg}
}

// promptConfig is the --mcp-config that starts orch's permission prompt tool with command (argv), the state in its
// environment: a server's env is the one way to give it a value the documentation names for every version.
func promptConfig(command []string, state []byte) (string, error) {
	if len(command) == 0 {
		return "", errors.New("no command for the permission prompt tool")
	}
	cfg := map[string]any{"mcpServers": map[string]any{PromptServer: map[string]any{"type": "stdio",
		"command": command[0], "args": command[1:], "env": map[string]string{HookEnv: string(state)}}}}
	data, err := json.Marshal(cfg)
	return string(data), err
}
