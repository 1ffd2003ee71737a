package brain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/orchrun/orch/internal/backoff"
	"github.com/orchrun/orch/internal/httpdeadline"
	"github.com/orchrun/orch/quota"
)

// AnthropicConfig configures the Messages API brain. Only APIKey is required.
type AnthropicConfig struct {
	APIKey string
	Model  string // default DefaultModel
	// BaseURL of the API (default https://api.anthropic.com/); tests and proxies set it.
	BaseURL string
	// MaxTokens bounds each reply (default 4096: a long plan's task list fits).
	MaxTokens int64
	// HTTPClient makes the requests. Default: one whose connection and TLS handshake are bounded, and whose stream
	// may not fall silent for longer than IdleTimeout.
	HTTPClient *http.Client
	// IdleTimeout is the longest the API may stay silent during a call — before its answer starts, or between two
	// parts of it — before the call fails naming it (default 30 s). A call has no bound on the whole: the answer is
	// read as a stream, so a long answer that keeps coming is never cut, and an API that says nothing is found out
	// within IdleTimeout.
	IdleTimeout time.Duration
	// MaxOutputBytes bounds the agent output in the interpret prompt (default 600 KB: Haiku's 200k tokens).
	MaxOutputBytes int
	// Sleep waits between tries; it must return ctx's error early when ctx is done. Tests record the waits.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock for retry-after dates.
	Now func() time.Time
}

// Anthropic is the LLM brain on the Anthropic Messages API. It is safe for concurrent use.
type Anthropic struct {
	cfg    AnthropicConfig
	client messagesClient
	j      judge
}

// NewAnthropic returns the Messages API brain. It reads nothing from the environment (the caller passes the key)
// and each request is tried once: orch's policy (see withRetry) retries.
func NewAnthropic(cfg AnthropicConfig) (*Anthropic, error) {
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, unavailable("anthropic brain: no API key (ANTHROPIC_API_KEY is not set)", nil)
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 4096
	}
	if cfg.Sleep == nil {
		cfg.Sleep = backoff.Sleep
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = httpdeadline.Idle
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = httpdeadline.StreamClient(cfg.IdleTimeout)
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = defaultAPIBase
	}
	a := &Anthropic{cfg: cfg, client: messagesClient{base: base, key: cfg.APIKey, http: cfg.HTTPClient}}
	a.j = judge{via: viaAnthropic, maxOutput: cfg.MaxOutputBytes, send: a.send}
	return a, nil
}

// Interpret judges an agent's output. Errors wrap ErrUnavailable, ErrInvalidReply or ctx's error; on error
// the Interpretation is zero but for Usage, which counts the calls that were made.
func (a *Anthropic) Interpret(ctx context.Context, output string) (Interpretation, error) {
	return a.j.interpret(ctx, output)
}

// Decide chooses retry or escalate for a failed task; errors as for Interpret.
func (a *Anthropic) Decide(ctx context.Context, in DecideInput) (Decision, error) {
	return a.j.decide(ctx, in)
}

// Tasks extracts the tasks of a plan; errors as for Interpret.
func (a *Anthropic) Tasks(ctx context.Context, plan string) (TaskList, error) {
	return a.j.tasks(ctx, plan)
}

func (a *Anthropic) send(ctx context.Context, conv []turn) (reply, error) {
	msgs := make([]messageTurn, len(conv))
	for i, t := range conv {
		role := "user"
		if t.assistant {
			role = "assistant"
		}
		msgs[i] = messageTurn{Role: role, Content: []contentBlock{{Type: "text", Text: t.text}}}
	}
	params := messageRequest{Model: a.cfg.Model, MaxTokens: a.cfg.MaxTokens, Messages: msgs}
	return withRetry(ctx, "anthropic messages", a.cfg.Sleep, func(ctx context.Context) (reply, error) {
		res, err := a.stream(ctx, params)
		if err != nil {
			return reply{}, err
		}
		var text strings.Builder
		for _, b := range res.Content {
			if b.Type == "text" {
				text.WriteString(b.Text)
			}
		}
		u := res.Usage
		model := res.Model
		if model == "" {
			model = a.cfg.Model
		}
		cost, _ := estimateCost(model, u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens)
		return reply{
			text: text.String(),
			usage: Usage{Backend: viaAnthropic, Model: a.cfg.Model, Calls: 1, CostUSD: cost,
				InputTokens:  u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
				OutputTokens: u.OutputTokens},
			cutOff: res.StopReason == stopMaxTokens,
		}, nil
	})
}

// stream asks for the message as a stream of events and puts it together. A stream lets the HTTP client bound the
// API's silence rather than the whole call: a long answer takes as long as it takes, an API that does not answer
// is an error within IdleTimeout.
func (a *Anthropic) stream(ctx context.Context, params messageRequest) (*message, error) {
	msg, err := a.client.stream(ctx, params)
	switch {
	case errors.Is(err, errBadStream):
		return nil, &tryError{msg: "anthropic messages: " + err.Error(), retryable: true, cause: err}
	case err != nil:
		return nil, a.classify(err)
	case msg.StopReason == "":
		// The connection ended cleanly before message_delta said why the message stopped: the answer is cut.
		return nil, &tryError{msg: "anthropic messages: the stream ended before the message did", retryable: true}
	}
	return msg, nil
}

// classify says what a failed request means for the next try. Overload, rate limits, server errors and
// lost connections may pass; a refused key, billing, a missing model need a human (ErrUnavailable at once);
// a request the API rejects as such (400, 413) would be rejected again (ErrInvalidReply: the heuristic answers).
func (a *Anthropic) classify(err error) error {
	var apiErr *apiError
	if !errors.As(err, &apiErr) {
		// No HTTP response: the connection failed, timed out or the body did not decode.
		return &tryError{msg: "anthropic messages: " + err.Error(), retryable: true, cause: err}
	}
	status := apiErr.StatusCode
	etype, emsg := apiErrorBody(apiErr.Body)
	if status < 300 {
		// An error event inside a stream that had begun: its type says what the status would have.
		switch etype {
		case "overloaded_error":
			status = 529
		case "rate_limit_error":
			status = http.StatusTooManyRequests
		case "api_error", "":
			status = http.StatusInternalServerError
		case "invalid_request_error":
			status = http.StatusBadRequest
		}
	}
	desc := strconv.Itoa(status)
	if etype != "" {
		desc += " " + etype
	}
	if emsg != "" {
		desc += ": " + emsg
	}
	te := &tryError{msg: "anthropic messages: " + desc, cause: err, kind: ErrUnavailable}
	h := apiErr.Header
	switch {
	case status == http.StatusTooManyRequests && strings.Contains(apiErr.Body, "enforced_spend_limit_reached"):
		te.msg += " (the spend limit is reached: not retried)"
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status == http.StatusTooManyRequests,
		status >= 500:
		te.retryable = true
		te.after = retryAfter(h, a.cfg.Now())
		if reset, ok := quota.FromHeaders(h, a.cfg.Now()); ok && status == http.StatusTooManyRequests {
			// When the tries run out, the run may wait for the reset rather than for a person.
			te.cause = &LimitedError{Reset: reset, Err: err}
		}
	case status == http.StatusBadRequest, status == http.StatusRequestEntityTooLarge:
		te.kind = ErrInvalidReply
		te.tooLong = status == http.StatusRequestEntityTooLarge || strings.Contains(strings.ToLower(emsg), "too long")
		te.msg += " (the request was rejected: not retried)"
	default:
		te.msg += " (not retried)"
	}
	// The API may say explicitly whether a retry can help; it knows better than the status code.
	switch h.Get("x-should-retry") {
	case "true":
		te.retryable = true
	case "false":
		te.retryable = false
	}
	return te
}

// apiErrorBody reads the error envelope {"type":"error","error":{"type","message"}}.
func apiErrorBody(raw string) (etype, msg string) {
	var env struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &env) != nil {
		return "", truncate(strings.TrimSpace(raw), 300)
	}
	return env.Error.Type, truncate(env.Error.Message, 300)
}

// retryAfter reads retry-after-ms, then retry-after (seconds or an HTTP date); 0 when neither is usable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("retry-after")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// String names the backend and model for logs ("anthropic claude-haiku-4-5-20251001").
func (a *Anthropic) String() string { return fmt.Sprintf("%s %s", viaAnthropic, a.cfg.Model) }
