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
	"github.com/chromedp/cdproto/page"
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
// TestBrowser takes them again (a relative ORCH_SCREENSHOTS is relative to cmd/orch, where tests run).
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

// phoneDark makes the browser a phone 390 px wide whose system asks for a dark theme, as the pages must serve one.
func phoneDark(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulatePortrait, chromedp.EmulateMobile, chromedp.EmulateScale(2))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
}

// fitsAndIsDark checks the page at phone width in the dark theme: nothing wider than the screen (no column lost off
// its edge; tables are cards, diffs scroll inside their box), and the dark colours in use.
func fitsAndIsDark(ctx context.Context, t *testing.T) {
	t.Helper()
	waitPage(ctx, t, "window.innerWidth === 390 && document.documentElement.scrollWidth <= window.innerWidth", "a page no wider than the phone")
	waitPage(ctx, t, "getComputedStyle(document.body).backgroundColor === 'rgb(18, 21, 27)'", "the dark theme")
}

// acceptDialogs answers yes to the page's confirmations (the cancel and abort forms ask before they post).
func acceptDialogs(ctx context.Context) {
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
}

// typeInto fills a field as a person types.
func typeInto(ctx context.Context, t *testing.T, sel, text string) {
	t.Helper()
	// The node a query found can be gone by the time keys are sent to it when the browser is slow to settle after a
	// navigation ("Could not find node with given id"): chromedp fails before it typed anything, and the element is
	// looked for again.
	for try := 1; ; try++ {
		waitElement(ctx, t, sel)
		err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(sel), text))
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "Could not find node with given id") || try == 5 {
			t.Fatalf("typing into %s: %v", sel, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A workspace whose tests wait until the file released exists: the agent's `make test` is at work until the test
// has seen it live in the page.
func heldWorkspace(t *testing.T) (dir, released string) {
	t.Helper()
	dir, _ = claudeWorkspace(t)
	released = filepath.Join(t.TempDir(), "released")
	writeFile(t, dir, "Makefile", fmt.Sprintf("test:\n\tuntil [ -f %s ]; do sleep 0.1; done\n\tgrep -q hello hello.txt && echo 'ok: 1 test passed'\n", released))
	gitT(t, dir, "commit", "-q", "-am", "tests that wait")
	return dir, released
}

// screen is a browser as people use the view: a desktop in the light theme, or a phone 390 px wide whose system
// asks for the dark theme. name prefixes its screenshots.
type screen struct {
	name  string
	phone bool
}

var screens = []screen{{name: "desktop"}, {name: "phone-dark", phone: true}}

// open starts the screen's browser.
func (sc screen) open(t *testing.T) context.Context {
	ctx := newBrowser(t)
	if sc.phone {
		phoneDark(ctx, t)
	}
	return ctx
}

// shot checks that the page fits the screen (and, on the phone, is dark), then saves it as name, prefixed on the
// phone.
func (sc screen) shot(ctx context.Context, t *testing.T, dir, name string) {
	t.Helper()
	if sc.phone {
		fitsAndIsDark(ctx, t)
		name = sc.name + "-" + name
	} else {
		waitPage(ctx, t, "document.documentElement.scrollWidth <= window.innerWidth", "a page no wider than the window")
	}
	screenshot(ctx, t, dir, name)
}

// A person starts a run from the browser (after a plan outside the workspace is refused, without a server path),
// watches the agent's tool calls arrive live while it works, sees the run complete by itself, reads its diff with
// the added lines marked, and runs it again; the list then shows the run's progress and branch. On a desktop, and on
// a phone in the dark theme, every page no wider than the screen.
func TestBrowserStartsARunAndWatchesItWork(t *testing.T) {
	t.Parallel()
	for _, sc := range screens {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			startAndWatch(t, sc)
		})
	}
}

func startAndWatch(t *testing.T, sc screen) {
	ctx := sc.open(t)
	shots := screenshotDir(t)
	dir, released := heldWorkspace(t)
	writeAndWait := claudeModel{Turns: [][]claudeStep{{
		{Tool: "Write", Input: map[string]any{"file_path": "{{cwd}}/hello.txt", "content": "hello\n"}},
		{Tool: "Bash", Input: map[string]any{"command": "make test", "description": "Run the tests", "timeout": 600000}},
		{Text: "Wrote hello.txt and ran the tests: {{last_result}}. All tests pass."},
	}}}
	env, _ := claudeSetup(t, writeAndWait)
	port := freePort(t)
	_, out := startOrch(t, dir, env, "web", "--agent", "claude", "--addr", fmt.Sprintf("127.0.0.1:%d", port))
	waitOutput(t, out, "web view on http://")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	open(ctx, t, base+"/")
	click(ctx, t, "#start-run")
	waitElement(ctx, t, `#start-plan input[name="plan"]`)
	waitPage(ctx, t, `document.querySelector('datalist#plans option[value="plan.md"]') !== null`, "plan.md among the plans offered")
	typeInto(ctx, t, `#start-plan input[name="plan"]`, "../outside.md")
	click(ctx, t, "#start-plan button.primary")
	waitText(ctx, t, "../outside.md is outside the workspace")
	if text := pageText(ctx); strings.Contains(text, dir) {
		t.Fatalf("the refusal names the workspace's place on the server:\n%s", text)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#start-plan input[name="plan"]').value = ""`)); err != nil {
		t.Fatal(err)
	}
	typeInto(ctx, t, `#start-plan input[name="plan"]`, "plan.md")
	sc.shot(ctx, t, shots, "start.png")
	click(ctx, t, "#start-plan button.primary")
	waitPage(ctx, t, "location.pathname.startsWith('/runs/r-') && location.search === '?started=1'", "the new run's page")
	id := strings.TrimSuffix(strings.TrimPrefix(location(ctx), base+"/runs/"), "?started=1")
	waitText(ctx, t, "Run "+id+" started.")

	// The agent is at work, held in its tests: its calls are on the page, brought by the page's own script.
	waitPage(ctx, t, "!document.getElementById('live').hidden && document.getElementById('live-calls').innerText.includes('Bash: make test')",
		"the agent's tool calls, live")
	waitPage(ctx, t, "document.getElementById('live-calls').innerText.includes('Write: ')", "the Write call, live")
	sc.shot(ctx, t, shots, "run-live.png")
	if err := os.WriteFile(released, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitPage(ctx, t, "document.getElementById('run-status').textContent.trim() === 'completed'", "the run completed")
	waitPage(ctx, t, "document.getElementById('live') === null", "no agent at work any more")
	// The timeline says what mattered, without the tool calls; they are one click away.
	waitText(ctx, t, "Task 1: COMPLETED")
	if text := pageText(ctx); strings.Contains(text, "agent_activity") {
		t.Errorf("the default timeline shows the tool calls:\n%s", text)
	}
	sc.shot(ctx, t, shots, "run-done.png")
	click(ctx, t, "#timeline-toggle")
	waitPage(ctx, t, "document.getElementById('events').innerText.includes('agent_activity')", "every event, the tool calls among them")

	click(ctx, t, "#see-diff")
	waitText(ctx, t, "1 file changed")
	waitPage(ctx, t, "Array.from(document.querySelectorAll('pre.diff span.add')).some(s => s.textContent === '+hello')", "+hello marked as added")
	waitPage(ctx, t, "getComputedStyle(document.querySelector('pre.diff span.add')).backgroundColor !== getComputedStyle(document.body).backgroundColor",
		"the added line coloured")
	sc.shot(ctx, t, shots, "diff.png")

	open(ctx, t, base+"/runs/"+id)
	click(ctx, t, "form.rerun button")
	waitText(ctx, t, "started again, as "+id+" was asked for")
	again := strings.TrimPrefix(strings.Split(location(ctx), "?")[0], base+"/runs/")
	if again == id || !strings.HasPrefix(again, "r-") {
		t.Fatalf("run again went to %s", location(ctx))
	}
	waitPage(ctx, t, "document.getElementById('run-status').textContent.trim() === 'completed'", "the run started again completed")

	open(ctx, t, base+"/")
	row := strconv.Quote(fmt.Sprintf("tr:has(a[href=%q])", "/runs/"+id))
	waitPage(ctx, t, fmt.Sprintf("(document.querySelector(%s) || {innerText: ''}).innerText.includes('orch/%s')", row, id), "the run's branch in the list")
	waitPage(ctx, t, fmt.Sprintf("document.querySelector(%s + ' td.progress').innerText.trim() === '1/1'", row), "the run's progress in the list")
	waitPage(ctx, t, fmt.Sprintf("document.querySelector(%s + ' td.progress').getBoundingClientRect().right <= window.innerWidth", row), "the progress on screen")
	sc.shot(ctx, t, shots, "runs-columns.png")

	if s := status(t, dir, id); s["status"] != "completed" {
		t.Fatalf("the page says completed, orch status says %v", s["status"])
	}
}

// Two runs wait for answers. On the questions page a person answers one in place and stays there; the other run
// they cancel from its page, confirming it, and the audit trail names them and the web. On a desktop, and on a phone
// in the dark theme.
func TestBrowserAnswersFromTheQuestionsPageAndCancelsARun(t *testing.T) {
	t.Parallel()
	for _, sc := range screens {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			answerAndCancel(t, sc)
		})
	}
}

func answerAndCancel(t *testing.T, sc screen) {
	ctx := sc.open(t)
	shots := screenshotDir(t)
	dir, first, port := parkedWebRun(t, "127.0.0.1:%d")
	// A second run parks beside the first, in the same store: `orch web` serves both.
	r := orch(t, dir, "", "run", "--agent", "sim", "examples/plans/ambiguous_task.md")
	must(t, r, 3, "is parked")
	second := runID(t, r)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	open(ctx, t, base+"/questions")
	waitPage(ctx, t, "document.querySelectorAll('article.qcard').length === 2", "both questions")
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int]("document.querySelectorAll('button[value=retry], button[value=resume]').length")); err != nil || n != 0 {
		t.Errorf("an agent's question offers Retry or Resume (%d, %v)", n, err)
	}
	sc.shot(ctx, t, shots, "questions-to-answer.png")
	click(ctx, t, fmt.Sprintf("article#q-%s", first)+` button.option[data-key="B"]`)
	waitPage(ctx, t, "location.pathname === '/questions'", "the questions page again")
	waitText(ctx, t, "Run "+first+": Your answer was taken: chose B) In-memory")
	waitPage(ctx, t, "document.querySelectorAll('article.qcard').length === 1", "one question left")
	sc.shot(ctx, t, shots, "questions-answered.png")

	// The other run is cancelled from its page, once the person confirms it.
	acceptDialogs(ctx)
	open(ctx, t, base+"/runs/"+second)
	waitText(ctx, t, "What would you prefer?")
	click(ctx, t, "details.cancel > summary")
	click(ctx, t, `form.cancel input[name="confirm"]`)
	typeInto(ctx, t, `form.cancel input[name="reason"]`, "not this sprint")
	sc.shot(ctx, t, shots, "cancel.png")
	click(ctx, t, "form.cancel button.danger")
	waitText(ctx, t, "Run "+second+" was cancelled: not this sprint")
	waitPage(ctx, t, "document.getElementById('run-status').textContent.trim() === 'aborted'", "the run aborted")
	sc.shot(ctx, t, shots, "cancelled.png")
	if s := status(t, dir, second); s["status"] != "aborted" {
		t.Fatalf("the page says aborted, orch status says %v", s["status"])
	}
	log := orch(t, dir, "", "escalation", "log", second)
	if !regexp.MustCompile(`\S+\s+web\s+.*not this sprint`).MatchString(log.stdout) {
		t.Errorf("the audit trail does not name the web and the reason:\n%s", log.stdout)
	}
}
