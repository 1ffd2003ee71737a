package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/bot/mirror"
	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// change applies fn to a run as a worker would, in one atomic update.
func (h *harness) change(runID string, fn func(r *jobs.Run, c *jobs.Change)) {
	h.t.Helper()
	if _, err := h.store.Update(context.Background(), runID, func(r *jobs.Run, c *jobs.Change) error {
		fn(r, c)
		return nil
	}); err != nil {
		h.t.Fatal(err)
	}
}

// ask parks a run on a question without waiting for it in Slack.
func (h *harness) ask(runID, question string, options ...string) string {
	h.t.Helper()
	var id string
	h.change(runID, func(r *jobs.Run, c *jobs.Change) {
		id = escalation.Open(r, r.Tasks[0], c, escalation.Spec{Trigger: jobs.TriggerNeedsHelp, Source: "agent",
			Question: question, Options: options, Recommendation: "A"}, h.store.Now()).ID
	})
	return id
}

// answerFromTerminal resolves a question the way `orch escalation resolve --choose` does.
func (h *harness) answerFromTerminal(runID, escID, key string) {
	h.t.Helper()
	_, _, err := escalation.Resolve(context.Background(), h.store, h.queue, escalation.Request{RunID: runID,
		EscalationID: escID, Type: jobs.ResolveChoose, Key: key, By: "ops-alice", Via: "cli"})
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) startTask(runID string, attempt int) {
	h.change(runID, func(r *jobs.Run, c *jobs.Change) {
		r.Status, r.Tasks[0].Status, r.Tasks[0].Started = jobs.RunRunning, jobs.TaskRunning, attempt
		c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.TaskStartedEvent{Attempt: attempt, MaxAttempts: 3}))
	})
}

func (h *harness) complete(runID string) {
	h.change(runID, func(r *jobs.Run, c *jobs.Change) {
		r.Status, r.Tasks[0].Status, r.Cursor, r.EndedAt = jobs.RunCompleted, jobs.TaskCompleted, 1, h.store.Now()
		c.Emit(jobs.NewEvent(r.ID, "", jobs.RunCompletedEvent{}))
	})
}

func (h *harness) fail(runID, reason string) {
	h.change(runID, func(r *jobs.Run, c *jobs.Change) {
		r.Status, r.Tasks[0].Status, r.Reason, r.EndedAt = jobs.RunFailed, jobs.TaskFailed, reason, h.store.Now()
		c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.RunFailedEvent{Reason: reason}))
	})
}

// finals are the final messages of a run in its thread.
func (h *harness) finals(runID, rootTS string) []slackfake.Message {
	var out []slackfake.Message
	for _, m := range h.thread(rootTS) {
		for _, w := range []string{" completed in ", " failed after ", " aborted after "} {
			if strings.HasPrefix(m.Text, "Run "+runID+w) {
				out = append(out, m)
			}
		}
	}
	return out
}

// questions are the messages of a run's thread that ask escalation escID (with buttons or, once answered, without).
func (h *harness) questions(rootTS, escID string) []slackfake.Message {
	var out []slackfake.Message
	for _, m := range h.thread(rootTS) {
		if strings.Contains(blocksText(m), "escalation `"+escID+"`") || strings.Contains(string(m.Blocks), "|"+escID+"|") {
			out = append(out, m)
		}
	}
	return out
}

// roots are the top-level messages naming a run.
func (h *harness) roots(runID string) []slackfake.Message {
	var out []slackfake.Message
	for _, m := range h.messages() {
		if m.ThreadTS == "" && strings.Contains(m.Text, runID) {
			out = append(out, m)
		}
	}
	return out
}

func (h *harness) following(runID string) bool {
	ids, err := h.observer.Followed(context.Background())
	return err == nil && slices.Contains(ids, runID)
}

// done waits until the poster has posted a run's final message and stopped following it: nothing more comes.
func (h *harness) done(runID string) {
	h.t.Helper()
	h.waitFor("the poster to finish "+runID, func() bool {
		st, _ := h.mirror.State(context.Background(), runID)
		return st["final"] == "1" && !h.following(runID) && h.idle(runID)
	})
}

// locked runs fn holding the poster's lock of a run: the poster makes no pass over the run meanwhile.
func (h *harness) locked(runID string, fn func()) {
	h.t.Helper()
	ctx := context.Background()
	var release func()
	h.waitFor("the poster's lock", func() bool {
		r, ok, err := h.mirror.TryLock(ctx, runID, mirror.LockTTL)
		release = r
		return err == nil && ok
	})
	defer release()
	fn()
}

// blocksText is every text of a message's blocks, one per line.
func blocksText(m slackfake.Message) string {
	var v any
	json.Unmarshal(m.Blocks, &v)
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if s, ok := v["text"].(string); ok {
				b.WriteString(s + "\n")
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return b.String()
}

// indexOf is the position of the message posted at ts in msgs.
func indexOf(msgs []slackfake.Message, ts string) int {
	for i, m := range msgs {
		if m.TS == ts {
			return i
		}
	}
	return -1
}

// A run's thread from start to end: the root message in the channel, one progress message updated in place, the
// question, its update when answered from a terminal, the final message; the root follows the run's status.
func TestPosterThread(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice := h.user("ALICE")
		run, root := h.startRun(alice)
		if root.ThreadTS != "" || root.Channel != h.channel || !strings.HasPrefix(root.Text, "Run "+run.ID+": Add a cache") {
			t.Fatalf("root message: %+v", root)
		}
		if !strings.Contains(blocksText(root), "started by <@"+alice+">") {
			t.Errorf("the root message does not say who started the run: %s", root.Blocks)
		}

		// Progress: however many events, one message, updated in place.
		h.startTask(run.ID, 1)
		progress := h.waitMessage("the progress message", func(m slackfake.Message) bool {
			return m.ThreadTS == root.TS && strings.Contains(blocksText(m), "Task 1.1 — Invoking the agent (attempt 1/3)...")
		})
		h.change(run.ID, func(r *jobs.Run, c *jobs.Change) {
			r.Tasks[0].Failures = 1
			c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.TaskFailedEvent{Attempt: 1, MaxAttempts: 3, Error: "tests fail"}))
			c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.RetryingEvent{}))
		})
		h.waitFor("the progress message to show the retry", func() bool {
			return strings.Contains(blocksText(h.message(progress.TS)), "Retrying Task 1.1...")
		})
		h.startTask(run.ID, 2)
		h.waitFor("the progress message to show attempt 2", func() bool {
			return strings.Contains(blocksText(h.message(progress.TS)), "(attempt 2/3)...")
		})
		if th := h.thread(root.TS); len(th) != 1 || th[0].TS != progress.TS {
			t.Fatalf("thread after three rounds of progress: %d messages, want the one progress message\n%s", len(th), h.dump())
		}
		// The root message says what the run does now, and its cost; the progress message adds the events alone.
		h.waitFor("the root to show attempt 2", func() bool {
			return strings.Contains(blocksText(h.message(root.TS)), "*1.1* Add the cache _(attempt 2)_")
		})
		rootText, progressText := blocksText(h.message(root.TS)), blocksText(h.message(progress.TS))
		for _, said := range []string{"*Running*: Task 1.1: Add the cache", "Cost: "} {
			if !strings.Contains(rootText, said) {
				t.Errorf("the root message does not say %q:\n%s", said, rootText)
			}
		}
		for _, line := range strings.Split(strings.TrimSpace(progressText), "\n") {
			if strings.Contains(rootText, line) || strings.Contains(line, "Cost") {
				t.Errorf("the progress message repeats the root's %q:\n%s", line, progressText)
			}
		}
		if m := h.message(progress.TS); m.Updates < 2 {
			t.Errorf("progress message updated %d times, want at least 2", m.Updates)
		}
		if n := h.fake.Calls("chat.postMessage"); n != 2 {
			t.Errorf("chat.postMessage called %d times, want 2 (root, progress)", n)
		}

		// A question, in the thread, with a button per option, Answer… and Abort: the agent asked, so no Retry.
		escID, q := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
		if q.ThreadTS != root.TS || !strings.Contains(q.Text, "Task 1.1: Add the cache needs you: Which cache?") {
			t.Fatalf("question: %+v", q)
		}
		buttons := slackfake.Buttons(q)
		for _, id := range []string{ActionChoose + ":A", ActionChoose + ":B", ActionAnswer, ActionAbort} {
			if _, ok := buttons[id]; !ok {
				t.Errorf("question lacks button %s: %v", id, buttons)
			}
		}
		if _, ok := buttons[ActionRetry]; ok || len(buttons) != 4 {
			t.Errorf("an agent's question has buttons %v, want its options, Answer… and Abort alone", buttons)
		}
		h.waitFor("the root to show the wait", func() bool { return strings.Contains(h.message(root.TS).Text, "waiting for a human") })

		// Answered from a terminal: the question shows who chose what, its buttons gone; nothing new is posted.
		h.answerFromTerminal(run.ID, escID, "B")
		h.waitFor("the question to show the answer", func() bool { return len(slackfake.Buttons(h.message(q.TS))) == 0 })
		answered := h.message(q.TS)
		if !strings.Contains(answered.Text, "ops-alice chose B) In-memory") || !strings.Contains(blocksText(answered), "Answered at the terminal") {
			t.Errorf("answered question: %q %s", answered.Text, answered.Blocks)
		}

		h.complete(run.ID)
		h.done(run.ID)
		final := h.finals(run.ID, root.TS)
		if len(final) != 1 {
			t.Fatalf("%d final messages, want 1\n%s", len(final), h.dump())
		}
		if !strings.Contains(final[0].Text, "Run "+run.ID+" completed in") {
			t.Errorf("final message: %q", final[0].Text)
		}
		if r := h.message(root.TS); !strings.HasSuffix(r.Text, ": completed") || !strings.Contains(blocksText(r), "*Completed*") {
			t.Errorf("root after the end: %q", r.Text)
		}
		th := h.thread(root.TS)
		if len(th) != 3 || th[0].TS != progress.TS || th[1].TS != q.TS || th[2].TS != final[0].TS {
			t.Errorf("thread = %d messages, want progress, question, final in that order\n%s", len(th), h.dump())
		}
		if n := h.fake.Calls("chat.postMessage"); n != 4 {
			t.Errorf("chat.postMessage called %d times, want 4 (root, progress, question, final)", n)
		}
	})
}

// The final message names the run and says completed, failed or aborted; the root message shows the same.
func TestPosterFinalMessage(t *testing.T) {
	for _, tt := range []struct {
		word string
		end  func(h *harness, runID string)
		root string // the end of the root's fallback text
	}{
		{"completed", func(h *harness, id string) { h.complete(id) }, ": completed"},
		{"failed", func(h *harness, id string) { h.fail(id, "tests keep failing") }, ": failed: tests keep failing"},
		{"aborted", func(h *harness, id string) {
			if _, err := escalation.Abort(context.Background(), h.store, h.queue, id, "ops-alice", "cli", "not needed"); err != nil {
				h.t.Fatal(err)
			}
		}, ": aborted: not needed"},
	} {
		t.Run(tt.word, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
				h := newHarness(t, rdb)
				run, root := h.startRun(h.user("ALICE"))
				h.startTask(run.ID, 1)
				tt.end(h, run.ID)
				h.done(run.ID)
				final := h.finals(run.ID, root.TS)
				if len(final) != 1 || !strings.Contains(final[0].Text, run.ID+" "+tt.word) {
					t.Fatalf("final messages = %d, want one naming %s and saying %s\n%s", len(final), run.ID, tt.word, h.dump())
				}
				if r := h.message(root.TS); !strings.HasSuffix(r.Text, tt.root) {
					t.Errorf("root = %q, want it to end with %q", r.Text, tt.root)
				}
			})
		})
	}
}

// A 429 with Retry-After mid-run is waited out, and every message still arrives once, in order.
func TestPosterRateLimited(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		run, root := h.startRun(h.user("ALICE"))
		h.waitFor("the poster to settle", func() bool { return h.idle(run.ID) })

		h.fake.RateLimit(2, 1)
		limited := time.Now()
		e1, q1 := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
		if waited := q1.Posted.Sub(limited); waited < 1900*time.Millisecond {
			t.Errorf("the question was posted %v after two 429s with Retry-After: 1; want them waited out", waited)
		}
		h.answerFromTerminal(run.ID, e1, "A")
		e2 := h.ask(run.ID, "Which TTL?", "A) One hour", "B) One day")
		h.fake.RateLimit(1, 1)
		h.complete(run.ID)
		h.done(run.ID)

		th := h.thread(root.TS)
		first, second, final := h.questions(root.TS, e1), h.questions(root.TS, e2), h.finals(run.ID, root.TS)
		if len(first) != 1 || len(second) != 1 || len(final) != 1 {
			t.Fatalf("questions %d and %d, finals %d: want each once\n%s", len(first), len(second), len(final), h.dump())
		}
		if !(indexOf(th, first[0].TS) < indexOf(th, second[0].TS) && indexOf(th, second[0].TS) < indexOf(th, final[0].TS)) {
			t.Errorf("thread out of order: want %s, %s, final\n%s", e1, e2, h.dump())
		}
		if m := h.message(q1.TS); len(slackfake.Buttons(m)) != 0 || !strings.Contains(m.Text, "chose A) Redis") {
			t.Errorf("the first question was not marked answered: %q", m.Text)
		}
		if r := h.message(root.TS); !strings.HasSuffix(r.Text, ": completed") {
			t.Errorf("root = %q", r.Text)
		}
	})
}

// Slack down for a while, then up: everything that happened meanwhile arrives, in order, once.
func TestPosterSlackDown(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		run, root := h.startRun(h.user("ALICE"))
		h.waitFor("the poster to settle", func() bool { return h.idle(run.ID) })

		h.fake.Down()
		tries := h.fake.Calls("chat.postMessage")
		e1 := h.ask(run.ID, "Which cache?", "A) Redis", "B) In-memory")
		h.waitFor("the poster to try while Slack is down", func() bool { return h.fake.Calls("chat.postMessage") >= tries+3 })
		h.answerFromTerminal(run.ID, e1, "B")
		e2 := h.ask(run.ID, "Which TTL?", "A) One hour", "B) One day")
		h.startTask(run.ID, 2)
		h.complete(run.ID)
		tries = h.fake.Calls("chat.postMessage")
		h.waitFor("more tries", func() bool { return h.fake.Calls("chat.postMessage") >= tries+3 })
		if n := len(h.thread(root.TS)); n != 0 {
			t.Fatalf("%d messages posted while Slack was down", n)
		}
		h.fake.Up()
		h.done(run.ID)

		th := h.thread(root.TS)
		first, second, final := h.questions(root.TS, e1), h.questions(root.TS, e2), h.finals(run.ID, root.TS)
		if len(first) != 1 || len(second) != 1 || len(final) != 1 {
			t.Fatalf("questions %d and %d, finals %d: want each once\n%s", len(first), len(second), len(final), h.dump())
		}
		if !(indexOf(th, first[0].TS) < indexOf(th, second[0].TS) && indexOf(th, second[0].TS) < indexOf(th, final[0].TS)) {
			t.Errorf("thread out of order: want %s, %s, final\n%s", e1, e2, h.dump())
		}
		if m := h.message(first[0].TS); len(slackfake.Buttons(m)) != 0 || !strings.Contains(m.Text, "chose B) In-memory") {
			t.Errorf("the first question was not marked answered: %q", m.Text)
		}
		if r := h.message(root.TS); !strings.HasSuffix(r.Text, ": completed") {
			t.Errorf("root = %q", r.Text)
		}
	})
}

// A restarted bot (a new Server on the same Redis) carries on where the last one stopped: it posts nothing twice and
// loses nothing that happened while no bot ran.
func TestPosterRestart(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		run, root := h.startRun(h.user("ALICE"))
		h.waitFor("the poster to settle", func() bool { return h.idle(run.ID) })
		h.restart()
		escID, q := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
		h.waitFor("the poster to settle", func() bool { return h.idle(run.ID) })
		h.restart()
		h.answerFromTerminal(run.ID, escID, "A")
		h.waitFor("the question to show the answer", func() bool { return len(slackfake.Buttons(h.message(q.TS))) == 0 })

		// Down while the run ends; the next bot tells the thread.
		if err := h.shutdown(); err != nil {
			t.Fatal(err)
		}
		h.complete(run.ID)
		h.start()
		h.done(run.ID)

		if n := len(h.roots(run.ID)); n != 1 {
			t.Errorf("%d root messages, want 1\n%s", n, h.dump())
		}
		if n := len(h.questions(root.TS, escID)); n != 1 {
			t.Errorf("%d question messages, want 1\n%s", n, h.dump())
		}
		if n := len(h.finals(run.ID, root.TS)); n != 1 {
			t.Errorf("%d final messages, want 1\n%s", n, h.dump())
		}
		if n := h.fake.Calls("chat.postMessage"); n != 3 {
			t.Errorf("chat.postMessage called %d times, want 3 (root, question, final)", n)
		}

	})
}

// Posting keeps to PostInterval per channel.
func TestPosterPaces(t *testing.T) {
	const every = 150 * time.Millisecond
	h := newHarness(t, clients(t)["miniredis"], func(h *harness, c *Config) { c.PostInterval = every })
	run, root := h.startRun(h.user("ALICE"))
	h.ask(run.ID, "Which cache?", "A) Redis", "B) In-memory")
	h.startTask(run.ID, 1)
	h.complete(run.ID)
	h.done(run.ID)
	msgs := h.messages()
	if len(msgs) < 3 || msgs[0].TS != root.TS {
		t.Fatalf("messages:\n%s", h.dump())
	}
	for i := 1; i < len(msgs); i++ {
		// Each post but the first waits its turn, and an update between two posts takes a turn too. The fake stamps
		// a post when it arrives, so delivery jitter on a busy machine shortens a gap; without pacing the gaps would
		// be a millisecond or two, so half the interval still tells the two apart.
		if gap := msgs[i].Posted.Sub(msgs[i-1].Posted); gap < every/2 {
			t.Errorf("posts %d and %d %v apart, want at least %v", i-1, i, gap, every)
		}
	}
}

// faultySlack is a fault-injecting proxy in front of the fake's Web API: it fails the next n calls of a method with
// 503, as Slack does when it is having a bad minute.
type faultySlack struct {
	srv    *httptest.Server
	target string
	mu     sync.Mutex
	fail   map[string]int
}

func newFaultySlack(t *testing.T, fake *slackfake.Slack) *faultySlack {
	f := &faultySlack{target: fake.APIURL(), fail: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *faultySlack) APIURL() string { return f.srv.URL + "/api/" }

func (f *faultySlack) failNext(method string, n int) {
	f.mu.Lock()
	f.fail[method] = n
	f.mu.Unlock()
}

func (f *faultySlack) serve(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	f.mu.Lock()
	fail := f.fail[method] > 0
	if fail {
		f.fail[method]--
	}
	f.mu.Unlock()
	if fail {
		http.Error(w, "slack is having a bad minute", http.StatusServiceUnavailable)
		return
	}
	forward(w, r, f.target+method)
}

// forward sends a Web API call on to another server and copies its answer back.
func forward(w http.ResponseWriter, r *http.Request, to string) {
	body, _ := io.ReadAll(r.Body)
	req, err := http.NewRequestWithContext(r.Context(), r.Method, to, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// Slack failing the root's update right after the final message was posted: the final message is still posted once.
func TestPosterFinalPostedOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		var proxy *faultySlack
		h := newHarness(t, rdb, func(h *harness, c *Config) {
			proxy = newFaultySlack(t, h.fake)
			c.APIURL = proxy.APIURL()
		})
		run, root := h.startRun(h.user("ALICE"))
		h.waitFor("the poster to settle", func() bool { return h.idle(run.ID) })
		proxy.failNext("chat.update", 1) // the root's update to "completed", which follows the final post
		h.complete(run.ID)
		h.done(run.ID)
		if final := h.finals(run.ID, root.TS); len(final) != 1 {
			t.Errorf("%d final messages after one failed chat.update, want 1\n%s", len(final), h.dump())
		}
		if r := h.message(root.TS); !strings.HasSuffix(r.Text, ": completed") {
			t.Errorf("root = %q", r.Text)
		}
	})
}

// injectBeforeEvents makes a change to a run at the moment the poster reads the run's new events: after it has read
// the run itself. A worker's update can land there at any time.
type injectBeforeEvents struct {
	mu    sync.Mutex
	armed map[string]func() // run id → the change
}

func (*injectBeforeEvents) DialHook(next redis.DialHook) redis.DialHook { return next }

// The poster's read of what came after its cursor, XRANGE orch:run:{id}:events (cursor + …, is pipelined with a read of
// the run's first bytes (which tell a compact run's log apart); either way the change lands just before it.
func (i *injectBeforeEvents) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			i.fire(cmd)
		}
		return next(ctx, cmds)
	}
}

func (i *injectBeforeEvents) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		i.fire(cmd)
		return next(ctx, cmd)
	}
}

func (i *injectBeforeEvents) fire(cmd redis.Cmder) {
	args := cmd.Args()
	if cmd.Name() != "xrange" || len(args) <= 2 {
		return
	}
	key, _ := args[1].(string)
	start, _ := args[2].(string)
	if id, ok := strings.CutSuffix(strings.TrimPrefix(key, "orch:run:{"), "}:events"); ok && strings.HasPrefix(start, "(") {
		i.mu.Lock()
		fn := i.armed[id]
		delete(i.armed, id)
		i.mu.Unlock()
		if fn != nil {
			fn()
		}
	}
}

func (i *injectBeforeEvents) arm(runID string, fn func()) {
	i.mu.Lock()
	i.armed[runID] = fn
	i.mu.Unlock()
}

// A change that lands between the poster's read of a run and its read of the run's events is still posted: the
// question, the answer, the end. (The poster renders the events with the run as it read it: if the run is older than
// the events, an escalation it does not know yet is skipped and never posted.)
func TestPosterReadsEventsWithTheirRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		inject := &injectBeforeEvents{armed: map[string]func(){}}
		// Its waits are on the poster's passes: the run's changes land during them, and on a loaded machine with a
		// real Redis the passes can take longer than any fixed time would allow.
		h := newHarness(t, rdb, withoutSerializing, byPosterPasses, func(h *harness, c *Config) { h.rdb.AddHook(inject) })
		// The changes go through a client without the hook.
		worker := store.New(rdb, nil)
		update := func(runID string, fn func(r *jobs.Run, c *jobs.Change)) func() {
			return func() {
				worker.Update(context.Background(), runID, func(r *jobs.Run, c *jobs.Change) error { fn(r, c); return nil })
			}
		}
		ask := func(r *jobs.Run, c *jobs.Change) {
			escalation.Open(r, r.Tasks[0], c, escalation.Spec{Trigger: jobs.TriggerNeedsHelp, Source: "agent",
				Question: "Which cache?", Options: []string{"A) Redis", "B) In-memory"}}, worker.Now())
		}
		// newRun starts a run whose thread has a cursor (one event handled), so the next read is "after the cursor".
		newRun := func() (*jobs.Run, slackfake.Message) {
			run, root := h.startRun(h.user("ALICE"))
			h.change(run.ID, func(r *jobs.Run, c *jobs.Change) {
				r.Status, r.Tasks[0].Status, r.Tasks[0].Started = jobs.RunRunning, jobs.TaskRunning, 1
				c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.TaskStartedEvent{Attempt: 1}))
			})
			h.waitFor("the poster to settle", func() bool { return h.idle(run.ID) })
			return run, root
		}

		t.Run("question", func(t *testing.T) {
			run, root := newRun()
			inject.arm(run.ID, update(run.ID, ask))
			// The change first, then idleness: checked the other way round, the change can land between the two checks.
			h.waitFor("the poster to handle the question", func() bool { return len(h.run(run.ID).Escalations) == 1 && h.idle(run.ID) })
			if n := len(h.questions(root.TS, "e1")); n != 1 {
				t.Errorf("the question was posted %d times, want once\n%s", n, h.dump())
			}
		})

		t.Run("answer", func(t *testing.T) {
			run, root := newRun()
			// The question is asked while the poster cannot be between its two reads, so this is only about the answer.
			h.locked(run.ID, func() { update(run.ID, ask)() })
			h.waitFor("the question", func() bool { return len(h.questions(root.TS, "e1")) == 1 })
			q := h.questions(root.TS, "e1")
			inject.arm(run.ID, func() {
				escalation.Resolve(context.Background(), worker, h.queue, escalation.Request{RunID: run.ID, EscalationID: "e1",
					Type: jobs.ResolveChoose, Key: "A", By: "ops-alice", Via: "cli"})
			})
			h.waitFor("the poster to handle the answer", func() bool {
				return h.esc(run.ID, "e1").Resolution != nil && h.idle(run.ID)
			})
			if m := h.message(q[0].TS); len(slackfake.Buttons(m)) != 0 {
				t.Errorf("the question still has its buttons after the answer: %q", m.Text)
			}
		})

		t.Run("end", func(t *testing.T) {
			run, root := newRun()
			inject.arm(run.ID, update(run.ID, func(r *jobs.Run, c *jobs.Change) {
				r.Status, r.Tasks[0].Status, r.Cursor, r.EndedAt = jobs.RunCompleted, jobs.TaskCompleted, 1, worker.Now()
				c.Emit(jobs.NewEvent(r.ID, "", jobs.RunCompletedEvent{}))
			}))
			h.done(run.ID)
			final := h.finals(run.ID, root.TS)
			var texts []string
			for _, m := range h.thread(root.TS) {
				texts = append(texts, m.Text)
			}
			if len(final) != 1 {
				t.Errorf("no final message saying completed; the thread: %q", texts)
			}
			if r := h.message(root.TS); !strings.HasSuffix(r.Text, ": completed") {
				t.Errorf("root = %q after the run completed", r.Text)
			}
		})
	})
}

// With ORCH_PUBLIC_URL a question links its run's page in the web view, in its thread and on the Home. A click on the
// link (Slack opens it, and sends the click all the same) is acknowledged and does nothing else: no answer, no
// message, no warning of a click orch did not make.
func TestQuestionLinksTheRunPage(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb, func(h *harness, c *Config) { c.PublicURL = "https://orch.example.com/" })
		alice := h.homeUser("ALICE")
		run, _ := h.startRun(alice)
		escID, q := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
		want := "https://orch.example.com/runs/" + run.ID
		link := func(bs []slackfake.Button) slackfake.Button {
			for _, b := range bs {
				if b.ActionID == ActionPage {
					return b
				}
			}
			return slackfake.Button{}
		}
		if b := link(slackfake.ButtonList(q)); b.URL != want || b.Value != "" {
			t.Fatalf("the question's page button = %+v, want a link to %s; buttons %v", b, want, slackfake.ButtonList(q))
		}
		if b := link(h.openHome(alice).Buttons()); b.URL != want {
			t.Errorf("the Home's page button = %+v, want a link to %s", b, want)
		}

		messages, ephemerals := len(h.messages()), len(h.fake.Ephemerals())
		h.click(q, alice, ActionPage, "")
		if strings.Contains(h.logs.String(), "ignoring a click") {
			t.Errorf("the link's click was taken for a forgery:\n%s", h.logs.String())
		}
		// Nothing was queued for the click: what it could change is as it was when the ack came.
		if e := h.esc(run.ID, escID); e.Resolution != nil {
			t.Errorf("the link answered the question: %+v", e.Resolution)
		}
		if len(h.messages()) != messages || len(h.fake.Ephemerals()) != ephemerals {
			t.Errorf("the link's click was answered\n%s", h.dump())
		}
	})
}

// A pause has its message in the thread, and the root message says the run is paused and how to resume it, as it
// says every other state of the run.
func TestPosterPauseShowsOnTheRoot(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		run, root := h.startRun(h.user("ALICE"))
		h.startTask(run.ID, 1)
		h.waitFor("the poster to settle", func() bool { return h.idle(run.ID) })
		h.change(run.ID, func(r *jobs.Run, c *jobs.Change) {
			r.Status, r.Reason = jobs.RunPaused, "the brain is unavailable"
			c.Emit(jobs.NewEvent(r.ID, "", jobs.RunPausedEvent{Reason: r.Reason}))
		})
		h.waitMessage("the pause in the thread", func(m slackfake.Message) bool {
			return m.ThreadTS == root.TS && strings.Contains(m.Text, "paused")
		})
		h.waitFor("the root to say the run is paused", func() bool {
			return strings.Contains(blocksText(h.message(root.TS)), "*Paused*")
		})
	})
}
