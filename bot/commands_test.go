package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/slack-go/slack"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/bot/blocks/blockstest"
	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/jobs"
)

// lookup types `/orch text` as user, expects the lookup's ack, and returns the answer that then comes through
// response_url: its text and blocks, checked against Slack's limits when it has blocks.
func (h *harness) lookup(text, user string) (slackfake.Response, string) {
	h.t.Helper()
	n := len(h.fake.Responses())
	if got := h.command(text, user); got != "Looking it up…" {
		h.t.Fatalf("/orch %s: ack %q", text, got)
	}
	h.waitFor("the answer to /orch "+text, func() bool { return len(h.fake.Responses()) > n })
	resp := h.fake.Responses()[n]
	if resp.ResponseType != "ephemeral" {
		h.t.Errorf("/orch %s answered %q, want ephemeral", text, resp.ResponseType)
	}
	if len(resp.Blocks) == 0 || string(resp.Blocks) == "null" {
		return resp, resp.Text
	}
	var blocks slack.Blocks
	if err := json.Unmarshal(resp.Blocks, &blocks); err != nil {
		h.t.Fatalf("/orch %s: blocks do not decode: %v\n%s", text, err, resp.Blocks)
	}
	blockstest.Check(h.t, resp.Text, blocks.BlockSet)
	for _, b := range blockstest.Buttons(blocks.BlockSet) {
		if _, err := DecodeAction(b.ActionID, b.Value); err != nil {
			h.t.Errorf("/orch %s: button %q: a click would not decode: %v", text, b.Text.Text, err)
		}
	}
	return resp, blocksText(slackfake.Message{Blocks: resp.Blocks})
}

// createRun saves a run straight to the store, as another orch would have (no thread unless the poster follows it).
func (h *harness) createRun(r *jobs.Run) *jobs.Run {
	h.t.Helper()
	if r.ID == "" {
		r.ID = jobs.NewRunID()
	}
	if r.Tasks == nil {
		r.Tasks = []*jobs.Task{{ID: "1.1", Title: "Do it", Status: jobs.TaskPending}}
	}
	h.track(r.ID)
	if err := h.store.Create(context.Background(), r); err != nil {
		h.t.Fatal(err)
	}
	return r
}

// startRunIn starts a run from Slack in another channel and returns it once created.
func (h *harness) startRunIn(channel, user string) *jobs.Run {
	h.t.Helper()
	n := h.starter.created()
	code, body := h.post("/slack/commands", h.fake.SlashCommand("run plan.md", user, channel), formType)
	if code != http.StatusOK || !strings.Contains(ephemeralText(h.t, body), "Starting a run") {
		h.t.Fatalf("/orch run in %s: %d %s", channel, code, body)
	}
	h.waitFor("the starter to create the run", func() bool { return h.starter.created() > n })
	return h.starter.run(n)
}

// threadURL is the link Slack's clients open a thread with (auth.test's url, the channel, the root's ts).
func threadURL(channel, ts string) string {
	return slackfake.TeamURL + "archives/" + channel + "/p" + strings.Replace(ts, ".", "", 1)
}

// lineOf is the line of text that mentions s, or "".
func lineOf(text, s string) string {
	for l := range strings.Lines(text) {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

func TestCommandHistory(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice, bob := h.user("ALICE"), h.user("BOB")

		if _, got := h.lookup("history", alice); !strings.Contains(got, "No run was started in this channel yet") {
			t.Fatalf("history of an empty channel: %q", got)
		}

		first, firstRoot := h.startRun(alice)
		second, secondRoot := h.startRun(bob)
		elsewhere := h.startRunIn("C"+h.sfx+"X", alice)
		asked := h.createRun(&jobs.Run{PlanTitle: "", Request: "Fix the flaky login test\nIt fails one time in ten.",
			Origin: jobs.Origin{Kind: "slack", User: bob, Channel: h.channel}, Status: jobs.RunQueued})

		_, got := h.lookup("history", alice)
		if strings.Contains(got, elsewhere.ID) {
			t.Errorf("history lists a run of another channel:\n%s", got)
		}
		at := func(id string) int {
			i := strings.Index(got, id)
			if i < 0 {
				t.Fatalf("history lacks %s:\n%s", id, got)
			}
			return i
		}
		if !(at(asked.ID) < at(second.ID) && at(second.ID) < at(first.ID)) {
			t.Errorf("history is not newest first:\n%s", got)
		}
		for _, c := range []struct {
			run  *jobs.Run
			root slackfake.Message
			who  string
		}{{first, firstRoot, alice}, {second, secondRoot, bob}} {
			line := lineOf(got, c.run.ID)
			for _, want := range []string{":inbox_tray:", "*Add a cache*", "by <@" + c.who + ">", "<!date^", "so far",
				"$0.0000", "<" + threadURL(h.channel, c.root.TS) + "|thread>"} {
				if !strings.Contains(line, want) {
					t.Errorf("the line of %s lacks %q: %q", c.run.ID, want, line)
				}
			}
		}
		line := lineOf(got, asked.ID)
		if !strings.Contains(line, "*Fix the flaky login test*") || strings.Contains(got, "one time in ten") {
			t.Errorf("a run asked in words is titled by the request's first line: %q", line)
		}
		if strings.Contains(line, "|thread>") {
			t.Errorf("a run without a thread has a link: %q", line)
		}
	})
}

// runWithCosts gives a run's task attempts that cost something, and a second task.
func (h *harness) runWithCosts(id string, usd float64) {
	h.t.Helper()
	_, err := h.store.Update(context.Background(), id, func(r *jobs.Run, c *jobs.Change) error {
		r.Tasks[0].Attempts = []*jobs.Attempt{
			{N: 1, InputTokens: 1200, OutputTokens: 300, CostUSD: usd, Model: "claude-sonnet",
				Brain: jobs.BrainUsage{Calls: 2, InputTokens: 400, OutputTokens: 20, CostUSD: 0.001, Model: "claude-haiku"}},
			{N: 2, InputTokens: 800, OutputTokens: 100, CostUSD: usd, Model: "claude-sonnet"},
		}
		r.Tasks = append(r.Tasks, &jobs.Task{ID: "1.2", Title: "Wire the cache in", Status: jobs.TaskPending,
			Attempts: []*jobs.Attempt{{N: 1, InputTokens: 50, OutputTokens: 5, CostUSD: 0.5}}})
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

func TestCommandCosts(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice := h.user("ALICE")
		if _, got := h.lookup("costs", alice); !strings.Contains(got, "No run was started in this channel yet") {
			t.Fatalf("costs of an empty channel: %q", got)
		}
		run, _ := h.startRun(alice)
		h.runWithCosts(run.ID, 0.25)
		other, _ := h.startRun(alice)
		h.runWithCosts(other.ID, 1)
		elsewhere := h.startRunIn("C"+h.sfx+"X", alice)
		h.runWithCosts(elsewhere.ID, 100)

		resp, got := h.lookup("costs "+run.ID, alice)
		for _, want := range []string{
			"*Costs of run `" + run.ID + "`* (queued): *$1.0010* in all",
			"agent 2,050 tokens in, 405 out, $1.0000",
			"brain 2 calls, 400 tokens in, 20 out, $0.0010",
			"*Task 1.1: Add the cache* · 2 attempts · agent 2,000 tokens in, 400 out, $0.5000 · brain 2 calls, 400 tokens in, 20 out, $0.0010",
			"*Task 1.2: Wire the cache in* · 1 attempt · agent 50 tokens in, 5 out, $0.5000 · brain 0 calls, 0 tokens in, 0 out, $0.0000",
			"`(unknown)` · 1 call · 50 tokens in, 5 out · $0.5000",
			"`claude-haiku` · 2 calls · 400 tokens in, 20 out · $0.0010",
			"`claude-sonnet` · 2 calls · 2,000 tokens in, 400 out · $0.5000",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("costs of one run lack %q:\n%s", want, got)
			}
		}
		if resp.Text != "Run "+run.ID+" cost $1.0010" {
			t.Errorf("fallback text %q", resp.Text)
		}

		_, got = h.lookup("costs", alice)
		if strings.Contains(got, elsewhere.ID) {
			t.Errorf("the channel's costs count a run of another channel:\n%s", got)
		}
		if i, j := strings.Index(got, other.ID), strings.Index(got, run.ID); i < 0 || j < 0 || i > j {
			t.Errorf("the channel's costs do not list both runs newest first:\n%s", got)
		}
		for _, want := range []string{"*$3.5020* for 2 runs", "*Total:* $3.5020",
			"`" + run.ID + "` *$1.0010* · Add a cache · agent 2,050 tokens in, 405 out, $1.0000 · brain 2 calls, 400 tokens in, 20 out, $0.0010",
			"`" + other.ID + "` *$2.5010* · Add a cache · agent 2,050 tokens in, 405 out, $2.5000"} {
			if !strings.Contains(got, want) {
				t.Errorf("the channel's costs lack %q:\n%s", want, got)
			}
		}

		if _, got := h.lookup("costs "+elsewhere.ID, alice); got != "No run `"+elsewhere.ID+"` here: `/orch history` lists the runs started in this channel." {
			t.Errorf("costs of another channel's run: %q", got)
		}
	})
}

func TestCommandQuestions(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		var alice, bob, mallory string
		h := newHarness(t, rdb, func(h *harness, c *Config) {
			alice, bob, mallory = h.user("ALICE"), h.user("BOB"), h.user("MALLORY")
			c.AllowedUsers = []string{alice, bob}
		})
		if _, got := h.lookup("questions", alice); !strings.Contains(got, "No question waits for an answer from you") {
			t.Fatalf("questions with none open: %q", got)
		}

		older, olderRoot := h.startRun(bob)
		h.escalate(older.ID, "Which cache should it use?\nRedis is already deployed.", "A) Redis", "B) In-memory")
		newer, newerRoot := h.startRun(alice)
		h.escalate(newer.ID, "Keep the old API?", "A) Yes", "B) No")

		resp, got := h.lookup("questions", alice)
		i, j := strings.Index(got, older.ID), strings.Index(got, newer.ID)
		if i < 0 || j < 0 || i > j {
			t.Fatalf("questions are not both listed oldest first:\n%s", got)
		}
		line := lineOf(got[i:], older.ID) + lineOf(got[i:], "started by <@"+bob+">")
		for _, want := range []string{"*Task 1.1: Add the cache*: Which cache should it use?", "started by <@" + bob + ">",
			"waiting ", "<" + threadURL(h.channel, olderRoot.TS) + "|answer in the thread>"} {
			if !strings.Contains(line, want) {
				t.Errorf("the older question's lines lack %q: %q", want, line)
			}
		}
		if strings.Contains(got, "already deployed") {
			t.Errorf("a question shows more than its first line:\n%s", got)
		}
		if !strings.Contains(got, threadURL(h.channel, newerRoot.TS)) {
			t.Errorf("the newer question has no link to its thread:\n%s", got)
		}
		if !strings.Contains(resp.Text, "waiting for an answer") {
			t.Errorf("fallback text %q", resp.Text)
		}

		// Someone outside ORCH_ALLOWED_USERS is refused, and the refusal audited; nothing is answered after.
		answers := len(h.fake.Responses())
		if got := h.command("questions", mallory); !strings.Contains(got, "not allowed to look at runs") {
			t.Errorf("mallory's /orch questions: %q", got)
		}
		h.waitFor("mallory's refusal in the audit", func() bool { return len(h.refusals(mallory)) == 1 })
		if a := h.refusals(mallory)[0]; a.Action != "refused" || a.Detail != "questions: questions" {
			t.Errorf("audit entry %+v", a)
		}
		if n := len(h.fake.Responses()); n != answers {
			t.Errorf("mallory was answered through response_url: %+v", h.fake.Responses()[answers:])
		}

		// More than fit: the oldest ten, and how many more.
		for k := range 11 {
			h.createRun(&jobs.Run{PlanTitle: "Later", Status: jobs.RunParked,
				Origin:      jobs.Origin{Kind: "slack", User: h.user("CAROL"), Channel: h.channel},
				Escalations: []*jobs.Escalation{{ID: "e1", TaskID: "1.1", Question: fmt.Sprintf("Later question %d?", k), CreatedAt: time.Now()}}})
		}
		// A run from the terminal has no thread to answer in: its question is not listed.
		terminal := h.createRun(&jobs.Run{PlanTitle: "Terminal", Status: jobs.RunParked,
			Origin:      jobs.Origin{Kind: "cli", User: "carol"},
			Escalations: []*jobs.Escalation{{ID: "e1", TaskID: "1.1", Question: "From the terminal?", CreatedAt: time.Now().Add(-time.Hour)}}})
		_, got = h.lookup("questions", bob)
		if n := strings.Count(got, ":raising_hand:"); n != questionsShown {
			t.Errorf("%d questions shown, want %d:\n%s", n, questionsShown, got)
		}
		if !strings.Contains(got, older.ID) || !strings.Contains(got, "_… and ") || !strings.Contains(got, " more_") {
			t.Errorf("the oldest first and a count of the rest:\n%s", got)
		}
		if strings.Contains(got, terminal.ID) {
			t.Errorf("a question of a run from the terminal is listed:\n%s", got)
		}
	})
}

// Without ORCH_ALLOWED_USERS anyone answers in the channels they are in: /orch questions lists the questions of the
// runs started in the channel it is typed in and of the caller's own runs, never one of a channel they may not be in.
func TestCommandQuestionsWithoutAllowedUsers(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		bob := h.user("BOB")
		ask := func(user, channel, question string) *jobs.Run {
			return h.createRun(&jobs.Run{PlanTitle: "Q", Status: jobs.RunParked, Origin: jobs.Origin{Kind: "slack", User: user, Channel: channel},
				Escalations: []*jobs.Escalation{{ID: "e1", TaskID: "1.1", Question: question, CreatedAt: time.Now()}}})
		}
		here := ask(h.user("CAROL"), h.channel, "Asked here?")
		mine := ask(bob, "CBOBS"+h.sfx, "Bob's own elsewhere?")
		private := ask(h.user("DAVE"), "CPRIVATE"+h.sfx, "Secret plans?")
		_, got := h.lookup("questions", bob)
		if !strings.Contains(got, here.ID) || !strings.Contains(got, mine.ID) || strings.Contains(got, private.ID) {
			t.Fatalf("want the channel's question and bob's own, not another channel's:\n%s", got)
		}
	})
}

func TestCommandLogs(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice := h.user("ALICE")
		run, _ := h.startRun(alice)
		_, err := h.store.Update(context.Background(), run.ID, func(r *jobs.Run, c *jobs.Change) error {
			r.Status, r.Tasks[0].Status, r.Tasks[0].Started = jobs.RunRunning, jobs.TaskRunning, 1
			c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.TaskStartedEvent{Attempt: 1, MaxAttempts: 3}))
			c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.TaskFailedEvent{Attempt: 1, MaxAttempts: 3, Error: "go test: 2 failed <@U1>"}))
			for k := 1; k <= 20; k++ {
				c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.AgentActivityEvent{Calls: []string{fmt.Sprintf("Edit cache-%02d.go", k)}}))
			}
			c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.RetryingEvent{}))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		_, got := h.lookup("logs "+run.ID, alice)
		for _, want := range []string{"*Latest events of run `" + run.ID + "`* (Add a cache)", ":repeat: Retrying Task 1.1...",
			"Edit cache-20.go", "Edit cache-07.go", "<!date^"} {
			if !strings.Contains(got, want) {
				t.Errorf("logs lack %q:\n%s", want, got)
			}
		}
		// The last 15 events: the retry and fourteen calls.
		for _, gone := range []string{"Edit cache-06.go", "Task 1.1: FAILED", "<@U1>"} {
			if strings.Contains(got, gone) {
				t.Errorf("logs show %q, older than the last %d events:\n%s", gone, logEvents, got)
			}
		}
		if strings.Index(got, "cache-07") > strings.Index(got, "Retrying") {
			t.Errorf("events are not oldest first:\n%s", got)
		}

		// A run with only its start: its events as the progress view words them.
		fresh := h.createRun(&jobs.Run{PlanTitle: "Fresh", Status: jobs.RunQueued,
			Origin: jobs.Origin{Kind: "slack", User: alice, Channel: h.channel}})
		if _, got := h.lookup("logs "+fresh.ID, alice); !strings.Contains(got, "_No events yet._") {
			t.Errorf("logs of a run without events: %q", got)
		}
	})
}

func TestHelpListsEveryCommand(t *testing.T) {
	h := newHarness(t, clients(t)["miniredis"])
	got := h.command("help", h.user("ALICE"))
	for _, want := range []string{"/orch run PLAN", "/orch do TEXT", "ask the agent in your own words; it works on a branch of its own",
		"/orch status [RUN_ID]", "/orch history", "/orch costs [RUN_ID]", "/orch questions", "/orch logs RUN_ID",
		"/orch abort RUN_ID", "/orch help"} {
		if !strings.Contains(got, want) {
			t.Errorf("help lacks %q:\n%s", want, got)
		}
	}
}

// Unknown commands and bad arguments are answered at once with the usage; what a person typed is said back bounded.
func TestLookupBadArguments(t *testing.T) {
	h := newHarness(t, clients(t)["miniredis"])
	alice := h.user("ALICE")
	huge := strings.Repeat("x", 100<<10)
	for _, c := range []struct{ text, want string }{
		{"frobnicate", "unknown command `frobnicate`."},
		{"logs", "which run? `/orch logs RUN_ID`"},
		{"logs r-aaaaaaaaaa r-bbbbbbbbbb", "one run at a time (got `r-aaaaaaaaaa r-bbbbbbbbbb`): `/orch logs RUN_ID`"},
		{"costs r-aaaaaaaaaa extra", "one run at a time (got `r-aaaaaaaaaa extra`): `/orch costs [RUN_ID]`"},
		{"history all", "`/orch history` takes no arguments (got `all`): `/orch history`"},
		{"questions mine please", "`/orch questions` takes no arguments (got `mine please`): `/orch questions`"},
		{"logs ../../etc/passwd", "`../../etc/passwd` is not a run id"},
		{"costs <!channel>", "`&lt;!channel&gt;` is not a run id"},
		{huge, "unknown command `" + strings.Repeat("x", maxEcho-1) + "…`."},
		{"logs " + huge, "`" + strings.Repeat("x", maxEcho-1) + "…` is not a run id"},
		{"history " + huge, "takes no arguments (got `" + strings.Repeat("x", maxEcho-1) + "…`)"},
		{"logs r-" + huge, "…` is not a run id"},
	} {
		got := h.command(c.text, alice)
		if !strings.Contains(got, c.want) {
			t.Errorf("/orch %.40s: %q lacks %q", c.text, got, c.want)
		}
		if len(got) > len(blocks.HelpText)+300 {
			t.Errorf("/orch %.40s: an answer of %d bytes", c.text, len(got))
		}
	}
	if n := len(h.fake.Responses()); n != 0 {
		t.Errorf("bad commands did work: %d answers through response_url", n)
	}
	for _, text := range []string{"logs r-nosuchrun1", "costs r-nosuchrun1"} {
		if _, got := h.lookup(text, alice); got != "No run `r-nosuchrun1` here: `/orch history` lists the runs started in this channel." {
			t.Errorf("/orch %s: %q", text, got)
		}
	}
}

// With ORCH_ALLOWED_USERS set, someone outside it may not look at runs: each attempt is refused and audited, and
// nothing is read.
func TestLookupsRefusedOutsideAllowedUsers(t *testing.T) {
	var alice, mallory string
	h := newHarness(t, clients(t)["miniredis"], func(h *harness, c *Config) {
		alice, mallory = h.user("ALICE"), h.user("MALLORY")
		c.AllowedUsers = []string{alice}
	})
	run, _ := h.startRun(alice)
	for _, text := range []string{"history", "costs", "costs " + run.ID, "questions", "logs " + run.ID, "logs " + strings.Repeat("y", 5000)} {
		if got := h.command(text, mallory); got != "you are not allowed to look at runs here (ORCH_ALLOWED_USERS)" {
			t.Errorf("mallory's /orch %.20s: %q", text, got)
		}
	}
	h.waitFor("every refusal in the audit", func() bool { return len(h.refusals(mallory)) == 6 })
	for _, a := range h.refusals(mallory) {
		if a.Action != "refused" || a.Via != "slack" || blockstest.TextLen(a.Detail) > maxRefusalDetail+20 {
			t.Errorf("audit entry %+v", a)
		}
	}
	if n := len(h.fake.Responses()); n != 0 {
		t.Errorf("refused lookups answered %d times through response_url", n)
	}
	if _, got := h.lookup("logs "+run.ID, alice); !strings.Contains(got, run.ID) {
		t.Errorf("alice's logs: %q", got)
	}
}

// The acks never wait for Redis; with Redis away each lookup says to try again.
func TestLookupsWithRedisAway(t *testing.T) {
	m := miniredis.RunT(t)
	h := newHarness(t, redis.NewClient(&redis.Options{Addr: m.Addr()}))
	alice := h.user("ALICE")
	m.Close()
	for _, text := range []string{"history", "costs", "costs r-aaaaaaaaaa", "questions", "logs r-aaaaaaaaaa"} {
		if _, got := h.lookup(text, alice); got != unavailableText {
			t.Errorf("/orch %s with Redis away: %q", text, got)
		}
	}
}
