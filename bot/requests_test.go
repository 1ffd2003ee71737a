package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/runs"
)

// newRequest waits for the starter's next run and its root message.
func (h *harness) newRequest(n int) (*jobs.Run, slackfake.Message) {
	h.t.Helper()
	h.waitFor("the starter to create the run", func() bool { return h.starter.created() > n })
	run := h.starter.run(n)
	root := h.waitMessage("the root message of "+run.ID, func(m slackfake.Message) bool {
		return m.ThreadTS == "" && strings.Contains(m.Text, run.ID)
	})
	return run, root
}

// mention has user write text (mentioning the bot) in threadTS's thread ("" for the channel) and sends Slack's
// events for it: the message Slack holds, then its app_mention.
func (h *harness) mention(user, text, threadTS string) slackfake.Message {
	h.t.Helper()
	m := h.fake.Say(h.channel, threadTS, user, "<@"+slackfake.BotUserID+"> "+text)
	h.event(h.mentionEvent(h.eventID(), user, m.Text, m.TS, threadTS))
	return m
}

// `/orch do` starts a run of the words: the root message quotes them and names who asked.
func TestDoStartsARunOfTheWords(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice := h.user("ALICE")
		ack := h.command("do fix the flaky retry test in jobs\nit fails one run in ten", alice)
		if !strings.Contains(ack, "On it: “fix the flaky retry test in jobs”") {
			t.Fatalf("ack = %q", ack)
		}
		run, root := h.newRequest(0)
		req := h.starter.req(0)
		if req.Plan != "" || req.Text != "fix the flaky retry test in jobs\nit fails one run in ten" || req.Context != "" ||
			req.Origin != (jobs.Origin{Kind: "slack", User: alice, Channel: h.channel}) {
			t.Fatalf("request = %+v", req)
		}
		text := blocksText(root)
		for _, want := range []string{"> fix the flaky retry test in jobs\n> it fails one run in ten", "asked by <@" + alice + ">",
			"`" + run.ID + "`"} {
			if !strings.Contains(text, want) {
				t.Errorf("root message lacks %q:\n%s", want, text)
			}
		}
		// Nothing points anywhere: the request was not made in a thread.
		if n := len(h.messages()); n != 1 {
			t.Errorf("%d messages, want the root alone\n%s", n, h.dump())
		}

		for _, tc := range []struct{ text, want string }{
			{"do", "what should the agent do?"},
			{"do   \n ", "what should the agent do?"},
		} {
			if got := h.command(tc.text, alice); !strings.Contains(got, tc.want) {
				t.Errorf("/orch %q = %q, want %q", tc.text, got, tc.want)
			}
		}
	})
}

// A mention outside a thread starts a run of its words (the mention itself gone); in the mention's thread a message
// leads to the run's thread.
func TestMentionStartsARun(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice, bob := h.user("ALICE"), h.user("BOB")
		asked := h.mention(alice, "ask <@"+bob+"> about the retry test, then fix it", "")
		run, root := h.newRequest(0)
		req := h.starter.req(0)
		if req.Text != "ask <@"+bob+"> about the retry test, then fix it" || req.Context != "" ||
			req.Origin.ThreadTS != asked.TS || req.Origin.User != alice {
			t.Fatalf("request = %+v", req)
		}
		pointer := h.waitMessage("the pointer in the mention's thread", func(m slackfake.Message) bool { return m.ThreadTS == asked.TS })
		link := slackfake.TeamURL + "archives/" + h.channel + "/p" + strings.Replace(root.TS, ".", "", 1)
		if text := blocksText(pointer); !strings.Contains(text, "On it: run `"+run.ID+"`") || !strings.Contains(text, link) {
			t.Fatalf("pointer = %q, want the run and a link to %s", text, link)
		}
		if text := blocksText(h.message(root.TS)); !strings.Contains(text, "Asked in <"+slackfake.TeamURL+"archives/"+h.channel) {
			t.Errorf("root message does not link where it was asked:\n%s", text)
		}
		h.waitFor("the pointer to be on record", func() bool {
			st, _ := h.mirror.State(context.Background(), run.ID)
			return st["pointer_ts"] == pointer.TS
		})

		// A mention with nothing to do is told how; one that is both message and app_mention counts once.
		h.mention(alice, "  ", "")
		h.waitEphemeral("Tell me what to do")
		m := h.fake.Say(h.channel, "", alice, "<@"+slackfake.BotUserID+"> and the docs")
		h.event(h.messageEvent(h.eventID(), alice, m.Text, m.TS, ""))
		h.event(h.mentionEvent(h.eventID(), alice, m.Text, m.TS, ""))
		h.newRequest(1)
		time.Sleep(50 * time.Millisecond)
		if n := h.starter.created(); n != 2 {
			t.Fatalf("%d runs, want 2: the same message delivered twice must start one run", n)
		}
	})
}

// A mention in a thread that is no run's takes the conversation as context: the thread's messages, oldest first,
// without the request itself.
func TestMentionInAConversationTakesItAsContext(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice, bob := h.user("ALICE"), h.user("BOB")
		parent := h.fake.Say(h.channel, "", bob, "the retry test fails one run in ten since the backoff change")
		h.fake.Say(h.channel, parent.TS, alice, "seen it too: jitter is 0 in CI")
		asked := h.mention(alice, "fix it", parent.TS)
		_, _ = h.newRequest(0)
		req := h.starter.req(0)
		want := "The conversation in Slack where this was asked, oldest first:\n" +
			"<@" + bob + ">: the retry test fails one run in ten since the backoff change\n" +
			"<@" + alice + ">: seen it too: jitter is 0 in CI"
		if req.Text != "fix it" || req.Context != want || req.Origin.ThreadTS != parent.TS || req.FollowUp != nil {
			t.Fatalf("request = %+v\nwant context %q", req, want)
		}
		h.waitMessage("the pointer in the conversation", func(m slackfake.Message) bool {
			return m.ThreadTS == parent.TS && m.TS != asked.TS && strings.Contains(m.Text, "On it")
		})
	})
}

// When the thread cannot be read the run starts from the words alone, and the person is told why.
func TestMentionWhenTheThreadCannotBeRead(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice := h.user("ALICE")
		// A thread whose parent Slack does not know: conversations.replies answers thread_not_found.
		h.mention(alice, "fix it", "1600000000.000001")
		h.newRequest(0)
		if req := h.starter.req(0); req.Text != "fix it" || req.Context != "" {
			t.Fatalf("request = %+v", req)
		}
		h.waitEphemeral("I could not read this thread (conversations.replies: thread_not_found)")
	})
}

// A mention in the thread of a run that ended starts a follow-up: it starts from the run, both runs name each other,
// and the run's thread leads to the follow-up's. In the thread of a run that has not ended, a mention is a reply.
func TestMentionInAFinishedRunsThreadFollowsItUp(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice := h.user("ALICE")
		first, root := h.startRun(alice)
		escID, _ := h.escalate(first.ID, "Which cache?", "A) Redis", "B) In-memory")
		h.mention(alice, "use Redis", root.TS)
		if res := h.waitResolved(first.ID, escID); res.Text != "use Redis" || res.By != alice {
			t.Fatalf("a mention in a running run's thread answers its question: %+v", res)
		}
		h.complete(first.ID)
		h.done(first.ID)

		h.fake.Say(h.channel, root.TS, alice, "looks good, but the TTL is hard-coded")
		h.mention(alice, "make the TTL configurable", root.TS)
		next, nextRoot := h.newRequest(1)
		req := h.starter.req(1)
		if req.FollowUp == nil || req.FollowUp.ID != first.ID || req.Origin.ThreadTS != root.TS || next.FollowUpOf != first.ID {
			t.Fatalf("request = %+v (follow-up of %v)", req, req.FollowUp)
		}
		for _, want := range []string{"This request follows up run " + first.ID + " (Add a cache), which completed.",
			"<@" + alice + ">: looks good, but the TTL is hard-coded"} {
			if !strings.Contains(req.Context, want) {
				t.Errorf("context lacks %q:\n%s", want, req.Context)
			}
		}
		if strings.Contains(req.Context, "make the TTL configurable") {
			t.Errorf("the request is in its own context:\n%s", req.Context)
		}
		pointer := h.waitMessage("the pointer in the first run's thread", func(m slackfake.Message) bool {
			return m.ThreadTS == root.TS && strings.Contains(m.Text, "On it: run "+next.ID)
		})
		if text := blocksText(pointer); !strings.Contains(text, "Follow-up started: run `"+next.ID+"`") {
			t.Errorf("pointer = %q", text)
		}
		h.waitFor("the first run to list its follow-up", func() bool {
			f := h.run(first.ID).FollowUps
			return len(f) == 1 && f[0] == next.ID
		})
		h.waitFor("the first run's root message to name its follow-up", func() bool {
			return strings.Contains(blocksText(h.message(root.TS)), "Followed up by `"+next.ID+"`")
		})
		text := blocksText(h.message(nextRoot.TS))
		if !strings.Contains(text, "follows up `"+first.ID+"`") || !strings.Contains(text, "Follows up run `"+first.ID+"`: <") {
			t.Errorf("the follow-up's root message does not name the run it follows:\n%s", text)
		}
	})
}

// Someone outside ORCH_ALLOWED_USERS starts nothing, by command or mention, and the refusal is audited.
func TestRequestsFromOutsideTheAllowedUsers(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		var mallory string
		h := newHarness(t, rdb, func(h *harness, c *Config) { c.AllowedUsers = []string{h.user("ALICE")} })
		mallory = h.user("MALLORY")
		if got := h.command("do rm -rf the tests", mallory); !strings.Contains(got, "not allowed to start runs") {
			t.Fatalf("/orch do by mallory = %q", got)
		}
		h.mention(mallory, "rm -rf the tests", "")
		h.waitEphemeral("You are not allowed to start runs here")
		h.waitFor("both refusals in the audit", func() bool { return len(h.refusals(mallory)) == 2 })
		if n := h.starter.created(); n != 0 {
			t.Fatalf("%d runs started", n)
		}
	})
}

// New runs are limited per person and per channel, whichever way they are asked for, with a message that says which
// limit and when the next can start.
func TestRunLimits(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		now := time.Now() // a clock that stands still: the wait the message names is exact
		h := newHarness(t, rdb, func(h *harness, c *Config) {
			c.UserRuns, c.ChannelRuns = Limit{N: 2, Per: time.Hour}, Limit{N: 3, Per: time.Hour}
			c.Now = func() time.Time { return now }
		})
		alice, bob, carol := h.user("ALICE"), h.user("BOB"), h.user("CAROL")
		h.command("do one", alice)
		h.command("run plan.md", alice)
		if got := h.command("do three", alice); !strings.Contains(got, "more new runs than one person may start here (2 per 1h): the next can start in 30m") {
			t.Fatalf("third run by alice: %q", got)
		}
		h.mention(alice, "four", "")
		h.waitEphemeral("That is more new runs than one person may start here")
		h.command("do one", bob)
		if got := h.command("do two", carol); !strings.Contains(got, "more new runs than this channel may start here (3 per 1h)") {
			t.Fatalf("fourth run in the channel: %q", got)
		}
		h.waitFor("three runs", func() bool { return h.starter.created() == 3 })
		time.Sleep(50 * time.Millisecond)
		if n := h.starter.created(); n != 3 {
			t.Fatalf("%d runs started, want 3", n)
		}

		// A request that does not become a run gives its place back.
		dave := h.user("DAVE")
		h2 := newHarness(t, rdb, func(h *harness, c *Config) {
			c.UserRuns, c.Now = Limit{N: 1, Per: time.Hour}, func() time.Time { return now }
		})
		h2.starter.mu.Lock()
		h2.starter.refuse = errors.New("the plan does not parse")
		h2.starter.mu.Unlock()
		h2.command("do one", dave)
		h2.waitEphemeral("Could not start the run: the plan does not parse")
		h2.starter.mu.Lock()
		h2.starter.refuse = nil
		h2.starter.mu.Unlock()
		if got := h2.command("do one again", dave); !strings.Contains(got, "On it") {
			t.Fatalf("after a request that started nothing: %q", got)
		}
	})
}

func TestParseLimit(t *testing.T) {
	for in, want := range map[string]Limit{"20/h": {20, time.Hour}, "5/10m": {5, 10 * time.Minute}, " 100/24h ": {100, 24 * time.Hour},
		"off": {}, "0": {}} {
		if got, err := ParseLimit(in); err != nil || got != want {
			t.Errorf("ParseLimit(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "20", "h", "-1/h", "0/h", "20/", "20/0s", "20/-1h", "x/h", "20/fortnight"} {
		if _, err := ParseLimit(bad); err == nil {
			t.Errorf("ParseLimit(%q) accepted", bad)
		}
	}
}

// A question left unanswered is announced again in its thread and sent to whoever started the run, once per interval,
// not in the quiet hours, and no more once answered; a bot that missed intervals sends one nudge, not one per interval.
func TestNudges(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		start := time.Now()
		var offset atomic.Int64 // how far the bot's clock is ahead of the store's
		quietFrom := start.Add(3*time.Hour + 30*time.Minute).UTC()
		quietTo := quietFrom.Add(time.Hour)
		h := newHarness(t, rdb, func(h *harness, c *Config) {
			c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
			c.NudgeAfter = time.Hour
			c.QuietHours = QuietHours{From: sinceMidnight(quietFrom), To: sinceMidnight(quietTo), Loc: time.UTC}
		})
		alice := h.user("ALICE")
		run, root := h.startRun(alice)
		escID, question := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
		nudges := func() (inThread, direct []slackfake.Message) {
			for _, m := range h.fake.Messages() {
				switch {
				case m.Channel == h.channel && m.ThreadTS == root.TS && strings.HasPrefix(m.Text, "Still waiting for an answer"):
					inThread = append(inThread, m)
				case m.Channel == slackfake.DMChannel(alice):
					direct = append(direct, m)
				}
			}
			return inThread, direct
		}
		// passes lets the poster look at the run a good many times at the clock's time.
		passes := func() {
			time.Sleep(60 * time.Millisecond)
			h.waitFor("the poster", func() bool { return h.idle(run.ID) })
		}
		at := func(d time.Duration, wantThread int) {
			t.Helper()
			offset.Store(int64(d))
			if wantThread > 0 {
				h.waitFor(fmt.Sprintf("nudge %d", wantThread), func() bool { n, _ := nudges(); return len(n) >= wantThread })
			}
			passes()
			inThread, direct := nudges()
			if len(inThread) != wantThread || len(direct) != wantThread {
				t.Fatalf("at +%s: %d nudges in the thread, %d direct; want %d of each\n%s", d, len(inThread), len(direct), wantThread, h.dump())
			}
		}
		at(30*time.Minute, 0)
		at(61*time.Minute, 1)
		inThread, direct := nudges()
		link := slackfake.TeamURL + "archives/" + h.channel + "/p" + strings.Replace(question.TS, ".", "", 1) +
			"?thread_ts=" + root.TS + "&amp;cid=" + h.channel // & escaped in mrkdwn
		if text := blocksText(inThread[0]); !strings.Contains(text, "Still waiting for an answer after 1h 1m") ||
			!strings.Contains(text, "Which cache?") || !strings.Contains(text, link) {
			t.Errorf("nudge in the thread: %q", text)
		}
		if text := blocksText(direct[0]); !strings.Contains(text, "has waited 1h 1m for your answer") || !strings.Contains(text, link) {
			t.Errorf("direct message: %q", text)
		}
		at(90*time.Minute, 1)
		at(2*time.Hour+time.Minute, 2)
		at(3*time.Hour+40*time.Minute, 2) // quiet
		at(4*time.Hour+20*time.Minute, 2) // still quiet
		at(4*time.Hour+35*time.Minute, 3) // quiet hours over: the nudge that was due
		at(9*time.Hour, 4)                // hours missed: one nudge
		at(9*time.Hour+30*time.Minute, 4)
		h.answerFromTerminal(run.ID, escID, "A")
		h.waitResolved(run.ID, escID)
		at(11*time.Hour, 4)
	})
}

func sinceMidnight(t time.Time) time.Duration {
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute
}

// The message shortcut starts a run of the message's words for whoever chose it, with its thread as context; in the
// thread of a run still going it says so instead.
func TestMessageShortcut(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice, bob := h.user("ALICE"), h.user("BOB")
		shortcut := func(m slackfake.Message, user string) {
			t.Helper()
			code, body := h.post("/slack/interactions", h.fake.MessageShortcut(m, user, ShortcutDoMessage), formType)
			if code != 200 || body != "" {
				t.Fatalf("shortcut: %d %q", code, body)
			}
		}
		parent := h.fake.Say(h.channel, "", bob, "the retry test fails one run in ten")
		reply := h.fake.Say(h.channel, parent.TS, bob, "probably the jitter: make it configurable")
		shortcut(reply, alice)
		h.newRequest(0)
		req := h.starter.req(0)
		if req.Text != "probably the jitter: make it configurable" || req.Origin.User != alice || req.Origin.ThreadTS != parent.TS ||
			!strings.Contains(req.Context, "<@"+bob+">: the retry test fails one run in ten") || strings.Contains(req.Context, "make it configurable") {
			t.Fatalf("request = %+v", req)
		}

		// On a thread's parent: its thread is the conversation.
		shortcut(parent, alice)
		h.newRequest(1)
		if req := h.starter.req(1); req.Text != "the retry test fails one run in ten" || req.Origin.ThreadTS != parent.TS ||
			!strings.Contains(req.Context, "<@"+bob+">: probably the jitter: make it configurable") {
			t.Fatalf("request on the parent = %+v", req)
		}

		// In the thread of a run that has not ended: nothing starts, the person is told.
		running, root := h.startRun(alice)
		h.waitFor("the run's thread on record", func() bool { return h.idle(running.ID) })
		inRun := h.fake.Say(h.channel, root.TS, bob, "also rename the flag")
		shortcut(inRun, alice)
		h.waitEphemeral("is still going in this thread")
		if n := h.starter.created(); n != 3 {
			t.Fatalf("%d runs, want 3", n)
		}
		// Another callback id is not orch's: nothing happens.
		code, _ := h.post("/slack/interactions", h.fake.MessageShortcut(parent, alice, "someone_elses"), formType)
		if code != 200 {
			t.Fatalf("an unknown shortcut: %d", code)
		}
		time.Sleep(50 * time.Millisecond)
		if n := h.starter.created(); n != 3 {
			t.Fatalf("%d runs after a shortcut that is not orch's, want 3", n)
		}
	})
}

// Slack escapes &, < and > in what people write; the agent gets the words as they were typed, and the root message
// shows them so (escaped once, for Slack).
func TestRequestsAreUnescaped(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice, bob := h.user("ALICE"), h.user("BOB")
		// As Slack holds and sends them.
		parent := h.fake.Say(h.channel, "", bob, "it fails when a &lt; b &amp;&amp; c &gt; 0")
		h.mention(alice, "make `a &lt; b` hold &amp; add a test", parent.TS)
		_, root := h.newRequest(0)
		req := h.starter.req(0)
		if req.Text != "make `a < b` hold & add a test" || !strings.Contains(req.Context, "it fails when a < b && c > 0") {
			t.Fatalf("request %q, context %q", req.Text, req.Context)
		}
		if text := blocksText(root); !strings.Contains(text, "> make `a &lt; b` hold &amp; add a test") || strings.Contains(text, "&amp;lt;") {
			t.Errorf("root message blocks: %s", text)
		}
		if got := h.command("do fix a &lt; b", alice); !strings.Contains(got, "On it: “fix a &lt; b”") {
			t.Errorf("ack %q", got)
		}
		h.newRequest(1)
		if req := h.starter.req(1); req.Text != "fix a < b" {
			t.Errorf("/orch do request %q", req.Text)
		}
	})
}

// A run started in a channel the bot is not in can have no thread: it is stopped at once, with the reason, and
// whoever asked for it is told by direct message.
func TestARunWhereTheBotCannotPost(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		// The poster aborts the run from its pass over it, holding its lock: the harness must not make the store's
		// write wait for that lock.
		h := newHarness(t, rdb, withoutSerializing)
		alice := h.user("ALICE")
		h.fake.Leave(h.channel)
		h.command("do fix the flaky retry test", alice)
		h.waitFor("the starter to create the run", func() bool { return h.starter.created() == 1 })
		run := h.starter.run(0)
		h.waitFor("the run to be stopped", func() bool { return h.run(run.ID).Status == jobs.RunAborted })
		if r := h.run(run.ID); !strings.Contains(r.Reason, "orch cannot post in channel "+h.channel+" (not_in_channel): invite the bot there") {
			t.Errorf("reason %q", r.Reason)
		}
		h.waitFor("the direct message", func() bool {
			for _, m := range h.fake.Messages() {
				if m.Channel == slackfake.DMChannel(alice) && strings.Contains(blocksText(m), "Run `"+run.ID+"` (fix the flaky retry test) was stopped") {
					return true
				}
			}
			return false
		})
		h.waitFor("the poster to stop following the run", func() bool { return !h.following(run.ID) })
	})
}

// A mention that cannot start a run (the starter refuses it: an agent that is not installed, a plan that does not
// parse) is answered where it was asked, for the channel to read: in the mention's thread, with the reason escaped and
// without the server's paths. When that post fails, the person is still told, alone.
func TestMentionThatCannotStartSaysSoInItsThread(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice := h.user("ALICE")
		h.starter.mu.Lock()
		h.starter.refuse = fmt.Errorf("%w: agent \"claude\" is not installed on this server (looked for %s/bin/claude); "+
			"<!channel> *read this*", runs.ErrInvalid, h.ws)
		h.starter.mu.Unlock()

		notStarted := func(thread string) slackfake.Message {
			return h.waitMessage("the reason in thread "+thread, func(m slackfake.Message) bool {
				return m.ThreadTS == thread && strings.Contains(blocksText(m), "Could not start the run")
			})
		}
		asked := h.mention(alice, "fix the retry test", "")
		said := notStarted(asked.TS)
		text := blocksText(said)
		for _, want := range []string{"<@" + alice + ">", "Could not start the run: invalid run request: agent \"claude\" is not installed",
			"(looked for bin/claude)", "&lt;!channel&gt;"} {
			if !strings.Contains(text, want) {
				t.Errorf("the thread is told %q, which lacks %q", text, want)
			}
		}
		if strings.Contains(text, "<!channel>") || strings.Contains(said.Text, "<!channel>") {
			t.Errorf("the reason pings the channel: %q / %q", text, said.Text)
		}

		// In a conversation's thread, the answer goes in that thread.
		parent := h.fake.Say(h.channel, "", alice, "the retry test is flaky")
		h.mention(alice, "fix it", parent.TS)
		notStarted(parent.TS)

		// Slack refuses the post: the person is told alone.
		h.fake.RateLimitMethod("chat.postMessage", 1, 1)
		h.mention(alice, "fix it again", "")
		h.waitEphemeral("Could not start the run: invalid run request")

		// A command is answered as before, to the person who typed it.
		h.command("do fix it", alice)
		h.waitFor("the command's answer", func() bool { return h.countEphemerals("Could not start the run") == 2 })

		for _, m := range h.fake.Messages() {
			if strings.Contains(m.Text, h.ws) || strings.Contains(string(m.Blocks), h.ws) {
				t.Errorf("a message shows the workspace's path: %q %s", m.Text, m.Blocks)
			}
		}
		for _, e := range h.fake.Ephemerals() {
			if strings.Contains(e, h.ws) {
				t.Errorf("an ephemeral message shows the workspace's path: %q", e)
			}
		}
		if n := h.starter.created(); n != 0 {
			t.Errorf("%d runs started", n)
		}
	})
}
