package prompttool

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orchrun/orch/agent"
)

// TestServeOverStdio is the tool as Claude Code meets it: an MCP server on a pipe, listing one tool, whose text
// answer is the documented JSON.
func TestServeOverStdio(t *testing.T) {
	state, _ := (agent.HookState{Policy: agent.Policy{Default: agent.Deny, Allow: []string{"Read"}}}).Encode()
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(context.Background(), serverIn, serverOut, string(state), "/home/agent", "test")
	}()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "claude-code", Version: "test"}, nil).Connect(ctx,
		&mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != agent.PromptToolName {
		t.Fatalf("tools = %+v, %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: agent.PromptToolName, Arguments: map[string]any{
		"tool_name": "Write", "input": map[string]any{"file_path": "/work/x", "content": "x"}, "tool_use_id": "toolu_1"}})
	if err != nil {
		t.Fatal(err)
	}
	var answer struct{ Behavior string }
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &answer); err != nil || answer.Behavior != "deny" {
		t.Fatalf("answer = %+v, %v", answer, err)
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Fatalf("the server ended with %v", err)
	}
	if err := Serve(ctx, io.NopCloser(strings.NewReader("")), nopWriteCloser{io.Discard}, "", "", "test"); err == nil || !strings.Contains(err.Error(), agent.HookEnv) {
		t.Fatalf("without state: %v", err)
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
