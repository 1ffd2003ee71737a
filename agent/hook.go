package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// HookEnv is the environment variable through which orch gives its PreToolUse hook what it decides from. Claude
// Code runs hooks with its own environment (code.claude.com/docs/en/hooks: "Hooks run in the current directory with
// Claude Code's environment"), so this reaches the hook in the Docker sandbox as well as on the host, with no file
// to mount and nothing the agent can rewrite for the process already running.
const HookEnv = "ORCH_PERMISSIONS"

// HookProtocol is what the hook decides from and how, as `orch-hook -protocol` prints it: orch runs a hook program
// other than its own binary only when it says the same. It changes with HookState's form and with the decisions made
// from it; TestHookProtocolFollowsItsSource holds it to the hook's source, so that a hook of another release, which
// would read today's state by yesterday's rules, is never given a run.
const HookProtocol = "orch-hook 1"

// ApprovalMarker starts the reason of every call the hook refuses because a person must approve it first (a CLI
// that cannot pause a call): the parser finds such calls by it in the tool results.
const ApprovalMarker = "[orch: needs approval]"

// HookState is what the hook decides from: the run's policy, the rules people allowed for the run, and what a person
// decided about the call the session is paused at.
type HookState struct {
	Policy    Policy         `json:"policy"`
	Approved  []string       `json:"approved,omitempty"`
	Decisions []HookDecision `json:"decisions,omitempty"`
	// Defer says the CLI can pause a call (Claude Code 2.1.89+); without it a call that needs a person is denied with
	// ApprovalMarker and the run asks afterwards.
	Defer bool `json:"defer"`
	// Root is the workspace: file changes outside it ask.
	Root string `json:"root,omitempty"`
	// Protocol is the HookProtocol of the orch that wrote the state (Encode sets it): a hook of another protocol
	// blocks every call rather than read the state by other rules.
	Protocol string `json:"protocol"`
}

// Encode is the state as the hook reads it from HookEnv, stamped with this orch's HookProtocol.
func (st HookState) Encode() ([]byte, error) {
	st.Protocol = HookProtocol
	return json.Marshal(st)
}

// ParseHookState reads the state orch gave a run's hook or prompt tool in HookEnv. A state that is missing, is not
// JSON or was written for another protocol is an error: whoever reads it then decides nothing.
func ParseHookState(state string) (HookState, error) {
	var st HookState
	if strings.TrimSpace(state) == "" {
		return st, fmt.Errorf("%s is not set", HookEnv)
	}
	if err := json.Unmarshal([]byte(state), &st); err != nil {
		return st, fmt.Errorf("%s is not valid JSON (%v)", HookEnv, err)
	}
	if st.Protocol != HookProtocol {
		return st, fmt.Errorf("%s was written for %q and this is %s: the orch that runs the agent and the hook "+
			"beside it are of different releases", HookEnv, st.Protocol, HookProtocol)
	}
	return st, nil
}

// HookDecision is a person's decision about one call, found by its tool_use id or, when the agent made the call
// again in a new turn (a denial being retried), by the tool and its input.
type HookDecision struct {
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Tool         string          `json:"tool"`
	Input        json.RawMessage `json:"input,omitempty"`
	Allow        bool            `json:"allow"`
	Message      string          `json:"message,omitempty"`
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
}

// hookInput is what Claude Code writes on a PreToolUse hook's stdin (code.claude.com/docs/en/hooks, "PreToolUse
// input"); tool_use_id since 2.0.43.
type hookInput struct {
	SessionID     string          `json:"session_id"`
	Cwd           string          `json:"cwd"`
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	ToolUseID     string          `json:"tool_use_id"`
}

// hookOutput is a PreToolUse hook's answer (code.claude.com/docs/en/hooks, "PreToolUse decision control").
type hookOutput struct {
	HookSpecificOutput hookDecision `json:"hookSpecificOutput"`
}

type hookDecision struct {
	HookEventName            string          `json:"hookEventName"`
	PermissionDecision       string          `json:"permissionDecision"`
	PermissionDecisionReason string          `json:"permissionDecisionReason,omitempty"`
	UpdatedInput             json.RawMessage `json:"updatedInput,omitempty"`
}

// askTool is Claude Code's structured question tool: orch asks its questions itself.
const askTool = "AskUserQuestion"

// RunHook answers one PreToolUse call: it reads the call from stdin and the state from the environment value state,
// and writes the decision. An error means the call must be blocked (the caller exits 2, which Claude Code treats as
// a blocking error whatever the rules say): a hook that cannot decide never lets a call through.
func RunHook(stdin io.Reader, stdout io.Writer, state, home string) error {
	st, err := ParseHookState(state)
	if err != nil {
		return fmt.Errorf("orch's permission hook: %w; the call is blocked", err)
	}
	data, err := io.ReadAll(io.LimitReader(stdin, 64<<20))
	if err != nil {
		return fmt.Errorf("orch's permission hook: reading the call: %w", err)
	}
	var in hookInput
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("orch's permission hook: the call on stdin is not JSON (%v); the call is blocked", err)
	}
	if in.ToolName == "" {
		return errors.New("orch's permission hook: the call on stdin names no tool; the call is blocked")
	}
	d := st.decide(in, home)
	d.HookEventName = "PreToolUse"
	return json.NewEncoder(stdout).Encode(hookOutput{HookSpecificOutput: d})
}

// decide is the hook's decision about one call.
func (st HookState) decide(in hookInput, home string) hookDecision {
	call := Call{Tool: in.ToolName, Input: in.ToolInput, ID: in.ToolUseID}
	if hd, ok := st.decisionFor(call); ok {
		if !hd.Allow {
			msg := hd.Message
			if msg == "" {
				msg = "A person denied this call."
			}
			return hookDecision{PermissionDecision: "deny", PermissionDecisionReason: msg}
		}
		return hookDecision{PermissionDecision: "allow", PermissionDecisionReason: "approved by a person",
			UpdatedInput: hd.UpdatedInput}
	}
	if in.ToolName == askTool {
		if st.Defer {
			return hookDecision{PermissionDecision: "defer"}
		}
		return hookDecision{PermissionDecision: "deny", PermissionDecisionReason: "No one can answer this tool here. " +
			"End your turn with your question in plain text instead, listing the choices as A) … B) …, and say which you recommend."}
	}
	cwd := in.Cwd
	if cwd == "" {
		cwd = st.Root
	}
	v := st.Policy.Decide(call, st.Approved, cwd, st.Root, home)
	switch v.Decision {
	case Allow:
		return hookDecision{PermissionDecision: "allow", PermissionDecisionReason: v.Reason}
	case Deny:
		return hookDecision{PermissionDecision: "deny", PermissionDecisionReason: "Denied: " + v.Reason + "."}
	}
	if st.Defer {
		return hookDecision{PermissionDecision: "defer"}
	}
	return hookDecision{PermissionDecision: "deny", PermissionDecisionReason: ApprovalMarker + " " + v.Reason +
		". orch will ask a person; end your turn now, saying what you were about to do and why."}
}

// Refused reports whether the hook refuses call for good — a person denied it, or the policy's deny rules name it —
// so that its refusal is no question for a person: the agent was told why and goes on.
func (st HookState) Refused(c Call, home string) bool {
	if d, ok := st.decisionFor(c); ok {
		return !d.Allow
	}
	return st.Policy.Decide(c, st.Approved, st.Root, st.Root, home).Decision == Deny
}

// decisionFor finds a person's decision about call: by its id, else by the same tool and input.
func (st HookState) decisionFor(c Call) (HookDecision, bool) {
	for _, d := range st.Decisions {
		if d.ToolUseID != "" && d.ToolUseID == c.ID {
			return d, true
		}
	}
	for _, d := range st.Decisions {
		if d.Tool == c.Tool && sameJSON(d.Input, c.Input) {
			return d, true
		}
	}
	return HookDecision{}, false
}

// sameJSON compares two JSON values by meaning, not bytes.
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	ca, _ := json.Marshal(va)
	cb, _ := json.Marshal(vb)
	return bytes.Equal(ca, cb)
}

// promptingTools are the tools whose calls Claude Code asks about in its default mode; the settings orch writes
// without its hook list them as allowed when the policy allows by default.
var promptingTools = []string{"Bash", "Edit", "NotebookEdit", "WebFetch", "WebSearch"}

// settingsFor is the Claude Code settings orch passes with --settings: its hook on every tool call, and the policy's
// deny rules, which hold even if the hook fails. Ask rules are left to the hook: Claude Code evaluates an ask rule
// after a hook's allow (code.claude.com/docs/en/permissions, "Extend permissions with hooks"), which in -p is a
// denial, so a call a person allowed would be refused anyway. Without a hook (hookCmd ""), the whole policy goes
// into the rules: what asks is denied in -p and the run asks afterwards.
func settingsFor(st HookState, hookCmd string) ([]byte, string) {
	perms := map[string]any{}
	mode := "default"
	deny := slices.Clone(st.Policy.Deny)
	if hookCmd == "" {
		var ask []string
		for _, r := range st.Policy.Ask {
			if !slices.Contains(st.Approved, r) {
				ask = append(ask, r)
			}
		}
		allow := append(slices.Clone(st.Policy.Allow), st.Approved...)
		for _, d := range st.Decisions {
			if d.Allow {
				allow = append(allow, RuleFor(Call{Tool: d.Tool, Input: d.Input}, Verdict{}))
			}
		}
		switch st.Policy.Default {
		case Allow:
			allow = append(allow, promptingTools...)
		case Deny:
			mode = "dontAsk"
		}
		if len(ask) > 0 {
			perms["ask"] = ask
		}
		if len(allow) > 0 {
			perms["allow"] = allow
		}
	}
	if len(deny) > 0 {
		perms["deny"] = deny
	}
	s := map[string]any{}
	if len(perms) > 0 {
		s["permissions"] = perms
	}
	if hookCmd != "" {
		s["hooks"] = map[string]any{"PreToolUse": []any{map[string]any{"matcher": "*",
			"hooks": []any{map[string]any{"type": "command", "command": hookCmd, "timeout": hookTimeoutSeconds}}}}}
	}
	data, _ := json.Marshal(s)
	return data, mode
}

// hookTimeoutSeconds bounds one run of the hook; it decides from its input alone, in milliseconds. A hook that
// times out gives no decision and the call goes to Claude Code's rules, which deny what would prompt in -p.
const hookTimeoutSeconds = 30
