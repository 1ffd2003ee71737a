package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/runs"
)

// queue records what the API asks of the queue: starts and resumes.
type queue struct {
	mu              sync.Mutex
	started, resume []string
}

func (q *queue) Start(_ context.Context, runID string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.started = append(q.started, runID)
	return nil
}

func (q *queue) Resume(_ context.Context, runID, escID string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.resume = append(q.resume, runID+"/"+escID)
	return nil
}

// differ writes a diff of its own for any run with a branch, as the workspace's worktrees do for a real one.
type differ struct{ text string }

func (d differ) Diff(_ context.Context, g *jobs.Git, stat bool, out io.Writer) error {
	if stat {
		_, err := fmt.Fprintf(out, " %s | 1 +\n 1 file changed, 1 insertion(+)\n", g.Branch)
		return err
	}
	_, err := io.WriteString(out, d.text)
	return err
}

// workspace is a directory with the example plan and its scenario.
func workspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	for _, f := range []string{"ambiguous_task.md", "ambiguous_task.sim.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "examples", "plans", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

type fixture struct {
	srv   *httptest.Server
	api   *Server
	store *store.Store
	queue *queue
	ws    string
	token string // the bearer token requests carry; "" for none
	// user is the person a loopback request is: a name of the test's own, as the real Redis is shared by the tests.
	user string
}

// serve starts the API on a store of each Redis under test, with cfg's access settings.
func serve(t *testing.T, cfg Config) map[string]*fixture {
	t.Helper()
	out := map[string]*fixture{}
	for name, c := range jobstest.Clients(t) {
		st := store.New(c, nil)
		q := &queue{}
		ws := workspace(t)
		c := cfg
		c.Store, c.Queue, c.LocalUser = st, q, "carol-"+jobs.NewRunID()
		c.Front = &runs.Front{Starter: &runs.Starter{Store: st, Queue: q}, Options: jobs.Options{Agent: "sim",
			Sandbox: "local", MaxAttempts: 3}, Workspace: ws, Agents: runs.KnownAgents}
		if c.Diffs == nil {
			c.Diffs = differ{text: "diff --git a/x b/x\n+hello\n"}
		}
		s, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle(Prefix, s.Handler())
		mux.Handle(MCPPath, s.MCPHandler("test"))
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		out[name] = &fixture{srv: srv, api: s, store: st, queue: q, ws: ws, user: c.LocalUser}
	}
	return out
}

// call sends a request and checks the answer against the OpenAPI document: the status is one the operation
// declares, and a JSON body validates against the schema declared for it.
func (f *fixture) call(t *testing.T, method, path string, body any) (int, []byte, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if f.token != "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	conform(t, method, req.URL.Path, resp.StatusCode, resp.Header.Get("Content-Type"), data)
	return resp.StatusCode, data, resp.Header
}

func decode[T any](t *testing.T, data []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	return v
}

func TestStartListGetAndAnswerARun(t *testing.T) {
	for name, f := range serve(t, Config{}) {
		t.Run(name, func(t *testing.T) {
			status, data, h := f.call(t, "POST", "/api/v1/runs", StartRequest{Plan: "ambiguous_task.md"})
			if status != http.StatusCreated {
				t.Fatalf("POST /runs = %d %s", status, data)
			}
			run := decode[RunDetail](t, data)
			if h.Get("Location") != "/api/v1/runs/"+run.RunID || run.Status != "queued" || run.Origin != "api" || run.StartedBy != f.user {
				t.Fatalf("started %+v (Location %q)", run.RunSummary, h.Get("Location"))
			}
			if len(f.queue.started) != 1 || f.queue.started[0] != run.RunID {
				t.Fatalf("queued %v, want the run", f.queue.started)
			}
			status, data, _ = f.call(t, "GET", "/api/v1/runs?status=queued&limit=10&user="+f.user, nil)
			list := decode[RunList](t, data)
			if status != 200 || len(list.Runs) != 1 || list.Runs[0].RunID != run.RunID || list.Runs[0].TasksTotal == 0 {
				t.Fatalf("GET /runs = %d %s", status, data)
			}
			if _, data, _ = f.call(t, "GET", "/api/v1/runs?status=completed&user="+f.user, nil); len(decode[RunList](t, data).Runs) != 0 {
				t.Fatalf("a completed filter lists the queued run: %s", data)
			}

			parked := parkedRun(t, f.store)
			status, data, _ = f.call(t, "GET", "/api/v1/questions", nil)
			qs := ours(decode[QuestionList](t, data).Questions, parked.ID)
			if status != 200 || len(qs) != 1 {
				t.Fatalf("GET /questions = %d %s", status, data)
			}
			// An agent's question is answered with its options, words or an abort: retrying it means nothing.
			if got := strings.Join(qs[0].Answers, ","); got != "choose,answer,abort" {
				t.Fatalf("answers = %s, want choose,answer,abort", got)
			}
			if _, data, _ = f.call(t, "GET", "/api/v1/runs/"+parked.ID+"/question", nil); decode[Question](t, data).EscalationID != qs[0].EscalationID {
				t.Fatalf("GET question = %s", data)
			}
			status, data, _ = f.call(t, "POST", "/api/v1/runs/"+parked.ID+"/answer", AnswerRequest{EscalationID: qs[0].EscalationID, Choose: "B"})
			if status != 200 || decode[Resolved](t, data).EscalationID != qs[0].EscalationID {
				t.Fatalf("answer = %d %s", status, data)
			}
			got, err := f.store.Get(context.Background(), parked.ID)
			if err != nil {
				t.Fatal(err)
			}
			res := got.Escalations[0].Resolution
			if res == nil || res.Key != "B" || res.By != f.user || res.Via != "api" {
				t.Fatalf("resolution = %+v, want B by %s via api", res, f.user)
			}
			// The second answer to the same question loses and is told who answered first.
			status, data, _ = f.call(t, "POST", "/api/v1/runs/"+parked.ID+"/answer", AnswerRequest{EscalationID: qs[0].EscalationID, Choose: "A"})
			p := decode[Problem](t, data)
			if status != http.StatusConflict || p.AnsweredBy != f.user || p.AnsweredVia != "api" || p.AnsweredAt == nil {
				t.Fatalf("second answer = %d %s", status, data)
			}
		})
	}
}

// ours keeps the questions of run id: the real Redis holds the other tests' runs too.
func ours(qs []Question, id string) []Question {
	var out []Question
	for _, q := range qs {
		if q.RunID == id {
			out = append(out, q)
		}
	}
	return out
}

// parkedRun saves a run parked on an agent's question with options A and B.
func parkedRun(t *testing.T, st *store.Store) *jobs.Run {
	t.Helper()
	ctx := context.Background()
	r := &jobs.Run{ID: jobs.NewRunID(), PlanPath: "plans/cache.md", PlanTitle: "Cache layer", Status: jobs.RunRunning,
		Origin: jobs.Origin{Kind: "cli", User: "alice"}, Options: jobs.Options{Agent: "sim", MaxAttempts: 3},
		Git:   &jobs.Git{Branch: "orch/x", Base: "main", BaseCommit: "abc123"},
		Tasks: []*jobs.Task{{ID: "1.1", Title: "Add a cache", Status: jobs.TaskRunning}}}
	if err := st.Create(ctx, r, jobs.NewEvent(r.ID, "", jobs.RunStartedEvent{Tasks: 1})); err != nil {
		t.Fatal(err)
	}
	r, err := st.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
		escalation.Open(r, r.Tasks[0], c, escalation.Spec{Trigger: jobs.TriggerNeedsHelp, Source: "agent",
			Question: "Which cache?", Options: []string{"A) Redis", "B) In-memory"}, Recommendation: "B"}, time.Now())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBadRequestsAreProblems(t *testing.T) {
	for name, f := range serve(t, Config{}) {
		t.Run(name, func(t *testing.T) {
			outside := filepath.Join(filepath.Dir(f.ws), "elsewhere.md")
			os.WriteFile(outside, []byte("# Elsewhere\n"), 0o644)
			for _, c := range []struct {
				name   string
				method string
				path   string
				body   any
				status int
				says   string
			}{
				{"a plan outside the workspace", "POST", "/api/v1/runs", StartRequest{Plan: "../elsewhere.md"}, 422, "outside the workspace"},
				{"a plan that is not there", "POST", "/api/v1/runs", StartRequest{Plan: "nope.md"}, 422, "nope.md is not in the workspace"},
				{"a plan and words", "POST", "/api/v1/runs", StartRequest{Plan: "ambiguous_task.md", Text: "and this"}, 422, "not both"},
				{"nothing", "POST", "/api/v1/runs", StartRequest{}, 422, "a plan"},
				{"a command template", "POST", "/api/v1/runs", StartRequest{Text: "hi", Agent: "cmd:rm -rf /"}, 422, "not one this server runs"},
				{"an option ref", "POST", "/api/v1/runs", StartRequest{Text: "hi", Base: "--upload-pack=x"}, 422, "not a git ref"},
				{"an unknown field", "POST", "/api/v1/runs", map[string]any{"plan": "ambiguous_task.md", "sandbox": "none"}, 400, "unknown field"},
				{"two answers", "POST", "/api/v1/runs/r1/answer", AnswerRequest{Retry: true, Abort: "no"}, 400, "not retry and abort"},
				{"no answer", "POST", "/api/v1/runs/r1/answer", AnswerRequest{}, 400, "send one answer"},
				{"force without the risk", "POST", "/api/v1/runs/r1/answer", AnswerRequest{Force: "ok"}, 400, "acknowledge_risk"},
				{"an unknown run", "GET", "/api/v1/runs/nope", nil, 404, "no run"},
				{"an unknown status", "GET", "/api/v1/runs?status=lost", nil, 400, "not a run status"},
				{"a limit too large", "GET", "/api/v1/runs?limit=100000", nil, 400, "limit is 1 to 200"},
				{"a page of words", "GET", "/api/v1/runs?page=two", nil, 400, "not a number"},
				{"an unknown endpoint", "GET", "/api/v1/nothing", nil, 404, "not an endpoint"},
				{"a method it does not take", "DELETE", "/api/v1/runs", nil, 405, "takes"},
			} {
				status, data, h := f.call(t, c.method, c.path, c.body)
				if status != c.status || h.Get("Content-Type") != problemType || !strings.Contains(string(data), c.says) {
					t.Errorf("%s: %d %s %s, want %d saying %q", c.name, status, h.Get("Content-Type"), data, c.status, c.says)
				}
				if strings.Contains(string(data), f.ws) || strings.Contains(string(data), filepath.Dir(f.ws)) {
					t.Errorf("%s: the answer shows where the workspace is: %s", c.name, data)
				}
			}
			// Not JSON: a page elsewhere can send a form or text to loopback without asking first, never JSON.
			resp, err := http.Post(f.srv.URL+"/api/v1/runs", "text/plain", strings.NewReader(`{"text":"hi"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnsupportedMediaType {
				t.Errorf("text/plain = %d, want 415", resp.StatusCode)
			}
			big := StartRequest{Text: strings.Repeat("x", maxBody)}
			if status, _, _ := f.call(t, "POST", "/api/v1/runs", big); status != http.StatusRequestEntityTooLarge {
				t.Errorf("a body past %d bytes = %d, want 413", maxBody, status)
			}
			if len(f.queue.started) != 0 {
				t.Errorf("bad requests queued runs: %v", f.queue.started)
			}
		})
	}
}

func TestTokensNameThePersonInTheAudit(t *testing.T) {
	tokens, err := ParseTokens("dana:0123456789abcdef0123, ci-bot:fedcba9876543210fedc")
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range serve(t, Config{Tokens: tokens}) {
		t.Run(name, func(t *testing.T) {
			for _, bad := range []string{"", "0123456789abcdef0124", "0123456789abcdef012"} {
				f.token = bad
				status, data, h := f.call(t, "GET", "/api/v1/runs", nil)
				if status != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("token %q: %d %s, want 401", bad, status, data)
				}
			}
			parked := parkedRun(t, f.store)
			f.token = "fedcba9876543210fedc"
			if status, data, _ := f.call(t, "POST", "/api/v1/runs/"+parked.ID+"/cancel", CancelRequest{Reason: "superseded"}); status != 200 {
				t.Fatalf("cancel = %d %s", status, data)
			}
			audit, err := f.store.Audit(context.Background(), parked.ID)
			if err != nil {
				t.Fatal(err)
			}
			last := audit[len(audit)-1]
			if last.By != "ci-bot" || last.Via != "api" || !strings.Contains(last.Detail+last.Resolution, "superseded") && last.Resolution != "abort" {
				t.Fatalf("audit = %+v, want the abort by ci-bot via api", last)
			}
			// Cancelling what has ended is a conflict that says so.
			status, data, _ := f.call(t, "POST", "/api/v1/runs/"+parked.ID+"/cancel", CancelRequest{})
			if status != http.StatusConflict {
				t.Fatalf("cancelling an ended run = %d %s", status, data)
			}
		})
	}
}

func TestParseTokens(t *testing.T) {
	for _, c := range []struct{ in, says string }{
		{"dana", "not name:token"},
		{"dana:short", "at least 16"},
		{"dana:0123456789abcdef,dana:fedcba9876543210", "named twice"},
		{"dana:0123456789abcdef,eve:0123456789abcdef", "also another name's"},
		{"da na:0123456789abcdef", "not a plain name"},
	} {
		if _, err := ParseTokens(c.in); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ParseTokens(%q) = %v, want an error saying %q", c.in, err, c.says)
		}
	}
	if tokens, err := ParseTokens(""); err != nil || len(tokens) != 0 {
		t.Errorf("ParseTokens(\"\") = %v, %v", tokens, err)
	}
}

// TestWithoutTokensOnlyThisMachine drives the handler with requests as they would arrive from elsewhere: another
// address, a name that is not this machine's (DNS rebinding), a page of another site.
func TestWithoutTokensOnlyThisMachine(t *testing.T) {
	var st *store.Store
	for _, c := range jobstest.Clients(t) {
		st = store.New(c, nil)
		break
	}
	s, err := New(Config{Store: st, Queue: &queue{}})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	for _, c := range []struct {
		name         string
		remote, host string
		method, site string
		status       int
	}{
		{"this machine", "127.0.0.1:5000", "127.0.0.1:3080", "GET", "", 200},
		{"localhost by name", "[::1]:5000", "localhost:3080", "GET", "", 200},
		{"another machine", "10.1.2.3:5000", "127.0.0.1:3080", "GET", "", 403},
		{"a rebound name", "127.0.0.1:5000", "attacker.example:3080", "GET", "", 421},
		{"a page of another site", "127.0.0.1:5000", "127.0.0.1:3080", "POST", "cross-site", 403},
		{"a page of another site reading", "127.0.0.1:5000", "127.0.0.1:3080", "GET", "cross-site", 403},
		{"a proxy on this machine", "127.0.0.1:5000", "127.0.0.1:3080", "GET", "proxy", 403},
	} {
		req := httptest.NewRequest(c.method, "/api/v1/questions", strings.NewReader(`{}`))
		req.RemoteAddr, req.Host = c.remote, c.host
		req.Header.Set("Content-Type", "application/json")
		switch c.site {
		case "":
		case "proxy":
			req.Header.Set("X-Forwarded-For", "203.0.113.7")
		default:
			req.Header.Set("Sec-Fetch-Site", c.site)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if c.status == 200 && c.method == "POST" {
			c.status = 405
		}
		if rec.Code != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, rec.Code, rec.Body, c.status)
		}
	}
}

func TestEachPersonHasARate(t *testing.T) {
	tokens, _ := ParseTokens("dana:0123456789abcdef0123,eve:fedcba9876543210fedc")
	for name, f := range serve(t, Config{Tokens: tokens, Rate: 0.001, Burst: 2}) {
		t.Run(name, func(t *testing.T) {
			f.token = "0123456789abcdef0123"
			for i := range 2 {
				if status, _, _ := f.call(t, "GET", "/api/v1/health", nil); status != 200 {
					t.Fatalf("request %d = %d", i+1, status)
				}
			}
			status, data, h := f.call(t, "GET", "/api/v1/health", nil)
			if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(string(data), "dana") {
				t.Fatalf("third request = %d %s, want 429", status, data)
			}
			f.token = "fedcba9876543210fedc" // another person's rate is their own
			if status, _, _ := f.call(t, "GET", "/api/v1/health", nil); status != 200 {
				t.Fatalf("eve's first request = %d", status)
			}
		})
	}
}

func TestDiffOfARun(t *testing.T) {
	for name, f := range serve(t, Config{Diffs: differ{text: strings.Repeat("+line\n", maxDiff/6+100)}}) {
		t.Run(name, func(t *testing.T) {
			r := parkedRun(t, f.store)
			status, data, h := f.call(t, "GET", "/api/v1/runs/"+r.ID+"/diff", nil)
			if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/x-diff") {
				t.Fatalf("diff = %d %s", status, h.Get("Content-Type"))
			}
			if len(data) > maxDiff+200 || !strings.Contains(string(data), "the diff is cut at") {
				t.Fatalf("a diff past the cap is %d bytes and ends %q", len(data), data[max(0, len(data)-120):])
			}
			if _, data, _ = f.call(t, "GET", "/api/v1/runs/"+r.ID+"/diff?stat=1", nil); !strings.Contains(string(data), "1 file changed") {
				t.Fatalf("stat = %s", data)
			}
			_, data, _ = f.call(t, "POST", "/api/v1/runs", StartRequest{Plan: "ambiguous_task.md"})
			queued := decode[RunDetail](t, data)
			if status, data, _ := f.call(t, "GET", "/api/v1/runs/"+queued.RunID+"/diff", nil); status != 404 {
				t.Fatalf("diff of a run not started = %d %s", status, data)
			}
		})
	}
}

func TestEventsStreamUntilTheRunEnds(t *testing.T) {
	for name, f := range serve(t, Config{}) {
		t.Run(name, func(t *testing.T) {
			r := parkedRun(t, f.store)
			resp, err := http.Get(f.srv.URL + "/api/v1/runs/" + r.ID + "/events")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("Content-Type = %q", ct)
			}
			events := make(chan map[string]any)
			go func() {
				defer close(events)
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
						var ev map[string]any
						if json.Unmarshal([]byte(data), &ev) == nil && ev["run_id"] != nil {
							events <- ev
						}
					}
				}
			}()
			var kinds []string
			for ev := range events {
				if ev["run_id"] != r.ID {
					t.Fatalf("an event of another run: %v", ev)
				}
				kinds = append(kinds, ev["type"].(string))
				if ev["type"] == "escalation" {
					// The stream goes on until the run ends: cancel it.
					if status, data, _ := f.call(t, "POST", "/api/v1/runs/"+r.ID+"/cancel", CancelRequest{Reason: "done here"}); status != 200 {
						t.Fatalf("cancel = %d %s (events so far %v)", status, data, kinds)
					}
				}
			}
			if len(kinds) < 3 || kinds[0] != "run_started" || kinds[len(kinds)-1] != "run_aborted" {
				t.Fatalf("events = %v, want run_started … run_aborted and the stream closed", kinds)
			}
		})
	}
}

// TestTheDocumentDescribesEveryRoute holds the OpenAPI document and the routes together: every route is described,
// and every operation described is a route.
func TestTheDocumentDescribesEveryRoute(t *testing.T) {
	doc := openAPI(t)
	described := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			described[strings.ToUpper(method)+" "+path] = true
		}
	}
	s := &Server{}
	for _, rt := range s.routes() {
		key := rt.method + " " + rt.path
		if !described[key] {
			t.Errorf("%s is served but not described", key)
		}
		delete(described, key)
	}
	for key := range described {
		t.Errorf("%s is described but not served", key)
	}
}

// document is the part of the OpenAPI document the tests read.
type document struct {
	Paths      map[string]map[string]operation `json:"paths"`
	Components struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
}

type operation struct {
	Responses map[string]struct {
		Content map[string]struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"content"`
	} `json:"responses"`
}

var (
	docOnce sync.Once
	doc     document
	docErr  error
)

func openAPI(t *testing.T) document {
	t.Helper()
	docOnce.Do(func() { docErr = json.Unmarshal(openapiDoc, &doc) })
	if docErr != nil {
		t.Fatalf("the OpenAPI document is not JSON: %v", docErr)
	}
	return doc
}

// conform checks one answer of the API against the document.
func conform(t *testing.T, method, path string, status int, contentType string, body []byte) {
	t.Helper()
	d := openAPI(t)
	pattern := ""
	for p := range d.Paths {
		if matchPath(p, path) {
			pattern = p
		}
	}
	op, ok := d.Paths[pattern][strings.ToLower(method)]
	if !ok {
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			t.Errorf("%s %s answered %d but is not described", method, path, status)
		}
		return
	}
	resp, ok := op.Responses[fmt.Sprint(status)]
	if !ok {
		t.Errorf("%s %s answered %d, which the document does not declare", method, path, status)
		return
	}
	mediaType, _, _ := strings.Cut(contentType, ";")
	content, ok := resp.Content[mediaType]
	if !ok {
		t.Errorf("%s %s answered %d as %q, which the document does not declare", method, path, status, contentType)
		return
	}
	if !strings.Contains(mediaType, "json") {
		return
	}
	var instance any
	if err := json.Unmarshal(body, &instance); err != nil {
		t.Errorf("%s %s: the body is not JSON: %v", method, path, err)
		return
	}
	schema := inlined(t, d, content.Schema)
	var js jsonschema.Schema
	if err := json.Unmarshal(schema, &js); err != nil {
		t.Fatalf("a schema of %s %s does not parse: %v", method, pattern, err)
	}
	js.Schema = "https://json-schema.org/draft/2020-12/schema"
	resolved, err := js.Resolve(nil)
	if err != nil {
		t.Fatalf("a schema of %s %s does not resolve: %v", method, pattern, err)
	}
	if err := resolved.Validate(instance); err != nil {
		t.Errorf("%s %s answered %d with a body the document does not describe: %v\n%s", method, path, status, err, body)
	}
}

// matchPath reports whether a request path is an instance of a document's path template.
func matchPath(template, path string) bool {
	re := "^" + regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(template), `[^/]+`) + "$"
	return regexp.MustCompile(re).MatchString(path)
}

// inlined replaces the document's $refs in a schema with the schemas they name.
func inlined(t *testing.T, d document, schema json.RawMessage) json.RawMessage {
	var v any
	if err := json.Unmarshal(schema, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				name := strings.TrimPrefix(ref, "#/components/schemas/")
				var named any
				if err := json.Unmarshal(d.Components.Schemas[name], &named); err != nil {
					t.Fatalf("$ref %s names no schema", ref)
				}
				return walk(named)
			}
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	out, _ := json.Marshal(walk(v))
	return out
}

// The questions are listed a page at a time, oldest first; a bad page or limit is a problem, not a guess.
func TestQuestionsArePaged(t *testing.T) {
	f := serve(t, Config{})["miniredis"] // alone in its store: the real Redis holds other tests' questions
	var want []string
	for range 3 {
		want = append(want, parkedRun(t, f.store).ID)
	}
	var got []string
	for page, n := 1, 0; page != 0; n++ {
		status, data, _ := f.call(t, "GET", fmt.Sprintf("/api/v1/questions?limit=2&page=%d", page), nil)
		if status != http.StatusOK {
			t.Fatalf("page %d: %d %s", page, status, data)
		}
		list := decode[QuestionList](t, data)
		if list.Page != page || len(list.Questions) > 2 || n > 2 {
			t.Fatalf("page %d: %+v", page, list)
		}
		for _, q := range list.Questions {
			got = append(got, q.RunID)
		}
		page = list.NextPage
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v (oldest first)", got, want)
	}
	for _, bad := range []string{"limit=0", "limit=501", "page=0", "limit=many"} {
		if status, data, _ := f.call(t, "GET", "/api/v1/questions?"+bad, nil); status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", bad, status, data)
		}
	}
}
