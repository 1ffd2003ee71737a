package bot

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/slack-go/slack/slacktest"

	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/jobs"
)

// socketSlack is Slack's Socket Mode end: slacktest's server answers apps.connections.open and holds the websocket;
// the Web API methods orch calls are forwarded to the fake, which keeps the messages.
type socketSlack struct {
	*slacktest.Server
	stop chan struct{}

	mu     sync.Mutex
	frames []map[string]any // what the bot sent over the websocket
}

func newSocketSlack(t *testing.T, fake *slackfake.Slack) *socketSlack {
	t.Helper()
	srv := slacktest.NewTestServer(func(c slacktest.Customize) {
		for _, method := range []string{"auth.test", "chat.postMessage", "chat.update", "chat.postEphemeral", "views.open", "conversations.replies", "views.publish"} {
			c.Handle("/"+method, func(w http.ResponseWriter, r *http.Request) { forward(w, r, fake.APIURL()+method) })
		}
	})
	srv.Start()
	s := &socketSlack{Server: srv, stop: make(chan struct{})}
	// slacktest hands every frame it reads to SeenFeed and waits until someone takes it.
	go func() {
		for {
			select {
			case raw := <-srv.SeenFeed:
				var f map[string]any
				if err := json.Unmarshal([]byte(raw), &f); err != nil {
					t.Errorf("the bot sent a frame that is not JSON: %q", raw)
					continue
				}
				s.mu.Lock()
				s.frames = append(s.frames, f)
				s.mu.Unlock()
			case <-s.stop:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(s.stop)
		srv.Stop()
	})
	return s
}

// send sends a frame to the bot.
func (s *socketSlack) send(t *testing.T, frame map[string]any) {
	t.Helper()
	s.SendToWebsocket(string(marshal(t, frame)))
}

// ack is the bot's acknowledgement of an envelope.
func (s *socketSlack) ack(h *harness, envelopeID string) map[string]any {
	h.t.Helper()
	var ack map[string]any
	h.waitFor("the ack of "+envelopeID, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, f := range s.frames {
			if f["envelope_id"] == envelopeID {
				ack = f
				return true
			}
		}
		return false
	})
	return ack
}

// acksOf are the bot's acknowledgements of an envelope, in the order it sent them.
func (s *socketSlack) acksOf(envelopeID string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, f := range s.frames {
		if f["envelope_id"] == envelopeID {
			out = append(out, f)
		}
	}
	return out
}

func (s *socketSlack) acks(envelopeID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.frames {
		if f["envelope_id"] == envelopeID {
			n++
		}
	}
	return n
}

// ackText is the text of an ack's ephemeral payload.
func ackText(t *testing.T, ack map[string]any) string {
	t.Helper()
	p, ok := ack["payload"].(map[string]any)
	if !ok || p["response_type"] != "ephemeral" {
		t.Fatalf("ack %v carries no ephemeral answer", ack)
	}
	text, _ := p["text"].(string)
	return text
}

// slashFrame is a slash_commands envelope (Slack's documented frame) for `/orch text`.
func (h *harness) slashFrame(envelopeID, text, user string) map[string]any {
	f := template(h.t, "socketmode_slash_commands_docs.json")
	f["envelope_id"] = envelopeID
	p := f["payload"].(map[string]any)
	p["command"], p["text"], p["user_id"], p["user_name"], p["channel_id"] = "/orch", text, user, user, h.channel
	p["response_url"] = h.fake.ResponseURL("socket-" + user)
	return f
}

// clickFrame is an interactive envelope (Slack's documented frame) of a click on a button of message m.
func (h *harness) clickFrame(envelopeID string, m slackfake.Message, user, actionID, value string) map[string]any {
	f := template(h.t, "socketmode_interactive_block_actions_docs.json")
	f["envelope_id"] = envelopeID
	p := f["payload"].(map[string]any)
	p["user"] = map[string]any{"id": user, "username": user, "team_id": "T0001"}
	p["container"] = map[string]any{"type": "message", "message_ts": m.TS, "channel_id": m.Channel, "is_ephemeral": false,
		"thread_ts": m.ThreadTS}
	p["channel"] = map[string]any{"id": m.Channel, "name": "runs"}
	p["message"] = map[string]any{"type": "message", "bot_id": "BORCH", "text": m.Text, "ts": m.TS, "thread_ts": m.ThreadTS}
	p["response_url"] = h.fake.ResponseURL("socket-click-" + user)
	a := p["actions"].([]any)[0].(map[string]any)
	a["action_id"], a["value"], a["block_id"] = actionID, value, "orch_options_1"
	return f
}

// eventFrame is an events_api envelope (slack-go's captured frame) of a reply in a thread that mentions the bot.
func (h *harness) eventFrame(envelopeID, eventID, user, text, threadTS string) map[string]any {
	f := template(h.t, "socketmode_events_api_app_mention_slackgo_captured.json")
	f["envelope_id"] = envelopeID
	p := f["payload"].(map[string]any)
	p["event_id"] = eventID
	ev := p["event"].(map[string]any)
	ts := h.ts()
	ev["user"], ev["text"], ev["ts"], ev["event_ts"], ev["thread_ts"], ev["channel"] = user, "<@"+slackfake.BotUserID+"> "+text, ts, ts, threadTS, h.channel
	delete(ev, "blocks")
	return f
}

// socketHarness is the bot serving Slack over Socket Mode (SLACK_APP_TOKEN, no signing secret) against a Socket Mode
// Slack whose Web API is the fake, until the test ends.
func socketHarness(t *testing.T, rdb redis.UniversalClient) (*harness, *socketSlack) {
	t.Helper()
	var sm *socketSlack
	h := newHarness(t, rdb, func(h *harness, c *Config) {
		sm = newSocketSlack(t, h.fake)
		c.AppToken, c.SigningSecret, c.APIURL = "xapp-1-test", "", sm.GetAPIURL()
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- h.srv.RunSocketMode(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("RunSocketMode: %v", err)
		}
	})
	return h, sm
}

// Over Socket Mode, each envelope is acked with its envelope_id and handled as its HTTP twin is: a slash command (its
// answer in the ack), a click, a thread reply.
func TestSocketMode(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h, sm := socketHarness(t, rdb)
		alice, bob := h.user("ALICE"), h.user("BOB")
		sm.send(t, template(t, "socketmode_hello_slackgo_test.json"))

		// /orch run: the ack carries the answer; the run starts and its root message is posted.
		env := "env-run-" + h.sfx
		sm.send(t, h.slashFrame(env, "run plan.md", alice))
		if text := ackText(t, sm.ack(h, env)); !strings.Contains(text, "Starting a run of `plan.md`") {
			t.Fatalf("ack of /orch run: %q", text)
		}
		h.waitFor("the run", func() bool { return h.starter.created() == 1 })
		run := h.starter.run(0)
		if got := h.starter.requests()[0].Origin; got != (jobs.Origin{Kind: "slack", User: alice, Channel: h.channel}) {
			t.Errorf("origin = %+v", got)
		}
		root := h.waitMessage("the root message", func(m slackfake.Message) bool {
			return m.ThreadTS == "" && strings.Contains(m.Text, run.ID)
		})

		// A refused command: the refusal is the ack's answer.
		env = "env-outside-" + h.sfx
		sm.send(t, h.slashFrame(env, "run ../x", alice))
		if text := ackText(t, sm.ack(h, env)); !strings.Contains(text, "`../x` is outside the workspace") {
			t.Errorf("ack of /orch run ../x: %q", text)
		}

		// /orch status: acked at once, answered through response_url after.
		env = "env-status-" + h.sfx
		sm.send(t, h.slashFrame(env, "status "+run.ID, alice))
		if text := ackText(t, sm.ack(h, env)); text != "Looking it up…" {
			t.Errorf("ack of /orch status: %q", text)
		}
		h.waitEphemeral("Run `" + run.ID + "` (Add a cache): *queued*")

		// A click: acked with no payload, answers the question.
		escID, q := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
		env = "env-click-" + h.sfx
		sm.send(t, h.clickFrame(env, q, bob, ActionChoose+":B", slackfake.Buttons(q)[ActionChoose+":B"]))
		if ack := sm.ack(h, env); ack["payload"] != nil {
			t.Errorf("ack of a click carries %v, want nothing but the envelope_id", ack["payload"])
		}
		res := h.waitResolved(run.ID, escID)
		if res.By != bob || res.Via != "slack" || res.Type != jobs.ResolveChoose || res.Key != "B" {
			t.Fatalf("resolution = %+v, want bob's B from Slack", res)
		}
		h.waitFor("the question to show the answer", func() bool {
			return strings.Contains(h.message(q.TS).Text, "<@"+bob+"> chose B) In-memory")
		})
		// A second click is acked too, and told.
		env = "env-click2-" + h.sfx
		sm.send(t, h.clickFrame(env, q, alice, ActionChoose+":A", slackfake.Buttons(q)[ActionChoose+":A"]))
		sm.ack(h, env)
		h.waitEphemeral("Already answered")
		if res := h.esc(run.ID, escID).Resolution; res.By != bob {
			t.Errorf("a second click changed the answer: %+v", res)
		}

		// A reply in the thread answers the next question.
		e2, _ := h.escalate(run.ID, "Which TTL?")
		env = "env-event-" + h.sfx
		sm.send(t, h.eventFrame(env, h.eventID(), alice, "one hour", root.TS))
		sm.ack(h, env)
		if res := h.waitResolved(run.ID, e2); res.By != alice || res.Type != jobs.ResolveAnswer || res.Text != "one hour" {
			t.Errorf("resolution = %+v, want alice's reply", res)
		}
		for _, env := range []string{"env-run-", "env-click-", "env-event-"} {
			if n := sm.acks(env + h.sfx); n != 1 {
				t.Errorf("%s acked %d times, want once", env, n)
			}
		}
	})
}

// Over Socket Mode a mention outside a thread starts a run of its words, and one in a conversation takes the
// conversation along, as over HTTP; each envelope is acked.
func TestSocketModeMention(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h, sm := socketHarness(t, rdb)
		alice, bob := h.user("ALICE"), h.user("BOB")
		sm.send(t, template(t, "socketmode_hello_slackgo_test.json"))

		env := "env-mention-" + h.sfx
		sm.send(t, h.eventFrame(env, h.eventID(), alice, "fix the flaky retry test in jobs", ""))
		sm.ack(h, env)
		run, _ := h.newRequest(0)
		if req := h.starter.req(0); req.Text != "fix the flaky retry test in jobs" || req.Origin.User != alice || run.Request != req.Text {
			t.Fatalf("request = %+v", req)
		}

		parent := h.fake.Say(h.channel, "", bob, "the cache test times out on arm64")
		env = "env-mention-thread-" + h.sfx
		sm.send(t, h.eventFrame(env, h.eventID(), alice, "look into it", parent.TS))
		sm.ack(h, env)
		h.newRequest(1)
		if req := h.starter.req(1); req.Text != "look into it" || !strings.Contains(req.Context, "<@"+bob+">: the cache test times out on arm64") {
			t.Fatalf("request = %+v", req)
		}
	})
}

// Over Socket Mode, app_home_opened arrives in an events_api envelope (slack-go's captured frame, its payload the
// event Slack sends over HTTP): it is acked, and the viewer's Home is published with the question and its buttons.
func TestSocketModeHome(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h, sm := socketHarness(t, rdb)
		alice := h.homeUser("ALICE")
		sm.send(t, template(t, "socketmode_hello_slackgo_test.json"))
		env := "env-run-" + h.sfx
		sm.send(t, h.slashFrame(env, "run plan.md", alice))
		sm.ack(h, env)
		h.waitFor("the run", func() bool { return h.starter.created() == 1 })
		run := h.starter.run(0)
		escID, _ := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")

		f := template(t, "socketmode_events_api_app_mention_slackgo_captured.json")
		env = "env-home-" + h.sfx
		f["envelope_id"] = env
		var payload map[string]any
		if err := json.Unmarshal(h.fake.AppHomeOpened(h.eventID(), alice), &payload); err != nil {
			t.Fatal(err)
		}
		f["payload"] = payload
		sm.send(t, f)
		if ack := sm.ack(h, env); ack["payload"] != nil {
			t.Errorf("ack of an event carries %v", ack["payload"])
		}
		home := h.waitHome(alice, "alice's Home", func(slackfake.Home) bool { return true })
		homeButton(t, home, run.ID, escID, ActionChoose+":B")
		homeButton(t, home, run.ID, escID, ActionAnswer)
		if n := sm.acks(env); n != 1 {
			t.Errorf("acked %d times, want once", n)
		}
	})
}
