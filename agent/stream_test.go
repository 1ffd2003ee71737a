package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/orchrun/orch/quota"
)

// feed reads r line by line as a sandbox would, with a reused buffer, so a parser that kept a line
// after Line returned would see it overwritten.
func feed(t testing.TB, p Parser, r io.Reader) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		p.Line(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading transcript: %v", err)
	}
}

func parseFile(t *testing.T, name string, exit int, stderr string) Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "claude", name))
	if err != nil {
		t.Fatal(err)
	}
	p := newClaudeParser()
	feed(t, p, bytes.NewReader(data))
	return p.Finish(exit, []byte(stderr))
}

func TestClaudeParserTranscripts(t *testing.T) {
	setNow(t, limitNow)
	const (
		result02    = "Done. Here's a summary of what was implemented:\n\n**Files created/updated:**\n\n- `product/main.py` — FastAPI app with all 5 endpoints:\n  - `GET /health` → `{\"status\": \"ok\"}`\n  - `POST /bookmarks` → creates bookmark, returns 201; `AnyHttpUrl` rejects invalid URLs with 422\n  - `GET /bookmarks` → lists all; `?tag=xxx` filters by exact tag match\n  - `GET /bookmarks/{id}` → returns one bookmark or 404\n  - `DELETE /bookmarks/{id}` → returns deleted bookmark or 404\n\n- `product/requirements.txt` — pinned: `fastapi==0.115.14`, `uvicorn==0.34.3`, `pydantic==2.12.5`\n\n- `product/README.md` — curl examples for every endpoint\n\n- `product/CLAUDE.md` — updated with project layout and run instructions\n\n- `cto/tasks/task-002/status.md` — set to `review`"
		result03    = "I found 3 Ruby files in the directory:\n\n1. `quick_start.rb`\n2. `advanced_examples.rb`\n3. `claude_agent_sdk_demo.rb`"
		sample01    = "Successfully removed debug print statement from file and added review comment to document the change."
		noResult    = "no result line: the agent stopped before it finished"
		sessLimit   = "You've hit your session limit ┬À resets 4:40pm (Europe/Belgrade)"
		invalidKey  = "Invalid API key · Fix external API key"
		overloaded  = "API Error: 529 Overloaded. This is a server-side issue."
		overloaded2 = "API Error: 529 Overloaded. This is a server-side issue, usually temporary."
		noVerbose   = "When using --print, --output-format=stream-json requires --verbose"
	)
	sample01Result := Result{
		Text:      sample01 + "\n\nresult subtype \"\" is not success",
		SessionID: "sample-session-id",
		Errors:    []string{`result subtype "" is not success`},
		// The abridged result carries no usage: the four assistant messages are summed.
		InputTokens: 630, OutputTokens: 265, CacheReadTokens: 315,
		CostUSD: 0.0347, Model: "claude-test-model", NumTurns: 4,
	}
	tests := []struct {
		name   string
		file   string
		exit   int
		stderr string
		want   Result
	}{
		{
			name: "sample turns, pretty-printed array", file: "01_sample_turns_pretty.json",
			want: sample01Result,
		},
		{
			name: "sample turns, one-line array", file: "01_sample_turns_array.json",
			want: sample01Result,
		},
		{
			name: "real stream-json 2.1.63", file: "02_stream_claude-2.1.63.jsonl",
			want: Result{Version: "2.1.63",
				Text: result02, SessionID: "e9ccd9f0-820e-4fad-98d9-d89e6d771b96", Success: true, Subtype: "success",
				InputTokens: 20, OutputTokens: 5307, CacheReadTokens: 472323, CacheCreationTokens: 16467,
				CostUSD: 0.47185524999999995, Model: "claude-sonnet-4-6", NumTurns: 19,
			},
		},
		{
			name: "golden lines 2.1.3, result session wins over a later line", file: "03_golden_lines_claude-2.1.3.jsonl",
			want: Result{Version: "2.1.3",
				Text: result03, SessionID: "c8775347-af93-45c7-b9bf-a6e009483fa5", Success: true, Subtype: "success",
				InputTokens: 7, OutputTokens: 114, CacheReadTokens: 35858, CacheCreationTokens: 440,
				CostUSD: 0.0186724, Model: "claude-sonnet-4-5-20250929", NumTurns: 2,
			},
		},
		{
			name: "success line but exit 1", file: "03_golden_lines_claude-2.1.3.jsonl", exit: 1,
			want: Result{Version: "2.1.3",
				Text: result03 + "\n\nexit status 1", SessionID: "c8775347-af93-45c7-b9bf-a6e009483fa5", Subtype: "success",
				Errors:      []string{"exit status 1"},
				InputTokens: 7, OutputTokens: 114, CacheReadTokens: 35858, CacheCreationTokens: 440,
				CostUSD: 0.0186724, Model: "claude-sonnet-4-5-20250929", NumTurns: 2,
			},
		},
		{
			name: "invalid API key, json without type", file: "04a_invalid_api_key.json", exit: 1,
			want: Result{
				Text: invalidKey + "\n\nexit status 1", SessionID: "...",
				Errors: []string{invalidKey, "exit status 1"},
			},
		},
		{
			name: "stream-json without --verbose: stderr only", exit: 1, stderr: noVerbose + "\n",
			want: Result{
				Text:   noResult + "\nexit status 1\nstderr: " + noVerbose,
				Errors: []string{noResult, "exit status 1", "stderr: " + noVerbose},
			},
		},
		{
			name: "error_max_turns has no result key", file: "04b_max_turns.json", exit: 1,
			want: Result{StopReason: "tool_use",
				Text: "Reached maximum number of turns (2)\nexit status 1", Subtype: "error_max_turns",
				Errors: []string{"Reached maximum number of turns (2)", "exit status 1"}, NumTurns: 3,
			},
		},
		{
			name: "error_max_budget_usd", file: "04b_max_budget.json", exit: 1,
			want: Result{
				Text: "Reached maximum budget ($0.5)\nexit status 1", Subtype: "error_max_budget_usd",
				Errors: []string{"Reached maximum budget ($0.5)", "exit status 1"}, NumTurns: 1, CostUSD: 1.2,
			},
		},
		{
			name: "401: api_retry, assistant error, is_error success", file: "04b_auth_401.jsonl", exit: 1,
			want: Result{
				Text: invalidKey + "\n\n" + strings.Join([]string{
					"api_retry: HTTP 401 authentication_failed (2 retries, last attempt 2/2)",
					"authentication_failed",
					"API error 401: " + invalidKey,
					"exit status 1",
				}, "\n"),
				Subtype: "success",
				Errors: []string{
					"api_retry: HTTP 401 authentication_failed (2 retries, last attempt 2/2)",
					"authentication_failed",
					"API error 401: " + invalidKey,
					"exit status 1",
				},
			},
		},
		{
			name: "SIGINT before output: exit 0, no result", file: "04b_sigint_no_result.jsonl",
			want: Result{
				Text:   "[Request interrupted by user]\n" + noResult,
				Errors: []string{"[Request interrupted by user]", noResult},
			},
		},
		{
			name: "429 session limit", file: "04c_session_limit_429.json", exit: 1,
			want: Result{StopReason: "stop_sequence",
				Text:      sessLimit + "\n\nAPI error 429: " + sessLimit + "\nexit status 1",
				SessionID: "30ae2dc3-5d4b-46b5-959f-6fa0c9f9f876", Subtype: "success",
				Errors:      []string{"API error 429: " + sessLimit, "exit status 1"},
				InputTokens: 24, OutputTokens: 2236, CacheReadTokens: 996109, CacheCreationTokens: 79171,
				CostUSD: 0.8086047000000001, Model: "claude-sonnet-5", NumTurns: 14,
				// 4:40pm in Belgrade (UTC+1) on the day of limitNow, 13:00 UTC.
				Limit: &quota.Limit{Reset: time.Date(2026, 11, 29, 15, 40, 0, 0, time.UTC), Text: sessLimit, Provider: "claude"},
			},
		},
		{
			name: "529 as json without type: usage from modelUsage", file: "04d_overloaded_529.json", exit: 1,
			want: Result{
				Text:        overloaded + "\n\nAPI error 529: " + overloaded + "\nexit status 1",
				Errors:      []string{"API error 529: " + overloaded, "exit status 1"},
				InputTokens: 1908, OutputTokens: 14, CostUSD: 0.001978, Model: "claude-haiku-4-5-20251001", NumTurns: 1,
			},
		},
		{
			name: "529 retries folded into one error", file: "04d_overloaded_529_stream.jsonl", exit: 1,
			want: Result{
				Text: overloaded2 + "\n\napi_retry: HTTP 529 overloaded (3 retries, last attempt 10/10)\nAPI error 529: " +
					overloaded2 + "\nexit status 1",
				SessionID: "f93ad82c", Subtype: "success",
				Errors: []string{
					"api_retry: HTTP 529 overloaded (3 retries, last attempt 10/10)",
					"API error 529: " + overloaded2,
					"exit status 1",
				},
			},
		},
		{
			name: "503 retry without type, then nothing", file: "04d_gateway_503_no_type.jsonl", exit: 1,
			want: Result{
				Text: "api_retry: HTTP 503 server_error (1 retry, last attempt 10/10)\n" + noResult + "\nexit status 1",
				Errors: []string{
					"api_retry: HTTP 503 server_error (1 retry, last attempt 10/10)", noResult, "exit status 1",
				},
			},
		},
		{
			name: "not logged in: assistant line with error", file: "04e_not_logged_in.jsonl", exit: 1,
			want: Result{
				Text:      "authentication_failed: Not logged in · Please run /login\n" + noResult + "\nexit status 1",
				SessionID: "ecadd567",
				Errors:    []string{"authentication_failed: Not logged in · Please run /login", noResult, "exit status 1"},
			},
		},
		{
			name: "synthetic error messages", file: "04e_synthetic_errors.jsonl", exit: 1,
			want: Result{
				Text: strings.Join([]string{
					"server_error: Failed to refresh OAuth token: another Claude Code process is refreshing it or exited mid-refresh.",
					"rate_limit: You've hit your session limit",
					"authentication_failed: Not logged in · Please run /login",
					noResult, "exit status 1",
				}, "\n"),
				SessionID: "ecadd567",
				Errors: []string{
					"server_error: Failed to refresh OAuth token: another Claude Code process is refreshing it or exited mid-refresh.",
					"rate_limit: You've hit your session limit",
					"authentication_failed: Not logged in · Please run /login",
					noResult, "exit status 1",
				},
			},
		},
		{
			name: "pretty-printed error_max_turns object", file: "04f_max_turns_pretty.json", exit: 1,
			want: Result{
				Text: "Reached maximum number of turns (1)\nexit status 1", Subtype: "error_max_turns",
				Errors: []string{"Reached maximum number of turns (1)", "exit status 1"}, NumTurns: 2,
			},
		},
		{
			name: "SIGINT result exits 0", file: "04g_sigint_result.jsonl",
			want: Result{
				Text: "error_during_execution (aborted_streaming)", Subtype: "error_during_execution",
				Errors: []string{"error_during_execution (aborted_streaming)"}, NumTurns: 1,
			},
		},
		{
			name: "json array with hook_response and rate_limit_event", file: "04i_array_with_hooks.json",
			want: Result{
				Text: "hi! How can I help?", SessionID: "efd4dc89-2c85-4b2f-8efb-e9ced52ba6fd", Success: true, Subtype: "success",
				InputTokens: 3, OutputTokens: 9, CacheCreationTokens: 2048, CostUSD: 0.0129,
				Model: "claude-opus-4-5-20251101", NumTurns: 1,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Result
			if tt.file == "" {
				p := newClaudeParser()
				got = p.Finish(tt.exit, []byte(tt.stderr))
			} else {
				got = parseFile(t, tt.file, tt.exit, tt.stderr)
			}
			assertResult(t, got, tt.want)
		})
	}
}

func assertResult(t *testing.T, got, want Result) {
	t.Helper()
	assertLimit(t, got.Limit, want.Limit)
	got.Limit, want.Limit = nil, nil
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("result:\n got %s\nwant %s", g, w)
	}
}

func TestClaudeParserLines(t *testing.T) {
	const (
		init   = `{"type":"system","subtype":"init","session_id":"s1","model":"m1"}`
		answer = `{"type":"assistant","message":{"id":"a1","model":"m1","content":[{"type":"text","text":"the answer"}],"usage":{"input_tokens":5,"output_tokens":7}},"session_id":"s1"}`
		ok     = `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"session_id":"s1","total_cost_usd":0.5}`
	)
	tests := []struct {
		name  string
		lines []string
		exit  int
		check func(t *testing.T, r Result)
	}{
		{
			name:  "non-JSON lines are kept, counted and not fatal",
			lines: []string{"Warning: terminal is dumb", init, "{oops", answer, "[1, 2", ok, "trailing noise"},
			check: func(t *testing.T, r Result) {
				if !r.Success || r.Unknown != 4 || r.Text != "the answer" || r.SessionID != "s1" {
					t.Errorf("got %+v, want success, Unknown 4, the assistant text", r)
				}
			},
		},
		{
			name:  "non-JSON output is the text when there is nothing else",
			lines: []string{"Error: something broke", "", "  at line 3"},
			exit:  2,
			check: func(t *testing.T, r Result) {
				want := "Error: something broke\n\n  at line 3\n\n" + "no result line: the agent stopped before it finished\nexit status 2"
				if r.Success || r.Text != want || r.Unknown != 2 {
					t.Errorf("got %+v, want text %q", r, want)
				}
			},
		},
		{
			name:  "unknown line types are counted, known ones are not",
			lines: []string{init, `{"type":"brand_new_event","x":1}`, `{"type":"rate_limit_event"}`, `{"no_type":true}`, answer, ok},
			check: func(t *testing.T, r Result) {
				if !r.Success || r.Unknown != 2 {
					t.Errorf("got Success %v Unknown %d, want true 2", r.Success, r.Unknown)
				}
			},
		},
		{
			name: "thinking, tool_use and sub-agent text are not the answer",
			lines: []string{
				init,
				`{"type":"assistant","message":{"id":"a0","content":[{"type":"thinking","thinking":"hmm"},{"type":"tool_use","id":"t","name":"Task","input":{}}]}}`,
				`{"type":"assistant","message":{"id":"sub","content":[{"type":"text","text":"sub-agent notes"}],"usage":{"input_tokens":100}},"parent_tool_use_id":"t"}`,
				`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"done"}]}}`,
				answer,
			},
			check: func(t *testing.T, r Result) {
				if !strings.HasPrefix(r.Text, "the answer\n\n") || strings.Contains(r.Text, "sub-agent") || strings.Contains(r.Text, "hmm") {
					t.Errorf("text %q, want the top-level answer only", r.Text)
				}
				// No result line: the tokens of every message, the sub-agent's included, are what was spent.
				if r.InputTokens != 105 || r.OutputTokens != 7 || r.NumTurns != 3 {
					t.Errorf("tokens %d/%d turns %d, want 105/7 3", r.InputTokens, r.OutputTokens, r.NumTurns)
				}
			},
		},
		{
			name: "a message split over lines counts its usage once",
			lines: []string{
				`{"type":"assistant","message":{"id":"a1","content":[{"type":"text","text":"one"}],"usage":{"input_tokens":5,"output_tokens":7}}}`,
				`{"type":"assistant","message":{"id":"a1","content":[{"type":"tool_use","name":"Read","input":{}}],"usage":{"input_tokens":5,"output_tokens":7}}}`,
			},
			check: func(t *testing.T, r Result) {
				if r.InputTokens != 5 || r.OutputTokens != 7 || r.NumTurns != 1 {
					t.Errorf("got %d/%d turns %d, want 5/7 1", r.InputTokens, r.OutputTokens, r.NumTurns)
				}
			},
		},
		{
			name: "stream_event deltas stand in when no message arrived",
			lines: []string{
				`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Dogs are"}},"session_id":"s9"}`,
				`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" loyal"}},"session_id":"s9"}`,
			},
			exit: 143,
			check: func(t *testing.T, r Result) {
				if !strings.HasPrefix(r.Text, "Dogs are loyal\n\n") || r.SessionID != "s9" || r.Success {
					t.Errorf("got %+v", r)
				}
			},
		},
		{
			name:  "an empty result falls back to the assistant text",
			lines: []string{answer, `{"type":"result","subtype":"success","is_error":false,"result":""}`},
			check: func(t *testing.T, r Result) {
				if r.Text != "the answer" || !r.Success {
					t.Errorf("got %+v", r)
				}
			},
		},
		{
			name:  "fields of unexpected types cost the field, not the line",
			lines: []string{`{"type":"result","subtype":"success","is_error":false,"num_turns":"3","total_cost_usd":"0.25","errors":"oops","usage":[1],"result":42,"session_id":7}`},
			check: func(t *testing.T, r Result) {
				if !r.Success || r.NumTurns != 3 || r.CostUSD != 0.25 || r.Unknown != 0 {
					t.Errorf("got %+v", r)
				}
			},
		},
		{
			name:  "a huge error is clipped",
			lines: []string{`{"type":"result","subtype":"success","is_error":true,"api_error_status":500,"result":"` + strings.Repeat("é", 10000) + `"}`},
			exit:  1,
			check: func(t *testing.T, r Result) {
				if len(r.Errors) != 2 || len(r.Errors[0]) > maxErrorLen+len("…") || !utf8.ValidString(r.Errors[0]) || !strings.HasPrefix(r.Errors[0], "API error 500: éé") {
					t.Errorf("errors %d, first %d bytes", len(r.Errors), len(r.Errors[0]))
				}
			},
		},
		{
			name:  "an array of non-objects is text",
			lines: []string{"[1, 2]", "[]"},
			check: func(t *testing.T, r Result) {
				if r.Unknown != 2 || !strings.HasPrefix(r.Text, "[1, 2]\n[]\n") {
					t.Errorf("got %+v", r)
				}
			},
		},
		{
			name:  "an interrupted tool use is reported",
			lines: []string{init, `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}}`},
			check: func(t *testing.T, r Result) {
				if len(r.Errors) == 0 || r.Errors[0] != "[Request interrupted by user for tool use]" {
					t.Errorf("errors %q", r.Errors)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newClaudeParser()
			for _, l := range tt.lines {
				p.Line([]byte(l))
			}
			tt.check(t, p.Finish(tt.exit, nil))
		})
	}
}

func TestClaudeParserHugeLines(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 5<<20/16) // 5 MiB
	line := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	transcript := strings.Join([]string{
		`{"type":"system","subtype":"init","session_id":"big","model":"m"}`,
		line(map[string]any{"type": "user", "message": map[string]any{"content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "t", "content": big},
		}}}),
		line(map[string]any{"type": "assistant", "message": map[string]any{"id": "a", "content": []any{
			map[string]any{"type": "text", "text": "A" + big + "Z"},
		}}}),
		line(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": big, "session_id": "big"}),
	}, "\n")

	t.Run("a 5 MB result line", func(t *testing.T) {
		p := newClaudeParser()
		feed(t, p, strings.NewReader(transcript))
		r := p.Finish(0, nil)
		if !r.Success || r.Text != big || r.SessionID != "big" || r.Unknown != 0 {
			t.Errorf("Success %v, len(Text) %d, SessionID %q, Unknown %d", r.Success, len(r.Text), r.SessionID, r.Unknown)
		}
	})
	t.Run("a 5 MB answer without a result is bounded", func(t *testing.T) {
		p := newClaudeParser()
		feed(t, p, strings.NewReader(strings.Join(strings.Split(transcript, "\n")[:3], "\n")))
		r := p.Finish(0, nil)
		if len(r.Text) > maxKeptText+1000 || !strings.HasPrefix(r.Text, "A0123") || !strings.Contains(r.Text, "bytes of output not kept") ||
			!strings.HasSuffix(r.Text, "cdefZ\n\nno result line: the agent stopped before it finished") {
			t.Errorf("len(Text) %d, start %q, end %q", len(r.Text), r.Text[:10], r.Text[len(r.Text)-70:])
		}
	})
}

func FuzzClaudeParser(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "claude", "*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, 0)
	}
	f.Add([]byte("{\n[\n\"\\\n}}]]\n{\"type\":\"result\"}\n"), 1)
	f.Fuzz(func(t *testing.T, data []byte, exit int) {
		p := newClaudeParser()
		for _, l := range bytes.Split(data, []byte("\n")) {
			p.Line(l)
		}
		r := p.Finish(exit, data)
		if r.Success && (exit != 0 || r.Subtype != "success") {
			t.Errorf("Success with exit %d subtype %q", exit, r.Subtype)
		}
		if !r.Success && len(r.Errors) == 0 {
			t.Errorf("a failed run without a reason: %+v", r)
		}
	})
}

func TestBoundedText(t *testing.T) {
	var b boundedText
	for range 3 * maxKeptText / len("é✅") {
		b.WriteString("é✅")
	}
	b.WriteString("END")
	s := b.String()
	if !utf8.ValidString(s) || !strings.HasPrefix(s, "é✅") || !strings.HasSuffix(s, "✅END") || len(s) > maxKeptText+100 {
		t.Errorf("len %d, valid %v, start %q, end %q", len(s), utf8.ValidString(s), s[:5], s[len(s)-5:])
	}
	var small boundedText
	small.WriteString("a")
	small.WriteString("b")
	if small.String() != "ab" {
		t.Errorf("got %q", small.String())
	}
}
