package bot

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/bot/mirror"
	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/runs"
)

const (
	testSecret = "test-signing-secret-0123456789ab"
	formType   = "application/x-www-form-urlencoded"
	jsonType   = "application/json"
)

// clients returns a Redis client per backend under test: always miniredis, and the real server CI starts.
func clients(t *testing.T) map[string]redis.UniversalClient {
	t.Helper()
	m := miniredis.RunT(t)
	out := map[string]redis.UniversalClient{"miniredis": redis.NewClient(&redis.Options{Addr: m.Addr()})}
	// The process's own database (jobstest.URL): the worker's tests, run at the same time, start asynq servers that
	// would otherwise take the start and resume tasks these tests enqueue.
	if u := jobstest.URL(t); u != "" {
		opt, err := redis.ParseURL(u)
		if err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(opt)
		if err := rdb.Ping(context.Background()).Err(); err != nil {
			t.Fatalf("ORCH_TEST_REDIS_URL (database %d): %v", opt.DB, err)
		}
		out["redis"] = rdb
	}
	for _, c := range out {
		t.Cleanup(func() { c.Close() })
	}
	return out
}

// eachBackend runs fn once per Redis backend. The subtests do not run in parallel: on a real Redis the poster's keys
// are shared, and two bots would post each other's runs.
func eachBackend(t *testing.T, fn func(t *testing.T, rdb redis.UniversalClient)) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) { fn(t, rdb) })
	}
}

// harness is the bot on loopback: a Server against a fake Slack, a real store and queue on rdb, and a Starter that
// creates real runs the way cmd does.
type harness struct {
	t      *testing.T
	rdb    redis.UniversalClient
	store  *store.Store
	mirror *store.Mirror // the poster's state in the store
	// observer reads the poster's state as mirror does, on a client of its own: what it asks is not the bot's.
	observer *store.Mirror
	// passes, when set, counts the poster's passes, and waits wait on them rather than on the clock (byPosterPasses).
	passes  *posterPasses
	queue   *hookQueue
	fake    *slackfake.Slack
	starter *testStarter
	cfg     Config
	srv     *Server
	web     *httptest.Server
	client  *http.Client
	logs    *syncBuffer
	ws      string
	sfx     string // makes ids unique to this test: channels, users and events on a shared Redis
	channel string
	seq     atomic.Int64

	// serialize commits run changes under the poster's lock (commitUnderPosterLock); a test of that race turns it off.
	serialize bool

	mu      sync.Mutex
	runs    []string // every run this test created, removed from Redis at the end
	stopped bool
}

// withoutSerializing lets run changes land at any moment of the poster's pass.
func withoutSerializing(h *harness, _ *Config) { h.serialize = false }

// commitUnderPosterLock commits every change of a run (the store's MULTI … SET orch:run:{id} … EXEC) while holding
// the poster's lock of that run, so that no change lands between the poster's read of the run and its read of the
// run's events. The poster does not stand that (TestPosterReadsEventsWithTheirRun shows it losing messages); this
// keeps that one race out of the tests of everything else.
type commitUnderPosterLock struct{ locks *store.Mirror }

func (commitUnderPosterLock) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (commitUnderPosterLock) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (c commitUnderPosterLock) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		id := ""
		for _, cmd := range cmds {
			if args := cmd.Args(); cmd.Name() == "set" && len(args) > 1 {
				if key, _ := args[1].(string); strings.HasPrefix(key, "orch:run:{") && strings.HasSuffix(key, "}") {
					id = strings.TrimSuffix(strings.TrimPrefix(key, "orch:run:{"), "}")
				}
			}
		}
		if id == "" {
			return next(ctx, cmds)
		}
		for {
			release, ok, err := c.locks.TryLock(ctx, id, mirror.LockTTL)
			if err != nil {
				return err
			}
			if ok {
				defer release()
				break
			}
			time.Sleep(time.Millisecond)
		}
		return next(ctx, cmds)
	}
}

type harnessOption func(h *harness, c *Config)

// byPosterPasses makes the harness's waits wait on the poster's progress instead of the clock: a wait gives up once
// the poster has made maxWaitPasses passes over its runs without the condition coming true, however long a machine
// under load takes over them. For the tests of what the poster does, where the poster's own passes are what the
// condition waits for.
func byPosterPasses(h *harness, _ *Config) {
	h.passes = &posterPasses{key: "orch:" + mirror.Name + ":active"}
	h.rdb.AddHook(h.passes)
}

// maxWaitPasses is how many passes of the poster a wait lets go by: the poster brings a run up to date in one or two.
const maxWaitPasses = 2000

// posterPasses counts the poster's passes on the bot's client: each starts with its read of the runs it follows
// (SMEMBERS of the set of followed runs), which nothing else of the bot makes.
type posterPasses struct {
	key string
	n   atomic.Int64
}

func (*posterPasses) DialHook(next redis.DialHook) redis.DialHook { return next }
func (*posterPasses) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (p *posterPasses) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); cmd.Name() == "smembers" && len(args) > 1 && args[1] == p.key {
			p.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func newHarness(t *testing.T, rdb redis.UniversalClient, opts ...harnessOption) *harness {
	t.Helper()
	sfx := strings.ToUpper(jobs.NewRunID()[2:])
	h := &harness{t: t, rdb: rdb, sfx: sfx, channel: "C" + sfx, ws: t.TempDir(), logs: &syncBuffer{},
		client: &http.Client{Timeout: 30 * time.Second}}
	if err := os.WriteFile(filepath.Join(h.ws, "plan.md"), []byte("# Add a cache\n\n## Task 1.1: Add the cache\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The harness's own client, so that a test can hook it.
	o := rdb.(*redis.Client).Options()
	h.rdb = redis.NewClient(&redis.Options{Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig})
	t.Cleanup(func() { h.rdb.Close() })
	h.store = store.New(h.rdb, nil)
	h.mirror = h.store.Mirror(mirror.Name)
	h.queue = &hookQueue{q: queue.New(h.rdb)}
	h.starter = newTestStarter(h)
	// Runs followed by a bot test that crashed; on a shared Redis their threads would go to this test's fake.
	unhooked := store.New(rdb, nil).Mirror(mirror.Name)
	h.observer = unhooked
	if ids, err := unhooked.Followed(context.Background()); err == nil {
		for _, id := range ids {
			unhooked.Unfollow(context.Background(), id)
		}
	}
	t.Cleanup(h.cleanup)
	h.fake = slackfake.New()
	t.Cleanup(h.fake.Close)
	h.cfg = Config{SigningSecret: testSecret, BotToken: "xoxb-test", APIURL: h.fake.APIURL(), Workspace: h.ws,
		Store: h.store, Queue: h.queue, Starter: h.starter, PollInterval: 5 * time.Millisecond,
		PostInterval: time.Millisecond, Log: slog.New(slog.NewTextHandler(h.logs, nil))}
	h.serialize = true
	for _, o := range opts {
		o(h, &h.cfg)
	}
	if h.serialize {
		h.rdb.AddHook(commitUnderPosterLock{locks: unhooked})
	}
	h.start()
	t.Cleanup(func() {
		if err := h.shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return h
}

// start starts a new Server on the harness's configuration (a restart when one ran before).
func (h *harness) start() {
	h.t.Helper()
	srv, err := New(h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.mu.Lock()
	h.srv, h.web, h.stopped = srv, httptest.NewServer(srv.Handler()), false
	h.mu.Unlock()
}

// shutdown stops the HTTP server and drains the bot; it returns once every acked request's work is done.
func (h *harness) shutdown() error {
	return h.shutdownWithin(30 * time.Second)
}

func (h *harness) shutdownWithin(d time.Duration) error {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return nil
	}
	h.stopped = true
	srv, web := h.srv, h.web
	h.mu.Unlock()
	web.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return srv.Shutdown(ctx)
}

func (h *harness) restart() {
	h.t.Helper()
	if err := h.shutdown(); err != nil {
		h.t.Fatal(err)
	}
	h.start()
}

func (h *harness) track(id string) {
	h.mu.Lock()
	h.runs = append(h.runs, id)
	h.mu.Unlock()
}

// cleanup removes what the test left in Redis: a real server outlives the test.
func (h *harness) cleanup() {
	ctx := context.Background()
	insp := asynq.NewInspectorFromRedisClient(h.rdb)
	h.mu.Lock()
	ids := slices.Clone(h.runs)
	h.mu.Unlock()
	for _, id := range ids {
		if r, err := h.store.Get(ctx, id); err == nil {
			for _, e := range r.Escalations {
				insp.DeleteTask(queue.Control, "resume:"+id+":"+e.ID)
			}
		}
		insp.DeleteTask(queue.Control, "start:"+id)
		// The store's keys (jobs/store/store.go) and the poster's (jobs/store/mirror.go): the store deletes nothing.
		h.rdb.Del(ctx, "orch:run:{"+id+"}", "orch:run:{"+id+"}:events", "orch:run:{"+id+"}:audit",
			"orch:slack:run:{"+id+"}", "orch:slack:lock:{"+id+"}")
		h.rdb.ZRem(ctx, "orch:runs", id)
		h.mirror.Unfollow(ctx, id)
	}
	if keys, err := h.rdb.HKeys(ctx, "orch:slack:thread").Result(); err == nil {
		for _, k := range keys {
			if strings.HasPrefix(k, h.channel+":") {
				h.rdb.HDel(ctx, "orch:slack:thread", k)
			}
		}
	}
}

// user is a Slack user id unique to this test.
func (h *harness) user(name string) string { return "U" + name + h.sfx[:6] }

// ts is a message timestamp unique to this test.
func (h *harness) ts() string { return fmt.Sprintf("1700000500.%06d", h.seq.Add(1)) }

// eventID is an Events API event id unique to this test.
func (h *harness) eventID() string { return fmt.Sprintf("Ev%s%04d", h.sfx, h.seq.Add(1)) }

// post sends a request signed now with the test secret.
func (h *harness) post(path string, body []byte, contentType string) (int, string) {
	h.t.Helper()
	return h.do(slackfake.Request(h.web.URL, path, testSecret, body, contentType))
}

func (h *harness) do(req *http.Request) (int, string) {
	h.t.Helper()
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// command types `/orch text` as user and returns the ephemeral answer Slack would show.
func (h *harness) command(text, user string) string {
	h.t.Helper()
	code, body := h.post("/slack/commands", h.fake.SlashCommand(text, user, h.channel), formType)
	if code != http.StatusOK {
		h.t.Fatalf("/orch %s: status %d: %s", text, code, body)
	}
	return ephemeralText(h.t, body)
}

func ephemeralText(t *testing.T, body string) string {
	t.Helper()
	var r struct {
		ResponseType string `json:"response_type"`
		Text         string `json:"text"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("not a JSON answer: %q: %v", body, err)
	}
	if r.ResponseType != "ephemeral" {
		t.Fatalf("answer is %q, want ephemeral: %s", r.ResponseType, body)
	}
	return r.Text
}

// click presses a button of message m as user.
func (h *harness) click(m slackfake.Message, user, actionID, value string) {
	h.t.Helper()
	code, body := h.post("/slack/interactions", h.fake.Click(m, user, actionID, value), formType)
	if code != http.StatusOK || body != "" {
		h.t.Fatalf("click: status %d: %q", code, body)
	}
}

// choose presses the button of option key on escalation message m.
func (h *harness) choose(m slackfake.Message, user, key string) {
	h.t.Helper()
	id := ActionChoose + ":" + key
	v, ok := slackfake.Buttons(m)[id]
	if !ok {
		h.t.Fatalf("no button %s on %q (buttons %v)", id, m.Text, slackfake.Buttons(m))
	}
	h.click(m, user, id, v)
}

// event delivers an Events API body and expects it acked.
func (h *harness) event(body []byte) {
	h.t.Helper()
	code, resp := h.post("/slack/events", body, jsonType)
	if code != http.StatusOK {
		h.t.Fatalf("event: status %d: %s", code, resp)
	}
}

// messageEvent is a human's message in a thread (the reference payload with this test's ids).
func (h *harness) messageEvent(eventID, user, text, ts, threadTS string) []byte {
	m := template(h.t, "event_callback_message_thread_reply_orch_CONSTRUCTED.json")
	m["event_id"] = eventID
	ev := m["event"].(map[string]any)
	delete(ev, "blocks")
	ev["user"], ev["text"], ev["ts"], ev["event_ts"], ev["thread_ts"], ev["channel"] = user, text, ts, ts, threadTS, h.channel
	return marshal(h.t, m)
}

// mentionEvent is the app_mention Slack sends beside messageEvent when the message mentions the bot.
func (h *harness) mentionEvent(eventID, user, text, ts, threadTS string) []byte {
	m := template(h.t, "event_callback_app_mention_docs.json")
	m["event_id"] = eventID
	ev := m["event"].(map[string]any)
	ev["user"], ev["text"], ev["ts"], ev["event_ts"], ev["thread_ts"], ev["channel"] = user, text, ts, ts, threadTS, h.channel
	return marshal(h.t, m)
}

func template(t *testing.T, name string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(testdata(t, name), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func testdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "requests", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// waitFor polls until cond holds: for 30 seconds, or, with byPosterPasses, for maxWaitPasses passes of the poster.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	if h.passes != nil {
		start := h.passes.n.Load()
		for !cond() {
			if n := h.passes.n.Load() - start; n > maxWaitPasses {
				h.t.Fatalf("waiting for %s: not so after %d passes of the poster\n%s", what, n, h.dump())
			}
			time.Sleep(5 * time.Millisecond)
		}
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s\n%s", what, h.dump())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) dump() string {
	var b strings.Builder
	b.WriteString("messages in " + h.channel + ":\n")
	for _, m := range h.messages() {
		fmt.Fprintf(&b, "  %s thread=%s updates=%d: %s\n", m.TS, m.ThreadTS, m.Updates, m.Text)
	}
	fmt.Fprintf(&b, "ephemerals and responses: %q\nbot log:\n%s", h.fake.Ephemerals(), h.logs.String())
	return b.String()
}

// messages are the fake's messages in this test's channel, in posting order.
func (h *harness) messages() []slackfake.Message {
	var out []slackfake.Message
	for _, m := range h.fake.Messages() {
		if m.Channel == h.channel {
			out = append(out, m)
		}
	}
	return out
}

// waitMessage waits for a message in this test's channel that satisfies cond.
func (h *harness) waitMessage(what string, cond func(slackfake.Message) bool) slackfake.Message {
	h.t.Helper()
	var found slackfake.Message
	h.waitFor(what, func() bool {
		for _, m := range h.messages() {
			if cond(m) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// message is the current state of the message posted at ts.
func (h *harness) message(ts string) slackfake.Message {
	h.t.Helper()
	for _, m := range h.messages() {
		if m.TS == ts {
			return m
		}
	}
	h.t.Fatalf("no message %s\n%s", ts, h.dump())
	return slackfake.Message{}
}

// thread is the replies under root, in posting order.
func (h *harness) thread(rootTS string) []slackfake.Message {
	var out []slackfake.Message
	for _, m := range h.messages() {
		if m.ThreadTS == rootTS {
			out = append(out, m)
		}
	}
	return out
}

// waitEphemeral waits for an ephemeral message or response_url answer containing s.
func (h *harness) waitEphemeral(s string) string {
	h.t.Helper()
	var found string
	h.waitFor(fmt.Sprintf("an answer containing %q", s), func() bool {
		for _, e := range h.fake.Ephemerals() {
			if strings.Contains(e, s) {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

func (h *harness) countEphemerals(s string) int {
	n := 0
	for _, e := range h.fake.Ephemerals() {
		if strings.Contains(e, s) {
			n++
		}
	}
	return n
}

// startRun starts a run from Slack as user and waits for its root message.
func (h *harness) startRun(user string) (*jobs.Run, slackfake.Message) {
	h.t.Helper()
	n := h.starter.created()
	if text := h.command("run plan.md", user); !strings.Contains(text, "Starting a run of `plan.md`") {
		h.t.Fatalf("/orch run: %q", text)
	}
	h.waitFor("the starter to create the run", func() bool { return h.starter.created() > n })
	run := h.starter.run(n)
	root := h.waitMessage("the root message of "+run.ID, func(m slackfake.Message) bool {
		return m.ThreadTS == "" && strings.Contains(m.Text, run.ID)
	})
	return run, root
}

// escalate parks a run on a question, as a worker would, and waits for the question in the thread.
func (h *harness) escalate(runID, question string, options ...string) (string, slackfake.Message) {
	h.t.Helper()
	var id string
	_, err := h.store.Update(context.Background(), runID, func(r *jobs.Run, c *jobs.Change) error {
		e := escalation.Open(r, r.Tasks[0], c, escalation.Spec{Trigger: jobs.TriggerNeedsHelp, Source: "agent",
			Question: question, Options: options, Recommendation: "A"}, h.store.Now())
		if e == nil {
			return errors.New("the task hit the escalation cap")
		}
		id = e.ID
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return id, h.waitQuestion(runID, id)
}

// waitQuestion waits for the message of escalation escID of a run.
func (h *harness) waitQuestion(runID, escID string) slackfake.Message {
	h.t.Helper()
	return h.waitMessage("the question "+escID+" of "+runID, func(m slackfake.Message) bool { return asks(m, runID, escID) })
}

// asks reports whether m carries buttons that answer escalation escID of a run.
func asks(m slackfake.Message, runID, escID string) bool {
	for _, v := range slackfake.Buttons(m) {
		if strings.HasPrefix(v, runID+"|"+escID+"|") {
			return true
		}
	}
	return false
}

func (h *harness) run(id string) *jobs.Run {
	h.t.Helper()
	r, err := h.store.Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func (h *harness) esc(runID, escID string) *jobs.Escalation {
	h.t.Helper()
	e := h.run(runID).Escalation(escID)
	if e == nil {
		h.t.Fatalf("run %s has no escalation %s", runID, escID)
	}
	return e
}

func (h *harness) waitResolved(runID, escID string) *jobs.Resolution {
	h.t.Helper()
	var res *jobs.Resolution
	h.waitFor(escID+" of "+runID+" to be answered", func() bool {
		res = h.esc(runID, escID).Resolution
		return res != nil
	})
	return res
}

// audit counts a run's audit entries with action.
func (h *harness) audit(runID, action string) []jobs.AuditEntry {
	h.t.Helper()
	all, err := h.store.Audit(context.Background(), runID)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []jobs.AuditEntry
	for _, a := range all {
		if a.Action == action {
			out = append(out, a)
		}
	}
	return out
}

// refusals are the audit entries outside runs about user.
func (h *harness) refusals(user string) []jobs.AuditEntry {
	h.t.Helper()
	all, err := h.store.AuditOutside(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	var out []jobs.AuditEntry
	for _, a := range all {
		if a.By == user {
			out = append(out, a)
		}
	}
	return out
}

// idle reports whether the poster has caught up with a run: every event handled and no pass in progress.
func (h *harness) idle(runID string) bool {
	ctx := context.Background()
	st, err := h.mirror.State(ctx, runID)
	if err != nil || st["root_ts"] == "" {
		return false
	}
	last, err := h.store.LastEventID(ctx, runID)
	if err != nil || cmp.Or(st["cursor"], "0") != last {
		return false
	}
	// The poster's lock is free: taken and given back at once.
	release, free, err := h.mirror.TryLock(ctx, runID, mirror.LockTTL)
	if err != nil || !free {
		return false
	}
	release()
	return true
}

// hookQueue is the real queue with a record of the resumes enqueued and a hook a test can use to play the worker.
type hookQueue struct {
	q        *queue.Queue
	mu       sync.Mutex
	resumes  []string
	onResume func(ctx context.Context, runID, escID string)
}

func (q *hookQueue) Resume(ctx context.Context, runID, escID string) error {
	q.mu.Lock()
	q.resumes = append(q.resumes, runID+"/"+escID)
	hook := q.onResume
	q.mu.Unlock()
	if hook != nil {
		hook(ctx, runID, escID)
	}
	return q.q.Resume(ctx, runID, escID)
}

func (q *hookQueue) count(runID, escID string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, r := range q.resumes {
		if r == runID+"/"+escID {
			n++
		}
	}
	return n
}

func (q *hookQueue) setHook(fn func(ctx context.Context, runID, escID string)) {
	q.mu.Lock()
	q.onResume = fn
	q.mu.Unlock()
}

// testStarter creates runs as cmd's starter does (one task, saved in the store, its start enqueued). A test can make it
// block until released.
type testStarter struct {
	h       *harness
	entered chan StartRequest

	mu      sync.Mutex
	gate    chan struct{}
	refuse  error // what Start says instead of starting a run, when set
	reqs    []StartRequest
	runs    []*jobs.Run
	ctxErrs []error
}

func newTestStarter(h *harness) *testStarter {
	return &testStarter{h: h, entered: make(chan StartRequest, 100)}
}

func (s *testStarter) Start(ctx context.Context, req StartRequest) (*jobs.Run, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	gate, refuse := s.gate, s.refuse
	s.mu.Unlock()
	if refuse != nil {
		return nil, refuse
	}
	s.entered <- req
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			s.mu.Lock()
			s.ctxErrs = append(s.ctxErrs, ctx.Err())
			s.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	run := &jobs.Run{ID: jobs.NewRunID(), PlanTitle: "Add a cache", Workspace: s.h.ws,
		Options: jobs.Options{Agent: cmp.Or(req.Agent, "sim"), SimScenario: req.SimScenario, Brain: "heuristic",
			Sandbox: "local", MaxAttempts: 3, AgentTimeout: time.Minute},
		Origin: req.Origin, Status: jobs.RunQueued,
		Tasks: []*jobs.Task{{ID: "1.1", Title: "Add the cache", Status: jobs.TaskPending}}}
	if req.Plan == "" {
		// A request in words, as cmd's starter makes it (runs.Prepare, tested there): one task, its text the title.
		run.PlanTitle, run.Request = runs.RequestTitle(req.Text), req.Text
		run.Tasks = []*jobs.Task{{ID: runs.RequestTaskID, Title: run.PlanTitle, Description: req.Text, Status: jobs.TaskPending}}
		if req.FollowUp != nil {
			run.FollowUpOf = req.FollowUp.ID
		}
	} else {
		rel, err := filepath.Rel(s.h.ws, req.Plan)
		if err != nil {
			return nil, err
		}
		run.PlanPath = rel
	}
	s.h.track(run.ID)
	if err := s.h.store.Create(ctx, run); err != nil {
		return nil, err
	}
	if err := s.h.queue.q.Start(ctx, run.ID); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.runs = append(s.runs, run)
	s.mu.Unlock()
	return run, nil
}

// block makes Start wait until the returned release is called (or the job's context ends).
func (s *testStarter) block() (release func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	s.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

// req is the i-th request the starter was given.
func (s *testStarter) req(i int) StartRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs[i]
}

func (s *testStarter) created() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runs)
}

func (s *testStarter) run(i int) *jobs.Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[i]
}

func (s *testStarter) requests() []StartRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// The official signing vector (testdata/requests/signing_example.txt): Slack's docs and Slack's own SDK test use it.
const (
	vectorSecret    = "8f742231b10e8888abcd99yyyzzz85a5"
	vectorTimestamp = "1531420618"
	vectorSignature = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
	// slack-go's vector, a JSON Events API body.
	jsonVectorSecret    = "e6b19c573432dcc6b075501d51b51bb8"
	jsonVectorTimestamp = "1531431954"
	jsonVectorSignature = "v0=adada4ed31709aef585c2580ca3267678c6a8eaeb7e0c1aca3ee57b656886b2c"
)

func signed(sig, ts string) http.Header {
	h := http.Header{}
	if sig != "" {
		h.Set("X-Slack-Signature", sig)
	}
	if ts != "" {
		h.Set("X-Slack-Request-Timestamp", ts)
	}
	return h
}

func TestVerify(t *testing.T) {
	body := testdata(t, "signing_example_body.txt")
	jsonBody := testdata(t, "signing_example_json_body.txt")
	at := time.Unix(1531420618, 0)
	jsonAt := time.Unix(1531431954, 0)
	tampered := bytes.Replace(body, []byte("text="), []byte("text=run+..%2F..%2Fetc%2Fpasswd"), 1)
	tests := []struct {
		name   string
		h      http.Header
		body   []byte
		secret string
		now    time.Time
		want   error
	}{
		{"official vector", signed(vectorSignature, vectorTimestamp), body, vectorSecret, at, nil},
		{"official vector 4m59s later", signed(vectorSignature, vectorTimestamp), body, vectorSecret, at.Add(4*time.Minute + 59*time.Second), nil},
		{"official vector 4m59s earlier", signed(vectorSignature, vectorTimestamp), body, vectorSecret, at.Add(-4*time.Minute - 59*time.Second), nil},
		{"slack-go JSON vector", signed(jsonVectorSignature, jsonVectorTimestamp), jsonBody, jsonVectorSecret, jsonAt, nil},
		{"wrong secret", signed(vectorSignature, vectorTimestamp), body, "8f742231b10e8888abcd99yyyzzz85a6", at, errBadSignature},
		{"slack-go wrong-secret control", signed(jsonVectorSignature, jsonVectorTimestamp), jsonBody, "e6b19c573432dcc6b075501d51b51boo", jsonAt, errBadSignature},
		{"stale: 5m1s later", signed(vectorSignature, vectorTimestamp), body, vectorSecret, at.Add(5*time.Minute + time.Second), errStale},
		{"replayed a day later", signed(vectorSignature, vectorTimestamp), body, vectorSecret, at.Add(24 * time.Hour), errStale},
		{"from the future: 5m1s early", signed(vectorSignature, vectorTimestamp), body, vectorSecret, at.Add(-5*time.Minute - time.Second), errStale},
		{"tampered body", signed(vectorSignature, vectorTimestamp), tampered, vectorSecret, at, errBadSignature},
		{"body with a trailing newline", signed(vectorSignature, vectorTimestamp), append(slices.Clone(body), '\n'), vectorSecret, at, errBadSignature},
		{"timestamp moved by a second", signed(vectorSignature, "1531420619"), body, vectorSecret, at, errBadSignature},
		{"other scheme", signed("v1="+strings.TrimPrefix(vectorSignature, "v0="), vectorTimestamp), body, vectorSecret, at, errBadSignature},
		{"signature without scheme", signed(strings.TrimPrefix(vectorSignature, "v0="), vectorTimestamp), body, vectorSecret, at, errBadSignature},
		{"missing signature", signed("", vectorTimestamp), body, vectorSecret, at, errNoSignature},
		{"missing timestamp", signed(vectorSignature, ""), body, vectorSecret, at, errNoSignature},
		{"missing both", http.Header{}, body, vectorSecret, at, errNoSignature},
		{"timestamp not a number", signed(vectorSignature, "1531420618.5"), body, vectorSecret, at, errNoSignature},
		{"no secret configured", signed(vectorSignature, vectorTimestamp), body, "", at, errNoSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verify(tt.h, tt.body, tt.secret, tt.now)
			if tt.want == nil && err != nil {
				t.Fatalf("verify = %v, want it to pass", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("verify = %v, want %v", err, tt.want)
			}
		})
	}
}

// The official vector through the endpoint, with the server's clock at the vector's time: it is a slash command with
// no text, so it gets the help; five minutes and a second later the same request is a replay and gets 401.
func TestSigningVectorThroughEndpoint(t *testing.T) {
	body := testdata(t, "signing_example_body.txt")
	for _, tt := range []struct {
		name string
		now  time.Time
		code int
	}{
		{"at its time", time.Unix(1531420618, 0), http.StatusOK},
		{"4m59s later", time.Unix(1531420618, 0).Add(4*time.Minute + 59*time.Second), http.StatusOK},
		{"5m1s later", time.Unix(1531420618, 0).Add(5*time.Minute + time.Second), http.StatusUnauthorized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A store of its own: the vector seen once is a replay to the same store.
			h := newHarness(t, clients(t)["miniredis"], func(h *harness, c *Config) {
				c.SigningSecret = vectorSecret
				c.Now = func() time.Time { return tt.now }
			})
			req, _ := http.NewRequest(http.MethodPost, h.web.URL+"/slack/commands", bytes.NewReader(body))
			req.Header = signed(vectorSignature, vectorTimestamp)
			req.Header.Set("Content-Type", formType)
			code, resp := h.do(req)
			if code != tt.code {
				t.Fatalf("status %d, want %d: %s", code, tt.code, resp)
			}
			if code == http.StatusOK && !strings.Contains(ephemeralText(t, resp), "/orch run PLAN") {
				t.Fatalf("want the help, got %s", resp)
			}
		})
	}
}

// forgeries of a body: each must get 401.
func forgeries(t *testing.T, base, path string, body []byte, contentType string) map[string]*http.Request {
	t.Helper()
	now := time.Now()
	mk := func(secret string, at time.Time, sent []byte, edit func(http.Header)) *http.Request {
		req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(sent))
		if err != nil {
			t.Fatal(err)
		}
		sig, ts := slackfake.Sign(secret, at, body)
		req.Header.Set("X-Slack-Signature", sig)
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("Content-Type", contentType)
		if edit != nil {
			edit(req.Header)
		}
		return req
	}
	// Mallory's request passed off as alice's; a body without a user gets a byte more.
	tampered := bytes.ReplaceAll(body, []byte("MALLORY"), []byte("ALICE"))
	if bytes.Equal(tampered, body) {
		tampered = append(slices.Clone(body), ' ')
	}
	return map[string]*http.Request{
		"wrong secret":         mk("not-the-secret", now, body, nil),
		"stale by 6 minutes":   mk(testSecret, now.Add(-6*time.Minute), body, nil),
		"6 minutes ahead":      mk(testSecret, now.Add(6*time.Minute), body, nil),
		"tampered body":        mk(testSecret, now, tampered, nil),
		"missing signature":    mk(testSecret, now, body, func(h http.Header) { h.Del("X-Slack-Signature") }),
		"missing timestamp":    mk(testSecret, now, body, func(h http.Header) { h.Del("X-Slack-Request-Timestamp") }),
		"timestamp not a date": mk(testSecret, now, body, func(h http.Header) { h.Set("X-Slack-Request-Timestamp", "yesterday") }),
	}
}

// Every endpoint refuses forged requests with 401 before doing anything: no run starts, no question is answered, and a
// forged event does not even use up its event_id (the genuine delivery after it is still handled).
func TestForgedRequestsChangeNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		// One worker: jobs run in the order they were acked, so the genuine requests sent last are handled after
		// anything a forged request might have queued.
		h := newHarness(t, rdb, func(h *harness, c *Config) { c.Workers = 1 })
		alice, mallory := h.user("ALICE"), h.user("MALLORY")
		run, root := h.startRun(alice)
		escID, q := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
		h.waitFor("the poster to settle", func() bool { return h.idle(run.ID) })
		before := h.run(run.ID)
		posts, updates := h.fake.Calls("chat.postMessage"), h.fake.Calls("chat.update")
		ev, ts := h.eventID(), h.ts()

		bodies := []struct {
			path, contentType string
			body              []byte
		}{
			{"/slack/commands", formType, h.fake.SlashCommand("run plan.md", mallory, h.channel)},
			{"/slack/interactions", formType, h.fake.Click(q, mallory, ActionChoose+":A", slackfake.Buttons(q)[ActionChoose+":A"])},
			{"/slack/events", jsonType, h.messageEvent(ev, mallory, "forged guidance", ts, root.TS)},
			{"/slack/events", jsonType, marshal(t, template(t, "url_verification_docs.json"))},
		}
		for _, b := range bodies {
			for name, req := range forgeries(t, h.web.URL, b.path, b.body, b.contentType) {
				code, resp := h.do(req)
				if code != http.StatusUnauthorized {
					t.Errorf("%s %s: status %d, want 401: %s", b.path, name, code, resp)
				}
				if strings.Contains(resp, "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P") {
					t.Errorf("%s %s: a forged url_verification got its challenge back", b.path, name)
				}
			}
		}

		// Genuine requests, after the forged ones: the same reply (same event_id and ts), then a click.
		if text := h.command("status "+run.ID, alice); text != "Looking it up…" {
			t.Fatalf("/orch status: %q", text)
		}
		h.event(h.messageEvent(ev, alice, "genuine guidance", ts, root.TS))
		h.choose(q, alice, "B")
		h.waitEphemeral("Already answered") // alice's click came last: once it is answered, everything before it is done

		res := h.esc(run.ID, escID).Resolution
		if res == nil || res.Type != jobs.ResolveAnswer || res.By != alice || res.Text != "genuine guidance" {
			t.Fatalf("resolution = %+v, want alice's genuine reply", res)
		}
		if n := len(h.audit(run.ID, "resolved")); n != 1 {
			t.Errorf("%d resolutions audited, want 1", n)
		}
		if reqs := h.starter.requests(); len(reqs) != 1 || reqs[0].Origin.User != alice {
			t.Errorf("starter requests = %+v, want only alice's", reqs)
		}
		after := h.run(run.ID)
		if after.Version != before.Version+1 {
			t.Errorf("run version %d → %d: want one change (alice's answer)", before.Version, after.Version)
		}
		h.waitFor("the answered question", func() bool { return len(slackfake.Buttons(h.message(q.TS))) == 0 })
		if n := h.fake.Calls("chat.postMessage"); n != posts {
			t.Errorf("chat.postMessage called %d times since the forgeries, want 0", n-posts)
		}
		if n := h.fake.Calls("chat.update") - updates; n == 0 {
			t.Errorf("the answer did not update the question")
		}
	})
}

// Bodies over MaxBody get 413 on every endpoint, and are not handled; a body at the limit is.
func TestBodyLimit(t *testing.T) {
	rdb := clients(t)["miniredis"]
	const limit = 4096
	h := newHarness(t, rdb, func(h *harness, c *Config) { c.MaxBody = limit })
	alice := h.user("ALICE")
	pad := func(body []byte, sep string, n int) []byte {
		out := append(slices.Clone(body), sep...)
		return append(out, strings.Repeat("x", n-len(out))...)
	}
	challenge := template(t, "url_verification_docs.json")
	event := func(n int) []byte {
		m := maps.Clone(challenge)
		m["pad"] = ""
		base := marshal(t, m)
		m["pad"] = strings.Repeat("x", n-len(base))
		return marshal(t, m)
	}
	click := h.fake.Click(slackfake.Message{Channel: h.channel, TS: "1700000000.000009"}, alice, ActionRetry, "r-nosuchrun1|e1|retry|")
	for _, tt := range []struct {
		path, contentType string
		body              func(n int) []byte
	}{
		{"/slack/commands", formType, func(n int) []byte { return pad(h.fake.SlashCommand("run plan.md", alice, h.channel), "&pad=", n) }},
		{"/slack/interactions", formType, func(n int) []byte { return pad(click, "&pad=", n) }},
		{"/slack/events", jsonType, event},
	} {
		if code, resp := h.post(tt.path, tt.body(limit+1), tt.contentType); code != http.StatusRequestEntityTooLarge {
			t.Errorf("%s with %d bytes: status %d, want 413: %s", tt.path, limit+1, code, resp)
		}
		if code, resp := h.post(tt.path, tt.body(64<<10), tt.contentType); code != http.StatusRequestEntityTooLarge {
			t.Errorf("%s with 64 KiB: status %d, want 413: %s", tt.path, code, resp)
		}
		if code, resp := h.post(tt.path, tt.body(limit), tt.contentType); code != http.StatusOK {
			t.Errorf("%s with %d bytes: status %d, want 200: %s", tt.path, limit, code, resp)
		}
	}
	if err := h.shutdown(); err != nil {
		t.Fatal(err)
	}
	// Two runs were asked for: the one at the limit starts, the ones over it do not.
	if n := len(h.starter.requests()); n != 1 {
		t.Errorf("the starter was called %d times, want 1 (only the body at the limit)", n)
	}
}

func TestURLVerification(t *testing.T) {
	h := newHarness(t, clients(t)["miniredis"])
	code, body := h.post("/slack/events", testdata(t, "url_verification_docs.json"), jsonType)
	if code != http.StatusOK || body != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Fatalf("url_verification: %d %q, want the challenge", code, body)
	}
}

func TestHealth(t *testing.T) {
	h := newHarness(t, clients(t)["miniredis"])
	resp, err := h.client.Get(h.web.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}
}

// The bot's own messages in a run's thread (bot_message echoes, messages with a bot_id, messages by the bot's user id
// from auth.test) are not answers; a human's reply after them is.
func TestBotMessagesIgnored(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb, func(h *harness, c *Config) { c.Workers = 1 })
		alice := h.user("ALICE")
		run, root := h.startRun(alice)
		escID, _ := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")

		echo := func(edit func(ev map[string]any)) []byte {
			m := template(t, "event_callback_message_bot_echo_CONSTRUCTED.json")
			m["event_id"] = h.eventID()
			ev := m["event"].(map[string]any)
			ts := h.ts()
			ev["ts"], ev["event_ts"], ev["thread_ts"], ev["channel"], ev["text"] = ts, ts, root.TS, h.channel, "from the bot"
			edit(ev)
			return marshal(t, m)
		}
		for name, body := range map[string][]byte{
			"bot_message echo": echo(func(map[string]any) {}),
			"bot_id, no subtype": echo(func(ev map[string]any) {
				delete(ev, "subtype")
			}),
			"the bot's user id": echo(func(ev map[string]any) {
				delete(ev, "subtype")
				delete(ev, "bot_id")
				delete(ev, "app_id")
				ev["user"] = slackfake.BotUserID
			}),
			"the bot mentioning itself": h.mentionEvent(h.eventID(), slackfake.BotUserID, "<@"+slackfake.BotUserID+"> from the bot", h.ts(), root.TS),
		} {
			code, resp := h.post("/slack/events", body, jsonType)
			if code != http.StatusOK {
				t.Fatalf("%s: status %d: %s", name, code, resp)
			}
		}
		h.event(h.messageEvent(h.eventID(), alice, "use Redis with a TTL", h.ts(), root.TS))
		res := h.waitResolved(run.ID, escID)
		if res.By != alice || res.Text != "use Redis with a TTL" || res.Via != "slack" || res.Type != jobs.ResolveAnswer {
			t.Fatalf("resolution = %+v, want alice's reply (the bot's own messages come first and must be ignored)", res)
		}
	})
}

// A thread reply that mentions the bot arrives twice, as message and as app_mention with the same channel and ts; a
// retried delivery has the same event_id. Each answers once. The queue plays a worker that asks the next question at
// once, so a second handling of the same message would answer that one.
func TestRepliesAnswerOnce(t *testing.T) {
	type delivery func(h *harness, alice, text, rootTS string) [][]byte
	for _, tt := range []struct {
		name  string
		twice delivery
	}{
		{"message then app_mention", func(h *harness, alice, text, rootTS string) [][]byte {
			ts := h.ts()
			return [][]byte{h.messageEvent(h.eventID(), alice, text, ts, rootTS), h.mentionEvent(h.eventID(), alice, text, ts, rootTS)}
		}},
		{"app_mention then message", func(h *harness, alice, text, rootTS string) [][]byte {
			ts := h.ts()
			return [][]byte{h.mentionEvent(h.eventID(), alice, text, ts, rootTS), h.messageEvent(h.eventID(), alice, text, ts, rootTS)}
		}},
		{"retried delivery", func(h *harness, alice, text, rootTS string) [][]byte {
			body := h.messageEvent(h.eventID(), alice, text, h.ts(), rootTS)
			return [][]byte{body, body}
		}},
		{"same event_id, other ts", func(h *harness, alice, text, rootTS string) [][]byte {
			id := h.eventID()
			return [][]byte{h.messageEvent(id, alice, text, h.ts(), rootTS), h.messageEvent(id, alice, text, h.ts(), rootTS)}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
				h := newHarness(t, rdb, func(h *harness, c *Config) { c.Workers = 1 })
				alice, carol := h.user("ALICE"), h.user("CAROL")
				run, root := h.startRun(alice)
				e1, _ := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
				var next atomic.Value // the id of the question the worker asks next
				next.Store("")
				h.queue.setHook(func(ctx context.Context, runID, escID string) {
					if escID != e1 {
						return
					}
					var id string
					_, err := h.store.Update(ctx, runID, func(r *jobs.Run, c *jobs.Change) error {
						id = escalation.Open(r, r.Tasks[0], c, escalation.Spec{Trigger: jobs.TriggerNeedsHelp,
							Source: "agent", Question: "And the TTL?"}, h.store.Now()).ID
						return nil
					})
					if err != nil {
						t.Errorf("asking the next question: %v", err)
					}
					next.Store(id)
				})
				for i, body := range tt.twice(h, alice, "<@"+slackfake.BotUserID+"> use Redis", root.TS) {
					req := slackfake.Request(h.web.URL, "/slack/events", testSecret, body, jsonType)
					if i > 0 {
						req.Header.Set("X-Slack-Retry-Num", "1")
						req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
					}
					if code, resp := h.do(req); code != http.StatusOK {
						t.Fatalf("delivery %d: status %d: %s", i+1, code, resp)
					}
				}
				// Carol's answer comes after both deliveries: when it has answered e2, both were handled.
				h.event(h.messageEvent(h.eventID(), carol, "one hour", h.ts(), root.TS))
				h.waitFor("the second question to be answered", func() bool {
					e2 := next.Load().(string)
					return e2 != "" && h.esc(run.ID, e2).Resolution != nil
				})
				e2 := next.Load().(string)
				if res := h.esc(run.ID, e1).Resolution; res.By != alice || !strings.Contains(res.Text, "use Redis") {
					t.Errorf("%s resolution = %+v, want alice's", e1, res)
				}
				if res := h.esc(run.ID, e2).Resolution; res.By != carol {
					t.Errorf("%s was answered by %s (%q): the same message answered twice", e2, res.By, res.Text)
				}
				if n := len(h.audit(run.ID, "resolved")); n != 2 {
					t.Errorf("%d resolutions audited, want 2 (alice's once, carol's)", n)
				}
			})
		})
	}
}

func TestCommandHelp(t *testing.T) {
	h := newHarness(t, clients(t)["miniredis"])
	for _, text := range []string{"", "help", "  help  "} {
		got := h.command(text, h.user("ALICE"))
		for _, want := range []string{"/orch run PLAN", "/orch status", "/orch abort RUN_ID", "/orch help"} {
			if !strings.Contains(got, want) {
				t.Errorf("/orch %q: %q lacks %q", text, got, want)
			}
		}
	}
}

// Plans and scenarios resolve inside the workspace; anything that leads out of it is refused, with a message that
// says why, and nothing starts.
func TestRunRefusesPlansOutsideWorkspace(t *testing.T) {
	rdb := clients(t)["miniredis"]
	h := newHarness(t, rdb)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.md")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(secret, []byte("# not yours\n"), 0o644))
	must(os.Symlink(secret, filepath.Join(h.ws, "evil.md")))
	must(os.Symlink(outside, filepath.Join(h.ws, "elsewhere")))
	must(os.Symlink("../"+filepath.Base(outside)+"/secret.md", filepath.Join(h.ws, "relative.md")))
	must(os.Mkdir(filepath.Join(h.ws, "plans"), 0o755))
	must(os.WriteFile(filepath.Join(h.ws, "plans", "real.md"), []byte("# real\n"), 0o644))
	must(os.Symlink(filepath.Join(h.ws, "plans", "real.md"), filepath.Join(h.ws, "inside.md")))

	alice := h.user("ALICE")
	for _, tt := range []struct{ args, want string }{
		{"../x", "`../x` is outside the workspace"},
		{"../../../../etc/passwd", "is outside the workspace"},
		{"/etc/passwd", "`/etc/passwd` is outside the workspace"},
		{secret, "is outside the workspace"},
		{"plans/../../x.md", "is outside the workspace"},
		{"evil.md", "`evil.md` leads outside the workspace"},
		{"relative.md", "`relative.md` leads outside the workspace"},
		{"elsewhere/secret.md", "`elsewhere/secret.md` leads outside the workspace"},
		{"plan.md --sim-scenario ../scenario.yaml", "`../scenario.yaml` is outside the workspace"},
		{"plan.md --sim-scenario=evil.md", "`evil.md` leads outside the workspace"},
		// Checked before the ack says the run starts, and said without the server's paths.
		{"plans/nope.md", "`plans/nope.md` is not in the workspace: no such file"},
		{"plans", "`plans` is a directory, not a plan"},
		{"plan.md --sim-scenario nope.yaml", "`nope.yaml` is not in the workspace: no such file"},
		// What a person typed is said back escaped (Slack sends < and > as &lt; and &gt;): no mention, no ping.
		{"&lt;!channel&gt;.md", "`&lt;!channel&gt;.md` is not in the workspace: no such file"},
	} {
		got := h.command("run "+tt.args, alice)
		if !strings.Contains(got, tt.want) {
			t.Errorf("/orch run %s: %q, want %q", tt.args, got, tt.want)
		}
		if (strings.Contains(got, h.ws) || strings.Contains(got, outside)) && !strings.Contains(tt.args, outside) {
			t.Errorf("/orch run %s shows a server path: %q", tt.args, got)
		}
	}
	// Inside the workspace, through a symlink or not, is fine.
	for _, ok := range []string{"plans/real.md", "inside.md", "./plans/../plan.md", filepath.Join(h.ws, "plan.md")} {
		if got := h.command("run "+ok, alice); !strings.Contains(got, "Starting a run") {
			t.Errorf("/orch run %s: %q, want it started", ok, got)
		}
	}
	if err := h.shutdown(); err != nil {
		t.Fatal(err)
	}
	reqs := h.starter.requests()
	if len(reqs) != 4 {
		t.Fatalf("the starter got %d requests, want the 4 inside the workspace: %+v", len(reqs), reqs)
	}
	for _, r := range reqs {
		if rel, err := filepath.Rel(h.ws, r.Plan); err != nil || strings.HasPrefix(rel, "..") || !filepath.IsAbs(r.Plan) {
			t.Errorf("the starter got plan %q, outside %s", r.Plan, h.ws)
		}
	}
}

func TestRunOptions(t *testing.T) {
	h := newHarness(t, clients(t)["miniredis"])
	alice := h.user("ALICE")
	os.WriteFile(filepath.Join(h.ws, "scenario.yaml"), []byte("steps: []\n"), 0o644)
	for _, tt := range []struct{ args, want string }{
		{"plan.md --env staging", "unknown option `--env`"},
		{"plan.md -v", "unknown option `-v`"},
		{"plan.md --agent", "`--agent` needs a value"},
		{"plan.md --sim-scenario", "`--sim-scenario` needs a value"},
		{"plan.md other.md", "one plan at a time"},
		{"", "which plan?"},
		{"--agent sim", "which plan?"},
	} {
		if got := h.command(strings.TrimSpace("run "+tt.args), alice); !strings.Contains(got, tt.want) {
			t.Errorf("/orch run %s: %q, want %q", tt.args, got, tt.want)
		}
	}
	if got := h.command("deploy plan.md", alice); !strings.Contains(got, "unknown command `deploy`") || !strings.Contains(got, "/orch run PLAN") {
		t.Errorf("/orch deploy: %q, want unknown command and the help", got)
	}
	// The options that exist reach the starter.
	if got := h.command("run plan.md --agent codex --sim-scenario=scenario.yaml", alice); !strings.Contains(got, "Starting a run") {
		t.Fatalf("/orch run with options: %q", got)
	}
	if err := h.shutdown(); err != nil {
		t.Fatal(err)
	}
	reqs := h.starter.requests()
	want := StartRequest{Plan: filepath.Join(h.ws, "plan.md"), Agent: "codex", SimScenario: filepath.Join(h.ws, "scenario.yaml"),
		Origin: jobs.Origin{Kind: "slack", User: alice, Channel: h.channel}}
	if len(reqs) != 1 || reqs[0] != want {
		t.Fatalf("starter requests = %+v, want [%+v]", reqs, want)
	}
}

func TestCommandStatus(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice := h.user("ALICE")
		run, _ := h.startRun(alice)
		h.escalate(run.ID, "Which cache?\nMore detail here.", "A) Redis", "B) In-memory")
		if got := h.command("status "+run.ID, alice); got != "Looking it up…" {
			t.Fatalf("ack: %q", got)
		}
		got := h.waitEphemeral("Run `" + run.ID + "`")
		for _, want := range []string{"Add a cache", "*parked*", "0 of 1 tasks done", "Waiting for an answer (needs_help): Which cache?"} {
			if !strings.Contains(got, want) {
				t.Errorf("status: %q lacks %q", got, want)
			}
		}
		if strings.Contains(got, "More detail") {
			t.Errorf("status shows more than the question's first line: %q", got)
		}
		h.command("status r-nosuchrun1", alice)
		h.waitEphemeral("No such run")
	})
}

func TestCommandAbort(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice := h.user("ALICE")

		t.Run("parked", func(t *testing.T) {
			run, root := h.startRun(alice)
			escID, q := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
			if got := h.command("abort "+run.ID+" wrong plan", alice); got != "Aborting `"+run.ID+"`…" {
				t.Fatalf("ack: %q", got)
			}
			h.waitEphemeral("Run `" + run.ID + "` is aborted.")
			r := h.run(run.ID)
			res := r.Escalation(escID).Resolution
			if r.Status != jobs.RunAborted || res == nil || res.Type != jobs.ResolveAbort || res.By != alice || res.Via != "slack" || res.Reason != "wrong plan" {
				t.Fatalf("run %s, resolution %+v: want aborted by alice from Slack", r.Status, res)
			}
			if n := len(h.audit(run.ID, "resolved")); n != 1 {
				t.Errorf("%d resolutions audited, want 1", n)
			}
			final := h.waitMessage("the final message", func(m slackfake.Message) bool {
				return m.ThreadTS == root.TS && strings.Contains(m.Text, run.ID+" aborted")
			})
			if !strings.Contains(final.Text, "wrong plan") {
				t.Errorf("final message %q does not say why", final.Text)
			}
			h.waitFor("the question to show the abort", func() bool { return len(slackfake.Buttons(h.message(q.TS))) == 0 })
			if m := h.message(q.TS); !strings.Contains(m.Text, "aborted: ") {
				t.Errorf("the question reads %q after the abort", m.Text)
			}
		})

		t.Run("running", func(t *testing.T) {
			run, root := h.startRun(alice)
			h.store.Update(context.Background(), run.ID, func(r *jobs.Run, c *jobs.Change) error {
				r.Status, r.Tasks[0].Status, r.Tasks[0].Started = jobs.RunRunning, jobs.TaskRunning, 1
				c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.TaskStartedEvent{Attempt: 1, MaxAttempts: 3}))
				return nil
			})
			h.command("abort "+run.ID, alice)
			h.waitEphemeral("Run `" + run.ID + "` is aborted.")
			r := h.run(run.ID)
			if r.Status != jobs.RunAborted || r.Reason != "aborted from Slack" {
				t.Fatalf("run %s (%q), want aborted from Slack", r.Status, r.Reason)
			}
			if a := h.audit(run.ID, "aborted"); len(a) != 1 || a[0].By != alice || a[0].Via != "slack" {
				t.Errorf("audit = %+v, want alice's abort from Slack", a)
			}
			h.waitMessage("the final message", func(m slackfake.Message) bool {
				return m.ThreadTS == root.TS && strings.Contains(m.Text, run.ID+" aborted")
			})
			// A second abort: the run already ended.
			h.command("abort "+run.ID, alice)
			h.waitEphemeral("Could not abort")
		})

		t.Run("bad", func(t *testing.T) {
			if got := h.command("abort", alice); !strings.Contains(got, "which run?") {
				t.Errorf("/orch abort: %q", got)
			}
			h.command("abort r-nosuchrun1", alice)
			h.waitEphemeral("Could not abort: no such run `r-nosuchrun1`")
		})
	})
}

// ORCH_ALLOWED_USERS: someone not in the list cannot start, abort or answer; each attempt is refused with a message and
// audited; someone in the list can.
func TestAllowedUsers(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		var alice, mallory string
		h := newHarness(t, rdb, func(h *harness, c *Config) {
			alice, mallory = h.user("ALICE"), h.user("MALLORY")
			c.AllowedUsers = []string{h.user("BOB"), alice}
		})

		if got := h.command("run plan.md", mallory); !strings.Contains(got, "not allowed to start runs") {
			t.Fatalf("mallory's /orch run: %q", got)
		}
		h.waitFor("mallory's refused run in the audit", func() bool { return len(h.refusals(mallory)) == 1 })
		if a := h.refusals(mallory)[0]; a.Action != "refused" || a.Via != "slack" || !strings.HasPrefix(a.Detail, "run: ") {
			t.Errorf("audit entry = %+v, want a refused run", a)
		}

		run, root := h.startRun(alice)
		escID, q := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")

		if got := h.command("abort "+run.ID, mallory); !strings.Contains(got, "not allowed to abort") {
			t.Errorf("mallory's /orch abort: %q", got)
		}
		h.choose(q, mallory, "A")
		h.waitEphemeral("You are not allowed to answer here")
		h.event(h.messageEvent(h.eventID(), mallory, "use Redis", h.ts(), root.TS))
		h.waitFor("the refused reply's ephemeral", func() bool { return h.countEphemerals("You are not allowed to answer here") == 2 })
		h.waitFor("every refusal in the audit", func() bool { return len(h.refusals(mallory)) == 4 })
		for _, a := range h.refusals(mallory) {
			if a.Action != "refused" || a.By != mallory || a.Via != "slack" {
				t.Errorf("audit entry = %+v, want a refusal of mallory from Slack", a)
			}
		}
		if e := h.esc(run.ID, escID); e.Resolution != nil {
			t.Fatalf("mallory answered: %+v", e.Resolution)
		}
		if h.run(run.ID).Status == jobs.RunAborted {
			t.Fatal("mallory aborted the run")
		}
		if n := len(h.starter.requests()); n != 1 {
			t.Errorf("the starter got %d requests, want alice's only", n)
		}

		h.choose(q, alice, "B")
		if res := h.waitResolved(run.ID, escID); res.By != alice || res.Key != "B" {
			t.Fatalf("resolution = %+v, want alice's B", res)
		}
		if n := len(h.refusals(alice)); n != 0 {
			t.Errorf("alice was refused %d times", n)
		}
	})
}

// A click's value is only a claim: it must name the question the clicked message asks, an option it offers, and an
// escalation still open.
func TestClicksCheckedAgainstStore(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice, bob := h.user("ALICE"), h.user("BOB")
		runA, _ := h.startRun(alice)
		escA, qA := h.escalate(runA.ID, "Which cache?", "A) Redis", "B) In-memory")
		runB, _ := h.startRun(alice)
		escB, _ := h.escalate(runB.ID, "Which database?", "A) Postgres", "B) SQLite")

		t.Run("option that is not an option", func(t *testing.T) {
			v := ActionValue{RunID: runA.ID, EscalationID: escA, Kind: blocks.KindChoose, Key: "Z"}
			h.click(qA, alice, v.ActionID(), v.Encode())
			h.waitEphemeral("That button does not match the question on record")
			if e := h.esc(runA.ID, escA); e.Resolution != nil {
				t.Fatalf("resolved with a key that is no option: %+v", e.Resolution)
			}
		})

		t.Run("escalation that does not exist", func(t *testing.T) {
			n := h.countEphemerals("does not match the question on record")
			v := ActionValue{RunID: runA.ID, EscalationID: "e9", Kind: blocks.KindRetry}
			h.click(qA, alice, v.ActionID(), v.Encode())
			v = ActionValue{RunID: "r-nosuchrun1", EscalationID: escA, Kind: blocks.KindRetry}
			h.click(qA, alice, v.ActionID(), v.Encode())
			h.waitFor("both refused", func() bool { return h.countEphemerals("does not match the question on record") == n+2 })
			if e := h.esc(runA.ID, escA); e.Resolution != nil {
				t.Fatalf("resolved: %+v", e.Resolution)
			}
		})

		t.Run("button orch did not make", func(t *testing.T) {
			m := template(t, "block_actions_orch_thread_CONSTRUCTED.json")
			m["container"].(map[string]any)["channel_id"] = h.channel
			m["channel"].(map[string]any)["id"] = h.channel
			m["response_url"] = h.fake.ResponseURL("foreign")
			body := url.Values{"payload": {string(marshal(t, m))}}.Encode()
			code, resp := h.post("/slack/interactions", []byte(body), formType)
			if code != http.StatusOK || resp != "" {
				t.Fatalf("foreign button: %d %q, want a plain ack", code, resp)
			}
		})

		t.Run("value naming another run's escalation", func(t *testing.T) {
			// Pressed on run A's question, the value claims run B's: it answers neither.
			n := len(h.fake.Ephemerals())
			v := ActionValue{RunID: runB.ID, EscalationID: escB, Kind: blocks.KindChoose, Key: "A"}
			h.click(qA, bob, v.ActionID(), v.Encode())
			h.waitFor("the click to be handled", func() bool {
				return h.esc(runB.ID, escB).Resolution != nil || len(h.fake.Ephemerals()) > n
			})
			if res := h.esc(runB.ID, escB).Resolution; res != nil {
				t.Errorf("a click on run %s's question answered run %s's: %+v", runA.ID, runB.ID, res)
			}
			if res := h.esc(runA.ID, escA).Resolution; res != nil {
				t.Errorf("a click claiming run %s answered run %s: %+v", runB.ID, runA.ID, res)
			}
		})
	})
}

// The first click answers; a second click, by anyone, is told it was already answered and changes nothing.
func TestClickAlreadyAnswered(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice, bob := h.user("ALICE"), h.user("BOB")
		run, _ := h.startRun(alice)
		escID, q := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
		h.choose(q, alice, "A")
		first := h.waitResolved(run.ID, escID)
		h.waitFor("the question to show the answer", func() bool { return len(slackfake.Buttons(h.message(q.TS))) == 0 })
		if m := h.message(q.TS); !strings.Contains(m.Text, "<@"+alice+"> chose A) Redis") {
			t.Errorf("answered question reads %q, want alice's choice", m.Text)
		}
		for _, who := range []string{bob, alice} {
			h.choose(q, who, "B") // the message as the clicker's client still shows it
		}
		h.waitFor("both late clicks answered", func() bool { return h.countEphemerals("Already answered") == 2 })
		if res := h.esc(run.ID, escID).Resolution; *res != *first {
			t.Fatalf("a late click changed the resolution: %+v → %+v", first, res)
		}
		if n := len(h.audit(run.ID, "resolved")); n != 1 {
			t.Errorf("%d resolutions audited, want 1", n)
		}
		if n := h.queue.count(run.ID, escID); n != 1 {
			t.Errorf("%d resumes enqueued, want 1", n)
		}
	})
}

// Users clicking at the same time: exactly one answer wins, the others are told it was already answered.
func TestClickRace(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		run, _ := h.startRun(h.user("ALICE"))
		escID, q := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory", "C) Memcached")
		users := []string{h.user("ALICE"), h.user("BOB"), h.user("CAROL"), h.user("DAVE"), h.user("ERIN"), h.user("FRANK")}
		keys := []string{"A", "B", "C"}
		var wg sync.WaitGroup
		for i, u := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := keys[i%len(keys)]
				body := h.fake.Click(q, u, ActionChoose+":"+key, slackfake.Buttons(q)[ActionChoose+":"+key])
				resp, err := h.client.Do(slackfake.Request(h.web.URL, "/slack/interactions", testSecret, body, formType))
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("click by %s: %d", u, resp.StatusCode)
				}
			}()
		}
		wg.Wait()
		h.waitFor("every loser told", func() bool { return h.countEphemerals("Already answered") == len(users)-1 })
		res := h.esc(run.ID, escID).Resolution
		if res == nil || !slices.Contains(users, res.By) {
			t.Fatalf("resolution = %+v, want one of the clickers", res)
		}
		if n := len(h.audit(run.ID, "resolved")); n != 1 {
			t.Errorf("%d resolutions audited, want 1", n)
		}
		if n := h.queue.count(run.ID, escID); n != 1 {
			t.Errorf("%d resumes enqueued, want 1", n)
		}
		h.waitFor("the question to show the winner", func() bool {
			return strings.Contains(h.message(q.TS).Text, "<@"+res.By+"> chose "+res.Key+")")
		})
	})
}

// The ack does not wait for the work: with the Starter blocked, `/orch run` is answered, and the run starts once
// the Starter is released.
func TestAckDoesNotWaitForWork(t *testing.T) {
	h := newHarness(t, clients(t)["miniredis"])
	release := h.starter.block()
	defer release()
	h.client.Timeout = 10 * time.Second // a generous bound: without it an ack that waited would hang the test
	alice := h.user("ALICE")
	code, body := h.post("/slack/commands", h.fake.SlashCommand("run plan.md", alice, h.channel), formType)
	if code != http.StatusOK || !strings.Contains(ephemeralText(t, body), "Starting a run") {
		t.Fatalf("ack: %d %s", code, body)
	}
	<-h.starter.entered // the work runs after the ack, and it is still blocked
	if n := h.starter.created(); n != 0 {
		t.Fatalf("the starter finished before it was released")
	}
	release()
	h.waitFor("the run's root message", func() bool { return h.starter.created() == 1 && len(h.messages()) == 1 })
}

// Shutdown drains: the work of every acked request, running or queued, is done before it returns; requests after it
// began are refused rather than accepted and dropped.
func TestShutdownDrains(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb, func(h *harness, c *Config) { c.Workers = 1 })
		release := h.starter.block()
		defer release()
		alice, bob := h.user("ALICE"), h.user("BOB")
		h.command("run plan.md", alice)
		h.command("run plan.md", bob)
		<-h.starter.entered // alice's is running, bob's waits behind it

		done := make(chan error, 1)
		go func() { done <- h.srv.Shutdown(context.Background()) }()
		select {
		case err := <-done:
			t.Fatalf("Shutdown returned (%v) while acked work was still blocked", err)
		case <-time.After(200 * time.Millisecond):
		}
		if got := h.command("status", alice); !strings.Contains(got, "busy") {
			t.Errorf("a command during shutdown: %q, want it refused as busy", got)
		}
		release()
		if err := <-done; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if n := h.starter.created(); n != 2 {
			t.Fatalf("%d runs created before Shutdown returned, want 2", n)
		}
		for i := range 2 {
			id := h.starter.run(i).ID
			if !h.following(id) {
				t.Errorf("run %s was created but the bot never followed it", id)
			}
		}
	})
}

// When the drain timeout runs out, Shutdown says so and the work still running is cancelled through its context.
func TestShutdownTimeoutCancelsWork(t *testing.T) {
	h := newHarness(t, clients(t)["miniredis"])
	release := h.starter.block()
	defer release()
	h.command("run plan.md", h.user("ALICE"))
	<-h.starter.entered
	err := h.shutdownWithin(100 * time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want the drain timeout", err)
	}
	h.starter.mu.Lock()
	errs := slices.Clone(h.starter.ctxErrs)
	h.starter.mu.Unlock()
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("the blocked work saw %v, want its context cancelled", errs)
	}
	if n := h.starter.created(); n != 0 {
		t.Fatalf("%d runs created", n)
	}
}

// While Redis is away the bot still acks at once, and tells people plainly that nothing changed and to try again.
func TestRedisAwayTellsPeopleToTryAgain(t *testing.T) {
	m := miniredis.RunT(t)
	h := newHarness(t, redis.NewClient(&redis.Options{Addr: m.Addr()}))
	alice := h.user("ALICE")
	m.Close()
	start := time.Now()
	h.command("status r-aaaaaaaaaa", alice)
	h.command("abort r-aaaaaaaaaa wrong plan", alice)
	v := ActionValue{RunID: "r-aaaaaaaaaa", EscalationID: "e1", Kind: blocks.KindChoose, Key: "A"}
	click := h.fake.Click(slackfake.Message{Channel: h.channel, TS: "1700000000.000002", ThreadTS: "1700000000.000001"},
		alice, v.ActionID(), v.Encode())
	if code, _ := h.post("/slack/interactions", click, formType); code != http.StatusOK {
		t.Fatalf("click: %d", code)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("three acks took %v with Redis away", took)
	}
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(strings.Join(h.fake.Ephemerals(), "\n"), unavailableText) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("want three try-again answers, got %q", h.fake.Ephemerals())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
