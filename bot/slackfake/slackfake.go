// Package slackfake is a fake Slack on loopback for tests: the Web API methods orch calls (auth.test,
// chat.postMessage, chat.update, chat.postEphemeral, views.publish), response_url webhooks, and request signing for
// the requests Slack would send to orch.
//
// views.publish behaves as https://docs.slack.dev/reference/methods/views.publish says: it takes user_id and view as
// form fields (view a JSON-encoded string) or as a JSON body ("Accepted content types: application/x-www-form-urlencoded,
// application/json"); it "creates or updates the view that comprises an app's Home tab for a specific user", so the
// fake keeps the latest view per user, and its id stays the user's from one publish to the next while the hash changes
// with each; the success response "includes the published view payload" (id, hash, root_view_id, blocks with their
// block_id…); a missing user_id or view is "invalid_arguments", a hash that is not the stored one "hash_conflict", a
// view over 250kb "view_too_large" (the method's error table). The app_home_opened body (AppHomeOpened) carries the
// Home's current view when one was published, as https://docs.slack.dev/reference/events/app_home_opened says; a
// click on a Home button (HomeClick) is the block_actions payload of a Home tab view in
// https://docs.slack.dev/reference/interaction-payloads/block_actions-payload: container.type "view", a view, no
// channel, message or response_url.
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
	responses  []string // texts sent to response_url
	next       int
	calls      map[string]int
	// ratelimit makes the next n Web API calls answer 429 with Retry-After.
	ratelimit  int
	retryAfter int
	// limited makes the next n calls of one method answer 429 (Slack's limits are per method).
	limited map[string]int
	down    bool
	homes   map[string]*Home // user → the latest Home tab published
}

// Home is a user's Home tab as views.publish last left it.
type Home struct {
	ID        string
	Hash      string
	Blocks    json.RawMessage
	Publishes int // how often it was published
}

// Buttons returns the Home's buttons in the order Slack shows them.
func (h Home) Buttons() []Button { return ButtonList(Message{Blocks: h.Blocks}) }

// New starts a fake Slack; it stops at the end of the test via Close.
func New() *Slack {
	s := &Slack{calls: map[string]int{}, next: 1, limited: map[string]int{}, homes: map[string]*Home{}}
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

// RateLimitMethod makes the next n calls of one Web API method fail with 429 and Retry-After: seconds.
func (s *Slack) RateLimitMethod(method string, n, seconds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limited[method], s.retryAfter = n, seconds
}

// HomeOf returns the Home tab last published for user, and whether there is one.
func (s *Slack) HomeOf(user string) (Home, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.homes[user]
	if !ok {
		return Home{}, false
	}
	return *h, true
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
	return append(append([]string(nil), s.ephemerals...), s.responses...)
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
	if s.ratelimit > 0 || s.limited[method] > 0 {
		if s.limited[method] > 0 {
			s.limited[method]--
		} else {
			s.ratelimit--
		}
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
	case "views.publish":
		json.NewEncoder(w).Encode(s.publish(r))
	case "chat.postEphemeral":
		s.ephemerals = append(s.ephemerals, r.Form.Get("text"))
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "message_ts": "1700000000.999999"})
	default:
		json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "unknown_method"})
	}
}

func (s *Slack) response(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Text string `json:"text"`
	}
	data, _ := io.ReadAll(r.Body)
	json.Unmarshal(data, &body)
	s.mu.Lock()
	s.responses = append(s.responses, body.Text)
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

// maxView is the largest view views.publish takes ("view_too_large": greater than 250kb).
const maxView = 250 * 1024

// publish is views.publish; it runs with s.mu held.
func (s *Slack) publish(r *http.Request) map[string]any {
	var req struct {
		UserID string          `json:"user_id"`
		View   json.RawMessage `json:"view"`
		Hash   *string         `json:"hash"`
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &req); err != nil {
			return map[string]any{"ok": false, "error": "invalid_json"}
		}
		// A view may also be sent as a JSON-encoded string inside the JSON body.
		var str string
		if json.Unmarshal(req.View, &str) == nil {
			req.View = json.RawMessage(str)
		}
	} else {
		req.UserID, req.View = r.Form.Get("user_id"), json.RawMessage(r.Form.Get("view"))
		if r.Form.Has("hash") {
			h := r.Form.Get("hash")
			req.Hash = &h
		}
	}
	invalid := func(what string) map[string]any {
		return map[string]any{"ok": false, "error": "invalid_arguments",
			"response_metadata": map[string]any{"messages": []string{"invalid `" + what + "`"}}}
	}
	if req.UserID == "" {
		return invalid("user_id")
	}
	var view struct {
		Type            string           `json:"type"`
		Blocks          []map[string]any `json:"blocks"`
		PrivateMetadata string           `json:"private_metadata"`
		CallbackID      string           `json:"callback_id"`
		ExternalID      string           `json:"external_id"`
	}
	if len(req.View) == 0 || string(req.View) == "null" || json.Unmarshal(req.View, &view) != nil {
		return invalid("view")
	}
	if len(req.View) > maxView {
		return map[string]any{"ok": false, "error": "view_too_large"}
	}
	home := s.homes[req.UserID]
	if req.Hash != nil && (home == nil || *req.Hash != home.Hash) {
		return map[string]any{"ok": false, "error": "hash_conflict"}
	}
	if home == nil {
		home = &Home{ID: fmt.Sprintf("VHOME%06d", s.next)}
		s.next++
		s.homes[req.UserID] = home
	}
	// Slack gives each block without a block_id one of its own.
	for i, b := range view.Blocks {
		if id, _ := b["block_id"].(string); id == "" {
			b["block_id"] = fmt.Sprintf("b%d%d", s.next, i)
		}
	}
	if view.Blocks == nil {
		view.Blocks = []map[string]any{}
	}
	blocks, _ := json.Marshal(view.Blocks)
	home.Publishes++
	home.Hash = fmt.Sprintf("%d.%08x", time.Now().Unix(), s.next)
	s.next++
	home.Blocks = blocks
	return map[string]any{"ok": true, "view": s.viewObject(home, view.Type, view.PrivateMetadata, view.CallbackID,
		view.ExternalID)}
}

// viewObject is a Home as Slack returns it and sends it back in payloads.
func (s *Slack) viewObject(h *Home, typ, privateMetadata, callbackID, externalID string) map[string]any {
	return map[string]any{"id": h.ID, "team_id": "T0001", "type": typ, "close": nil, "submit": nil,
		"blocks": h.Blocks, "private_metadata": privateMetadata, "callback_id": callbackID,
		"state": map[string]any{"values": map[string]any{}}, "hash": h.Hash, "clear_on_close": false,
		"notify_on_close": false, "root_view_id": h.ID, "previous_view_id": nil, "app_id": "A0001",
		"external_id": externalID, "app_installed_team_id": "T0001", "bot_id": "BORCH"}
}

// AppHomeOpened is the Events API body Slack sends when user opens the app's Home tab: the envelope of
// event_callback with an app_home_opened event, which carries the Home's view once one was published.
func (s *Slack) AppHomeOpened(eventID, user string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	ts := fmt.Sprintf("%d.%06d", now.Unix(), now.Nanosecond()/1000)
	ev := map[string]any{"type": "app_home_opened", "user": user, "channel": "D" + strings.TrimPrefix(user, "U"),
		"event_ts": ts, "tab": "home"}
	if h := s.homes[user]; h != nil {
		ev["view"] = s.viewObject(h, "home", "", "", "")
	}
	body := map[string]any{
		"type": "event_callback", "token": "x", "team_id": "T0001", "api_app_id": "A0001", "event": ev,
		"event_context": "EC0001", "event_id": eventID, "event_time": now.Unix(),
		"authorizations": []map[string]any{{"enterprise_id": nil, "team_id": "T0001", "user_id": BotUserID,
			"is_bot": true, "is_enterprise_install": false}},
		"is_ext_shared_channel": false, "context_team_id": "T0001", "context_enterprise_id": nil,
	}
	data, _ := json.Marshal(body)
	return data
}

// HomeClick is the form body of a click by user on a button of Home tab h: its view (h.ID names it; a test forging a
// click passes another), no channel, no message, no response_url.
func (s *Slack) HomeClick(h Home, user, actionID, value string) []byte {
	view := s.viewObject(&h, "home", "", "", "")
	payload := map[string]any{
		"type":       "block_actions",
		"team":       map[string]any{"id": "T0001", "domain": "orch-test"},
		"user":       map[string]any{"id": user, "username": user, "name": user, "team_id": "T0001"},
		"api_app_id": "A0001",
		"token":      "x",
		"container":  map[string]any{"type": "view", "view_id": h.ID},
		"trigger_id": "24571818370.22717085937.b9c7ca14b87be6b44ff5864edba8306f",
		"view":       view,
		"actions": []map[string]any{{"type": "button", "block_id": "b", "action_id": actionID, "value": value,
			"text":      map[string]any{"type": "plain_text", "text": "button", "emoji": true},
			"action_ts": fmt.Sprintf("%d.000001", time.Now().Unix())}},
	}
	data, _ := json.Marshal(payload)
	return []byte(url.Values{"payload": {string(data)}}.Encode())
}
