package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect is an MCP client session with who's server, over the SDK's in-memory transports.
func connect(t *testing.T, f *fixture, who string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := f.api.MCP(who, "test").Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a tool and decodes its structured result into out; it returns whether the tool failed, and its text.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any, out any) (failed bool, text string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if !res.IsError && out != nil {
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: decoding %s: %v", name, data, err)
		}
	}
	return res.IsError, text
}

func TestMCPDrivesRuns(t *testing.T) {
	for name, f := range serve(t, Config{}) {
		t.Run(name, func(t *testing.T) {
			erin := "erin-" + name
			cs := connect(t, f, erin)
			tools, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			for _, want := range []string{"start_run", "list_runs", "get_run", "get_events", "get_diff", "list_questions", "answer_question", "cancel_run"} {
				if !slices.Contains(names, want) {
					t.Errorf("no tool %s among %v", want, names)
				}
			}

			var started RunDetail
			if failed, text := callTool(t, cs, "start_run", map[string]any{"plan": "ambiguous_task.md"}, &started); failed || started.RunID == "" {
				t.Fatalf("start_run failed: %s", text)
			}
			if started.Origin != "mcp" || started.StartedBy != erin {
				t.Fatalf("started by %s via %s, want erin via mcp", started.StartedBy, started.Origin)
			}
			var list RunList
			callTool(t, cs, "list_runs", map[string]any{"status": "queued", "user": erin}, &list)
			if len(list.Runs) != 1 || list.Runs[0].RunID != started.RunID {
				t.Fatalf("list_runs = %+v", list)
			}

			parked := parkedRun(t, f.store)
			var qs QuestionList
			callTool(t, cs, "list_questions", map[string]any{}, &qs)
			if mine := ours(qs.Questions, parked.ID); len(mine) != 1 || len(mine[0].Options) != 2 {
				t.Fatalf("list_questions = %+v", qs)
			}
			var resolved Resolved
			if failed, text := callTool(t, cs, "answer_question", map[string]any{"run_id": parked.ID, "choose": "A"}, &resolved); failed {
				t.Fatalf("answer_question failed: %s", text)
			}
			got, _ := f.store.Get(context.Background(), parked.ID)
			if res := got.Escalations[0].Resolution; res == nil || res.By != erin || res.Via != "mcp" || res.Key != "A" {
				t.Fatalf("resolution = %+v, want A by erin via mcp", res)
			}
			// A second answer loses, and the tool says who answered first.
			failed, text := callTool(t, cs, "answer_question", map[string]any{"run_id": parked.ID, "escalation_id": got.Escalations[0].ID, "choose": "B"}, nil)
			if !failed || !strings.Contains(text, "answered by "+erin) {
				t.Fatalf("a second answer: failed %v, %q", failed, text)
			}
			var diff string
			if failed, diff = callTool(t, cs, "get_diff", map[string]any{"run_id": parked.ID}, nil); failed || !strings.Contains(diff, "+hello") {
				t.Fatalf("get_diff: failed %v, %q", failed, diff)
			}
			var events EventList
			callTool(t, cs, "get_events", map[string]any{"run_id": parked.ID}, &events)
			if len(events.Events) < 2 || events.Events[0]["type"] != "run_started" {
				t.Fatalf("get_events = %+v", events)
			}
			var cancelled RunDetail
			if failed, text := callTool(t, cs, "cancel_run", map[string]any{"run_id": started.RunID, "reason": "not now"}, &cancelled); failed || cancelled.Status != "aborted" {
				t.Fatalf("cancel_run: %s (%+v)", text, cancelled.RunSummary)
			}
			for _, c := range []struct {
				tool string
				args map[string]any
				says string
			}{
				{"start_run", map[string]any{"plan": "../../etc/passwd"}, "outside the workspace"},
				{"get_run", map[string]any{"run_id": "nope"}, "nope"},
				{"answer_question", map[string]any{"run_id": parked.ID, "retry": true, "abort": "x"}, "not retry and abort"},
				{"list_runs", map[string]any{"status": "lost"}, "not a run status"},
			} {
				if failed, text := callTool(t, cs, c.tool, c.args, nil); !failed || !strings.Contains(text, c.says) || strings.Contains(text, f.ws) {
					t.Errorf("%s %v: failed %v, %q; want a failure saying %q", c.tool, c.args, failed, text, c.says)
				}
			}
		})
	}
}

// TestMCPOverHTTPIsThePersonOfTheToken drives the streamable HTTP endpoint as a client elsewhere would: a token names
// the person, no token is refused before the MCP server sees anything.
func TestMCPOverHTTPIsThePersonOfTheToken(t *testing.T) {
	tokens, _ := ParseTokens("frank:0123456789abcdef0123")
	for name, f := range serve(t, Config{Tokens: tokens}) {
		t.Run(name, func(t *testing.T) {
			resp, err := http.Post(f.srv.URL+MCPPath, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("MCP without a token = %d, want 401", resp.StatusCode)
			}
			client := &http.Client{Transport: bearer{token: "0123456789abcdef0123"}}
			ctx := context.Background()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx,
				&mcp.StreamableClientTransport{Endpoint: f.srv.URL + MCPPath, HTTPClient: client}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			parked := parkedRun(t, f.store)
			if failed, text := callTool(t, cs, "answer_question", map[string]any{"run_id": parked.ID, "answer": "use the in-memory one"}, nil); failed {
				t.Fatalf("answer over HTTP: %s", text)
			}
			got, _ := f.store.Get(ctx, parked.ID)
			if res := got.Escalations[0].Resolution; res == nil || res.By != "frank" || res.Via != "mcp" {
				t.Fatalf("resolution = %+v, want frank via mcp", res)
			}
		})
	}
}

// bearer adds a token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
