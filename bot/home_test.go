package bot

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/bot/mirror"
	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/jobs"
)

// maxHomeBlocks is Slack's limit on a Home tab view's blocks.
const maxHomeBlocks = 100

// homeUser is a user id unique to this test whose Home records are removed from Redis at the end.
func (h *harness) homeUser(name string) string {
	u := h.user(name)
	h.t.Cleanup(func() {
		ctx := context.Background()
		h.rdb.Del(ctx, "orch:"+mirror.Name+":views:"+u)
		h.rdb.ZRem(ctx, "orch:"+mirror.Name+":viewers", u)
	})
	return u
}

// openHome opens user's Home tab as Slack reports it and waits for the Home it publishes, and for the bot to have
// recorded it as user's (a moment after Slack answered): a person cannot click on it sooner.
func (h *harness) openHome(user string) slackfake.Home {
	h.t.Helper()
	before, _ := h.fake.HomeOf(user)
	h.event(h.fake.AppHomeOpened(h.eventID(), user))
	home := h.waitHome(user, "the Home of "+user, func(home slackfake.Home) bool { return home.Publishes > before.Publishes })
	h.waitFor("the Home of "+user+" on record", func() bool {
		ok, err := h.srv.mirror.IsHome(context.Background(), user, home.ID)
		return err == nil && ok
	})
	return home
}

// waitHome waits until user's Home satisfies cond.
func (h *harness) waitHome(user, what string, cond func(slackfake.Home) bool) slackfake.Home {
	h.t.Helper()
	var home slackfake.Home
	h.waitFor(what, func() bool {
		var ok bool
		home, ok = h.fake.HomeOf(user)
		return ok && cond(home)
	})
	return home
}

// homeClick presses a button of Home tab home as user; Slack's ack is an empty 200.
func (h *harness) homeClick(home slackfake.Home, user, actionID, value string) {
	h.t.Helper()
	code, body := h.post("/slack/interactions", h.fake.HomeClick(home, user, actionID, value), formType)
	if code != http.StatusOK || body != "" {
		h.t.Fatalf("click on the Home: status %d: %q", code, body)
	}
}

// homeText is the text of a Home's blocks, in their order.
func homeText(home slackfake.Home) string { return blocksText(slackfake.Message{Blocks: home.Blocks}) }

// homeButton is the button of a Home with actionID whose value names escalation escID of run runID.
func homeButton(t *testing.T, home slackfake.Home, runID, escID, actionID string) slackfake.Button {
	t.Helper()
	for _, b := range home.Buttons() {
		if b.ActionID == actionID && strings.HasPrefix(b.Value, runID+"|"+escID+"|") {
			return b
		}
	}
	t.Fatalf("no button %s for %s/%s on the Home; buttons %v", actionID, runID, escID, home.Buttons())
	return slackfake.Button{}
}

// Opening the Home publishes the viewer's questions, oldest first, each with the thread message's buttons and an
// Answer… button, and the viewer's runs with links to their threads, within Slack's limits; the view's id is
// remembered as that user's Home.
func TestHomeOpened(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice, bob := h.homeUser("ALICE"), h.homeUser("BOB")
		run1, root1 := h.startRun(alice)
		esc1, _ := h.escalate(run1.ID, "Which cache should the <service> use?", "A) Redis", "B) In-memory")
		run2, root2 := h.startRun(alice)
		esc2, _ := h.escalate(run2.ID, "Which TTL?", "A) One hour", "B) One day")

		home := h.openHome(alice)
		text := homeText(home)
		for _, want := range []string{"Waiting on you", "Redis answers", "Your recent runs",
			"Which cache should the &lt;service&gt; use?", "Which TTL?", "Task 1.1: Add the cache"} {
			if !strings.Contains(text, want) {
				t.Errorf("the Home lacks %q:\n%s", want, text)
			}
		}
		if i, j := strings.Index(text, "Which cache should"), strings.Index(text, "Which TTL?"); i < 0 || j < i {
			t.Errorf("the older question (%d) should come before the newer (%d):\n%s", i, j, text)
		}
		for _, r := range []struct {
			run  *jobs.Run
			root slackfake.Message
			esc  string
		}{{run1, root1, esc1}, {run2, root2, esc2}} {
			link := slackfake.TeamURL + "archives/" + h.channel + "/p" + strings.Replace(r.root.TS, ".", "", 1)
			if !strings.Contains(string(home.Blocks), link) {
				t.Errorf("the Home has no link %s to run %s's thread", link, r.run.ID)
			}
			for _, id := range []string{ActionChoose + ":A", ActionChoose + ":B", ActionAbort, ActionAnswer} {
				homeButton(t, home, r.run.ID, r.esc, id)
			}
		}
		if b := homeButton(t, home, run1.ID, esc1, ActionAnswer); b.Text != "Answer…" {
			t.Errorf("answer button reads %q", b.Text)
		}

		// Slack's limits: at most 100 blocks, distinct block ids, and the Abort button asks first.
		var blocks []map[string]any
		if err := json.Unmarshal(home.Blocks, &blocks); err != nil {
			t.Fatal(err)
		}
		if len(blocks) > maxHomeBlocks {
			t.Errorf("%d blocks, Slack takes at most %d", len(blocks), maxHomeBlocks)
		}
		seen := map[string]bool{}
		for _, b := range blocks {
			id, _ := b["block_id"].(string)
			if seen[id] {
				t.Errorf("block id %q twice: Slack refuses such a view", id)
			}
			seen[id] = true
		}
		aborts := 0
		for _, b := range blocks {
			elems, _ := b["elements"].([]any)
			for _, e := range elems {
				e, _ := e.(map[string]any)
				if e["action_id"] != ActionAbort {
					continue
				}
				aborts++
				confirm, _ := e["confirm"].(map[string]any)
				title, _ := confirm["title"].(map[string]any)
				if title["text"] != "Abort this run?" {
					t.Errorf("an Abort button asks no confirmation: %v", e)
				}
			}
		}
		if aborts < 2 {
			t.Errorf("%d Abort buttons, want one per question", aborts)
		}

		ok, err := h.srv.mirror.IsHome(context.Background(), alice, home.ID)
		if err != nil || !ok {
			t.Errorf("homeView(alice, her view) = %v, %v; want true", ok, err)
		}
		if ok, _ := h.srv.mirror.IsHome(context.Background(), bob, home.ID); ok {
			t.Error("alice's view counts as bob's Home")
		}
		if ok, _ := h.srv.mirror.IsHome(context.Background(), alice, "V0FORGED"); ok {
			t.Error("a made-up view id counts as alice's Home")
		}

		// Bob started nothing: his Home says so. Without ORCH_ALLOWED_USERS anyone answers in the channels they are in,
		// so a Home, which is no channel, shows only the viewer's own runs' questions: none of alice's.
		bobHome := h.openHome(bob)
		if text := homeText(bobHome); !strings.Contains(text, "You have started no run yet") || strings.Contains(text, "Which TTL?") {
			t.Errorf("bob's Home:\n%s", text)
		}
		if bobHome.ID == home.ID {
			t.Error("bob and alice share a view")
		}
	})
}

// A click from the Home answers through the same path as the thread (By the user, Via slack): the thread message
// shows the answer and the Home is republished without the question; a second click is told on the Home that it
// was already answered, and by whom.
func TestHomeClickAnswers(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		var alice, bob string
		// ORCH_ALLOWED_USERS names who answers: each of them sees, and may answer, every question on their Home.
		h := newHarness(t, rdb, func(h *harness, c *Config) {
			alice, bob = h.homeUser("ALICE"), h.homeUser("BOB")
			c.AllowedUsers = []string{alice, bob}
		})
		run, _ := h.startRun(alice)
		escID, q := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
		home := h.openHome(bob)
		b := homeButton(t, home, run.ID, escID, ActionChoose+":B")
		h.homeClick(home, bob, b.ActionID, b.Value)

		res := h.waitResolved(run.ID, escID)
		if res.By != bob || res.Via != "slack" || res.Type != jobs.ResolveChoose || res.Key != "B" {
			t.Fatalf("resolution = %+v, want bob's B from Slack", res)
		}
		audit := h.audit(run.ID, "resolved")
		if len(audit) != 1 || audit[0].By != bob || audit[0].Via != "slack" {
			t.Errorf("audit = %+v, want one resolution by bob via slack", audit)
		}
		h.waitFor("the thread message to show the answer", func() bool {
			return strings.Contains(h.message(q.TS).Text, "<@"+bob+"> chose B) In-memory")
		})
		after := h.waitHome(bob, "the Home without the question", func(hm slackfake.Home) bool {
			return hm.Publishes > home.Publishes && !strings.Contains(string(hm.Blocks), run.ID+"|"+escID+"|")
		})
		if strings.Contains(homeText(after), "Already answered") {
			t.Errorf("the Home of a click that answered tells it was already answered:\n%s", homeText(after))
		}

		// The same button again, from the Home as bob's client may still show it: a view orch has replaced since (with
		// the fake, as maybe with Slack, each publish is a view of its own id) is still one orch showed him.
		h.homeClick(home, bob, b.ActionID, b.Value)
		told := h.waitHome(bob, "the Home to say it was already answered", func(hm slackfake.Home) bool {
			return strings.Contains(homeText(hm), "Already answered")
		})
		if text := homeText(told); !strings.Contains(text, "answered by "+bob) {
			t.Errorf("the notice does not say who answered:\n%s", text)
		}
		if got := h.esc(run.ID, escID).Resolution; *got != *res {
			t.Errorf("a second click changed the answer: %+v → %+v", res, got)
		}
		if n := h.queue.count(run.ID, escID); n != 1 {
			t.Errorf("%d resumes enqueued, want 1", n)
		}
	})
}

// A click whose view is not the one orch last published as the clicker's Home (someone else's, or made up) answers
// nothing, and the clicker's Home says so.
func TestHomeClickForgedView(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice, bob, mallory := h.homeUser("ALICE"), h.homeUser("BOB"), h.homeUser("MALLORY")
		run, _ := h.startRun(alice)
		escID, _ := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
		aliceHome := h.openHome(alice)
		b := homeButton(t, aliceHome, run.ID, escID, ActionChoose+":A")

		cases := []struct {
			name, user string
			home       slackfake.Home
		}{
			{"someone else's Home", bob, aliceHome},
			{"made-up view id", mallory, slackfake.Home{ID: "V0FORGED", Blocks: aliceHome.Blocks}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				own := h.openHome(c.user)
				h.homeClick(c.home, c.user, b.ActionID, b.Value)
				told := h.waitHome(c.user, "the refusal on the Home", func(hm slackfake.Home) bool {
					return hm.Publishes > own.Publishes && strings.Contains(homeText(hm), "answered nothing")
				})
				if res := h.esc(run.ID, escID).Resolution; res != nil {
					t.Fatalf("a click from %s answered: %+v", c.name, res)
				}
				// Alice's Home may be published again on its own (the mirror keeps it up to date with her questions),
				// but never with the refusal of a click that was not hers.
				if got, _ := h.fake.HomeOf(alice); strings.Contains(homeText(got), "answered nothing") {
					t.Errorf("alice's Home shows the refusal of %s's click", c.user)
				}
				if told.Publishes != own.Publishes+1 {
					t.Errorf("%s's Home was published %d times for one refusal", c.user, told.Publishes-own.Publishes)
				}
			})
		}
		// The view in the payload and its container disagree: refused too.
		forged := h.fake.HomeClick(aliceHome, alice, b.ActionID, b.Value)
		form, _ := url.ParseQuery(string(forged))
		var p map[string]any
		json.Unmarshal([]byte(form.Get("payload")), &p)
		p["view"].(map[string]any)["id"] = "V0OTHER"
		before, _ := h.fake.HomeOf(alice)
		code, _ := h.post("/slack/interactions", []byte(url.Values{"payload": {string(marshal(t, p))}}.Encode()), formType)
		if code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
		h.waitHome(alice, "the refusal on alice's Home", func(hm slackfake.Home) bool {
			return hm.Publishes > before.Publishes && strings.Contains(homeText(hm), "answered nothing")
		})
		if res := h.esc(run.ID, escID).Resolution; res != nil {
			t.Fatalf("a click with two view ids answered: %+v", res)
		}
	})
}

// Someone outside ORCH_ALLOWED_USERS sees no question and no button on their Home, and a click they forge with a
// real button's value answers nothing: it is refused on their Home and audited.
func TestHomeOutsideAllowedUsers(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		var alice, mallory string
		h := newHarness(t, rdb, func(h *harness, c *Config) {
			alice, mallory = h.homeUser("ALICE"), h.homeUser("MALLORY")
			c.AllowedUsers = []string{alice}
		})
		run, _ := h.startRun(alice)
		escID, _ := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
		b := homeButton(t, h.openHome(alice), run.ID, escID, ActionChoose+":A")

		home := h.openHome(mallory)
		if n := len(home.Buttons()); n != 0 {
			t.Errorf("mallory's Home has %d buttons: %v", n, home.Buttons())
		}
		if text := homeText(home); !strings.Contains(text, "not in ORCH_ALLOWED_USERS") || strings.Contains(text, "Which cache?") {
			t.Errorf("mallory's Home:\n%s", text)
		}
		h.homeClick(home, mallory, b.ActionID, b.Value)
		h.waitHome(mallory, "the refusal on mallory's Home", func(hm slackfake.Home) bool {
			return strings.Contains(homeText(hm), "You are not allowed to answer here")
		})
		if res := h.esc(run.ID, escID).Resolution; res != nil {
			t.Fatalf("mallory answered: %+v", res)
		}
		h.waitFor("the refusal audited", func() bool { return len(h.refusals(mallory)) == 1 })
	})
}

// When questions open and are answered and runs end, the Homes of those concerned who opened theirs lately are
// republished, with the latest state, at most once per HomeInterval each; a Home the changes do not concern is left
// alone.
func TestHomeRefreshCoalesced(t *testing.T) {
	const interval = 500 * time.Millisecond
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		var alice, bob, carol string
		h := newHarness(t, rdb, func(h *harness, c *Config) {
			alice, bob, carol = h.homeUser("ALICE"), h.homeUser("BOB"), h.homeUser("CAROL")
			c.AllowedUsers, c.HomeInterval = []string{alice, bob}, interval
		})
		const runs = 4
		var ids []string
		for range runs {
			run, _ := h.startRun(alice)
			ids = append(ids, run.ID)
		}
		opened := map[string]slackfake.Home{alice: h.openHome(alice), bob: h.openHome(bob), carol: h.openHome(carol)}
		start := time.Now()
		changes := 0
		for _, id := range ids {
			esc := h.ask(id, "Which cache?", "A) Redis", "B) In-memory")
			h.answerFromTerminal(id, esc, "A")
			h.complete(id)
			changes += 3
		}
		final := h.waitHome(alice, "alice's Home to show every run completed", func(hm slackfake.Home) bool {
			return strings.Count(homeText(hm), ":white_check_mark: *Completed*") == runs
		})
		elapsed := time.Since(start)
		for _, id := range ids {
			h.done(id)
		}

		// Coalesced: one publish per interval at most, after the open's; far fewer than the changes.
		n := final.Publishes - opened[alice].Publishes
		if bound := 1 + int(elapsed/interval); n > bound || n >= changes {
			t.Errorf("alice's Home was published %d times for %d changes in %v (interval %v): want at most %d",
				n, changes, elapsed, interval, bound)
		}
		// Bob may answer: the questions concerned him. Carol may not, and started nothing.
		h.waitHome(bob, "bob's Home to be refreshed", func(hm slackfake.Home) bool {
			return hm.Publishes > opened[bob].Publishes
		})
		if got, _ := h.fake.HomeOf(carol); got.Publishes != opened[carol].Publishes {
			t.Errorf("carol's Home was published %d times after she opened it; nothing concerned her",
				got.Publishes-opened[carol].Publishes)
		}
	})
}

// A 429 from views.publish is waited out (Retry-After), and the Home is published.
func TestHomeRateLimited(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice := h.homeUser("ALICE")
		run, _ := h.startRun(alice)
		h.fake.RateLimitMethod("views.publish", 1, 1)
		calls := h.fake.Calls("views.publish")
		home := h.openHome(alice)
		if !strings.Contains(string(home.Blocks), run.ID) {
			t.Errorf("the Home published after the 429 lacks run %s", run.ID)
		}
		if n := h.fake.Calls("views.publish") - calls; n != 2 {
			t.Errorf("views.publish called %d times, want 2 (the 429, then the publish)", n)
		}
		if !strings.Contains(h.logs.String(), "Slack asked to slow down") {
			t.Errorf("the 429 was not waited out:\n%s", h.logs.String())
		}
	})
}

// The fake's click on a Home has every field of Slack's documented Home tab block_actions payload, and views.publish
// refuses what Slack refuses.
func TestFakeHome(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	post := func(form url.Values) map[string]any {
		resp, err := http.PostForm(fake.APIURL()+"views.publish", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		return out
	}
	for _, form := range []url.Values{{"view": {`{"type":"home","blocks":[]}`}}, {"user_id": {"U1"}}} {
		if out := post(form); out["ok"] != false || out["error"] != "invalid_arguments" {
			t.Errorf("views.publish %v = %v, want invalid_arguments", form, out)
		}
	}
	first := post(url.Values{"user_id": {"U1"}, "view": {`{"type":"home","blocks":[{"type":"divider"}]}`}})
	second := post(url.Values{"user_id": {"U1"}, "view": {`{"type":"home","blocks":[]}`}})
	v1, v2 := first["view"].(map[string]any), second["view"].(map[string]any)
	if v1["id"] == v2["id"] || v1["hash"] == v2["hash"] {
		t.Errorf("two publishes: %v then %v; want a new id and a new hash (the fake promises no id that stays)", v1, v2)
	}
	if out := post(url.Values{"user_id": {"U1"}, "hash": {v1["hash"].(string)}, "view": {`{"type":"home","blocks":[]}`}}); out["error"] != "hash_conflict" {
		t.Errorf("publish with a stale hash = %v, want hash_conflict", out)
	}

	home, _ := fake.HomeOf("U1")
	form, _ := url.ParseQuery(string(fake.HomeClick(home, "U1", "a", "v")))
	var got, docs map[string]any
	json.Unmarshal([]byte(form.Get("payload")), &got)
	if err := json.Unmarshal(testdata(t, "block_actions_docs_home_tab.json"), &docs); err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"", "container", "view", "user", "team"} {
		want, have := docs, got
		if part != "" {
			want, _ = docs[part].(map[string]any)
			have, _ = got[part].(map[string]any)
		}
		for _, k := range slices.Sorted(maps.Keys(want)) {
			if _, ok := have[k]; !ok {
				t.Errorf("the fake's Home click lacks %s%s", strings.TrimPrefix(part+".", "."), k)
			}
		}
	}
	for _, k := range []string{"channel", "message", "response_url"} {
		if _, ok := got[k]; ok {
			t.Errorf("a Home click carries %s; Slack's does not", k)
		}
	}
	if c := got["container"].(map[string]any); c["type"] != "view" || c["view_id"] != home.ID {
		t.Errorf("container = %v", c)
	}
}

// Without ORCH_ALLOWED_USERS a Home shows only the viewer's own runs' questions, and a click there cannot reach
// further: a button of alice's question clicked on bob's own Home answers nothing, and bob is told why.
func TestHomeClickOnAnotherPersonsQuestion(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice, bob := h.homeUser("ALICE"), h.homeUser("BOB")
		run, _ := h.startRun(alice)
		escID, _ := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
		b := homeButton(t, h.openHome(alice), run.ID, escID, ActionChoose+":B")
		home := h.openHome(bob)
		h.homeClick(home, bob, b.ActionID, b.Value)
		h.waitHome(bob, "the refusal on bob's Home", func(hm slackfake.Home) bool {
			return strings.Contains(homeText(hm), "That question is not yours to answer from here")
		})
		if res := h.esc(run.ID, escID).Resolution; res != nil {
			t.Fatalf("bob answered alice's question from his Home: %+v", res)
		}
	})
}
