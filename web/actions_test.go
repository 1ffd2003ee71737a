package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/runs"
)

// Start records the runs the front queues, as the queue would take them.
func (q *queue) Start(ctx context.Context, runID string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, "start/"+runID)
	return nil
}

func (q *queue) started() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for _, c := range q.calls {
		if id, ok := strings.CutPrefix(c, "start/"); ok {
			out = append(out, id)
		}
	}
	return out
}

// workspace is a directory with a plan of one task and the simulated agent's scenario for it.
func workspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "plans"), 0o755)
	os.WriteFile(filepath.Join(ws, "plans", "cache.md"), []byte("# Cache layer\n\n## Task 1.1: Add a cache\n\nAdd an in-memory cache.\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "plans", "cache.sim.yaml"), []byte("tasks:\n  \"1.1\":\n    - output: \"Done. All tests pass.\"\n"), 0o644)
	return ws
}

// viewCfg is what a test changes of the view's configuration.
type viewCfg struct {
	token   string
	allowed []string
	front   bool
	diffs   runs.Differ
	starter runs.Store // the front's store, when it is not the view's
}

type viewFixture struct {
	fixture
	ws string
}

// serveView starts the view with a front on a workspace of its own, on a store of each Redis under test.
func serveView(t *testing.T, vc viewCfg) map[string]viewFixture {
	t.Helper()
	out := map[string]viewFixture{}
	for name, c := range jobstest.Clients(t) {
		st := store.New(c, nil)
		q := &queue{}
		ws := workspace(t)
		cfg := Config{Store: st, Queue: q, Token: vc.token, LocalUser: "carol", AllowedUsers: vc.allowed, Diffs: vc.diffs}
		if vc.front {
			var created runs.Store = st
			if vc.starter != nil {
				created = vc.starter
			}
			cfg.Front = &runs.Front{Starter: &runs.Starter{Store: created, Queue: q},
				Options: jobs.Options{Agent: "sim", Brain: "heuristic", Sandbox: "local", MaxAttempts: 3,
					SimScenario: filepath.Join(ws, "plans", "cache.sim.yaml")}, Workspace: ws,
				Agents: runs.KnownAgents}
		}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(srv.Close)
		out[name] = viewFixture{fixture{srv, st, q}, ws}
	}
	return out
}

// formCSRF reads the CSRF token of a page the browser loads.
func formCSRF(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	_, page, _ := get(t, c, u)
	return csrfOf(t, page)
}

func TestStartARunFromTheView(t *testing.T) {
	for name, f := range serveView(t, viewCfg{front: true}) {
		t.Run(name, func(t *testing.T) {
			c := browser(t)
			_, list, _ := get(t, c, f.srv.URL+"/")
			if !strings.Contains(list, `href="/runs/new"`) {
				t.Error("the runs page has no way to start a run")
			}
			code, page, _ := get(t, c, f.srv.URL+"/runs/new")
			if code != http.StatusOK {
				t.Fatalf("GET /runs/new: %d\n%s", code, page)
			}
			for _, want := range []string{`<option value="plans/cache.md">`, `<option value="sim"`, `<option value="claude"`, `name="base"`} {
				if !strings.Contains(page, want) {
					t.Errorf("the start form lacks %s", want)
				}
			}
			csrf := csrfOf(t, page)

			// Without the CSRF token nothing starts.
			if code, _, _ := post(t, c, f.srv.URL+"/runs", url.Values{"plan": {"plans/cache.md"}}); code != http.StatusForbidden {
				t.Errorf("a start without the CSRF token got %d", code)
			}
			if got := f.queue.started(); len(got) != 0 {
				t.Fatalf("a forged start queued %v", got)
			}

			code, _, h := post(t, c, f.srv.URL+"/runs", url.Values{"csrf": {csrf}, "plan": {"plans/cache.md"}, "agent": {"sim"}})
			if code != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "?started=1") {
				t.Fatalf("start: %d, Location %q", code, h.Get("Location"))
			}
			id := strings.TrimPrefix(strings.Split(h.Get("Location"), "?")[0], "/runs/")
			run, err := f.store.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if run.PlanPath != "plans/cache.md" || run.Origin.Kind != "web" || run.Origin.User != "carol" || run.Options.Agent != "sim" {
				t.Errorf("run = plan %q origin %+v agent %q", run.PlanPath, run.Origin, run.Options.Agent)
			}
			if got := f.queue.started(); len(got) != 1 || got[0] != id {
				t.Errorf("queued %v, want %s", got, id)
			}
			_, page, _ = get(t, c, f.srv.URL+h.Get("Location"))
			if !strings.Contains(page, "Run "+id+" started.") {
				t.Errorf("the run's page does not say it started:\n%s", page)
			}

			// A task in words.
			code, page, h = post(t, c, f.srv.URL+"/runs", url.Values{"csrf": {csrf}, "text": {"make the jitter configurable"}})
			if code != http.StatusSeeOther {
				t.Fatalf("start in words: %d\n%s", code, page)
			}
			id = strings.TrimPrefix(strings.Split(h.Get("Location"), "?")[0], "/runs/")
			if run, _ := f.store.Get(context.Background(), id); run == nil || run.Request != "make the jitter configurable" {
				t.Errorf("the run in words: %+v", run)
			}
		})
	}
}

// What a person asks wrongly is said on the form, with what they wrote kept, and never where the workspace is.
func TestAStartThatCannotBe(t *testing.T) {
	f := serveView(t, viewCfg{front: true})["miniredis"]
	c := browser(t)
	csrf := formCSRF(t, c, f.srv.URL+"/runs/new")
	for _, tc := range []struct {
		name string
		form url.Values
		want string
	}{
		{"outside the workspace", url.Values{"plan": {"../../etc/passwd"}}, "../../etc/passwd is outside the workspace"},
		{"an absolute path elsewhere", url.Values{"plan": {"/etc/passwd"}}, "/etc/passwd is outside the workspace"},
		{"no such plan", url.Values{"plan": {"plans/nothere.md"}}, "plans/nothere.md is not in the workspace"},
		{"an unknown agent", url.Values{"plan": {"plans/cache.md"}, "agent": {"cmd:rm -rf /"}}, `agent &#34;cmd:rm -rf /&#34; is not one this server runs`},
		{"both", url.Values{"plan": {"plans/cache.md"}, "text": {"and words"}}, "not both"},
		{"neither", url.Values{}, "ask for a plan"},
		{"a base like a flag", url.Values{"text": {"x"}, "base": {"--upload-pack=evil"}}, "is not a git ref"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.form.Set("csrf", csrf)
			code, page, _ := post(t, c, f.srv.URL+"/runs", tc.form)
			if code != http.StatusUnprocessableEntity || !strings.Contains(page, tc.want) {
				t.Errorf("%d, want 422 saying %q:\n%s", code, tc.want, page)
			}
			if strings.Contains(page, f.ws) {
				t.Errorf("the message names the workspace's place on the server (%s):\n%s", f.ws, page)
			}
			if p := tc.form.Get("plan"); p != "" && !strings.Contains(page, `value="`+p+`"`) {
				t.Errorf("the form lost what was written: %q", p)
			}
		})
	}
	if got := f.queue.started(); len(got) != 0 {
		t.Errorf("refused asks queued %v", got)
	}
}

// failingStore refuses every run: the server's own failure, not the person's.
type failingStore struct{}

func (failingStore) Create(context.Context, *jobs.Run, ...jobs.Event) error {
	return errors.New("dial tcp 10.0.0.7:6379: connection refused")
}

func TestAStartTheServerFails(t *testing.T) {
	f := serveView(t, viewCfg{front: true, starter: failingStore{}})["miniredis"]
	c := browser(t)
	csrf := formCSRF(t, c, f.srv.URL+"/runs/new")
	code, page, _ := post(t, c, f.srv.URL+"/runs", url.Values{"csrf": {csrf}, "plan": {"plans/cache.md"}})
	if code != http.StatusInternalServerError || !strings.Contains(page, "the server failed") || strings.Contains(page, "10.0.0.7") {
		t.Errorf("%d:\n%s", code, page)
	}
}

// A view without a front follows and answers runs, and says plainly that it starts none.
func TestAViewThatStartsNoRuns(t *testing.T) {
	f := serve(t, "")["miniredis"]
	run := parked(t, f.store, "Which cache?")
	c := browser(t)
	_, list, _ := get(t, c, f.srv.URL+"/")
	if strings.Contains(list, `href="/runs/new"`) {
		t.Error("a view without a front offers to start runs")
	}
	if _, page, _ := get(t, c, f.srv.URL+"/runs/"+run.ID); strings.Contains(page, "/rerun") {
		t.Error("a view without a front offers to run again")
	}
	if code, page, _ := get(t, c, f.srv.URL+"/runs/new"); code != http.StatusNotFound || !strings.Contains(page, "it starts none") {
		t.Errorf("GET /runs/new: %d\n%s", code, page)
	}
	csrf := formCSRF(t, c, f.srv.URL+"/runs/"+run.ID)
	if code, page, _ := post(t, c, f.srv.URL+"/runs", url.Values{"csrf": {csrf}, "plan": {"plans/cache.md"}}); code != http.StatusNotFound || !strings.Contains(page, "it starts none") {
		t.Errorf("POST /runs: %d\n%s", code, page)
	}
}

// signIn signs a browser in as name and returns it with its CSRF token.
func signIn(t *testing.T, base, token, name string) (*http.Client, string) {
	t.Helper()
	c := browser(t)
	csrf := formCSRF(t, c, base+"/login")
	if code, _, _ := post(t, c, base+"/login", url.Values{"csrf": {csrf}, "token": {token}, "name": {name}, "next": {"/"}}); code != http.StatusSeeOther {
		t.Fatalf("sign-in as %s: %d", name, code)
	}
	return c, csrf
}

// Starting, starting again and cancelling need the right to answer (ORCH_ALLOWED_USERS): someone else sees no such
// forms, and their posts change nothing.
func TestOnlyAllowedPeopleDriveRuns(t *testing.T) {
	f := serveView(t, viewCfg{front: true, token: "s3cret-token", allowed: []string{"U123"}})["miniredis"]
	run := parked(t, f.store, "Which cache?")
	c, csrf := signIn(t, f.srv.URL, "s3cret-token", "U999")
	_, page, _ := get(t, c, f.srv.URL+"/runs/"+run.ID)
	for _, not := range []string{`action="/runs/` + run.ID + `/cancel"`, `action="/runs/` + run.ID + `/rerun"`} {
		if strings.Contains(page, not) {
			t.Errorf("someone outside ORCH_ALLOWED_USERS is offered %s", not)
		}
	}
	_, list, _ := get(t, c, f.srv.URL+"/")
	if strings.Contains(list, `href="/runs/new"`) {
		t.Error("someone outside ORCH_ALLOWED_USERS is offered to start a run")
	}
	for path, form := range map[string]url.Values{
		"/runs":                       {"csrf": {csrf}, "plan": {"plans/cache.md"}},
		"/runs/" + run.ID + "/cancel": {"csrf": {csrf}, "confirm": {"yes"}},
		"/runs/" + run.ID + "/rerun":  {"csrf": {csrf}},
	} {
		if code, page, _ := post(t, c, f.srv.URL+path, form); code != http.StatusForbidden || !strings.Contains(page, "not allowed") {
			t.Errorf("POST %s from outside ORCH_ALLOWED_USERS: %d", path, code)
		}
	}
	if got := f.queue.started(); len(got) != 0 {
		t.Errorf("runs started: %v", got)
	}
	if r, _ := f.store.Get(context.Background(), run.ID); r.Status.Terminal() {
		t.Error("the run was cancelled")
	}
	// The person allowed does it.
	c, csrf = signIn(t, f.srv.URL, "s3cret-token", "U123")
	if code, _, _ := post(t, c, f.srv.URL+"/runs/"+run.ID+"/cancel", url.Values{"csrf": {csrf}, "confirm": {"yes"}}); code != http.StatusSeeOther {
		t.Errorf("cancel by U123: %d", code)
	}
}

func TestCancelARun(t *testing.T) {
	for name, f := range serveView(t, viewCfg{front: true}) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			run := parked(t, f.store, "Which cache?")
			c := browser(t)
			_, page, _ := get(t, c, f.srv.URL+"/runs/"+run.ID)
			if !strings.Contains(page, `action="/runs/`+run.ID+`/cancel"`) || !strings.Contains(page, "data-confirm=\"Cancel run "+run.ID) {
				t.Fatalf("no cancel form that asks first:\n%s", page)
			}
			csrf := csrfOf(t, page)
			if code, _, _ := post(t, c, f.srv.URL+"/runs/"+run.ID+"/cancel", url.Values{"confirm": {"yes"}}); code != http.StatusForbidden {
				t.Errorf("a cancel without the CSRF token: %d", code)
			}
			if code, page, _ := post(t, c, f.srv.URL+"/runs/"+run.ID+"/cancel", url.Values{"csrf": {csrf}}); code != http.StatusBadRequest || !strings.Contains(page, "confirms the cancel") {
				t.Errorf("a cancel not confirmed: %d", code)
			}
			if r, _ := f.store.Get(ctx, run.ID); r.Status.Terminal() {
				t.Fatal("a refused cancel ended the run")
			}
			code, _, h := post(t, c, f.srv.URL+"/runs/"+run.ID+"/cancel", url.Values{"csrf": {csrf}, "confirm": {"yes"}, "reason": {"wrong plan"}})
			if code != http.StatusSeeOther {
				t.Fatalf("cancel: %d", code)
			}
			r, _ := f.store.Get(ctx, run.ID)
			if r.Status != jobs.RunAborted {
				t.Fatalf("status %s after the cancel", r.Status)
			}
			audit, _ := f.store.Audit(ctx, run.ID)
			if last := audit[len(audit)-1]; last.By != "carol" || last.Via != "web" {
				t.Errorf("audit = %+v, want carol via web", last)
			}
			_, page, _ = get(t, c, f.srv.URL+h.Get("Location"))
			if !strings.Contains(page, "Run "+run.ID+" was cancelled: wrong plan") || strings.Contains(page, `/cancel"`) {
				t.Errorf("after the cancel the page says:\n%s", page)
			}
			// Cancelling what has ended says so.
			code, page, _ = post(t, c, f.srv.URL+"/runs/"+run.ID+"/cancel", url.Values{"csrf": {csrf}, "confirm": {"yes"}})
			if code != http.StatusConflict || !strings.Contains(page, "has already ended (aborted)") {
				t.Errorf("a second cancel: %d\n%s", code, page)
			}
			if code, page, _ := post(t, c, f.srv.URL+"/runs/r-nosuchrun/cancel", url.Values{"csrf": {csrf}, "confirm": {"yes"}}); code != http.StatusNotFound {
				t.Errorf("cancel of no run: %d\n%s", code, page)
			}

			// A running run, with no question, is cancelled as well.
			running := &jobs.Run{ID: jobs.NewRunID(), PlanTitle: "Busy", Status: jobs.RunRunning, Origin: jobs.Origin{Kind: "cli", User: "bob"},
				Tasks: []*jobs.Task{{ID: "1", Title: "Work", Status: jobs.TaskRunning}}}
			if err := f.store.Create(ctx, running); err != nil {
				t.Fatal(err)
			}
			if code, _, _ := post(t, c, f.srv.URL+"/runs/"+running.ID+"/cancel", url.Values{"csrf": {csrf}, "confirm": {"yes"}}); code != http.StatusSeeOther {
				t.Fatalf("cancel of a running run: %d", code)
			}
			if r, _ := f.store.Get(ctx, running.ID); r.Status != jobs.RunAborted || !strings.Contains(r.Reason, "cancelled from the web by carol") {
				t.Errorf("the running run: %s %q", r.Status, r.Reason)
			}
		})
	}
}

func TestStartARunAgain(t *testing.T) {
	for name, f := range serveView(t, viewCfg{front: true}) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := browser(t)
			csrf := formCSRF(t, c, f.srv.URL+"/runs/new")
			_, _, h := post(t, c, f.srv.URL+"/runs", url.Values{"csrf": {csrf}, "plan": {"plans/cache.md"}, "agent": {"sim"}})
			first := strings.TrimPrefix(strings.Split(h.Get("Location"), "?")[0], "/runs/")
			_, page, _ := get(t, c, f.srv.URL+"/runs/"+first)
			if !strings.Contains(page, `action="/runs/`+first+`/rerun"`) {
				t.Fatalf("no Run again:\n%s", page)
			}
			// Or the start form, filled in as the run was asked for.
			if !strings.Contains(page, `href="/runs/new?agent=sim&amp;plan=plans%2Fcache.md"`) {
				t.Errorf("no Change and run with the run's plan and agent:\n%s", page)
			}
			_, form, _ := get(t, c, f.srv.URL+"/runs/new?agent=sim&plan=plans%2Fcache.md")
			if !strings.Contains(form, `name="plan" value="plans/cache.md"`) || !strings.Contains(form, `<option value="sim" selected>`) {
				t.Errorf("the start form is not filled in:\n%s", form)
			}
			code, _, h := post(t, c, f.srv.URL+"/runs/"+first+"/rerun", url.Values{"csrf": {csrf}})
			if code != http.StatusSeeOther {
				t.Fatalf("rerun: %d", code)
			}
			again := strings.TrimPrefix(strings.Split(h.Get("Location"), "?")[0], "/runs/")
			r, err := f.store.Get(ctx, again)
			if err != nil || again == first {
				t.Fatalf("the new run %q: %v", again, err)
			}
			if r.PlanPath != "plans/cache.md" || r.Options.Agent != "sim" || r.Origin.Kind != "web" {
				t.Errorf("the run again: plan %q agent %q origin %+v", r.PlanPath, r.Options.Agent, r.Origin)
			}
			_, page, _ = get(t, c, f.srv.URL+h.Get("Location"))
			if !strings.Contains(page, "started again, as "+first+" was asked for") {
				t.Errorf("the new run's page:\n%s", page)
			}

			// Words are asked again as they were.
			words := &jobs.Run{ID: jobs.NewRunID(), PlanTitle: "fix it", Request: "fix the flaky retry test", Status: jobs.RunCompleted,
				Options: jobs.Options{Agent: "sim"}, Origin: jobs.Origin{Kind: "slack", User: "U1"}}
			f.store.Create(ctx, words)
			_, _, h = post(t, c, f.srv.URL+"/runs/"+words.ID+"/rerun", url.Values{"csrf": {csrf}})
			id := strings.TrimPrefix(strings.Split(h.Get("Location"), "?")[0], "/runs/")
			if r, _ := f.store.Get(ctx, id); r == nil || r.Request != "fix the flaky retry test" {
				t.Errorf("the words again: %+v", r)
			}

			// A plan from another workspace is not this server's to start: it says so, without a server path.
			elsewhere := &jobs.Run{ID: jobs.NewRunID(), PlanTitle: "x", PlanPath: "plans/x.md", Workspace: "/srv/other-checkout",
				Status: jobs.RunFailed, Options: jobs.Options{Agent: "sim"}}
			f.store.Create(ctx, elsewhere)
			code, page, _ = post(t, c, f.srv.URL+"/runs/"+elsewhere.ID+"/rerun", url.Values{"csrf": {csrf}})
			if code != http.StatusUnprocessableEntity || !strings.Contains(page, "not in this server&#39;s workspace") || strings.Contains(page, "/srv/") {
				t.Errorf("rerun of another workspace's plan: %d\n%s", code, page)
			}
		})
	}
}

// The questions page answers in place: each question with its own answers, back to the questions page after.
func TestAnswerFromTheQuestionsPage(t *testing.T) {
	for name, f := range serve(t, "") {
		t.Run(name, func(t *testing.T) {
			run := parked(t, f.store, "Which cache?")
			e := run.OpenEscalation()
			c := browser(t)
			_, page, _ := get(t, c, f.srv.URL+"/questions")
			for _, want := range []string{`data-key="A"`, "B) In-memory · recommended", `name="back" value="questions"`, `value="abort"`} {
				if !strings.Contains(page, want) {
					t.Errorf("the questions page lacks %s", want)
				}
			}
			if strings.Contains(page, `value="retry"`) {
				t.Error("the questions page offers Retry for an agent's question")
			}
			form := url.Values{"csrf": {csrfOf(t, page)}, "escalation": {e.ID}, "action": {"choose"}, "key": {"B"}, "back": {"questions"}}
			code, _, h := post(t, c, f.srv.URL+"/runs/"+run.ID+"/answer", form)
			if code != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/questions?") {
				t.Fatalf("answer: %d %q", code, h.Get("Location"))
			}
			_, page, _ = get(t, c, f.srv.URL+h.Get("Location"))
			if !strings.Contains(page, "Run "+run.ID+": Your answer was taken: chose B) In-memory") || !strings.Contains(page, "No question is waiting") {
				t.Errorf("after the answer the questions page says:\n%s", page)
			}
			form.Set("key", "A")
			_, _, h = post(t, c, f.srv.URL+"/runs/"+run.ID+"/answer", form)
			_, page, _ = get(t, c, f.srv.URL+h.Get("Location"))
			if !strings.Contains(page, "Someone answered first: carol (web)") {
				t.Errorf("a late answer on the questions page:\n%s", page)
			}
		})
	}
}

// Which controls a question shows, and which answers it takes, are the answers it has (escalation.AnswersOf).
func TestOnlyTheAnswersAQuestionHas(t *testing.T) {
	f := serve(t, "")["miniredis"]
	ctx := context.Background()
	failing := parked(t, f.store, "placeholder")
	// A task that failed for good: Retry, Resume and Force continue are its answers.
	failed := &jobs.Run{ID: jobs.NewRunID(), PlanTitle: "Flaky", Status: jobs.RunRunning, Origin: jobs.Origin{Kind: "cli", User: "a"},
		Options: jobs.Options{MaxAttempts: 3}, Tasks: []*jobs.Task{{ID: "1", Title: "Fix", Status: jobs.TaskRunning}}}
	f.store.Create(ctx, failed)
	failed, _ = f.store.Update(ctx, failed.ID, func(r *jobs.Run, c *jobs.Change) error {
		escalation.Open(r, r.Tasks[0], c, escalation.Spec{Trigger: jobs.TriggerAttemptCap, Source: "orch", Question: "Task 1 failed 3 times."}, time.Now())
		return nil
	})
	c := browser(t)
	_, page, _ := get(t, c, f.srv.URL+"/runs/"+failed.ID)
	for _, want := range []string{`value="retry"`, `value="resume"`, "Force continue", `value="abort"`} {
		if !strings.Contains(page, want) {
			t.Errorf("a failed task's question lacks %s", want)
		}
	}
	// An agent's question takes no retry, even from a form made by hand.
	_, page, _ = get(t, c, f.srv.URL+"/runs/"+failing.ID)
	code, msg, _ := post(t, c, f.srv.URL+"/runs/"+failing.ID+"/answer", url.Values{"csrf": {csrfOf(t, page)},
		"escalation": {failing.OpenEscalation().ID}, "action": {"retry"}})
	if code != http.StatusBadRequest || !strings.Contains(msg, "cannot be answered with retry") {
		t.Errorf("retry of an agent's question: %d\n%s", code, msg)
	}
	if r, _ := f.store.Get(ctx, failing.ID); r.OpenEscalation() == nil {
		t.Error("a refused retry answered the question")
	}
}

// emit appends events to a run as its worker would.
func emit(t testing.TB, st *store.Store, id string, events ...jobs.Event) {
	t.Helper()
	if _, err := st.Update(context.Background(), id, func(r *jobs.Run, c *jobs.Change) error {
		for _, e := range events {
			c.Emit(e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// The timeline tells the run's story by default, every event one click away; while the agent works, its latest tool
// calls are on the page.
func TestTimelineAndTheAgentAtWork(t *testing.T) {
	f := serve(t, "")["miniredis"]
	ctx := context.Background()
	run := &jobs.Run{ID: jobs.NewRunID(), PlanTitle: "Two tasks", Status: jobs.RunRunning, Origin: jobs.Origin{Kind: "cli", User: "a"},
		Tasks: []*jobs.Task{{ID: "1", Title: "First", Status: jobs.TaskCompleted}, {ID: "2", Title: "Second", Status: jobs.TaskRunning}}}
	if err := f.store.Create(ctx, run, jobs.NewEvent(run.ID, "", jobs.RunStartedEvent{Tasks: 2})); err != nil {
		t.Fatal(err)
	}
	emit(t, f.store, run.ID,
		jobs.NewEvent(run.ID, "1", jobs.TaskStartedEvent{Title: "First", Attempt: 1, MaxAttempts: 3, Agent: "sim"}),
		jobs.NewEvent(run.ID, "1", jobs.AgentActivityEvent{Calls: []string{"Read old.go"}}),
		jobs.NewEvent(run.ID, "1", jobs.TaskCompletedEvent{Summary: "first done"}),
		jobs.NewEvent(run.ID, "1", jobs.CheckpointSavedEvent{}),
		jobs.NewEvent(run.ID, "2", jobs.TaskStartedEvent{Title: "Second", Attempt: 1, MaxAttempts: 3, Agent: "sim"}),
		jobs.NewEvent(run.ID, "2", jobs.AgentActivityEvent{Calls: []string{"Bash: go test ./...", "Edit: cache.go", "Bash: deploy AKIA0123456789ABCDEF"}}))
	c := browser(t)
	_, page, _ := get(t, c, f.srv.URL+"/runs/"+run.ID)
	timeline := page[strings.Index(page, `id="timeline"`):]
	for _, want := range []string{"run_started", "task_started", "task_completed", "first done"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("the timeline lacks %s", want)
		}
	}
	for _, not := range []string{"agent_activity", "checkpoint_saved"} {
		if strings.Contains(timeline, not) {
			t.Errorf("the timeline shows %s by default", not)
		}
	}
	if !strings.Contains(timeline, `href="/runs/`+run.ID+`?all=1#timeline"`) {
		t.Error("every event is not a click away")
	}
	if strings.Contains(page, "AKIA0123456789ABCDEF") {
		t.Error("a secret in a tool call reached the page")
	}
	live := page[strings.Index(page, `id="live"`):strings.Index(page, `id="question"`)]
	if strings.Contains(live, "hidden") || !strings.Contains(live, "Bash: go test ./...") || !strings.Contains(live, "Edit: cache.go") ||
		strings.Contains(live, "Read old.go") {
		t.Errorf("the agent at work shows:\n%s", live)
	}
	_, page, _ = get(t, c, f.srv.URL+"/runs/"+run.ID+"?all=1")
	timeline = page[strings.Index(page, `id="timeline"`):]
	for _, want := range []string{"agent_activity", "checkpoint_saved", "Read old.go"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("every event lacks %s", want)
		}
	}
	// Once the attempt has ended, nobody is at work.
	emit(t, f.store, run.ID, jobs.NewEvent(run.ID, "2", jobs.TaskCompletedEvent{Summary: "second done"}))
	_, page, _ = get(t, c, f.srv.URL+"/runs/"+run.ID)
	if !strings.Contains(page, `id="live" class="live" hidden`) {
		t.Error("the live panel shows an agent after its attempt ended")
	}
}

// The list shows each run's progress, duration, cost and branch.
func TestRunsListColumns(t *testing.T) {
	f := serve(t, "")["miniredis"]
	ctx := context.Background()
	start := time.Now().Add(-90 * time.Minute)
	run := &jobs.Run{ID: jobs.NewRunID(), PlanTitle: "Cols", Status: jobs.RunCompleted, Origin: jobs.Origin{Kind: "web", User: "a"},
		Git: &jobs.Git{Branch: "orch/cols", Base: "main"}, CreatedAt: start, EndedAt: start.Add(75 * time.Minute),
		Tasks: []*jobs.Task{
			{ID: "1", Status: jobs.TaskCompleted, Attempts: []*jobs.Attempt{{CostUSD: 0.25, Brain: jobs.BrainUsage{CostUSD: 0.01}}}},
			{ID: "2", Status: jobs.TaskForced}, {ID: "3", Status: jobs.TaskFailed}}}
	if err := f.store.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	_, page, _ := get(t, browser(t), f.srv.URL+"/")
	for _, want := range []string{`title="2 of 3 tasks done">2/3<`, ">$0.2600<", "<code>orch/cols</code>", `data-label="Duration"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the list lacks %s:\n%s", want, page)
		}
	}
}

// fakeDiffs writes a diff of n files; file 3 is big, one line holds markup and a secret.
type fakeDiffs struct {
	n   int
	err error
}

func (d fakeDiffs) Diff(_ context.Context, g *jobs.Git, stat bool, w io.Writer) error {
	if d.err != nil {
		return d.err
	}
	for i := 1; i <= d.n; i++ {
		name := fmt.Sprintf("pkg/file%04d.go", i)
		fmt.Fprintf(w, "diff --git a/%s b/%s\nindex 1111111..2222222 100644\n--- a/%s\n+++ b/%s\n@@ -1,3 +1,3 @@\n package pkg\n-var old = %d\n+var next = %d\n", name, name, name, name, i, i)
		if i == 3 {
			for j := 0; j < 20000; j++ {
				fmt.Fprintf(w, "+// line %d of a big generated file, long enough to weigh on the page\n", j)
			}
		}
		if i == 2 {
			fmt.Fprint(w, "+const script = \"<script>alert(1)</script>\"\n+const key = \"AKIA0123456789ABCDEF\"\n")
		}
	}
	fmt.Fprint(w, "diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0000000..3333333\nBinary files /dev/null and b/logo.png differ\n")
	return nil
}

func diffRun(t *testing.T, st *store.Store, git *jobs.Git) *jobs.Run {
	t.Helper()
	run := &jobs.Run{ID: jobs.NewRunID(), PlanTitle: "Diffy", Status: jobs.RunCompleted, Origin: jobs.Origin{Kind: "cli", User: "a"}, Git: git}
	if err := st.Create(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	return run
}

func TestTheDiffOfARun(t *testing.T) {
	f := serveView(t, viewCfg{diffs: fakeDiffs{n: 120}})["miniredis"]
	run := diffRun(t, f.store, &jobs.Git{Branch: "orch/x", Base: "main", BaseCommit: "abc123", Head: "def456", FilesChanged: 121})
	c := browser(t)
	_, page, _ := get(t, c, f.srv.URL+"/runs/"+run.ID)
	if !strings.Contains(page, `href="/runs/`+run.ID+`/diff"`) {
		t.Fatal("the run's page has no link to its diff")
	}
	code, page, _ := get(t, c, f.srv.URL+"/runs/"+run.ID+"/diff")
	if code != http.StatusOK {
		t.Fatalf("diff: %d\n%s", code, page)
	}
	for _, want := range []string{"121 files changed", "page 1 of 3: files 1–50, 71 more on the other pages", `id="f50"`,
		`<span class="del">-var old = 1</span>`, `<span class="add">&#43;var next = 1</span>`, `<span class="hunk">@@ -1,3 &#43;1,3 @@</span>`,
		"more lines of this file not shown", `href="/runs/` + run.ID + `/diff?file=3"`, `href="/runs/` + run.ID + `/diff?page=1"`,
		"&lt;script&gt;alert(1)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the diff page lacks %q", want)
		}
	}
	if strings.Contains(page, `id="f51"`) || strings.Contains(page, "<script>alert") || strings.Contains(page, "AKIA0123456789ABCDEF") {
		t.Error("the first page shows a file of the next, markup or a secret")
	}
	if len(page) > diffPageBytes*3 {
		t.Errorf("the page is %d bytes", len(page))
	}
	_, page, _ = get(t, c, f.srv.URL+"/runs/"+run.ID+"/diff?page=2")
	if !strings.Contains(page, "files 101–121") || !strings.Contains(page, "logo.png") || !strings.Contains(page, "A binary file") ||
		!strings.Contains(page, `<span class="badge added">added</span>`) {
		t.Errorf("the last page:\n%s", page)
	}
	_, page, _ = get(t, c, f.srv.URL+"/runs/"+run.ID+"/diff?file=3")
	if !strings.Contains(page, "file 3 alone") || strings.Contains(page, `id="f4"`) || !strings.Contains(page, "line 5000 of a big") ||
		!strings.Contains(page, "more lines of this file not shown (a page shows 512 KiB of a file)") || !strings.Contains(page, "git diff abc123 orch/x -- pkg/file0003.go") {
		t.Errorf("file 3 alone:\n%.3000s", page)
	}
	if _, page, _ = get(t, c, f.srv.URL+"/runs/"+run.ID+"/diff?page=9"); !strings.Contains(page, "page 10 is past its end") {
		t.Errorf("a page past the end:\n%s", page)
	}
}

// What the diff page says when there is none to show.
func TestNoDiffToShow(t *testing.T) {
	f := serveView(t, viewCfg{diffs: fakeDiffs{err: errors.New("git diff: /srv/orch/gitdirs/x: no such object")}})["miniredis"]
	c := browser(t)
	plain := diffRun(t, f.store, nil)
	if code, page, _ := get(t, c, f.srv.URL+"/runs/"+plain.ID+"/diff"); code != http.StatusNotFound || !strings.Contains(page, "plain directory") {
		t.Errorf("a run without a branch: %d\n%s", code, page)
	}
	fresh := diffRun(t, f.store, &jobs.Git{Branch: "orch/y", Base: "main"})
	if code, page, _ := get(t, c, f.srv.URL+"/runs/"+fresh.ID+"/diff"); code != http.StatusOK || !strings.Contains(page, "Nothing on the branch yet") {
		t.Errorf("a run not started: %d\n%s", code, page)
	}
	broken := diffRun(t, f.store, &jobs.Git{Branch: "orch/z", Base: "main", BaseCommit: "abc"})
	if code, page, _ := get(t, c, f.srv.URL+"/runs/"+broken.ID+"/diff"); code != http.StatusServiceUnavailable || strings.Contains(page, "/srv/orch") {
		t.Errorf("a diff git cannot read: %d\n%s", code, page)
	}
	none := serveView(t, viewCfg{})["miniredis"]
	run := diffRun(t, none.store, &jobs.Git{Branch: "orch/w", Base: "main", BaseCommit: "abc"})
	if _, page, _ := get(t, c, none.srv.URL+"/runs/"+run.ID); strings.Contains(page, "/diff\"") {
		t.Error("a view without diffs links to one")
	}
	if code, _, _ := get(t, c, none.srv.URL+"/runs/"+run.ID+"/diff"); code != http.StatusNotFound {
		t.Errorf("a view without diffs: %d", code)
	}
}

// The parser keeps a line too long cut, whatever the chunks git writes it in.
func TestADiffLineTooLong(t *testing.T) {
	d := newDiffPage(0, 10, diffFileBytes)
	d.Write([]byte("diff --git a/min.js b/min.js\n@@ -1 +1 @@\n+"))
	for range 100 {
		d.Write([]byte(strings.Repeat("x", 1000)))
	}
	d.Write([]byte("\n-gone"))
	d.Close()
	f := d.Files[0]
	if len(f.Lines) != 3 || f.Adds != 1 || f.Dels != 1 || len(f.Lines[1].Text) > diffLineBytes+40 || !strings.HasSuffix(f.Lines[1].Text, "(line cut)") {
		t.Errorf("lines %d, +%d -%d, the long one %d bytes", len(f.Lines), f.Adds, f.Dels, len(f.Lines[1].Text))
	}
}
