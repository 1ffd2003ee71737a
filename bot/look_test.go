package bot

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/jobs"
)

// What package blocks says back of a person's input at most (Echo), and the longest line of a list it writes: the
// bounds the answers below are held to.
const (
	maxEcho = 80
	maxLine = 200
)

// commandIn types `/orch text` as user in channel and returns the ack's text.
func (h *harness) commandIn(text, user, channel string) string {
	h.t.Helper()
	code, body := h.post("/slack/commands", h.fake.SlashCommand(text, user, channel), formType)
	if code != http.StatusOK {
		h.t.Fatalf("/orch %.40s: status %d: %.200s", text, code, body)
	}
	return ephemeralText(h.t, body)
}

// statusAs asks `/orch status runID` as user in channel and returns the answer.
func (h *harness) statusAs(runID, user, channel string) string {
	h.t.Helper()
	head := "Run `" + runID + "`"
	n := h.countEphemerals(head)
	if ack := h.commandIn("status "+runID, user, channel); ack != "Looking it up…" {
		h.t.Fatalf("/orch status as %s: %q", user, ack)
	}
	h.waitFor("the status of "+runID, func() bool { return h.countEphemerals(head) > n })
	var last string
	for _, e := range h.fake.Ephemerals() {
		if strings.Contains(e, head) {
			last = e
		}
	}
	return last
}

// With ORCH_ALLOWED_USERS set, /orch status is refused to anyone else, and the refusal audited, as the other lookups
// are.
func TestStatusRefusedOutsideAllowedUsers(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		var alice, mallory string
		h := newHarness(t, rdb, func(h *harness, c *Config) {
			alice, mallory = h.user("ALICE"), h.user("MALLORY")
			c.AllowedUsers = []string{alice}
		})
		run, _ := h.startRun(alice)
		h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
		for _, text := range []string{"status " + run.ID, "status"} {
			if got := h.command(text, mallory); !strings.Contains(got, "not allowed to look at runs") {
				t.Errorf("mallory's /orch %s: %q", text, got)
			}
		}
		h.waitFor("both refusals in the audit", func() bool { return len(h.refusals(mallory)) == 2 })
		for _, a := range h.refusals(mallory) {
			if a.Action != "refused" || a.Via != "slack" || !strings.HasPrefix(a.Detail, "status") {
				t.Errorf("audit entry = %+v, want a refused status", a)
			}
		}
		if got := h.statusAs(run.ID, alice, h.channel); !strings.Contains(got, "Which cache?") {
			t.Errorf("alice's status lacks the question: %q", got)
		}
		if n := h.countEphemerals("Which cache?"); n != 1 {
			t.Errorf("the question was shown %d times, want to alice alone: %q", n, h.fake.Ephemerals())
		}
	})
}

// Without ORCH_ALLOWED_USERS, /orch status shows a run's question only to whoever may answer it away from its thread:
// its requester, and the people of the channel it was started in; typed in another channel it says there is one.
func TestStatusShowsTheQuestionToThoseWhoMaySeeIt(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice, bob, carol := h.user("ALICE"), h.user("BOB"), h.user("CAROL")
		elsewhere := "C" + h.sfx + "X"
		run, _ := h.startRun(alice)
		h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
		for _, tt := range []struct {
			who, user, channel string
			sees               bool
		}{
			{"bob, in another channel", bob, elsewhere, false},
			{"alice, who started it, in another channel", alice, elsewhere, true},
			{"carol, in the run's channel", carol, h.channel, true},
		} {
			got := h.statusAs(run.ID, tt.user, tt.channel)
			if !strings.Contains(got, "*parked*") {
				t.Errorf("%s: status %q lacks the run's state", tt.who, got)
			}
			if shown := strings.Contains(got, "Which cache?"); shown != tt.sees {
				t.Errorf("%s: question shown = %v, want %v: %q", tt.who, shown, tt.sees, got)
			}
			if !tt.sees && !strings.Contains(got, "the question is in the run's thread") {
				t.Errorf("%s: status %q does not say a question waits", tt.who, got)
			}
		}
	})
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// Every answer says back at most a bounded piece of what a person sent, however much they sent: a megabyte of command
// text, a run id of 900 KB, an abort reason of a megabyte (kept with the run, its audit and its status), an error of
// the starter that quotes a megabyte.
func TestEchoesAreBounded(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb, func(h *harness, c *Config) { c.MaxBody = 4 << 20 })
		alice := h.user("ALICE")
		mb, kb900 := strings.Repeat("x", 1_000_000), strings.Repeat("x", 900_000)
		// checkAll fails when an answer so far holds more than most x's in a row, or is longer than maxReplyText and a
		// little.
		checkAll := func(what string, most int) {
			t.Helper()
			for _, e := range h.fake.Ephemerals() {
				if n := longestRun(e, 'x'); n > most || len(e) > maxReplyText+100 {
					t.Fatalf("%s: an answer of %d bytes says back %d bytes of the input, want at most %d: %.300q",
						what, len(e), n, most, e)
				}
			}
		}
		acks := map[string]string{
			"unknown command": mb,
			"run":             "run " + mb,
			"do":              "do " + mb,
			"status":          "status " + kb900,
			"abort":           "abort " + kb900,
			"abort, no id":    "abort " + kb900 + " because",
		}
		for what, text := range acks {
			ack := h.command(text, alice)
			if n := longestRun(ack, 'x'); n > maxEcho || len(ack) > maxReplyText+100 {
				t.Errorf("/orch %s: the ack of %d bytes says back %d bytes of the input: %.300q", what, len(ack), n, ack)
			}
		}

		run, _ := h.startRun(alice)
		if got := h.command("abort "+run.ID+" "+mb, alice); !strings.Contains(got, "Aborting") {
			t.Fatalf("/orch abort with a reason of a megabyte: %q", got)
		}
		h.waitEphemeral("is aborted.")
		r := h.run(run.ID)
		if r.Status != jobs.RunAborted || len(r.Reason) > maxReason+50 {
			t.Errorf("the run is %s with a reason of %d bytes, want aborted with at most %d", r.Status, len(r.Reason), maxReason)
		}
		for _, a := range h.audit(run.ID, "aborted") {
			if len(a.Detail) > maxReason+50 {
				t.Errorf("the audit keeps a reason of %d bytes", len(a.Detail))
			}
		}
		if got := h.statusAs(run.ID, alice, h.channel); longestRun(got, 'x') > maxLine {
			t.Errorf("/orch status of the aborted run says back %d bytes of its reason", longestRun(got, 'x'))
		}
		checkAll("the answers after the ack", maxLine)

		// An error of the starter that quotes the request: said back bounded.
		h.starter.mu.Lock()
		h.starter.refuse = fmt.Errorf("the request %s is not a task", mb)
		h.starter.mu.Unlock()
		h.command("do something "+h.sfx, alice)
		h.waitEphemeral("Could not start the run")
		checkAll("the starter's error", maxErrorEcho)
	})
}

// The last line behind the bounded echoes: an ack, a response_url answer and an ephemeral message are each cut to
// maxReplyText, whatever text they are given.
func TestRepliesAreCut(t *testing.T) {
	h := newHarness(t, clients(t)["miniredis"])
	mb := strings.Repeat("x", 1_000_000)
	w := httptest.NewRecorder()
	reply(w, mb)
	if got := ephemeralText(t, w.Body.String()); len(got) > maxReplyText {
		t.Errorf("reply sent %d bytes", len(got))
	}
	h.srv.talk.respond(context.Background(), h.fake.ResponseURL("cut"), "respond "+mb)
	h.srv.talk.ephemeral(context.Background(), h.channel, "", h.user("ALICE"), "ephemeral "+mb)
	for _, what := range []string{"respond", "ephemeral"} {
		e := h.waitEphemeral(what + " x")
		if len(e) > maxReplyText {
			t.Errorf("%s sent %d bytes", what, len(e))
		}
	}
}
