package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
	"github.com/orchrun/orch/jobs/store"
)

// queue records the resumes an answer enqueues.
type queue struct {
	mu    sync.Mutex
	calls []string
}

func (q *queue) Resume(ctx context.Context, runID, escID string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, runID+"/"+escID)
	return nil
}

// parked saves a run parked on an agent's question with options A and B (B recommended).
func parked(t *testing.T, st *store.Store, question string) *jobs.Run {
	t.Helper()
	ctx := context.Background()
	r := &jobs.Run{ID: jobs.NewRunID(), PlanPath: "plans/cache.md", PlanTitle: "Cache layer", Status: jobs.RunRunning,
		Origin: jobs.Origin{Kind: "cli", User: "alice"}, Options: jobs.Options{MaxAttempts: 3},
		Tasks: []*jobs.Task{{ID: "1.1", Title: "Add a cache", Status: jobs.TaskRunning}}}
	if err := st.Create(ctx, r, jobs.NewEvent(r.ID, "", jobs.RunStartedEvent{Tasks: 1})); err != nil {
		t.Fatal(err)
	}
	r, err := st.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
		escalation.Open(r, r.Tasks[0], c, escalation.Spec{Trigger: jobs.TriggerNeedsHelp, Source: "agent",
			Question: question, Options: []string{"A) Redis", "B) In-memory"}, Recommendation: "B"}, time.Now())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type fixture struct {
	srv   *httptest.Server
	store *store.Store
	queue *queue
}

// serve starts the view on a store of each Redis under test; token "" is the loopback view.
func serve(t *testing.T, token string, allowed ...string) map[string]fixture {
	t.Helper()
	out := map[string]fixture{}
	for name, c := range jobstest.Clients(t) {
		st := store.New(c, nil)
		q := &queue{}
		s, err := New(Config{Store: st, Queue: q, Token: token, LocalUser: "carol", AllowedUsers: allowed})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(srv.Close)
		out[name] = fixture{srv, st, q}
	}
	return out
}

// browser is an HTTP client with cookies that does not follow redirects, so that tests see them.
func browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) (int, string, http.Header) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func post(t *testing.T, c *http.Client, u string, form url.Values) (int, string, http.Header) {
	t.Helper()
	resp, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	return m[1]
}

func TestAnswerFromTheBrowser(t *testing.T) {
	for name, f := range serve(t, "") {
		t.Run(name, func(t *testing.T) {
			run := parked(t, f.store, "Which cache should I use? <script>alert(1)</script>")
			c := browser(t)
			code, page, h := get(t, c, f.srv.URL+"/runs/"+run.ID)
			if code != http.StatusOK {
				t.Fatalf("GET run: %d\n%s", code, page)
			}
			for _, want := range []string{"Which cache should I use?", "A) Redis", "B) In-memory · recommended", "Abort"} {
				if !strings.Contains(page, want) {
					t.Errorf("the run page lacks %q", want)
				}
			}
			// An agent's question is answered, not retried or forced past (escalation.AnswersOf).
			for _, not := range []string{`value="retry"`, `value="resume"`, "Force continue"} {
				if strings.Contains(page, not) {
					t.Errorf("the agent's question offers %q", not)
				}
			}
			if strings.Contains(page, "<script>alert(1)") {
				t.Error("the question's markup reached the page unescaped")
			}
			if !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") {
				t.Errorf("CSP = %q", h.Get("Content-Security-Policy"))
			}
			csrf := csrfOf(t, page)
			e := run.OpenEscalation()

			// Without the CSRF token the answer is refused and nothing changes.
			code, _, _ = post(t, c, f.srv.URL+"/runs/"+run.ID+"/answer", url.Values{"escalation": {e.ID}, "action": {"choose"}, "key": {"B"}})
			if code != http.StatusForbidden {
				t.Fatalf("an answer without the CSRF token got %d", code)
			}
			if r, _ := f.store.Get(context.Background(), run.ID); r.OpenEscalation() == nil {
				t.Fatal("a forged answer resolved the question")
			}

			code, _, h = post(t, c, f.srv.URL+"/runs/"+run.ID+"/answer", url.Values{"csrf": {csrf}, "escalation": {e.ID}, "action": {"choose"}, "key": {"B"}})
			if code != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "answered="+e.ID) {
				t.Fatalf("answer: %d, Location %q", code, h.Get("Location"))
			}
			r, _ := f.store.Get(context.Background(), run.ID)
			res := r.Escalations[0].Resolution
			if res == nil || res.Key != "B" || res.Via != "web" || res.By != "carol" {
				t.Fatalf("resolution = %+v, want B by carol via web", res)
			}
			audit, _ := f.store.Audit(context.Background(), run.ID)
			if last := audit[len(audit)-1]; last.Via != "web" || last.By != "carol" {
				t.Errorf("audit = %+v, want the web and the person", last)
			}
			if len(f.queue.calls) != 1 {
				t.Errorf("resumes enqueued: %v", f.queue.calls)
			}
			_, page, _ = get(t, c, f.srv.URL+h.Get("Location"))
			if !strings.Contains(page, "Your answer was taken: chose B) In-memory") {
				t.Errorf("the page does not confirm the answer:\n%s", page)
			}

			// A second browser, still showing the question, answers after: it is told who answered first.
			code, _, h = post(t, c, f.srv.URL+"/runs/"+run.ID+"/answer", url.Values{"csrf": {csrf}, "escalation": {e.ID}, "action": {"choose"}, "key": {"A"}})
			if code != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "lost="+e.ID) {
				t.Fatalf("late answer: %d, Location %q", code, h.Get("Location"))
			}
			_, page, _ = get(t, c, f.srv.URL+h.Get("Location"))
			if !strings.Contains(page, "Someone answered first: carol (web) chose B) In-memory") {
				t.Errorf("the late answerer is not told who answered:\n%s", page)
			}
			if r, _ := f.store.Get(context.Background(), run.ID); r.Escalations[0].Resolution.Key != "B" {
				t.Error("the late answer changed the resolution")
			}
		})
	}
}

func TestRunsAndQuestionsPages(t *testing.T) {
	for name, f := range serve(t, "") {
		t.Run(name, func(t *testing.T) {
			run := parked(t, f.store, "Which cache?")
			c := browser(t)
			_, page, _ := get(t, c, f.srv.URL+"/")
			if !strings.Contains(page, run.ID) || !strings.Contains(page, "question waiting") {
				t.Errorf("the runs page lacks the run and its question:\n%s", page)
			}
			_, page, _ = get(t, c, f.srv.URL+"/?status=completed")
			if strings.Contains(page, run.ID) {
				t.Error("a status filter kept a run of another status")
			}
			_, page, _ = get(t, c, f.srv.URL+"/?plan=CACHE")
			if !strings.Contains(page, run.ID) {
				t.Error("a plan filter, in another case, lost the run")
			}
			_, page, _ = get(t, c, f.srv.URL+"/questions")
			if !strings.Contains(page, "Which cache?") || !strings.Contains(page, run.ID) {
				t.Errorf("the questions page lacks the question:\n%s", page)
			}
			code, page, _ := get(t, c, f.srv.URL+"/runs/r-nosuchrun")
			if code != http.StatusNotFound || !strings.Contains(page, "There is no run") {
				t.Errorf("unknown run: %d", code)
			}
		})
	}
}

// Without a token the view is the local user's: a client from elsewhere is refused.
func TestLoopbackOnlyWithoutAToken(t *testing.T) {
	st := store.New(jobstest.Clients(t)["miniredis"], nil)
	s, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	for _, remote := range []string{"10.1.2.3:5555", "[2001:db8::1]:443", "192.168.0.9:80"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = "127.0.0.1:3080" // a name the view answers to: the client's address is what is refused
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden {
			t.Errorf("a client at %s got %d", remote, rec.Code)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Host = "127.0.0.1:3080"
	req.RemoteAddr = "127.0.0.1:5555"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("a loopback client got %d", rec.Code)
	}
	// A reverse proxy on this machine: a loopback client and (nginx's default) a loopback Host, but its forwarding
	// headers say the person is elsewhere.
	for _, h2 := range []string{"X-Forwarded-For: 203.0.113.7", "Forwarded: for=203.0.113.7", "X-Real-Ip: 203.0.113.7",
		"X-Forwarded-Host: orch.example.com", "X-Forwarded-Proto: https"} {
		name, value, _ := strings.Cut(h2, ": ")
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host, req.RemoteAddr = "127.0.0.1:3080", "127.0.0.1:5555"
		req.Header.Set(name, value)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden {
			t.Errorf("a proxied request (%s) got %d", h2, rec.Code)
		}
	}
}

func TestCheckAddr(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:3080": true, "[::1]:3080": true, "localhost:3080": true,
		":3080": false, "0.0.0.0:3080": false, "10.0.0.1:3080": false, "nonsense": false} {
		err := CheckAddr(addr, "")
		if (err == nil) != ok {
			t.Errorf("CheckAddr(%q) = %v", addr, err)
		}
		if err != nil && !errors.Is(err, ErrNeedsToken) {
			t.Errorf("CheckAddr(%q) = %v, want ErrNeedsToken", addr, err)
		}
		if err := CheckAddr(addr, "s3cret"); err != nil {
			t.Errorf("with a token, CheckAddr(%q) = %v", addr, err)
		}
	}
}

func TestSignInWithTheToken(t *testing.T) {
	for name, f := range serve(t, "s3cret-token", "U123") {
		t.Run(name, func(t *testing.T) {
			run := parked(t, f.store, "Which cache?")
			c := browser(t)
			code, _, h := get(t, c, f.srv.URL+"/runs/"+run.ID)
			if code != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/login") {
				t.Fatalf("unsigned GET: %d %q", code, h.Get("Location"))
			}
			code, _, _ = get(t, c, f.srv.URL+"/runs/"+run.ID+"/events")
			if code != http.StatusUnauthorized {
				t.Errorf("unsigned event stream: %d", code)
			}
			_, page, _ := get(t, c, f.srv.URL+h.Get("Location"))
			csrf := csrfOf(t, page)
			code, page, _ = post(t, c, f.srv.URL+"/login", url.Values{"csrf": {csrf}, "token": {"wrong"}, "name": {"U123"}, "next": {"/runs/" + run.ID}})
			if code != http.StatusUnauthorized || !strings.Contains(page, "not this deployment") {
				t.Fatalf("a wrong token: %d", code)
			}
			// Someone not in ORCH_ALLOWED_USERS can look but not answer.
			code, _, _ = post(t, c, f.srv.URL+"/login", url.Values{"csrf": {csrf}, "token": {"s3cret-token"}, "name": {"U999"}, "next": {"/runs/" + run.ID}})
			if code != http.StatusSeeOther {
				t.Fatalf("sign-in: %d", code)
			}
			_, page, _ = get(t, c, f.srv.URL+"/runs/"+run.ID)
			if !strings.Contains(page, "not allowed to answer") || strings.Contains(page, `value="choose"`) {
				t.Error("someone outside ORCH_ALLOWED_USERS is offered the form")
			}
			code, _, _ = post(t, c, f.srv.URL+"/runs/"+run.ID+"/answer", url.Values{"csrf": {csrfOf(t, page)}, "escalation": {run.OpenEscalation().ID}, "action": {"retry"}})
			if code != http.StatusForbidden {
				t.Errorf("an answer from outside ORCH_ALLOWED_USERS got %d", code)
			}
			// The allowed person answers; the audit names them and the web.
			post(t, c, f.srv.URL+"/login", url.Values{"csrf": {csrf}, "token": {"s3cret-token"}, "name": {"U123"}, "next": {"/"}})
			_, page, _ = get(t, c, f.srv.URL+"/runs/"+run.ID)
			code, _, _ = post(t, c, f.srv.URL+"/runs/"+run.ID+"/answer", url.Values{"csrf": {csrfOf(t, page)}, "escalation": {run.OpenEscalation().ID}, "action": {"abort"}, "confirm": {"yes"}, "reason": {"wrong plan"}})
			if code != http.StatusSeeOther {
				t.Fatalf("abort: %d", code)
			}
			r, _ := f.store.Get(context.Background(), run.ID)
			if res := r.Escalations[0].Resolution; res == nil || res.By != "U123" || res.Via != "web" || res.Reason != "wrong plan" {
				t.Errorf("resolution = %+v", res)
			}
			// A tampered session is no session.
			u, _ := url.Parse(f.srv.URL)
			for _, ck := range c.Jar.Cookies(u) {
				if ck.Name == sessionCookie {
					ck.Value = strings.Replace(ck.Value, ck.Value[:4], "QUFB", 1)
					c.Jar.SetCookies(u, []*http.Cookie{ck})
				}
			}
			if code, _, _ := get(t, c, f.srv.URL+"/"); code != http.StatusSeeOther {
				t.Errorf("a tampered session got %d", code)
			}
		})
	}
}

// Abort and force-continue need their confirmations, as on the terminal.
func TestRiskyAnswersNeedConfirmation(t *testing.T) {
	f := serve(t, "")["miniredis"]
	run := parked(t, f.store, "Which cache?")
	c := browser(t)
	_, page, _ := get(t, c, f.srv.URL+"/runs/"+run.ID)
	csrf, id := csrfOf(t, page), run.OpenEscalation().ID
	if code, _, _ := post(t, c, f.srv.URL+"/runs/"+run.ID+"/answer", url.Values{"csrf": {csrf}, "escalation": {id}, "action": {"abort"}}); code != http.StatusBadRequest {
		t.Errorf("abort without confirmation: %d", code)
	}
	if code, page, _ := post(t, c, f.srv.URL+"/runs/"+run.ID+"/answer", url.Values{"csrf": {csrf}, "escalation": {id}, "action": {"force"}}); code != http.StatusBadRequest || !strings.Contains(page, "acknowledge") {
		t.Errorf("force without acknowledging the risk: %d", code)
	}
	if code, _, _ := post(t, c, f.srv.URL+"/runs/"+run.ID+"/answer", url.Values{"csrf": {csrf}, "escalation": {id}, "action": {"explode"}}); code != http.StatusBadRequest {
		t.Errorf("an unknown action: %d", code)
	}
	if r, _ := f.store.Get(context.Background(), run.ID); r.OpenEscalation() == nil {
		t.Error("a refused answer resolved the question")
	}
}

// The event stream sends what happens after the page was rendered, and ends with the run. An event that changes more
// than the timeline (the run's end) is marked for the page to render itself again; an attempt's tool calls are not.
func TestEventStream(t *testing.T) {
	f := serve(t, "")["miniredis"]
	run := parked(t, f.store, "Which cache?")
	resp, err := http.Get(f.srv.URL + "/runs/" + run.ID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		f.store.Update(context.Background(), run.ID, func(r *jobs.Run, c *jobs.Change) error {
			r.Status = jobs.RunCompleted
			c.Emit(jobs.NewEvent(r.ID, "1.1", jobs.AgentActivityEvent{Calls: []string{"Read main.go"}}))
			c.Emit(jobs.NewEvent(r.ID, "", jobs.RunCompletedEvent{Tasks: 1}))
			return nil
		})
	}()
	body, err := io.ReadAll(resp.Body) // the stream ends once the run has
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]map[string]any{}
	for _, l := range strings.Split(string(body), "\n") {
		var v map[string]any
		if data, ok := strings.CutPrefix(l, "data: "); ok && json.Unmarshal([]byte(data), &v) == nil {
			lines[fmt.Sprint(v["Kind"])] = v
		}
	}
	if lines["run_completed"] == nil || lines["run_started"] != nil || lines["agent_activity"] == nil {
		t.Fatalf("stream:\n%s", body)
	}
	if lines["run_completed"]["Reload"] != true || lines["agent_activity"]["Reload"] != nil {
		t.Errorf("reloads: the end %v, the tool calls %v", lines["run_completed"]["Reload"], lines["agent_activity"]["Reload"])
	}
}

// A pipeline run's page draws its graph, with the node that waits for a person marked.
func TestAPipelineRunIsDrawn(t *testing.T) {
	f := serve(t, "")["miniredis"]
	run := parked(t, f.store, "Ship it?")
	_, err := f.store.Update(context.Background(), run.ID, func(r *jobs.Run, c *jobs.Change) error {
		r.Graph = "digraph ship {\n start [shape=Mdiamond]\n build [label=\"Build <it>\"]\n review [shape=hexagon]\n done [shape=Msquare]\n start -> build -> review -> done\n}\n"
		r.Pipeline = &jobs.Checkpoint{Current: "review", Completed: []string{"start", "build"}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, page, _ := get(t, browser(t), f.srv.URL+"/runs/"+run.ID)
	if !strings.Contains(page, "<svg") || !strings.Contains(page, `class="waiting" data-node="review"`) ||
		!strings.Contains(page, `class="done" data-node="build"`) {
		t.Errorf("the page does not draw the pipeline where it is:\n%s", page)
	}
	if strings.Contains(page, "Build <it>") {
		t.Error("a node label reached the page unescaped")
	}
}

// The chart has a bar per attempt and per question, its text escaped.
func TestChartOfAttemptsAndWaits(t *testing.T) {
	now := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	run := &jobs.Run{ID: "r-chart", Tasks: []*jobs.Task{{ID: "1.1<b>", Attempts: []*jobs.Attempt{
		{Status: "failed", Duration: 3 * time.Second}, {Status: "completed", Duration: 1500 * time.Millisecond}}}},
		Escalations: []*jobs.Escalation{{ID: "e1", Trigger: jobs.TriggerNeedsHelp, CreatedAt: now.Add(-5 * time.Minute)}}}
	svg := string(chartOf(run, now))
	if got := strings.Count(svg, "<rect"); got != 3 {
		t.Errorf("%d bars, want 3:\n%s", got, svg)
	}
	for _, want := range []string{"3.0s", "1.5s", "5m", "still waiting", "1.1&lt;b&gt;"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %q:\n%s", want, svg)
		}
	}
	if chartOf(&jobs.Run{ID: "r-empty"}, now) != "" {
		t.Error("a run with nothing to chart has a chart")
	}
}

// A run asked for in words shows the request (redacted) where a plan's path would be, and the runs it follows up and
// that follow it up, as links.
func TestARequestInWords(t *testing.T) {
	for name, f := range serve(t, "") {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			first := &jobs.Run{ID: jobs.NewRunID(), PlanTitle: "fix the flaky retry test", Status: jobs.RunCompleted,
				Request: "fix the flaky retry test\ntoken AKIA0123456789ABCDEF", Origin: jobs.Origin{Kind: "slack", User: "U1"},
				Tasks: []*jobs.Task{{ID: "1", Title: "fix the flaky retry test", Status: jobs.TaskCompleted}}}
			next := &jobs.Run{ID: jobs.NewRunID(), PlanTitle: "make the jitter configurable", Status: jobs.RunQueued,
				Request: "make the jitter configurable", FollowUpOf: first.ID, Origin: jobs.Origin{Kind: "slack", User: "U1"},
				Tasks: []*jobs.Task{{ID: "1", Title: "make the jitter configurable", Status: jobs.TaskPending}}}
			first.FollowUps = []string{next.ID}
			for _, r := range []*jobs.Run{first, next} {
				if err := f.store.Create(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			_, page, _ := get(t, browser(t), f.srv.URL+"/runs/"+first.ID)
			if !strings.Contains(page, `<blockquote class="request">fix the flaky retry test`) ||
				!strings.Contains(page, `followed up by <a href="/runs/`+next.ID+`">`) {
				t.Errorf("the run page lacks the request or its follow-up:\n%s", page)
			}
			if strings.Contains(page, "AKIA0123456789ABCDEF") {
				t.Error("a secret in the request reached the page")
			}
			_, page, _ = get(t, browser(t), f.srv.URL+"/runs/"+next.ID)
			if !strings.Contains(page, `follows up <a href="/runs/`+first.ID+`">`) {
				t.Errorf("the follow-up's page does not link the run it follows:\n%s", page)
			}
		})
	}
}
