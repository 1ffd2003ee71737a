// Package prompttool serves orch's permission prompt tool, the MCP server Claude Code asks about a call its
// PreToolUse hook left undecided (agent.HookState.Prompt decides). It is a package of its own so that the agent
// package, which orch's hook and the small programs beside orch link, does not carry an MCP implementation.
package prompttool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orchrun/orch/agent"
)

// Serve serves the permission prompt tool over MCP's stdio transport (newline-delimited JSON-RPC on in and out) until
// the client closes in, deciding from state (the agent.HookEnv value). A state that is missing, not JSON or of another
// protocol (agent.ParseHookState) is an error before anything is served: Claude Code then finds the server failed and
// its rules deny what would ask.
func Serve(ctx context.Context, in io.ReadCloser, out io.WriteCloser, state, home, version string) error {
	st, err := agent.ParseHookState(state)
	if err != nil {
		return fmt.Errorf("orch's permission prompt tool: %w", err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: agent.PromptServer, Version: version}, nil)
	srv.AddTool(&mcp.Tool{Name: agent.PromptToolName, Description: "orch decides tool calls by its run's policy.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"tool_name":{"type":"string"},"input":{},"tool_use_id":{"type":"string"}},"required":["tool_name"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var call agent.PromptCall
			if err := json.Unmarshal(req.Params.Arguments, &call); err != nil || call.ToolName == "" {
				return nil, errors.New("the call names no tool")
			}
			data, err := json.Marshal(st.Prompt(call, home))
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}, nil
		})
	err = srv.Run(ctx, &mcp.IOTransport{Reader: in, Writer: out})
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
