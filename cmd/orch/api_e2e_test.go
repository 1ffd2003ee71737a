package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// apiClient talks to orch's API as a script would.
type apiClient struct {
	t     *testing.T
	base  string
	token string
}

func (c apiClient) do(method, path string, body any) (int, map[string]any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// waitStatus waits for a run to reach status, reading it through get.
func waitStatus(t *testing.T, what string, get func() string, want string) {
	t.Helper()
	last := ""
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if last = get(); last == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the run is %q, not %q", what, last, want)
		}
	}
}

// A script drives a run through `orch web`'s API with a token: it starts the run, finds its question, answers it, and
// the run goes on to its end in the worker beside the view; the audit trail names the token's person and the API.
func TestTheAPIDrivesARunFromStartToEnd(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	port := freePort(t)
	_, out := startOrch(t, dir, []string{"ORCH_API_TOKENS=ci-bot:0123456789abcdef0123"}, "web", "--agent", "sim",
		"--addr", fmt.Sprintf("127.0.0.1:%d", port))
	waitOutput(t, out, "web view on http://")
	c := apiClient{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	if code, _ := c.do("GET", "/api/v1/runs", nil); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d, want 401", code)
	}
	c.token = "0123456789abcdef0123"
	code, run := c.do("POST", "/api/v1/runs", map[string]any{"plan": "examples/plans/ambiguous_task.md"})
	if code != http.StatusCreated {
		t.Fatalf("start: %d %v", code, run)
	}
	id := run["run_id"].(string)
	status := func() string { _, r := c.do("GET", "/api/v1/runs/"+id, nil); s, _ := r["status"].(string); return s }
	waitStatus(t, "before the answer", status, "parked")
	_, qs := c.do("GET", "/api/v1/questions", nil)
	list, _ := qs["questions"].([]any)
	if len(list) != 1 {
		t.Fatalf("questions: %v", qs)
	}
	q := list[0].(map[string]any)
	if code, res := c.do("POST", "/api/v1/runs/"+id+"/answer", map[string]any{"escalation_id": q["escalation_id"], "choose": "B"}); code != http.StatusOK {
		t.Fatalf("answer: %d %v", code, res)
	}
	waitStatus(t, "after the answer", status, "completed")
	log := orch(t, dir, "", "escalation", "log", id)
	if !regexp.MustCompile(`resolved\s+ci-bot\s+api\s+chose B\) In-memory`).MatchString(log.stdout) {
		t.Errorf("the audit trail does not name ci-bot via the API:\n%s", log.stdout)
	}
	// The same server serves MCP: the token's person again.
	code, listed := c.do("GET", "/api/v1/runs?status=completed", nil)
	if runs, _ := listed["runs"].([]any); code != 200 || len(runs) != 1 {
		t.Fatalf("completed runs: %d %v", code, listed)
	}
}

// An MCP client (Claude Desktop, Claude Code) starts `orch mcp` and drives a run with its tools: start, question,
// answer, end.
func TestOrchMCPOverStdio(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	cmd := exec.Command(orchBin, "mcp", "--agent", "sim")
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "ORCH_BRAIN=heuristic", "ANTHROPIC_API_KEY=")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			t.Fatalf("%s failed: %v", name, res.Content[0].(*mcp.TextContent).Text)
		}
		data, _ := json.Marshal(res.StructuredContent)
		var out map[string]any
		json.Unmarshal(data, &out)
		return out
	}
	run := call("start_run", map[string]any{"plan": "examples/plans/ambiguous_task.md"})
	id, _ := run["run_id"].(string)
	status := func() string { s, _ := call("get_run", map[string]any{"run_id": id})["status"].(string); return s }
	waitStatus(t, "before the answer", status, "parked")
	qs, _ := call("list_questions", map[string]any{})["questions"].([]any)
	if len(qs) != 1 || !strings.Contains(fmt.Sprint(qs[0]), "In-memory") {
		t.Fatalf("questions: %v", qs)
	}
	call("answer_question", map[string]any{"run_id": id, "choose": "B"})
	waitStatus(t, "after the answer", status, "completed")
	if log := orch(t, dir, "", "escalation", "log", id); !strings.Contains(log.stdout, "mcp") {
		t.Errorf("the audit trail does not name MCP:\n%s", log.stdout)
	}
}
