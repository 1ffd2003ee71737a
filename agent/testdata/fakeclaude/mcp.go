package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// mcpServerConfig is one stdio server of an --mcp-config file.
type mcpServerConfig struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// mcpClient is a connection to one stdio MCP server (JSON-RPC 2.0, one message per line).
type mcpClient struct {
	name   string
	status string
	tools  []string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	nextID int
}

// startMCP starts the servers of every --mcp-config and lists their tools, as the real CLI does at start-up.
func (c *claude) startMCP() error {
	for _, cfg := range c.opts.mcpConfigs {
		var file struct {
			MCPServers map[string]mcpServerConfig `json:"mcpServers"`
		}
		if err := jsonOrFile(cfg, &file); err != nil {
			return usageError{fmt.Sprintf("Error: Invalid MCP configuration: %v", err)}
		}
		for name, sc := range file.MCPServers {
			if sc.Type != "" && sc.Type != "stdio" {
				return unmodelled{"MCP server type " + sc.Type}
			}
			c.mcp[name] = connectMCP(name, sc)
		}
	}
	return nil
}

// connectMCP starts a server and runs the handshake; a server that fails is reported "failed" in init.
func connectMCP(name string, sc mcpServerConfig) *mcpClient {
	m := &mcpClient{name: name, status: "failed", lines: make(chan []byte, 16)}
	m.cmd = exec.Command(sc.Command, sc.Args...)
	m.cmd.Env = os.Environ()
	for k, v := range sc.Env {
		m.cmd.Env = append(m.cmd.Env, k+"="+v)
	}
	m.cmd.Stderr = os.Stderr
	var err error
	if m.stdin, err = m.cmd.StdinPipe(); err != nil {
		return m
	}
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		return m
	}
	if err := m.cmd.Start(); err != nil {
		m.cmd = nil
		return m
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			m.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(m.lines)
	}()
	if _, err := m.request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "claude-code", "version": "fake"}}); err != nil {
		return m
	}
	if m.notify("notifications/initialized") != nil {
		return m
	}
	m.status = "connected"
	if res, err := m.request("tools/list", map[string]any{}); err == nil {
		var list struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		json.Unmarshal(res, &list)
		for _, t := range list.Tools {
			m.tools = append(m.tools, "mcp__"+name+"__"+t.Name)
		}
	}
	return m
}

// notify sends a JSON-RPC notification.
func (m *mcpClient) notify(method string) error {
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	_, err := m.stdin.Write(append(data, '\n'))
	return err
}

// request sends a JSON-RPC request and waits for its response.
func (m *mcpClient) request(method string, params any) (json.RawMessage, error) {
	m.nextID++
	id := m.nextID
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := m.stdin.Write(append(data, '\n')); err != nil {
		return nil, fmt.Errorf("MCP server %s: writing %s: %w", m.name, method, err)
	}
	timeout := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-m.lines:
			if !ok {
				return nil, fmt.Errorf("MCP server %s closed its output before answering %s", m.name, method)
			}
			var resp struct {
				ID     *int            `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(line, &resp) != nil || resp.ID == nil || *resp.ID != id || resp.Method != "" {
				continue
			}
			if resp.Error != nil {
				return nil, fmt.Errorf("MCP server %s: %s: %s", m.name, method, resp.Error.Message)
			}
			return resp.Result, nil
		case <-timeout:
			return nil, fmt.Errorf("MCP server %s did not answer %s within 60 s", m.name, method)
		}
	}
}

// close stops the server.
func (m *mcpClient) close() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	m.stdin.Close()
	done := make(chan struct{})
	go func() { m.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		m.cmd.Process.Kill()
		<-done
	}
}

// callPromptTool asks the --permission-prompt-tool about a call and returns the text of its answer.
func (c *claude) callPromptTool(call toolCall) (string, error) {
	rest, ok := strings.CutPrefix(c.opts.promptTool, "mcp__")
	server, tool, ok2 := strings.Cut(rest, "__")
	if !ok || !ok2 {
		return "", unmodelled{"permission prompt tool " + c.opts.promptTool + " (only mcp__server__tool)"}
	}
	m := c.mcp[server]
	if m == nil || m.status != "connected" {
		return "", fmt.Errorf("the permission prompt tool %s: MCP server %s is not connected", c.opts.promptTool, server)
	}
	res, err := m.request("tools/call", map[string]any{"name": tool, "arguments": map[string]any{
		"tool_name": call.Name, "input": call.Input, "tool_use_id": call.ID}})
	if err != nil {
		return "", err
	}
	var out struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(res, &out); err != nil || len(out.Content) == 0 {
		return "", fmt.Errorf("the permission prompt tool %s returned no text content", c.opts.promptTool)
	}
	return out.Content[0].Text, nil
}
