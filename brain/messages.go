package brain

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// messages.go speaks the Anthropic Messages API over HTTP, the little of it the brain uses: one streamed message
// (POST /v1/messages with "stream": true, read as server-sent events) and the list of models (GET /v1/models), as
// docs.claude.com documents them for API version 2023-06-01 (api/messages, api/messages-streaming, api/errors,
// api/models-list). It is a client of its own rather than the SDK's because the SDK alone was a fifth of the
// binary's cold build for two requests.

// apiVersion is the anthropic-version header every request carries.
const apiVersion = "2023-06-01"

// defaultAPIBase is where the Messages API is served.
const defaultAPIBase = "https://api.anthropic.com"

// maxErrorBody bounds what is read of an error answer: its envelope is a few hundred bytes.
const maxErrorBody = 64 << 10

// messagesClient makes the requests: base URL without a trailing slash, the key, the HTTP client.
type messagesClient struct {
	base string
	key  string
	http *http.Client
}

// messageRequest is the body of POST /v1/messages.
type messageRequest struct {
	Model     string        `json:"model"`
	MaxTokens int64         `json:"max_tokens"`
	Messages  []messageTurn `json:"messages"`
	Stream    bool          `json:"stream"`
}

type messageTurn struct {
	Role    string         `json:"role"`
	Content []contentBlock `json:"content"`
}

type contentBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// message is the API's answer, put together from its stream.
type message struct {
	Model      string         `json:"model"`
	Content    []contentBlock `json:"content"`
	StopReason string         `json:"stop_reason"`
	Usage      messageUsage   `json:"usage"`
}

type messageUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// stopMaxTokens is the stop reason of a message cut at max_tokens.
const stopMaxTokens = "max_tokens"

// apiError is an answer with an error status, or an error event inside a stream that had begun with 200: its
// status, its headers and its body (the {"type":"error","error":{…}} envelope) as sent.
type apiError struct {
	StatusCode int
	Header     http.Header
	Body       string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s", e.StatusCode, truncate(collapse(e.Body), 300))
}

// errBadStream is a stream whose events do not make a message (a delta for a block that never started).
var errBadStream = errors.New("the stream's events do not make a message")

func (c *messagesClient) newRequest(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("x-api-key", c.key)
	req.Header.Set("anthropic-version", apiVersion)
	if body != nil {
		req.Header.Set("content-type", "application/json")
	}
	return req, nil
}

// do sends req and returns the response when its status is 2xx, else an *apiError.
func (c *messagesClient) do(req *http.Request) (*http.Response, error) {
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode/100 != 2 {
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		return nil, &apiError{StatusCode: res.StatusCode, Header: res.Header, Body: string(b)}
	}
	return res, nil
}

// listModels asks for one model: what a key costs nothing to prove.
func (c *messagesClient) listModels(ctx context.Context) error {
	req, err := c.newRequest(ctx, http.MethodGet, "/v1/models?limit=1", nil)
	if err != nil {
		return err
	}
	res, err := c.do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, io.LimitReader(res.Body, maxErrorBody))
	return err
}

// stream sends one message request as a stream and puts the message together from its events: message_start
// carries the message without content, content_block_start opens block i, content_block_delta's text_delta adds to
// it, message_delta says why it stopped and the cumulative usage, message_stop ends it; pings and other deltas
// (thinking, tool input) are skipped, an error event is an *apiError with the stream's status. A stream that ends
// before message_stop returns what it had: the caller checks StopReason.
func (c *messagesClient) stream(ctx context.Context, mr messageRequest) (*message, error) {
	mr.Stream = true
	body, err := json.Marshal(mr)
	if err != nil {
		return nil, err
	}
	req, err := c.newRequest(ctx, http.MethodPost, "/v1/messages", body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("accept", "text/event-stream")
	res, err := c.do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var msg message
	var texts []*strings.Builder
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var event string
	var data strings.Builder
	dispatch := func() (done bool, err error) {
		defer func() { event = ""; data.Reset() }()
		if data.Len() == 0 {
			return false, nil
		}
		var ev struct {
			Type    string          `json:"type"`
			Message json.RawMessage `json:"message"`
			Index   int             `json:"index"`
			Delta   struct {
				Type       string `json:"type"`
				Text       string `json:"text"`
				StopReason string `json:"stop_reason"`
			} `json:"delta"`
			ContentBlock contentBlock  `json:"content_block"`
			Usage        *messageUsage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data.String()), &ev); err != nil {
			return false, fmt.Errorf("%w: event %q: %v", errBadStream, event, err)
		}
		if ev.Type == "" {
			ev.Type = event
		}
		switch ev.Type {
		case "message_start":
			if err := json.Unmarshal(ev.Message, &msg); err != nil {
				return false, fmt.Errorf("%w: message_start: %v", errBadStream, err)
			}
		case "content_block_start":
			if ev.Index != len(texts) {
				return false, fmt.Errorf("%w: block %d started after %d blocks", errBadStream, ev.Index, len(texts))
			}
			msg.Content = append(msg.Content, contentBlock{Type: ev.ContentBlock.Type})
			texts = append(texts, &strings.Builder{})
			texts[ev.Index].WriteString(ev.ContentBlock.Text)
		case "content_block_delta":
			if ev.Index < 0 || ev.Index >= len(texts) {
				return false, fmt.Errorf("%w: a delta for block %d of %d", errBadStream, ev.Index, len(texts))
			}
			if ev.Delta.Type == "text_delta" {
				texts[ev.Index].WriteString(ev.Delta.Text)
			}
		case "message_delta":
			msg.StopReason = ev.Delta.StopReason
			if u := ev.Usage; u != nil {
				// The usage of message_delta is cumulative; the input counts are in it only when they changed.
				msg.Usage.OutputTokens = u.OutputTokens
				if u.InputTokens > 0 {
					msg.Usage.InputTokens = u.InputTokens
				}
				if u.CacheCreationInputTokens > 0 {
					msg.Usage.CacheCreationInputTokens = u.CacheCreationInputTokens
				}
				if u.CacheReadInputTokens > 0 {
					msg.Usage.CacheReadInputTokens = u.CacheReadInputTokens
				}
			}
		case "message_stop":
			return true, nil
		case "error":
			return false, &apiError{StatusCode: res.StatusCode, Header: res.Header, Body: data.String()}
		}
		return false, nil
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			done, err := dispatch()
			if err != nil {
				return nil, err
			}
			if done {
				return finish(&msg, texts), nil
			}
		case strings.HasPrefix(line, ":"): // a comment
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	// The body ended without a blank line after the last event: that event still counts.
	if _, err := dispatch(); err != nil {
		return nil, err
	}
	return finish(&msg, texts), nil
}

func finish(msg *message, texts []*strings.Builder) *message {
	for i, t := range texts {
		msg.Content[i].Text = t.String()
	}
	return msg
}
