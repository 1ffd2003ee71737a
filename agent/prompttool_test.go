package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPromptToolDecidesAsTheHook(t *testing.T) {
	st := HookState{Policy: Policy{Default: Ask, Allow: []string{"Bash(go test:*)"}, Deny: []string{"Bash(rm:*)"}},
		Defer: true, Root: "/work",
		Decisions: []HookDecision{{ToolUseID: "toolu_q", Allow: true, UpdatedInput: json.RawMessage(`{"answers":{"Q":"A"}}`)}}}
	for _, c := range []struct {
		name     string
		call     PromptCall
		behavior string
		input    string
		says     string
	}{
		{"allowed by the policy", PromptCall{ToolName: "Bash", Input: json.RawMessage(`{"command":"go test ./..."}`)}, "allow", `{"command":"go test ./..."}`, ""},
		{"denied by the policy", PromptCall{ToolName: "Bash", Input: json.RawMessage(`{"command":"rm -rf build"}`)}, "deny", "", "Denied"},
		// A prompt tool cannot pause a call: what needs a person is refused with the marker orch asks about.
		{"needs a person", PromptCall{ToolName: "Bash", Input: json.RawMessage(`{"command":"git push"}`)}, "deny", "", ApprovalMarker},
		{"a question no one can answer now", PromptCall{ToolName: "AskUserQuestion", Input: json.RawMessage(`{"questions":[]}`)}, "deny", "", "in plain text"},
		{"a person's answer", PromptCall{ToolName: "AskUserQuestion", ToolUseID: "toolu_q", Input: json.RawMessage(`{"questions":[]}`)}, "allow", `{"answers":{"Q":"A"}}`, ""},
	} {
		got := st.Prompt(c.call, "/home/agent")
		if got.Behavior != c.behavior || c.input != "" && string(got.UpdatedInput) != c.input || !strings.Contains(got.Message, c.says) {
			t.Errorf("%s: %+v, want %s %s %q", c.name, got, c.behavior, c.input, c.says)
		}
	}
}

func TestClaudeGetsThePromptToolWithItsHook(t *testing.T) {
	st := &HookState{Policy: Policy{Default: Ask}}
	c := NewClaude(ClaudeConfig{Hook: "/usr/bin/orch claude-hook", PromptTool: []string{"/usr/bin/orch", "mcp", "--permission-prompt"}})
	cmd, err := c.Command(Request{Prompt: "go", Permissions: st})
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(cmd.Args, "\x00")
	i, j := strings.Index(args, "--mcp-config"), strings.Index(args, "--permission-prompt-tool\x00"+PromptTool)
	if i < 0 || j < i {
		t.Fatalf("args %q: want --mcp-config, then --permission-prompt-tool %s (the config takes what follows it up to an option)", cmd.Args, PromptTool)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	for k, a := range cmd.Args {
		if a == "--mcp-config" {
			if err := json.Unmarshal([]byte(cmd.Args[k+1]), &cfg); err != nil {
				t.Fatal(err)
			}
		}
	}
	srv := cfg.MCPServers[PromptServer]
	if srv.Command != "/usr/bin/orch" || strings.Join(srv.Args, " ") != "mcp --permission-prompt" || !strings.Contains(srv.Env[HookEnv], `"policy"`) {
		t.Fatalf("the server = %+v", srv)
	}
	// Without the hook there is nothing to route questions to: no prompt tool either.
	bare, _ := NewClaude(ClaudeConfig{PromptTool: []string{"/usr/bin/orch"}}).Command(Request{Prompt: "go", Permissions: st})
	if strings.Contains(strings.Join(bare.Args, " "), "--permission-prompt-tool") {
		t.Fatalf("a prompt tool without the hook: %q", bare.Args)
	}
}
