// Package slackfake is a fake Slack on loopback for tests: the Web API methods orch calls (auth.test,
// chat.postMessage, chat.update, chat.postEphemeral), response_url webhooks, and request signing for the requests
// Slack would send to orch.
//
// A response_url takes a JSON message with text, blocks, response_type and replace_original, as Slack documents it
// in "Handling user interaction", section "Sending message responses"
// (https://docs.slack.dev/interactivity/handling-user-interaction#message_responses); the fake keeps each such
// message whole (Responses).
package slackfake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// BotUserID is the user id auth.test reports for the bot.
const BotUserID = "UORCHBOT"

// TeamURL is the workspace's address auth.test reports (https://docs.slack.dev/reference/methods/auth.test: "url").
const TeamURL = "https://orch-test.slack.com/"

// Message is a message as the fake holds it, after its last update.
type Message struct {
	Channel  string
	TS       string
	ThreadTS string
	Text     string
	Blocks   json.RawMessage
	Updates  int
	Posted   time.Time
}

// Slack is the fake. Its zero value is not usable; call New.
type Slack struct {
	srv *httptest.Server

	mu         sync.Mutex
	messages   []*Message
	ephemerals []string
	responses  []Response // messages sent to response_url
	next       int
	calls      map[string]int
	// ratelimit makes the next n Web API calls answer 429 with Retry-After.
	ratelimit  int
	retryAfter int
	down       bool
}

// New starts a fake Slack; it stops at the end of the test via Close.
func New() *Slack {
	s := &Slack{calls: map[string]int{}, next: 1}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.api)
	mux.HandleFunc("/response/", s.response)
	s.srv = httptest.NewServer(mux)
	return s
}

// Close stops the server.
func (s *Slack) Close() { s.srv.Close() }

// APIURL is the value for SLACK_API_URL.
func (s *Slack) APIURL() string { return s.srv.URL + "/api/" }

// ResponseURL is a response_url for one request.
func (s *Slack) ResponseURL(id string) string { return s.srv.URL + "/response/" + id }

// RateLimit makes the next n Web API calls fail with 429 and Retry-After: seconds.
func (s *Slack) RateLimit(n, seconds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ratelimit, s.retryAfter = n, seconds
}

// Down makes every Web API call fail with 503 until Up.
func (s *Slack) Down() { s.mu.Lock(); s.down = true; s.mu.Unlock() }

// Up ends Down.
func (s *Slack) Up() { s.mu.Lock(); s.down = false; s.mu.Unlock() }

// Messages returns a copy of every message, in posting order.
func (s *Slack) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, len(s.messages))
	for i, m := range s.messages {
		out[i] = *m
	}
	return out
}

// Ephemerals returns the texts of ephemeral messages and response_url answers.
func (s *Slack) Ephemerals() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]string(nil), s.ephemerals...)
	for _, r := range s.responses {
		out = append(out, r.Text)
	}
	return out
}

// Response is a message sent to a response_url, with the fields Slack documents for it.
type Response struct {
	Text            string          `json:"text"`
	Blocks          json.RawMessage `json:"blocks"`
	ResponseType    string          `json:"response_type"`
	ReplaceOriginal bool            `json:"replace_original"`
}

// Responses returns the messages sent to response_urls, in the order they came.
func (s *Slack) Responses() []Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Response(nil), s.responses...)
}

// Calls is how often each Web API method was called.
func (s *Slack) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

func (s *Slack) api(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.calls[method]++
	if s.down {
		s.mu.Unlock()
		http.Error(w, "slack is down", http.StatusServiceUnavailable)
		return
	}
	if s.ratelimit > 0 {
		s.ratelimit--
		retry := s.retryAfter
		s.mu.Unlock()
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		w.WriteHeader(http.StatusTooManyRequests)
		json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "ratelimited"})
		return
	}
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch method {
	case "auth.test":
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "url": TeamURL, "team": "Orch Test",
			"user": "orch", "team_id": "T0001", "user_id": BotUserID, "bot_id": "BORCH"})
	case "chat.postMessage":
		m := &Message{Channel: r.Form.Get("channel"), ThreadTS: r.Form.Get("thread_ts"), Text: r.Form.Get("text"),
			Blocks: json.RawMessage(r.Form.Get("blocks")), Posted: time.Now()}
		m.TS = fmt.Sprintf("1700000000.%06d", s.next)
		s.next++
		s.messages = append(s.messages, m)
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS})
	case "chat.update":
		for _, m := range s.messages {
			if m.Channel == r.Form.Get("channel") && m.TS == r.Form.Get("ts") {
				m.Text, m.Blocks = r.Form.Get("text"), json.RawMessage(r.Form.Get("blocks"))
				m.Updates++
				json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS})
				return
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "message_not_found"})
	case "chat.postEphemeral":
		s.ephemerals = append(s.ephemerals, r.Form.Get("text"))
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "message_ts": "1700000000.999999"})
	default:
		json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "unknown_method"})
	}
}

func (s *Slack) response(w http.ResponseWriter, r *http.Request) {
	var body Response
	data, _ := io.ReadAll(r.Body)
	json.Unmarshal(data, &body)
	s.mu.Lock()
	s.responses = append(s.responses, body)
	s.mu.Unlock()
	w.Write([]byte("ok"))
}

// Sign signs a request body as Slack does (v0 signature) at time ts.
func Sign(secret string, ts time.Time, body []byte) (signature, timestamp string) {
	timestamp = strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:", timestamp)
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil)), timestamp
}

// Request builds a signed request for one of orch's Slack endpoints.
func Request(baseURL, path, secret string, body []byte, contentType string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, baseURL+path, strings.NewReader(string(body)))
	sig, ts := Sign(secret, time.Now(), body)
	req.Header.Set("X-Slack-Signature", sig)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("Content-Type", contentType)
	return req
}

// SlashCommand is the form body of `/orch TEXT` typed by user in channel.
func (s *Slack) SlashCommand(text, user, channel string) []byte {
	v := url.Values{"command": {"/orch"}, "text": {text}, "user_id": {user}, "user_name": {user},
		"channel_id": {channel}, "team_id": {"T0001"}, "response_url": {s.ResponseURL("cmd")}, "trigger_id": {"1.2.3"}}
	return []byte(v.Encode())
}

// Click is the form body of a click on a button of message m by user.
func (s *Slack) Click(m Message, user, actionID, value string) []byte {
	payload := map[string]any{
		"type":         "block_actions",
		"user":         map[string]any{"id": user, "username": user, "team_id": "T0001"},
		"api_app_id":   "A0001",
		"team":         map[string]any{"id": "T0001"},
		"container":    map[string]any{"type": "message", "message_ts": m.TS, "channel_id": m.Channel, "thread_ts": m.ThreadTS},
		"channel":      map[string]any{"id": m.Channel},
		"message":      map[string]any{"ts": m.TS, "thread_ts": m.ThreadTS, "text": m.Text},
		"response_url": s.ResponseURL("click-" + user),
		"trigger_id":   "1.2.3",
		"actions": []map[string]any{{"type": "button", "action_id": actionID, "block_id": "b",
			"value": value, "action_ts": "1700000001.000001"}},
	}
	data, _ := json.Marshal(payload)
	return []byte(url.Values{"payload": {string(data)}}.Encode())
}

// ThreadReply is the Events API body of a reply by user in a thread.
func ThreadReply(eventID, channel, threadTS, user, text string) []byte {
	ts := fmt.Sprintf("1700000100.%06d", time.Now().Nanosecond()/1000)
	body := map[string]any{
		"token": "x", "team_id": "T0001", "api_app_id": "A0001", "type": "event_callback",
		"event_id": eventID, "event_time": time.Now().Unix(),
		"event": map[string]any{"type": "message", "user": user, "text": text, "ts": ts, "thread_ts": threadTS,
			"channel": channel, "channel_type": "channel", "event_ts": ts},
	}
	data, _ := json.Marshal(body)
	return data
}

// Buttons returns the action ids and values of a message's buttons.
func Buttons(m Message) map[string]string {
	var blocks []struct {
		Type     string `json:"type"`
		Elements []struct {
			Type     string `json:"type"`
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	json.Unmarshal(m.Blocks, &blocks)
	out := map[string]string{}
	for _, b := range blocks {
		if b.Type != "actions" {
			continue
		}
		for _, e := range b.Elements {
			if e.Type == "button" {
				out[e.ActionID] = e.Value
			}
		}
	}
	return out
}

// Button is one button of a message: its label, action id and value.
type Button struct {
	Text, ActionID, Value string
}

// ButtonList returns a message's buttons in the order Slack shows them.
func ButtonList(m Message) []Button {
	var blocks []struct {
		Type     string `json:"type"`
		Elements []struct {
			Type string `json:"type"`
			Text struct {
				Text string `json:"text"`
			} `json:"text"`
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	json.Unmarshal(m.Blocks, &blocks)
	var out []Button
	for _, b := range blocks {
		if b.Type != "actions" {
			continue
		}
		for _, e := range b.Elements {
			if e.Type == "button" {
				out = append(out, Button{Text: e.Text.Text, ActionID: e.ActionID, Value: e.Value})
			}
		}
	}
	return out
}
