package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// These tests drive `orch web` in a real headless Chromium, as a person would: they click the links and the buttons
// and read what the page shows. Without a browser on PATH they skip, unless ORCH_TEST_BROWSER=required (CI sets it):
// then a missing browser fails them.

// browserWait bounds each wait for the page to show something: the machine runs these beside many other tests, and a
// browser that starts slowly is no failure; a page that never shows what it should is.
const browserWait = 2 * time.Minute

// findBrowser is the Chromium or Chrome on PATH.
func findBrowser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("ORCH_TEST_BROWSER") == "required" {
		t.Fatal("ORCH_TEST_BROWSER=required but no chromium, chromium-browser, google-chrome or google-chrome-stable on PATH")
	}
	t.Skip("needs Chromium or Chrome on PATH (ORCH_TEST_BROWSER=required makes this a failure)")
	return ""
}

// newBrowser starts a headless browser of its own (its own profile, so its own cookies) and returns the context that
// drives its one tab. The browser is closed when the test ends.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := findBrowser(t)
	profile, err := os.MkdirTemp("", "orch-browser")
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	flags := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(profile),
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		// Every address these tests open is this machine's: no proxy from the environment may carry them elsewhere.
		chromedp.Flag("no-proxy-server", true),
		chromedp.CombinedOutput(out),
	}
	if os.Geteuid() == 0 {
		flags = append(flags, chromedp.NoSandbox) // Chromium refuses to start its sandbox as root
	}
	parent, stop := context.WithTimeout(context.Background(), 4*browserWait)
	alloc, cancelAlloc := chromedp.NewExecAllocator(parent, append(chromedp.DefaultExecAllocatorOptions[:], flags...)...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		closing, done := context.WithTimeout(ctx, 10*time.Second)
		chromedp.Cancel(closing)
		done()
		cancel()
		cancelAlloc()
		stop()
		os.RemoveAll(profile)
		if t.Failed() {
			t.Logf("browser output (last 2 KiB, D-Bus complaints left out):\n%s", tail(quiet(out.String()), 2048))
		}
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v\n%s", path, err, tail(quiet(out.String()), 2048))
	}
	return ctx
}

// quiet leaves out what Chromium says about the D-Bus a test machine has no need of.
func quiet(s string) string {
	var keep []string
	for line := range strings.Lines(s) {
		if !strings.Contains(line, "dbus") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "")
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// open loads a page and waits until it has loaded.
func open(ctx context.Context, t *testing.T, url string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
}

// waitPage polls the page until the JavaScript condition holds. A page in the middle of reloading cannot answer:
// it is asked again.
func waitPage(ctx context.Context, t *testing.T, cond, what string) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(browserWait); ; time.Sleep(100 * time.Millisecond) {
		var ok bool
		if ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool](cond)); err == nil && ok {
			return
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
	}
	t.Fatalf("the page never showed %s (last error: %v)\nat %s:\n%s", what, err, location(ctx), pageText(ctx))
}

// waitText waits until the page's text says what.
func waitText(ctx context.Context, t *testing.T, what string) {
	t.Helper()
	waitPage(ctx, t, fmt.Sprintf("document.body !== null && document.body.innerText.includes(%s)", strconv.Quote(what)), strconv.Quote(what))
}

// waitElement waits until an element matches the CSS selector.
func waitElement(ctx context.Context, t *testing.T, sel string) {
	t.Helper()
	waitPage(ctx, t, fmt.Sprintf("document.querySelector(%s) !== null", strconv.Quote(sel)), sel)
}

// click waits for the element and clicks it with the mouse, as a person would.
func click(ctx context.Context, t *testing.T, sel string) {
	t.Helper()
	waitElement(ctx, t, sel)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("clicking %s: %v\n%s", sel, err, pageText(ctx))
	}
}

func location(ctx context.Context) string {
	u, _ := chromedp.Run(ctx, chromedp.Location())
	return u
}

func pageText(ctx context.Context) string {
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body ? document.body.innerText : ''"))
	if err != nil {
		return fmt.Sprintf("(no text: %v)", err)
	}
	return s
}

// screenshotDir is where the tests leave their screenshots: ORCH_SCREENSHOTS, or a directory the test removes.
// docs/screenshots holds the ones the README shows: ORCH_SCREENSHOTS=$PWD/docs/screenshots go test ./cmd/orch -run
// TestBrowserAnswers takes them again (a relative ORCH_SCREENSHOTS is relative to cmd/orch, where tests run).
func screenshotDir(t *testing.T) string {
	if dir := os.Getenv("ORCH_SCREENSHOTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// screenshot saves the whole page, as PNG.
func screenshot(ctx context.Context, t *testing.T, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// parkedWebRun parks the ambiguous-cache run in a fresh directory and serves that store with `orch web` on addr
// (a printf format for the port), with env. It returns the directory, the run and the port.
func parkedWebRun(t *testing.T, addr string, env ...string) (dir, id string, port int) {
	t.Helper()
	dir = workdir(t)
	r := orch(t, dir, "", "run", "--agent", "sim", "examples/plans/ambiguous_task.md")
	must(t, r, 3, "is parked")
	id = runID(t, r)
	port = freePort(t)
	_, out := startOrch(t, dir, env, "web", "--addr", fmt.Sprintf(addr, port))
	waitOutput(t, out, "web view on http://")
	return dir, id, port
}

// A person opens the runs, sees the parked run with its question, opens it, chooses B with the mouse, and watches
// the run go on to the end without reloading: the page's own script follows the run and shows it completed.
func TestBrowserAnswersAParkedRunAndFollowsItLive(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	shots := screenshotDir(t)
	dir, id, port := parkedWebRun(t, "127.0.0.1:%d")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	open(ctx, t, base+"/questions")
	waitText(ctx, t, "Implement caching")
	screenshot(ctx, t, shots, "questions.png")

	open(ctx, t, base+"/")
	row := fmt.Sprintf("tr:has(a[href=%q])", "/runs/"+id)
	waitPage(ctx, t, fmt.Sprintf("(document.querySelector(%s) || {innerText: ''}).innerText.includes('question waiting')", strconv.Quote(row)),
		"the run listed with a question waiting")
	screenshot(ctx, t, shots, "runs.png")

	click(ctx, t, fmt.Sprintf("a[href=%q]", "/runs/"+id))
	waitText(ctx, t, "What would you prefer?")
	waitText(ctx, t, "B) In-memory (fast, local only) · recommended")
	waitPage(ctx, t, "document.getElementById('run-status').textContent.trim() === 'parked'", "the run parked")
	screenshot(ctx, t, shots, "run-parked.png")

	click(ctx, t, `button.option[data-key="B"]`)
	waitText(ctx, t, "Your answer was taken: chose B) In-memory")
	// From here the test only looks: the page must bring the run's end by itself.
	waitPage(ctx, t, "document.getElementById('run-status').textContent.trim() === 'completed'", "the run completed")
	waitPage(ctx, t, "document.getElementById('events').getAttribute('data-live') === null", "a timeline no longer live")
	waitText(ctx, t, "chose B) In-memory")
	screenshot(ctx, t, shots, "run-completed.png")

	if s := status(t, dir, id); s["status"] != "completed" {
		t.Fatalf("the page says completed, orch status says %v", s["status"])
	}
}

// Two people have the same parked run open. The first chooses B; the second, whose page still shows the question,
// chooses A, and is told who answered first and what; the run goes on with B.
func TestBrowserSecondAnswerIsToldWhoAnsweredFirst(t *testing.T) {
	t.Parallel()
	first, second := newBrowser(t), newBrowser(t)
	dir, id, port := parkedWebRun(t, "127.0.0.1:%d")
	page := fmt.Sprintf("http://127.0.0.1:%d/runs/%s", port, id)

	// The second page stays as it was loaded, as a page whose live update has not arrived yet does: its script does
	// not run, so nothing reloads it. (The page works without JavaScript.)
	if _, err := chromedp.Call(second, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	open(first, t, page)
	open(second, t, page)
	waitElement(first, t, `button.option[data-key="B"]`)
	waitElement(second, t, `button.option[data-key="A"]`)

	click(first, t, `button.option[data-key="B"]`)
	waitText(first, t, "Your answer was taken: chose B) In-memory")

	click(second, t, `button.option[data-key="A"]`)
	waitPage(second, t, "location.search.startsWith('?lost=')", "the page of a late answer")
	waitText(second, t, "Someone answered first:")
	text := pageText(second)
	if !regexp.MustCompile(`Someone answered first: \S.* \(web\) chose B\) In-memory .* ago\. Your answer was not used\.`).MatchString(text) {
		t.Fatalf("the second person is not told who answered first and what:\n%s", text)
	}

	for deadline := time.Now().Add(browserWait); ; time.Sleep(200 * time.Millisecond) {
		if s := status(t, dir, id); s["status"] == "completed" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the run did not complete after the first answer: %v", s["status"])
		}
	}
	log := orch(t, dir, "", "escalation", "log", id)
	if strings.Contains(log.stdout, "chose A)") || !strings.Contains(log.stdout, "chose B) In-memory") {
		t.Errorf("the audit trail should hold B alone:\n%s", log.stdout)
	}
}

// localIPv4 is an IPv4 address of this machine other than loopback: a browser that comes from it is not local to
// the view, yet the traffic never leaves the machine.
func localIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip := n.IP.To4(); ip != nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
				return ip.String()
			}
		}
	}
	t.Skip("this machine has no IPv4 address beyond loopback")
	return ""
}

// A view bound beyond loopback with ORCH_WEB_TOKEN: a browser that comes from another address lands on the sign-in
// form, not on the runs; signing in with the token through the form shows the runs.
func TestBrowserFromAnotherAddressMustSignIn(t *testing.T) {
	t.Parallel()
	ip := localIPv4(t)
	ctx := newBrowser(t)
	// The view answers to the name the browser uses (here an address of this machine) once ORCH_PUBLIC_URL names it.
	_, id, port := parkedWebRun(t, "0.0.0.0:%d", "ORCH_WEB_TOKEN=browser-test-token", "ORCH_PUBLIC_URL=http://"+ip+"/")
	base := fmt.Sprintf("http://%s:%d", ip, port)

	open(ctx, t, base+"/runs/"+id)
	waitPage(ctx, t, "location.pathname === '/login'", "the sign-in form")
	if text := pageText(ctx); strings.Contains(text, id) || strings.Contains(text, "What would you prefer?") {
		t.Fatalf("the sign-in page shows the run:\n%s", text)
	}
	open(ctx, t, base+"/")
	waitPage(ctx, t, "location.pathname === '/login' && document.querySelector('table.runs') === null", "the sign-in form, not the runs")

	// A wrong token is refused, and the form says so.
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`input[name="name"]`), "U0BROWSER"),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), "not-the-token"),
	); err != nil {
		t.Fatal(err)
	}
	click(ctx, t, "form.login button")
	waitText(ctx, t, "That token is not this deployment's ORCH_WEB_TOKEN.")

	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`input[name="name"]`), "U0BROWSER"),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), "browser-test-token"),
	); err != nil {
		t.Fatal(err)
	}
	click(ctx, t, "form.login button")
	waitElement(ctx, t, fmt.Sprintf("table.runs a[href=%q]", "/runs/"+id))
	waitPage(ctx, t, "location.pathname === '/'", "the runs")
	waitText(ctx, t, "U0BROWSER") // the header names who signed in
}
