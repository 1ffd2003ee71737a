package brain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/orchrun/orch/internal/httpdeadline/deadlinetest"
)

// fakeMessagesAPI is an httptest server speaking POST /v1/messages. It answers the n-th request with the
// n-th scripted reply (the last one repeating) and records every request. A request with "stream": true gets its
// message as server-sent events, as the API streams it (docs.claude.com/en/api/messages-streaming: message_start,
// content_block_start, pings, content_block_delta, content_block_stop, message_delta with the stop reason and the
// output tokens, message_stop); errors before the stream are the same JSON envelope with its status either way.
type fakeMessagesAPI struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []apiRequest
	replies []func(w http.ResponseWriter, r *http.Request)
}

type apiRequest struct {
	header http.Header
	body   struct {
		Model     string `json:"model"`
		MaxTokens int64  `json:"max_tokens"`
		Stream    bool   `json:"stream"`
		Messages  []struct {
			Role    string `json:"role"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
}

// text is the text of message i of the request.
func (r apiRequest) text(i int) string {
	var b strings.Builder
	for _, c := range r.body.Messages[i].Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func newFakeMessagesAPI(t *testing.T, replies ...func(w http.ResponseWriter, r *http.Request)) *fakeMessagesAPI {
	f := &fakeMessagesAPI{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
			t.Errorf("request %s %s, want POST /v1/messages", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		var req apiRequest
		req.header = r.Header.Clone()
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &req.body); err != nil {
			t.Errorf("request body: %v", err)
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, req)
		n := len(f.reqs)
		f.mu.Unlock()
		f.replies[min(n, len(f.replies))-1](w, r.WithContext(context.WithValue(r.Context(), streamKey{}, req.body.Stream)))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeMessagesAPI) requests() []apiRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiRequest(nil), f.reqs...)
}

// streamKey marks a request that asked for a stream.
type streamKey struct{}

func streaming(r *http.Request) bool { b, _ := r.Context().Value(streamKey{}).(bool); return b }

// sse writes one server-sent event.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	w.(http.Flusher).Flush()
}

// okReply answers with a message whose text is text, and usage of 1000 tokens in, 50 out.
func okReply(text string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if streaming(r) {
			w.Header().Set("content-type", "text/event-stream")
			w.Header().Set("request-id", "req_test")
			sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
				"id": "msg_test", "type": "message", "role": "assistant", "model": DefaultModel, "content": []any{},
				"stop_reason": nil, "stop_sequence": nil,
				"usage": map[string]any{"input_tokens": 1000, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
			sse(w, "ping", map[string]any{"type": "ping"})
			half := len(text) / 2
			for half > 0 && half < len(text) && !utf8.RuneStart(text[half]) {
				half--
			}
			for _, part := range []string{text[:half], text[half:]} {
				sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": part}})
			}
			sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
			sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
				"usage": map[string]any{"output_tokens": 50}})
			sse(w, "message_stop", map[string]any{"type": "message_stop"})
			return
		}
		w.Header().Set("content-type", "application/json")
		w.Header().Set("request-id", "req_test")
		b, _ := json.Marshal(map[string]any{
			"id": "msg_test", "type": "message", "role": "assistant", "model": DefaultModel,
			"content":     []map[string]any{{"type": "text", "text": text}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 1000, "output_tokens": 50, "cache_creation_input_tokens": 0,
				"cache_read_input_tokens": 0},
		})
		w.Write(b)
	}
}

// errReply answers with the API's error envelope.
func errReply(status int, etype, msg string, headers ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_err"}`, etype, msg)
	}
}

// sleeps records the backoff waits instead of waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func newTestAnthropic(t *testing.T, f *fakeMessagesAPI, s *sleeps, edit ...func(*AnthropicConfig)) *Anthropic {
	t.Helper()
	cfg := AnthropicConfig{APIKey: "sk-test-key", BaseURL: f.srv.URL, Sleep: s.sleep}
	for _, e := range edit {
		e(&cfg)
	}
	a, err := NewAnthropic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

const needsHelpJSON = `{"status":"needs_help","summary":"Asked which cache to use.","error":null,` +
	`"question":"Which cache should I use?","options":["Redis","In-memory","File-based"],"recommendation":"B for simplicity"}`

func TestAnthropicInterpretSendsTheFullOutput(t *testing.T) {
	f := newFakeMessagesAPI(t, okReply(needsHelpJSON))
	var s sleeps
	a := newTestAnthropic(t, f, &s)
	// 300 KB of output with distinct head and tail: all of it must reach the model.
	output := "HEAD-OF-OUTPUT\n" + strings.Repeat("running tests for package x/y ... ok\n", 8000) + "QUESTION: TAIL-OF-OUTPUT?"
	got, err := a.Interpret(context.Background(), output)
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	req := reqs[0]
	if req.body.Model != "claude-haiku-4-5-20251001" {
		t.Errorf("model %q, want claude-haiku-4-5-20251001", req.body.Model)
	}
	if h := req.header.Get("x-api-key"); h != "sk-test-key" {
		t.Errorf("x-api-key %q", h)
	}
	if h := req.header.Get("anthropic-version"); h != "2023-06-01" {
		t.Errorf("anthropic-version %q, want 2023-06-01", h)
	}
	if req.body.MaxTokens != 4096 {
		t.Errorf("max_tokens %d, want 4096", req.body.MaxTokens)
	}
	if len(req.body.Messages) != 1 || req.body.Messages[0].Role != "user" {
		t.Fatalf("messages %+v, want one user message", req.body.Messages)
	}
	prompt := req.text(0)
	if !strings.Contains(prompt, "Claude Code output:\n"+output) {
		t.Errorf("the prompt does not hold the full output (%d bytes of prompt for %d of output)", len(prompt), len(output))
	}
	if strings.Contains(prompt, omittedMarker) {
		t.Error("the prompt says the output was cut, but it fits")
	}
	want := Interpretation{Status: StatusNeedsHelp, Summary: "Asked which cache to use.", Question: "Which cache should I use?",
		Options: []string{"Redis", "In-memory", "File-based"}, Recommendation: "B for simplicity"}
	if got.Status != want.Status || got.Question != want.Question || strings.Join(got.Options, "|") != strings.Join(want.Options, "|") ||
		got.Recommendation != want.Recommendation || got.Summary != want.Summary {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got.Via != "anthropic" || got.OmittedBytes != 0 || got.Fallback != "" {
		t.Errorf("Via %q OmittedBytes %d Fallback %q", got.Via, got.OmittedBytes, got.Fallback)
	}
	wantUsage := Usage{Backend: "anthropic", Model: DefaultModel, InputTokens: 1000, OutputTokens: 50, Calls: 1,
		CostUSD: 1000*1.0/1e6 + 50*5.0/1e6}
	if got.Usage.Backend != wantUsage.Backend || got.Usage.Model != wantUsage.Model || got.Usage.InputTokens != 1000 ||
		got.Usage.OutputTokens != 50 || got.Usage.Calls != 1 || math.Abs(got.Usage.CostUSD-wantUsage.CostUSD) > 1e-12 {
		t.Errorf("usage %+v, want %+v", got.Usage, wantUsage)
	}
	if len(s.waits()) != 0 {
		t.Errorf("slept %v on a first-try success", s.waits())
	}
}

func TestAnthropicReplies(t *testing.T) {
	tests := []struct {
		name     string
		replies  []func(http.ResponseWriter, *http.Request)
		wantErr  error // nil: success
		wantReqs int
		check    func(t *testing.T, in Interpretation, err error, reqs []apiRequest, waits []time.Duration)
	}{
		{
			name:     "JSON in fences with prose around it",
			replies:  []func(http.ResponseWriter, *http.Request){okReply("Here is my analysis:\n\n```json\n" + needsHelpJSON + "\n```\n\nThe agent is {clearly} asking.")},
			wantReqs: 1,
			check: func(t *testing.T, in Interpretation, err error, reqs []apiRequest, waits []time.Duration) {
				if in.Status != StatusNeedsHelp || in.Question != "Which cache should I use?" {
					t.Errorf("got %+v", in)
				}
			},
		},
		{
			name:     "malformed JSON, then a good reply after the corrective prompt",
			replies:  []func(http.ResponseWriter, *http.Request){okReply(`{"status": "completed", "summary": "Done`), okReply(`{"status":"completed","summary":"Done."}`)},
			wantReqs: 2,
			check: func(t *testing.T, in Interpretation, err error, reqs []apiRequest, waits []time.Duration) {
				if in.Status != StatusCompleted || in.Summary != "Done." {
					t.Errorf("got %+v", in)
				}
				second := reqs[1]
				if n := len(second.body.Messages); n != 3 {
					t.Fatalf("the corrective request has %d messages, want 3 (prompt, bad reply, correction)", n)
				}
				if second.body.Messages[1].Role != "assistant" || second.text(1) != `{"status": "completed", "summary": "Done` {
					t.Errorf("message 2 is %s %q, want the bad reply as the assistant's", second.body.Messages[1].Role, second.text(1))
				}
				fix := second.text(2)
				for _, want := range []string{"could not be used", "incomplete", `"status" must be exactly one of`} {
					if !strings.Contains(fix, want) {
						t.Errorf("corrective prompt lacks %q:\n%s", want, fix)
					}
				}
				if in.Usage.Calls != 2 || in.Usage.InputTokens != 2000 {
					t.Errorf("usage %+v, want 2 calls and 2000 input tokens", in.Usage)
				}
			},
		},
		{
			name:     "a status outside the contract is corrected",
			replies:  []func(http.ResponseWriter, *http.Request){okReply(`{"status":"done"}`), okReply(`{"status":"completed"}`)},
			wantReqs: 2,
			check: func(t *testing.T, in Interpretation, err error, reqs []apiRequest, waits []time.Duration) {
				if fix := reqs[1].text(2); !strings.Contains(fix, `"status" is "done"`) {
					t.Errorf("corrective prompt does not say what was wrong:\n%s", fix)
				}
			},
		},
		{
			name:     "malformed twice",
			replies:  []func(http.ResponseWriter, *http.Request){okReply("I think it worked."), okReply(`{"status": "compl`)},
			wantErr:  ErrInvalidReply,
			wantReqs: 2,
			check: func(t *testing.T, in Interpretation, err error, reqs []apiRequest, waits []time.Duration) {
				if !strings.Contains(err.Error(), "anthropic interpret") {
					t.Errorf("error %q does not name the action", err)
				}
				if in.Usage.Calls != 2 {
					t.Errorf("usage %+v: the failed calls must be counted", in.Usage)
				}
			},
		},
		{
			name:     "429 with retry-after is waited out",
			replies:  []func(http.ResponseWriter, *http.Request){errReply(429, "rate_limit_error", "Number of requests has exceeded your rate limit", "retry-after", "2"), okReply(needsHelpJSON)},
			wantReqs: 2,
			check: func(t *testing.T, in Interpretation, err error, reqs []apiRequest, waits []time.Duration) {
				if len(waits) != 1 || waits[0] != 2*time.Second {
					t.Errorf("waits %v, want [2s]", waits)
				}
				if in.Usage.Calls != 1 {
					t.Errorf("usage %+v: a 429 is not a billed call", in.Usage)
				}
			},
		},
		{
			name:     "529 overloaded on every try",
			replies:  []func(http.ResponseWriter, *http.Request){errReply(529, "overloaded_error", "Overloaded")},
			wantErr:  ErrUnavailable,
			wantReqs: 3,
			check: func(t *testing.T, in Interpretation, err error, reqs []apiRequest, waits []time.Duration) {
				for _, want := range []string{"anthropic messages", "529", "overloaded_error", "after 3 tries"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
				if len(waits) != 2 {
					t.Errorf("waits %v, want 2 backoffs", waits)
				}
				for i, w := range waits {
					if w < 0 || w >= backoffBase<<i {
						t.Errorf("backoff %d is %v, want in [0, %v)", i+1, w, backoffBase<<i)
					}
				}
			},
		},
		{
			name:     "retry-after is capped",
			replies:  []func(http.ResponseWriter, *http.Request){errReply(503, "api_error", "down", "retry-after", "3600"), okReply(needsHelpJSON)},
			wantReqs: 2,
			check: func(t *testing.T, in Interpretation, err error, reqs []apiRequest, waits []time.Duration) {
				if len(waits) != 1 || waits[0] != retryAfterCap {
					t.Errorf("waits %v, want [%v]", waits, retryAfterCap)
				}
			},
		},
		{
			name:     "401 is not retried",
			replies:  []func(http.ResponseWriter, *http.Request){errReply(401, "authentication_error", "invalid x-api-key")},
			wantErr:  ErrUnavailable,
			wantReqs: 1,
			check: func(t *testing.T, in Interpretation, err error, reqs []apiRequest, waits []time.Duration) {
				if !strings.Contains(err.Error(), "401 authentication_error: invalid x-api-key") {
					t.Errorf("error %q", err)
				}
				if len(waits) != 0 {
					t.Errorf("waited %v before giving up on a 401", waits)
				}
			},
		},
		{
			name: "a spend-limit 429 is not retried",
			replies: []func(http.ResponseWriter, *http.Request){func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("content-type", "application/json")
				w.WriteHeader(429)
				io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"spend limit","details":{"error_code":"enforced_spend_limit_reached"}}}`)
			}},
			wantErr:  ErrUnavailable,
			wantReqs: 1,
		},
		{
			name:     "400 is not retried and lets the heuristic answer",
			replies:  []func(http.ResponseWriter, *http.Request){errReply(400, "invalid_request_error", "max_tokens: too large")},
			wantErr:  ErrInvalidReply,
			wantReqs: 1,
		},
		{
			name:     "a connection that drops is retried",
			replies:  []func(http.ResponseWriter, *http.Request){hangUp, okReply(needsHelpJSON)},
			wantReqs: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeMessagesAPI(t, tt.replies...)
			var s sleeps
			a := newTestAnthropic(t, f, &s)
			in, err := a.Interpret(context.Background(), "Implemented the cache. Which cache should I use?")
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("error %v", err)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("error %v, want one wrapping %v", err, tt.wantErr)
			}
			reqs := f.requests()
			if len(reqs) != tt.wantReqs {
				t.Errorf("%d requests, want %d", len(reqs), tt.wantReqs)
			}
			if tt.check != nil {
				tt.check(t, in, err, reqs, s.waits())
			}
		})
	}
}

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter, r *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

func TestAnthropicCutsHugeOutput(t *testing.T) {
	f := newFakeMessagesAPI(t, okReply(`{"status":"completed","summary":"ok"}`))
	a := newTestAnthropic(t, f, &sleeps{})
	output := "FIRST-LINE\n" + strings.Repeat("x", 2<<20) + "\nLAST-LINE: all tests pass"
	got, err := a.Interpret(context.Background(), output)
	if err != nil {
		t.Fatal(err)
	}
	prompt := f.requests()[0].text(0)
	if len(prompt) > defaultMaxOutputBytes+10_000 {
		t.Errorf("prompt of %d bytes, want about %d", len(prompt), defaultMaxOutputBytes)
	}
	for _, want := range []string{"FIRST-LINE", "LAST-LINE: all tests pass", omittedMarker, "bytes from the middle were left out"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	if got.OmittedBytes < len(output)-defaultMaxOutputBytes {
		t.Errorf("OmittedBytes %d, want at least %d", got.OmittedBytes, len(output)-defaultMaxOutputBytes)
	}
}

func TestAnthropicShrinksAPromptTooLong(t *testing.T) {
	f := newFakeMessagesAPI(t,
		errReply(400, "invalid_request_error", "prompt is too long: 231000 tokens > 200000 maximum"),
		okReply(`{"status":"completed","summary":"ok"}`))
	a := newTestAnthropic(t, f, &sleeps{})
	output := strings.Repeat("{}[]<>;:\n", 60_000) // 540 KB: fits the byte budget, not the token one
	got, err := a.Interpret(context.Background(), output)
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	// The first try sent it all; the second half the byte budget.
	if first, second := len(reqs[0].text(0)), len(reqs[1].text(0)); first < len(output) || second > defaultMaxOutputBytes/2+10_000 {
		t.Errorf("prompts of %d then %d bytes for %d of output: want all of it, then about %d", first, second, len(output), defaultMaxOutputBytes/2)
	}
	if got.OmittedBytes == 0 || got.Status != StatusCompleted {
		t.Errorf("got %+v, want completed with OmittedBytes set", got)
	}
}

func TestAnthropicHonoursContext(t *testing.T) {
	t.Run("a slow server", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		f := newFakeMessagesAPI(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		})
		a := newTestAnthropic(t, f, &sleeps{})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := a.Interpret(ctx, "some output")
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnavailable) {
			t.Errorf("error %v, want the context's deadline and not ErrUnavailable", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("returned after %v", d)
		}
	})
	t.Run("during a backoff", func(t *testing.T) {
		f := newFakeMessagesAPI(t, errReply(529, "overloaded_error", "Overloaded", "retry-after", "30"))
		a := newTestAnthropic(t, f, nil, func(c *AnthropicConfig) { c.Sleep = nil }) // the real, ctx-aware sleep
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		_, err := a.Decide(ctx, DecideInput{TaskID: "1.1", TaskTitle: "t", AttemptHistory: []string{"boom"}})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("returned after %v: the backoff did not watch ctx", d)
		}
		if n := len(f.requests()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
}

func TestAnthropicDecideAndTasks(t *testing.T) {
	t.Run("decide", func(t *testing.T) {
		f := newFakeMessagesAPI(t, okReply(`{"decision":"Retry","reason":"A new error each time.","guidance_for_retry":"Run go mod tidy first."}`))
		a := newTestAnthropic(t, f, &sleeps{})
		in := DecideInput{TaskID: "2.1", TaskTitle: "Add the cache",
			AttemptHistory: []string{"cannot find package redis", "undefined: Cache"}}
		d, err := a.Decide(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if d.Decision != Retry || d.Reason != "A new error each time." || d.GuidanceForRetry != "Run go mod tidy first." || d.Via != "anthropic" {
			t.Errorf("got %+v", d)
		}
		if d.Usage.Calls != 1 {
			t.Errorf("usage %+v", d.Usage)
		}
		prompt := f.requests()[0].text(0)
		for _, want := range []string{"Task: 2.1 - Add the cache", "Attempt 1:\ncannot find package redis", "Attempt 2:\nundefined: Cache", "Current attempt count: 2"} {
			if !strings.Contains(prompt, want) {
				t.Errorf("decide prompt lacks %q", want)
			}
		}
	})
	t.Run("decide with an empty history makes no call", func(t *testing.T) {
		f := newFakeMessagesAPI(t, okReply(`{}`))
		a := newTestAnthropic(t, f, &sleeps{})
		if _, err := a.Decide(context.Background(), DecideInput{TaskID: "1"}); err == nil {
			t.Error("want an error")
		}
		if n := len(f.requests()); n != 0 {
			t.Errorf("%d requests", n)
		}
	})
	t.Run("tasks", func(t *testing.T) {
		f := newFakeMessagesAPI(t, okReply("```json\n[{\"id\":\"1.1\",\"title\":\"Create data model\",\"description\":\"d\"},{\"id\":1.2,\"title\":\"Add API endpoint\"}]\n```"))
		a := newTestAnthropic(t, f, &sleeps{})
		plan := "# Milestone\n\n## Task 1.1: Create data model\n\n## Task 1.2: Add API endpoint\n"
		l, err := a.Tasks(context.Background(), plan)
		if err != nil {
			t.Fatal(err)
		}
		want := []Task{{"1.1", "Create data model", "d"}, {"1.2", "Add API endpoint", ""}}
		if fmt.Sprint(l.Tasks) != fmt.Sprint(want) || l.Via != "anthropic" || l.Usage.Calls != 1 {
			t.Errorf("got %+v, want %v", l, want)
		}
		if prompt := f.requests()[0].text(0); !strings.Contains(prompt, "Plan content:\n"+plan) {
			t.Errorf("the prompt does not hold the plan:\n%s", prompt)
		}
		b, _ := json.Marshal(l)
		if string(b) != `[{"id":"1.1","title":"Create data model","description":"d"},{"id":"1.2","title":"Add API endpoint","description":""}]` {
			t.Errorf("JSON %s", b)
		}
	})
}

func TestNewAnthropicNeedsAKey(t *testing.T) {
	_, err := NewAnthropic(AnthropicConfig{})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "API key") {
		t.Errorf("error %v", err)
	}
}

// An API that accepts the connection and never answers is an error naming it once the configured silence has passed
// (short here), on every try; the default bound on silence is within a minute.
func TestAnthropicSilentAPI(t *testing.T) {
	addr := deadlinetest.Silent(t)
	s := &sleeps{}
	a, err := NewAnthropic(AnthropicConfig{APIKey: "sk-test-key", BaseURL: "http://" + addr, Sleep: s.sleep, IdleTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a guard against a hang, not a bound
	defer cancel()
	_, err = a.Interpret(ctx, "some output")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), addr) || strings.Contains(err.Error(), "sk-test-key") {
		t.Fatalf("error %v, want ErrUnavailable naming %s", err, addr)
	}
	if ctx.Err() != nil {
		t.Fatal("the bound on silence did not end the call")
	}
	if n := len(s.waits()); n != maxTries-1 {
		t.Errorf("%d waits between tries, want %d: a silent API is tried again", n, maxTries-1)
	}

	a, err = NewAnthropic(AnthropicConfig{APIKey: "sk-test-key"})
	if err != nil {
		t.Fatal(err)
	}
	if d := a.cfg.IdleTimeout; d <= 0 || d > time.Minute || a.cfg.HTTPClient == nil {
		t.Errorf("the default bound on silence is %v (client %v), want within a minute", d, a.cfg.HTTPClient)
	}
}

// A stream that begins and then falls silent, or that carries an overload error, is tried again.
func TestAnthropicStreamFailures(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	silentAfterStart := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/event-stream")
		sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_test", "type": "message", "role": "assistant", "model": DefaultModel, "content": []any{},
			"usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	overloaded := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/event-stream")
		sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_test", "type": "message", "role": "assistant", "model": DefaultModel, "content": []any{},
			"usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
		sse(w, "error", map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}})
	}
	cut := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/event-stream")
		sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_test", "type": "message", "role": "assistant", "model": DefaultModel, "content": []any{},
			"usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	}
	f := newFakeMessagesAPI(t, silentAfterStart, overloaded, cut, okReply(needsHelpJSON))
	s := &sleeps{}
	a := newTestAnthropic(t, f, s, func(c *AnthropicConfig) { c.IdleTimeout = 300 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.Interpret(ctx, "some output"); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "ended before") {
		t.Fatalf("error %v, want the third try's failure after two retried ones", err)
	}
	if n := len(f.requests()); n != maxTries {
		t.Errorf("%d requests, want %d", n, maxTries)
	}
	got, err := a.Interpret(ctx, "some output")
	if err != nil || got.Status != StatusNeedsHelp {
		t.Fatalf("after the failures: %+v, %v", got, err)
	}
	for i, r := range f.requests() {
		if !r.body.Stream {
			t.Errorf("request %d did not ask for a stream", i+1)
		}
	}
}

// A rate limit that says when it resets (Anthropic's documented 429: retry-after, and
// anthropic-ratelimit-*-reset in RFC 3339) outlasting the tries is an unavailable brain that says until when; an
// overload says nothing of the kind.
func TestAnthropicRateLimitSaysWhenItResets(t *testing.T) {
	reset := time.Now().Add(40 * time.Second).UTC().Truncate(time.Second)
	f := newFakeMessagesAPI(t, errReply(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit",
		"retry-after", "40", "anthropic-ratelimit-input-tokens-remaining", "0",
		"anthropic-ratelimit-input-tokens-reset", reset.Format(time.RFC3339)))
	a := newTestAnthropic(t, f, &sleeps{})
	_, err := a.Interpret(context.Background(), "some output")
	var lim *LimitedError
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &lim) {
		t.Fatalf("error %v: want an unavailable brain with its reset", err)
	}
	if d := lim.Reset.Sub(reset); d < -time.Second || d > time.Second {
		t.Fatalf("reset %v, want %v", lim.Reset, reset)
	}
	f = newFakeMessagesAPI(t, errReply(529, "overloaded_error", "Overloaded", "retry-after", "30"))
	_, err = newTestAnthropic(t, f, &sleeps{}).Interpret(context.Background(), "some output")
	if !errors.Is(err, ErrUnavailable) || errors.As(err, &lim) {
		t.Fatalf("an overload: %v", err)
	}
}
