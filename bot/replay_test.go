package bot

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/bot/slackfake"
)

// signedAt is a request to one of the bot's endpoints signed as Slack would sign it at time at.
func (h *harness) signedAt(path string, body []byte, contentType string, at time.Time) *http.Request {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.web.URL+path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	sig, ts := slackfake.Sign(testSecret, at, body)
	req.Header.Set("X-Slack-Signature", sig)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("Content-Type", contentType)
	return req
}

// again is a byte-identical copy of a request: the same body, the same headers.
func (h *harness) again(req *http.Request, body []byte) *http.Request {
	h.t.Helper()
	c, err := http.NewRequest(req.Method, req.URL.String(), bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	c.Header = req.Header.Clone()
	return c
}

// barrier asks for a run in words and waits until the starter has it: with one worker, everything acked before it has
// been done by then.
func (h *harness) barrier(user string) {
	h.t.Helper()
	words := "barrier " + h.eventID()
	h.command("do "+words, user)
	h.waitFor("the barrier request", func() bool {
		return slices.ContainsFunc(h.starter.requests(), func(r StartRequest) bool { return r.Text == words })
	})
}

// A signed request captured and sent again within its five minutes is a replay: a slash command or a click gets 401
// and changes nothing; Slack's own retry of an event (signed anew) is acked and handled once, and even a byte-identical
// event is acked with 200 and nothing done.
func TestReplayedRequestsChangeNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb, func(h *harness, c *Config) { c.Workers = 1 })
		alice, bob := h.user("ALICE"), h.user("BOB")

		ok := t.Run("slash command", func(t *testing.T) {
			body := h.fake.SlashCommand("run plan.md", alice, h.channel)
			first := h.signedAt("/slack/commands", body, formType, time.Now())
			replay := h.again(first, body)
			if code, resp := h.do(first); code != http.StatusOK || !strings.Contains(ephemeralText(t, resp), "Starting a run") {
				t.Fatalf("first /orch run: %d %s", code, resp)
			}
			if code, resp := h.do(replay); code != http.StatusUnauthorized {
				t.Fatalf("replayed /orch run: status %d, want 401: %s", code, resp)
			}
			h.barrier(alice)
			if reqs := h.starter.requests(); len(reqs) != 2 || reqs[0].Plan == "" {
				t.Fatalf("the starter got %d requests, want the run and the barrier: %+v", len(reqs), reqs)
			}
		})
		if !ok {
			return
		}

		run := h.starter.run(0)
		escID, q := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")

		ok = t.Run("click", func(t *testing.T) {
			body := h.fake.Click(q, alice, ActionChoose+":A", slackfake.Buttons(q)[ActionChoose+":A"])
			first := h.signedAt("/slack/interactions", body, formType, time.Now())
			replay := h.again(first, body)
			if code, resp := h.do(first); code != http.StatusOK {
				t.Fatalf("click: %d %s", code, resp)
			}
			if code, resp := h.do(replay); code != http.StatusUnauthorized {
				t.Fatalf("replayed click: status %d, want 401: %s", code, resp)
			}
			if res := h.waitResolved(run.ID, escID); res.By != alice || res.Key != "A" {
				t.Fatalf("resolution = %+v", res)
			}
			// Bob's click comes after: once he is told it was answered, a replayed click would have been told too.
			h.click(q, bob, ActionChoose+":B", slackfake.Buttons(q)[ActionChoose+":B"])
			h.waitEphemeral("Already answered")
			if n := h.countEphemerals("Already answered"); n != 1 {
				t.Errorf("%d people told it was already answered, want bob alone: the replay was handled", n)
			}
		})
		if !ok {
			return
		}

		t.Run("event", func(t *testing.T) {
			e2, _ := h.escalate(run.ID, "Which TTL?")
			body := h.messageEvent(h.eventID(), alice, "one hour", h.ts(), q.ThreadTS)
			now := time.Now()
			first := h.signedAt("/slack/events", body, jsonType, now.Add(-2*time.Second))
			same := h.again(first, body)
			// Slack's retry: the same body signed again a moment later, with the retry headers.
			retry := h.signedAt("/slack/events", body, jsonType, now)
			retry.Header.Set("X-Slack-Retry-Num", "1")
			retry.Header.Set("X-Slack-Retry-Reason", "http_timeout")
			for name, req := range map[string]*http.Request{"delivery": first, "byte-identical copy": same, "Slack's retry": retry} {
				if code, resp := h.do(req); code != http.StatusOK {
					t.Fatalf("%s: status %d, want 200: %s", name, code, resp)
				}
			}
			if res := h.waitResolved(run.ID, e2); res.By != alice || res.Text != "one hour" {
				t.Fatalf("resolution = %+v", res)
			}
			h.barrier(alice)
			if n := len(h.audit(run.ID, "resolved")); n != 2 {
				t.Errorf("%d resolutions audited, want 2 (the click, the reply once)", n)
			}
		})
	})
}

// An event answered busy (503) was not taken: the same delivery sent again is handled, not called a replay.
func TestBusyEventIsNotAReplay(t *testing.T) {
	h := newHarness(t, clients(t)["miniredis"], func(h *harness, c *Config) { c.Workers, c.Backlog = 1, 1 })
	alice := h.user("ALICE")
	release := h.starter.block()
	h.command("do first "+h.sfx, alice)
	<-h.starter.entered                  // the one worker is held
	h.command("do second "+h.sfx, alice) // and the backlog is full
	m := h.fake.Say(h.channel, "", alice, "<@"+slackfake.BotUserID+"> fix the cache "+h.sfx)
	body := h.mentionEvent(h.eventID(), alice, m.Text, m.TS, "")
	first := h.signedAt("/slack/events", body, jsonType, time.Now())
	same := h.again(first, body)
	if code, resp := h.do(first); code != http.StatusServiceUnavailable {
		t.Fatalf("an event while busy: status %d, want 503: %s", code, resp)
	}
	release()
	h.waitFor("the backlog to drain", func() bool { return len(h.starter.requests()) == 2 })
	if code, resp := h.do(same); code != http.StatusOK {
		t.Fatalf("the event again: status %d, want 200: %s", code, resp)
	}
	h.waitFor("the mention's request", func() bool {
		return slices.ContainsFunc(h.starter.requests(), func(r StartRequest) bool { return r.Text == "fix the cache "+h.sfx })
	})
}

// With the store away, requests are handled without the replay check (and that is logged) rather than all refused.
func TestReplayCheckWithTheStoreAway(t *testing.T) {
	m := miniredis.RunT(t)
	h := newHarness(t, redis.NewClient(&redis.Options{Addr: m.Addr()}))
	m.Close()
	if text := h.command("help", h.user("ALICE")); !strings.Contains(text, "/orch run PLAN") {
		t.Fatalf("/orch help with the store away: %q", text)
	}
	if !strings.Contains(h.logs.String(), "without checking whether it was received before") {
		t.Errorf("the unchecked request was not logged:\n%s", h.logs.String())
	}
}

// Over Socket Mode an envelope delivered twice is acked twice and handled once.
func TestSocketModeEnvelopeTwice(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h, sm := socketHarness(t, rdb)
		alice := h.user("ALICE")
		sm.send(t, template(t, "socketmode_hello_slackgo_test.json"))
		env := "env-twice-" + h.sfx
		frame := h.slashFrame(env, "run plan.md", alice)
		sm.send(t, frame)
		sm.ack(h, env)
		sm.send(t, frame)
		h.waitFor("the second ack", func() bool { return sm.acks(env) == 2 })
		acks := sm.acksOf(env)
		if text := ackText(t, acks[0]); !strings.Contains(text, "Starting a run") {
			t.Errorf("first ack: %q", text)
		}
		if acks[1]["payload"] != nil {
			t.Errorf("the second delivery was answered %v: it was handled again", acks[1]["payload"])
		}
		barrier := "env-barrier-" + h.sfx
		sm.send(t, h.slashFrame(barrier, "do barrier "+h.sfx, alice))
		sm.ack(h, barrier)
		h.waitFor("the barrier request", func() bool {
			return slices.ContainsFunc(h.starter.requests(), func(r StartRequest) bool { return r.Text == "barrier "+h.sfx })
		})
		h.waitFor("the run", func() bool { return h.starter.created() >= 1 })
		runs := 0
		for _, r := range h.starter.requests() {
			if r.Plan != "" {
				runs++
			}
		}
		if runs != 1 {
			t.Errorf("%d runs of plan.md started, want 1", runs)
		}
	})
}
