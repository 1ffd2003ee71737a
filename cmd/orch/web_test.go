package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/bot/slackfake"
)

// A run parked in the terminal is answered from `orch web` in the embedded store: the answer is the browser's, the
// audit trail says so, and the worker of `orch web` takes the run on to its end.
func TestAParkedRunAnsweredFromTheWebView(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	r := orch(t, dir, "", "run", "--agent", "sim", "examples/plans/ambiguous_task.md")
	must(t, r, 3, "is parked")
	id := runID(t, r)

	port := freePort(t)
	_, out := startOrch(t, dir, nil, "web", "--addr", fmt.Sprintf("127.0.0.1:%d", port))
	waitOutput(t, out, "web view on http://")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}

	page := fetch(t, c, base+"/runs/"+id)
	for _, want := range []string{"What would you prefer?", "B) In-memory", "recommended"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the run page lacks %q:\n%s", want, page)
		}
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	esc := regexp.MustCompile(`name="escalation" value="([^"]+)"`).FindStringSubmatch(page)
	if csrf == nil || esc == nil {
		t.Fatalf("no answer form:\n%s", page)
	}
	resp, err := c.PostForm(base+"/runs/"+id+"/answer", url.Values{"csrf": {csrf[1]}, "escalation": {esc[1]}, "action": {"choose"}, "key": {"B"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "Your answer was taken: chose B) In-memory") {
		t.Fatalf("after the answer:\n%s", body)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if s := status(t, dir, id); s["status"] == "completed" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the run did not complete after the web answer: %v\n%s", s["status"], out.String())
		}
	}
	log := orch(t, dir, "", "escalation", "log", id)
	if !regexp.MustCompile(`resolved\s+\S+\s+web\s+chose B\) In-memory`).MatchString(log.stdout) {
		t.Errorf("the audit trail does not name the web:\n%s", log.stdout)
	}
}

func fetch(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", u, resp.StatusCode, b)
	}
	return string(b)
}

// The web view answers only to its own names wherever it is served; the endpoints beside it (Slack's, health,
// metrics) answer under any name, as Slack and monitors reach them under whatever name routes to the host.
func TestWebViewAnswersOnlyToItsNames(t *testing.T) {
	t.Parallel()
	s := startServe(t, "ORCH_WEB_TOKEN=names-test-token", "ORCH_PUBLIC_URL=https://orch.example.test/")
	waitOutput(t, s.out, "web view on http://")
	do := func(method, path, host string, body []byte) (int, string, http.Header) {
		t.Helper()
		var req *http.Request
		if strings.HasPrefix(path, "/slack/") {
			req = slackfake.Request(s.url, path, testSecret, body, "application/x-www-form-urlencoded")
		} else {
			req, _ = http.NewRequest(method, s.url+path, nil)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	for _, host := range []string{"orch.example.test", "orch.example.test:443", "localhost:3000", "127.0.0.1"} {
		if code, page, _ := do("GET", "/login", host, nil); code != http.StatusOK {
			t.Errorf("GET /login under %s: %d\n%s", host, code, page)
		}
	}
	code, page, h := do("GET", "/login", "evil.example:3000", nil)
	if code != http.StatusMisdirectedRequest || !strings.Contains(page, "orch.example.test (ORCH_PUBLIC_URL)") {
		t.Errorf("GET /login under a foreign name: %d %q", code, page)
	}
	if sc := h.Values("Set-Cookie"); len(sc) > 0 {
		t.Errorf("a foreign name got cookies: %q", sc)
	}
	if code, body, _ := do("POST", "/slack/commands", "evil.example", s.slack.SlashCommand("help", "U123ALICE", "C0RUNS")); code != http.StatusOK {
		t.Errorf("a signed Slack command under another name: %d %q", code, body)
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		if code, body, _ := do("GET", path, "monitor.internal", nil); code != http.StatusOK {
			t.Errorf("GET %s under another name: %d %q", path, code, body)
		}
	}

	// `orch web` without a token: loopback names only, and a bad ORCH_PUBLIC_URL is refused before anything starts.
	dir := workdir(t)
	port := freePort(t)
	_, out := startOrch(t, dir, nil, "web", "--no-worker", "--addr", fmt.Sprintf("127.0.0.1:%d", port))
	waitOutput(t, out, "web view on http://")
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
	req.Host = fmt.Sprintf("evil.example:%d", port)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest || len(resp.Header.Values("Set-Cookie")) > 0 {
		t.Errorf("orch web under a foreign name: %d, cookies %q", resp.StatusCode, resp.Header.Values("Set-Cookie"))
	}
	r := orchEnv(t, dir, []string{"ORCH_PUBLIC_URL=http://:8080/"}, nil, "web", "--no-worker", "--addr", "127.0.0.1:0")
	must(t, r, 2, "ORCH_PUBLIC_URL")
}

// `orch web --no-worker` starts a run from the view's form into the store, where it waits for a worker; cancelling
// it from the view aborts it, and the audit trail names the web and the person.
func TestARunStartedAndCancelledFromTheWebView(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	port := freePort(t)
	_, out := startOrch(t, dir, nil, "web", "--no-worker", "--agent", "sim", "--addr", fmt.Sprintf("127.0.0.1:%d", port))
	waitOutput(t, out, "web view on http://")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}

	form := fetch(t, c, base+"/runs/new")
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(form)
	if csrf == nil || !strings.Contains(form, `<option value="examples/plans/hello.md">`) {
		t.Fatalf("no start form offering the workspace's plans:\n%s", form)
	}
	page := postForm(t, c, base+"/runs", url.Values{"csrf": {csrf[1]}, "plan": {"examples/plans/hello.md"}})
	m := regexp.MustCompile(`Run (r-[a-z2-7]{10}) started\.`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("after the start:\n%s", page)
	}
	id := m[1]
	s := status(t, dir, id)
	if s["status"] != "queued" {
		t.Fatalf("the run started from the view is %v, want queued (no worker here)", s["status"])
	}
	if origin, _ := s["origin"].(map[string]any); origin["kind"] != "web" {
		t.Errorf("origin = %v, want the web", s["origin"])
	}

	page = postForm(t, c, base+"/runs/"+id+"/cancel", url.Values{"csrf": {csrf[1]}, "confirm": {"yes"}, "reason": {"started by mistake"}})
	if !strings.Contains(page, "Run "+id+" was cancelled: started by mistake") {
		t.Fatalf("after the cancel:\n%s", page)
	}
	if s := status(t, dir, id); s["status"] != "aborted" {
		t.Fatalf("status after the cancel: %v", s["status"])
	}
	log := orch(t, dir, "", "escalation", "log", id)
	if !regexp.MustCompile(`aborted\s+\S+\s+web\s+started by mistake`).MatchString(log.stdout) {
		t.Errorf("the audit trail does not name the web:\n%s", log.stdout)
	}
}

// postForm posts a form and returns the page it leads to.
func postForm(t *testing.T, c *http.Client, u string, form url.Values) string {
	t.Helper()
	resp, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d\n%s", u, resp.StatusCode, b)
	}
	return string(b)
}
