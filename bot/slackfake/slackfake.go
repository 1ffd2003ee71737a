// Package slackfake is a fake Slack on loopback for tests: the Web API methods orch calls (auth.test,
// chat.postMessage, chat.update, chat.postEphemeral, conversations.replies, views.open, views.publish), response_url
// webhooks, and request signing for the requests Slack would send to orch.
//
// Where each behaviour comes from (Slack's Web API reference, docs.slack.dev/reference/methods/…, as of 2026):
//   - auth.test: ok, url, team, user, team_id, user_id, bot_id.
//   - chat.postMessage: a message gets a ts unique in its channel; a user id as the channel posts to the app's direct
//     messages with that user, a conversation of its own (D…) the response names (DMChannel); in a channel the bot is
//     not in (Leave) chat.postMessage, chat.update and chat.postEphemeral fail with not_in_channel.
//   - conversations.replies: channel and ts are required; ts must be an existing message's, else thread_not_found
//     (channel_not_found for a channel it never saw); the parent comes first, then the replies oldest first; a
//     message with no replies returns itself alone; cursor pagination through response_metadata.next_cursor with
//     has_more, an unknown cursor is invalid_cursor; limit defaults to 1000 (Tier 3 internal apps; the 15-message
//     cap applies only to commercially distributed non-Marketplace apps).
//   - People's messages exist in Slack before Slack sends their events: tests add them with Say, their text as Slack
//     holds and sends it (&, < and > escaped as &amp;, &lt;, &gt;; docs.slack.dev/messaging/formatting-message-text).
//
// views.open (https://docs.slack.dev/reference/methods/views.open) exchanges a trigger_id for a modal: it takes
// trigger_id and view (a JSON-encoded string in a form, an object in a JSON body; both content types are accepted),
// and answers the view with its id, or an error: invalid_arguments when either is missing, invalid_trigger_id for a
// trigger the fake did not issue, exchanged_trigger_id for one already exchanged, expired_trigger_id for one presented
// more than 3 seconds after it was issued (docs.slack.dev/interactivity/handling-user-interaction: a trigger_id
// expires 3 seconds after it is sent to the app), view_too_large beyond 250 kB. The fake issues trigger ids with the clicks it builds
// (Click, Trigger); Advance moves its clock for them. A view that breaks a documented Block Kit limit the bot relies on
// (title, submit and close at most 24 characters, at most 100 blocks, private_metadata at most 3000 characters, radio
// buttons at most 10 options, a static select at most 100, option texts at most 75 characters and values 150, an
// initial_option that is one of the options; docs.slack.dev/reference/views/modal-views and the elements' pages) is
// refused with invalid_arguments, as Slack refuses it.
//
// ViewSubmission builds what Slack sends when a person submits an opened modal: a view_submission payload, shaped as
// Slack's own SDK tests capture it (bolt-python's view_submission), whose state.values hold each input block's value
// as Slack reports it (a plain_text_input's value, null when left empty; a select's or radio group's selected_option,
// the initial_option when untouched).
//
// A response_url takes a JSON message with text, blocks, response_type and replace_original, as Slack documents it
// in "Handling user interaction", section "Sending message responses"
// (https://docs.slack.dev/interactivity/handling-user-interaction#message_responses); the fake keeps each such
// message whole (Responses).
//
// views.publish behaves as https://docs.slack.dev/reference/methods/views.publish says: it takes user_id and view as
// form fields (view a JSON-encoded string) or as a JSON body ("Accepted content types: application/x-www-form-urlencoded,
// application/json"); it "creates or updates the view that comprises an app's Home tab for a specific user", so the
// fake keeps the latest view per user, with a new hash each publish, and a new id too (the documentation does not say
// whether the id stays, so the fake gives orch no id to rely on); the success response "includes the published view payload" (id, hash, root_view_id, blocks with their
// block_id…); a missing user_id or view is "invalid_arguments", a hash that is not the stored one "hash_conflict", a
// view over 250kb "view_too_large" (the method's error table). The app_home_opened body (AppHomeOpened) carries the
// Home's current view when one was published, as https://docs.slack.dev/reference/events/app_home_opened says; a
// click on a Home button (HomeClick) is the block_actions payload of a Home tab view in
// https://docs.slack.dev/reference/interaction-payloads/block_actions-payload: container.type "view", a view, no
// channel, message or response_url.
//
// A click on a button is its block_actions action with the button's value, when it has one. A link button (one with a
// url, docs.slack.dev/reference/block-kit/block-elements/button-element) has none: Slack opens the link in the
// browser, and "you'll still receive an interaction payload and will need to send an acknowledgement response".
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
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
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
	// User is the person who wrote a message added with Say; "" for the bot's own.
	User    string
	Blocks  json.RawMessage
	Updates int
	Posted  time.Time
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
	// limited makes the next n calls of one method answer 429 (Slack's limits are per method).
	limited map[string]int
	down    bool
	homes   map[string]*Home // user → the latest Home tab published
	left    map[string]bool  // channels the bot is not in

	// Trigger ids issued (by id: when and to whom), exchanged ones, the clock offset of Advance, the modals opened.
	triggers  map[string]trigger
	exchanged map[string]bool
	offset    time.Duration
	views     []View
}

// trigger is a trigger_id the fake issued.
type trigger struct {
	issued time.Time
	user   string
}

// triggerLifetime is how long a trigger_id can be exchanged for a modal.
const triggerLifetime = 3 * time.Second

// View is a modal opened with views.open.
type View struct {
	ID        string
	TriggerID string
	User      string          // who clicked, and sees the modal
	JSON      json.RawMessage // the view as opened: orch's view object with Slack's id, team_id, state, hash…
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
	s := &Slack{calls: map[string]int{}, next: 1, triggers: map[string]trigger{}, exchanged: map[string]bool{},
		limited: map[string]int{}, homes: map[string]*Home{}, left: map[string]bool{}}
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

// chat answers chat.postMessage, chat.update and chat.postEphemeral.
func (s *Slack) chat(w http.ResponseWriter, r *http.Request, method string) {
	switch method {
	case "chat.postMessage":
		m := &Message{Channel: DMChannel(r.Form.Get("channel")), ThreadTS: r.Form.Get("thread_ts"), Text: r.Form.Get("text"),
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
	}
}

// DMChannel is the channel chat.postMessage posts to for channel: a user's id (U…, W…) stands for the app's direct
// messages with that user, a conversation of its own (D…) that the response names; any other channel is itself.
func DMChannel(channel string) string {
	if len(channel) > 1 && (channel[0] == 'U' || channel[0] == 'W') {
		return "D" + channel[1:]
	}
	return channel
}

// Leave takes the bot out of a channel: posting there fails with not_in_channel, as it does in a channel the bot was
// never invited to.
func (s *Slack) Leave(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.left[channel] = true
}

// Say records a message a person wrote in channel (in threadTS's thread when set), as Slack holds it before it sends
// the message's events, and returns it.
func (s *Slack) Say(channel, threadTS, user, text string) Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := &Message{Channel: channel, ThreadTS: threadTS, Text: text, User: user, Posted: time.Now(),
		TS: fmt.Sprintf("1700000000.%06d", s.next)}
	s.next++
	s.messages = append(s.messages, m)
	return *m
}

// replies answers conversations.replies from the messages the fake holds.
func (s *Slack) replies(w http.ResponseWriter, r *http.Request) {
	thread, errCode := s.thread(r.Form.Get("channel"), r.Form.Get("ts"))
	start := 0
	if c := r.Form.Get("cursor"); errCode == "" && c != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(c, "next:"))
		if err != nil || !strings.HasPrefix(c, "next:") || n < 0 || n > len(thread) {
			errCode = "invalid_cursor"
		}
		start = n
	}
	if errCode != "" {
		json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": errCode})
		return
	}
	limit, err := strconv.Atoi(r.Form.Get("limit"))
	if err != nil || limit <= 0 || limit > 1000 {
		limit = 1000
	}
	end := min(start+limit, len(thread))
	out := make([]map[string]any, 0, end-start)
	for _, m := range thread[start:end] {
		msg := map[string]any{"type": "message", "text": m.Text, "ts": m.TS}
		if m.User != "" {
			msg["user"] = m.User
		} else {
			msg["bot_id"], msg["user"] = "BORCH", BotUserID
		}
		if m.ThreadTS != "" || len(thread) > 1 {
			msg["thread_ts"] = thread[0].TS
		}
		out = append(out, msg)
	}
	resp := map[string]any{"ok": true, "messages": out, "has_more": end < len(thread)}
	if end < len(thread) {
		resp["response_metadata"] = map[string]any{"next_cursor": "next:" + strconv.Itoa(end)}
	}
	json.NewEncoder(w).Encode(resp)
}

// thread is the message ts of channel and, when it is a thread's parent, its replies in order; or the error Slack
// answers with: channel_not_found, thread_not_found.
func (s *Slack) thread(channel, ts string) ([]*Message, string) {
	known, parent := false, (*Message)(nil)
	for _, m := range s.messages {
		if m.Channel == channel {
			known = true
			if m.TS == ts {
				parent = m
			}
		}
	}
	switch {
	case channel == "" || !known:
		return nil, "channel_not_found"
	case ts == "" || parent == nil:
		return nil, "thread_not_found"
	}
	thread := []*Message{parent}
	if parent.ThreadTS == "" || parent.ThreadTS == parent.TS {
		for _, m := range s.messages {
			if m.Channel == channel && m.ThreadTS == parent.TS && m.TS != parent.TS {
				thread = append(thread, m)
			}
		}
	}
	slices.SortStableFunc(thread[1:], func(a, b *Message) int { return strings.Compare(a.TS, b.TS) })
	return thread, ""
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

// Trigger issues a trigger_id for an interaction of user, as Slack sends with a click: views.open exchanges it once,
// within 3 seconds.
func (s *Slack) Trigger(user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.next
	s.next++
	id := fmt.Sprintf("%d.%d.%032x", 1700000000+n, 22717085937, n)
	s.triggers[id] = trigger{issued: time.Now().Add(s.offset), user: user}
	return id
}

// Advance moves the fake's clock forward by d, for the lifetime of trigger ids.
func (s *Slack) Advance(d time.Duration) {
	s.mu.Lock()
	s.offset += d
	s.mu.Unlock()
}

// Views returns the modals opened, in opening order.
func (s *Slack) Views() []View {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]View(nil), s.views...)
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
	case "chat.postMessage", "chat.update", "chat.postEphemeral":
		if s.left[r.Form.Get("channel")] {
			// The methods' "not_in_channel": a channel the bot is not a member of.
			json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "not_in_channel"})
			return
		}
		s.chat(w, r, method)
	case "conversations.replies":
		s.replies(w, r)
	case "views.open":
		s.viewsOpen(w, r)
	case "views.publish":
		json.NewEncoder(w).Encode(s.publish(r))
	default:
		json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "unknown_method"})
	}
}

// viewsOpen is views.open; s.mu is held.
func (s *Slack) viewsOpen(w http.ResponseWriter, r *http.Request) {
	fail := func(code string, messages ...string) {
		out := map[string]any{"ok": false, "error": code}
		if len(messages) > 0 {
			out["response_metadata"] = map[string]any{"messages": messages}
		}
		json.NewEncoder(w).Encode(out)
	}
	triggerID, rawView := r.Form.Get("trigger_id"), r.Form.Get("view")
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var body struct {
			TriggerID string          `json:"trigger_id"`
			View      json.RawMessage `json:"view"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			fail("invalid_json")
			return
		}
		triggerID, rawView = body.TriggerID, string(body.View)
	}
	if triggerID == "" || rawView == "" || rawView == "null" {
		fail("invalid_arguments", "missing required field: trigger_id or view")
		return
	}
	if len(rawView) > 250<<10 {
		fail("view_too_large")
		return
	}
	t, ok := s.triggers[triggerID]
	switch {
	case !ok:
		fail("invalid_trigger_id")
		return
	case s.exchanged[triggerID]:
		fail("exchanged_trigger_id")
		return
	case time.Now().Add(s.offset).Sub(t.issued) > triggerLifetime:
		fail("expired_trigger_id")
		return
	}
	var view map[string]any
	if err := json.Unmarshal([]byte(rawView), &view); err != nil {
		fail("invalid_arguments", "view is not a JSON object")
		return
	}
	if msg := checkModal(view); msg != "" {
		fail("invalid_arguments", msg)
		return
	}
	s.exchanged[triggerID] = true
	id := fmt.Sprintf("V%08d", s.next)
	s.next++
	view["id"], view["team_id"], view["state"], view["hash"] = id, "T0001", map[string]any{"values": map[string]any{}}, "1700000000."+id
	view["root_view_id"], view["previous_view_id"], view["app_id"], view["bot_id"] = id, nil, "A0001", "BORCH"
	view["app_installed_team_id"] = "T0001"
	for _, k := range []string{"private_metadata", "callback_id", "external_id"} {
		if _, ok := view[k]; !ok {
			view[k] = ""
		}
	}
	data, _ := json.Marshal(view)
	s.views = append(s.views, View{ID: id, TriggerID: triggerID, User: t.user, JSON: data})
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "view": view})
}

// checkModal returns what breaks one of Slack's documented limits in a modal view, or "".
func checkModal(view map[string]any) string {
	if view["type"] != "modal" {
		return "view type must be modal"
	}
	for _, k := range []string{"title", "submit", "close"} {
		if t, ok := view[k].(map[string]any); ok && utf8.RuneCountInString(str(t["text"])) > 24 {
			return k + " must be at most 24 characters"
		}
	}
	if _, ok := view["title"].(map[string]any); !ok {
		return "missing required field: title"
	}
	if utf8.RuneCountInString(str(view["private_metadata"])) > 3000 {
		return "private_metadata must be at most 3000 characters"
	}
	blocks, _ := view["blocks"].([]any)
	if len(blocks) > 100 {
		return "no more than 100 items allowed [json-pointer:/view/blocks]"
	}
	ids := map[string]bool{}
	for _, b := range blocks {
		block, _ := b.(map[string]any)
		if id := str(block["block_id"]); id != "" {
			if ids[id] {
				return "duplicate block_id " + id
			}
			ids[id] = true
		}
		el, _ := block["element"].(map[string]any)
		if problem := checkOptions(el); problem != "" {
			return problem
		}
	}
	return ""
}

// checkOptions checks the options of an input's element, for the elements that have them: how many, their lengths,
// and an initial option that is one of them.
func checkOptions(el map[string]any) string {
	limit := map[string]int{"radio_buttons": 10, "static_select": 100}[str(el["type"])]
	if limit == 0 {
		return ""
	}
	opts, _ := el["options"].([]any)
	if len(opts) > limit {
		return fmt.Sprintf("%s: no more than %d options allowed", el["type"], limit)
	}
	initial, found := el["initial_option"], el["initial_option"] == nil
	for _, o := range opts {
		opt, _ := o.(map[string]any)
		text, _ := opt["text"].(map[string]any)
		if utf8.RuneCountInString(str(text["text"])) > 75 || utf8.RuneCountInString(str(opt["value"])) > 150 {
			return "an option's text must be at most 75 characters and its value 150"
		}
		if in, ok := initial.(map[string]any); ok && str(in["value"]) == str(opt["value"]) {
			found = true
		}
	}
	if !found {
		return "initial_option must be one of the options"
	}
	return ""
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// ViewSubmissionPayload is the view_submission Slack sends when user submits modal v; input holds what the person
// entered, by block id: a plain_text_input's text, or the value of the option chosen in a select or radio group ("" to
// choose none). Inputs not in input are left as the modal opened. A value that is no option of its element chooses
// none: a person can only choose what the modal lists.
func (s *Slack) ViewSubmissionPayload(v View, user string, input map[string]string) map[string]any {
	var view map[string]any
	json.Unmarshal(v.JSON, &view)
	values := map[string]any{}
	blocks, _ := view["blocks"].([]any)
	for _, b := range blocks {
		block, _ := b.(map[string]any)
		el, _ := block["element"].(map[string]any)
		if block["type"] != "input" || el == nil {
			continue
		}
		id, typ := str(block["block_id"]), str(el["type"])
		entered, given := input[id]
		state := map[string]any{"type": typ}
		switch typ {
		case "plain_text_input":
			state["value"] = nil
			if given && entered != "" {
				state["value"] = entered
			}
		case "radio_buttons", "static_select":
			state["selected_option"] = el["initial_option"]
			if given {
				state["selected_option"] = nil
				opts, _ := el["options"].([]any)
				for _, o := range opts {
					if opt, _ := o.(map[string]any); str(opt["value"]) == entered && entered != "" {
						state["selected_option"] = opt
					}
				}
			}
		default:
			continue
		}
		values[id] = map[string]any{str(el["action_id"]): state}
	}
	view["state"] = map[string]any{"values": values}
	return map[string]any{
		"type":          "view_submission",
		"team":          map[string]any{"id": "T0001", "domain": "orch-test"},
		"user":          map[string]any{"id": user, "username": user, "name": user, "team_id": "T0001"},
		"api_app_id":    "A0001",
		"token":         "verification_token",
		"trigger_id":    s.Trigger(user),
		"view":          view,
		"response_urls": []any{},
	}
}

// ViewSubmission is the form body of ViewSubmissionPayload, as Slack posts it to the app's interactivity URL.
func (s *Slack) ViewSubmission(v View, user string, input map[string]string) []byte {
	data, _ := json.Marshal(s.ViewSubmissionPayload(v, user, input))
	return []byte(url.Values{"payload": {string(data)}}.Encode())
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

// SlashCommand is the form body of `/orch TEXT` typed by user in channel. Each carries a trigger_id of its own, as
// every slash command Slack sends does (docs.slack.dev/interactivity/implementing-slash-commands, "trigger_id"): two
// commands typed alike are two different bodies.
func (s *Slack) SlashCommand(text, user, channel string) []byte {
	v := url.Values{"command": {"/orch"}, "text": {text}, "user_id": {user}, "user_name": {user},
		"channel_id": {channel}, "team_id": {"T0001"}, "response_url": {s.ResponseURL("cmd")}, "trigger_id": {s.Trigger(user)}}
	return []byte(v.Encode())
}

// Click is the form body of a click on a button of message m by user. A button without a value (value "": a link
// button) is clicked as Slack sends it, its action without a value.
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
		"trigger_id":   s.Trigger(user),
		"actions": []map[string]any{buttonAction(map[string]any{"type": "button", "action_id": actionID, "block_id": "b",
			"action_ts": "1700000001.000001"}, value)},
	}
	data, _ := json.Marshal(payload)
	return []byte(url.Values{"payload": {string(data)}}.Encode())
}

// MessageShortcut is the form body of a message shortcut (callbackID) that user chose on message m: a message_action
// payload, shaped as Slack documents it (docs.slack.dev/reference/interaction-payloads/shortcuts-interaction-payload:
// type, callback_id, trigger_id, response_url, team, channel, user, message_ts and the message itself).
func (s *Slack) MessageShortcut(m Message, user, callbackID string) []byte {
	msg := map[string]any{"type": "message", "text": m.Text, "ts": m.TS}
	if m.User != "" {
		msg["user"] = m.User
	} else {
		msg["bot_id"], msg["user"] = "BORCH", BotUserID
	}
	if m.ThreadTS != "" {
		msg["thread_ts"] = m.ThreadTS
	} else if s.hasReplies(m) {
		msg["thread_ts"] = m.TS // a thread's parent carries its own ts as thread_ts
	}
	payload := map[string]any{
		"type": "message_action", "token": "x", "action_ts": "1700000002.000001", "callback_id": callbackID,
		"trigger_id":   s.Trigger(user),
		"team":         map[string]any{"id": "T0001", "domain": "orch-test"},
		"user":         map[string]any{"id": user, "username": user, "name": user, "team_id": "T0001"},
		"channel":      map[string]any{"id": m.Channel, "name": "runs"},
		"message_ts":   m.TS,
		"message":      msg,
		"response_url": s.ResponseURL("shortcut-" + user),
	}
	data, _ := json.Marshal(payload)
	return []byte(url.Values{"payload": {string(data)}}.Encode())
}

func (s *Slack) hasReplies(m Message) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.messages {
		if r.Channel == m.Channel && r.ThreadTS == m.TS && r.TS != m.TS {
			return true
		}
	}
	return false
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

// Button is one button of a message: its label, action id and value, and the link a link button opens.
type Button struct {
	Text, ActionID, Value, URL string
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
			URL      string `json:"url"`
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
				out = append(out, Button{Text: e.Text.Text, ActionID: e.ActionID, Value: e.Value, URL: e.URL})
			}
		}
	}
	return out
}

// maxView is the largest view views.publish takes ("view_too_large": greater than 250kb).
const maxView = 250 * 1024

// publish is views.publish; it runs with s.mu held.
// publishRequest is the arguments of views.publish.
type publishRequest struct {
	UserID string          `json:"user_id"`
	View   json.RawMessage `json:"view"`
	Hash   *string         `json:"hash"`
}

// readPublish reads views.publish's arguments from a JSON body (where the view may also be a JSON-encoded string) or
// a form; ok is false for a JSON body that does not parse.
func readPublish(r *http.Request) (req publishRequest, ok bool) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		req.UserID, req.View = r.Form.Get("user_id"), json.RawMessage(r.Form.Get("view"))
		if r.Form.Has("hash") {
			h := r.Form.Get("hash")
			req.Hash = &h
		}
		return req, true
	}
	data, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(data, &req); err != nil {
		return req, false
	}
	var str string
	if json.Unmarshal(req.View, &str) == nil {
		req.View = json.RawMessage(str)
	}
	return req, true
}

func (s *Slack) publish(r *http.Request) map[string]any {
	req, ok := readPublish(r)
	if !ok {
		return map[string]any{"ok": false, "error": "invalid_json"}
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
		home = &Home{}
		s.homes[req.UserID] = home
	}
	// Slack's documentation does not say whether a Home keeps its view id from one publish to the next: the fake
	// gives each publish a new one, so that nothing in orch can come to rely on it staying.
	home.ID = fmt.Sprintf("VHOME%06d", s.next)
	s.next++
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
		"trigger_id": s.Trigger(user),
		"view":       view,
		"actions": []map[string]any{buttonAction(map[string]any{"type": "button", "block_id": "b", "action_id": actionID,
			"text":      map[string]any{"type": "plain_text", "text": "button", "emoji": true},
			"action_ts": fmt.Sprintf("%d.000001", time.Now().Unix())}, value)},
	}
	data, _ := json.Marshal(payload)
	return []byte(url.Values{"payload": {string(data)}}.Encode())
}

// buttonAction is a clicked button's action with its value, which it carries only when the button has one.
func buttonAction(action map[string]any, value string) map[string]any {
	if value != "" {
		action["value"] = value
	}
	return action
}
