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
