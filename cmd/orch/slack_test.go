package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/bot/slackfake"
)

const testSecret = "8f742231b10e8888abcd99yyyzzz85a5"

// slackServer is `orch serve` running against a fake Slack.
type slackServer struct {
	t     *testing.T
	dir   string
	url   string
	slack *slackfake.Slack
	cmd   *exec.Cmd
	out   *syncBuffer
}

func startServe(t *testing.T, env ...string) *slackServer {
	t.Helper()
	fake := slackfake.New()
	t.Cleanup(fake.Close)
	return startServeIn(t, workdir(t), fake, env...)
}

// startServeIn starts `orch serve` in dir against fake: a second one in the same directory is a restart.
func startServeIn(t *testing.T, dir string, fake *slackfake.Slack, env ...string) *slackServer {
	t.Helper()
	cmd := exec.Command(orchBin, "serve")
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "ORCH_REDIS_URL=", "ANTHROPIC_API_KEY=",
		"SLACK_BOT_TOKEN=xoxb-test", "SLACK_SIGNING_SECRET="+testSecret, "SLACK_APP_TOKEN=", "SLACK_API_URL="+fake.APIURL(),
		"ORCH_HTTP_ADDR=127.0.0.1:0", "ORCH_WORKSPACE="+dir, "ORCH_SANDBOX=local", "ORCH_AGENT=sim", "ORCH_BRAIN=heuristic",
		"ORCH_SLACK_POST_INTERVAL=20ms", "ORCH_ALLOWED_USERS="), env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &slackServer{t: t, dir: dir, slack: fake, cmd: cmd, out: out}
	// Runs after the server stopped (cleanups run last first): what the last processes of its agents leave in the
	// worktrees as their shims kill them is gone before the test's directory is removed, however long a loaded machine
	// makes that take.
	t.Cleanup(func() { removeSettled(filepath.Join(dir, ".orch"), 30*time.Second) })
	t.Cleanup(s.stop)
	addr := regexp.MustCompile(`Slack endpoints on (http://[0-9.:]+)/`)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := addr.FindStringSubmatch(out.String()); m != nil {
			s.url = m[1]
			return s
		}
		if cmd.ProcessState != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("orch serve did not start:\n%s", out.String())
	return nil
}

func (s *slackServer) stop() {
	if s.cmd.ProcessState == nil {
		s.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
			<-done
		}
	}
}

// post sends a signed request to one of orch's Slack endpoints.
func (s *slackServer) post(path string, body []byte, contentType string) (int, string) {
	s.t.Helper()
	req := slackfake.Request(s.url, path, testSecret, body, contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// waitFor polls the fake Slack until cond holds.
func (s *slackServer) waitFor(what string, cond func([]slackfake.Message) bool) []slackfake.Message {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		msgs := s.slack.Messages()
		if cond(msgs) {
			return msgs
		}
		time.Sleep(20 * time.Millisecond)
	}
	var b strings.Builder
	for _, m := range s.slack.Messages() {
		b.WriteString(m.TS + " thread=" + m.ThreadTS + " updates=" + string(rune('0'+m.Updates)) + ": " + m.Text + "\n")
	}
	s.t.Fatalf("waiting for %s; messages:\n%s\norch:\n%s", what, b.String(), s.out.String())
	return nil
}

func escalationMsg(msgs []slackfake.Message) (slackfake.Message, bool) {
	for _, m := range msgs {
		if m.ThreadTS != "" && len(slackfake.Buttons(m)) > 0 {
			return m, true
		}
	}
	return slackfake.Message{}, false
}

func finalMsg(msgs []slackfake.Message, word string) bool {
	for _, m := range msgs {
		if m.ThreadTS != "" && strings.Contains(m.Text, word) && strings.Contains(m.Text, "r-") {
			return true
		}
	}
	return false
}

// The design card's headline, end to end: /orch run → a question with buttons in the thread → one click → the
// message shows who answered → the run completes and says so in the thread.
func TestSlackRunClickComplete(t *testing.T) {
	t.Parallel()
	s := startServe(t, "ORCH_PUBLIC_URL=https://orch.example.test/")
	code, body := s.post("/slack/commands", s.slack.SlashCommand("run examples/plans/ambiguous_task.md", "U123ALICE", "C0RUNS"), "application/x-www-form-urlencoded")
	if code != 200 || !strings.Contains(body, "Starting a run") {
		t.Fatalf("slash command: %d %s", code, body)
	}
	msgs := s.waitFor("the question", func(m []slackfake.Message) bool { _, ok := escalationMsg(m); return ok })
	root := msgs[0]
	if root.ThreadTS != "" || root.Channel != "C0RUNS" || !regexp.MustCompile(`r-[a-z2-7]{10}`).MatchString(root.Text) {
		t.Fatalf("root message: %+v", root)
	}
	q, _ := escalationMsg(msgs)
	if q.ThreadTS != root.TS {
		t.Fatalf("the question is not in the run's thread: %+v", q)
	}
	buttons := slackfake.Buttons(q)
	var chooseB, value string
	for id, v := range buttons {
		if strings.HasSuffix(id, ":B") {
			chooseB, value = id, v
		}
	}
	// The agent asked: its question is answered, not retried. Its run's page is linked where ORCH_PUBLIC_URL says.
	if _, retry := buttons["orch_retry"]; chooseB == "" || retry || buttons["orch_answer"] == "" || buttons["orch_abort"] == "" {
		t.Fatalf("buttons: %v", buttons)
	}
	runID := regexp.MustCompile(`r-[a-z2-7]{10}`).FindString(root.Text)
	page := ""
	for _, b := range slackfake.ButtonList(q) {
		if b.ActionID == "orch_page" {
			page = b.URL
		}
	}
	if want := "https://orch.example.test/runs/" + runID; page != want {
		t.Errorf("the question links %q, want the run's page %s", page, want)
	}
	if code, _ := s.post("/slack/interactions", s.slack.Click(q, "U123ALICE", chooseB, value), "application/x-www-form-urlencoded"); code != 200 {
		t.Fatalf("click: %d", code)
	}
	s.waitFor("the final message", func(m []slackfake.Message) bool { return finalMsg(m, "completed") })
	for _, m := range s.slack.Messages() {
		if m.TS == q.TS {
			if len(slackfake.Buttons(m)) != 0 || m.Updates == 0 || !strings.Contains(string(m.Blocks), "U123ALICE") {
				t.Fatalf("the answered question still has buttons or does not say who answered: %s", m.Blocks)
			}
		}
	}
	// The metrics tell the same story, under the seed's names.
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`orchestrator_escalations_total{trigger="needs_help"} 1`, `orchestrator_resolutions_total{type="choose"} 1`,
		`orchestrator_runs_total{status="completed"} 1`, `orchestrator_escalation_wait_seconds_count 1`, `orchestrator_parked_runs 0`,
		`asynq_queue_size{queue="orch-steps"}`,
		// The run counts for its channel's team: the sim agent's attempts cost something.
		`orchestrator_spend_usd_total{team="C0RUNS"}`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// A second click, by anyone, is told it was already answered; nothing changes.
	before := len(s.slack.Messages())
	s.post("/slack/interactions", s.slack.Click(q, "U456BOB", chooseB, value), "application/x-www-form-urlencoded")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(strings.Join(s.slack.Ephemerals(), "\n"), "Already answered") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(strings.Join(s.slack.Ephemerals(), "\n"), "Already answered") {
		t.Fatalf("second click not told: %v", s.slack.Ephemerals())
	}
	if len(s.slack.Messages()) != before {
		t.Fatal("a second click posted something")
	}
}

// A reply in the thread answers the question as free-text guidance.
func TestSlackThreadReplyAnswers(t *testing.T) {
	t.Parallel()
	s := startServe(t)
	s.post("/slack/commands", s.slack.SlashCommand("run examples/plans/ambiguous_task.md", "U123ALICE", "C0RUNS"), "application/x-www-form-urlencoded")
	msgs := s.waitFor("the question", func(m []slackfake.Message) bool { _, ok := escalationMsg(m); return ok })
	root := msgs[0]
	reply := slackfake.ThreadReply("Ev001", "C0RUNS", root.TS, "U123ALICE", "Use the in-memory one, LRU, 1000 items")
	for range 2 { // a retried delivery of the same event counts once
		if code, _ := s.post("/slack/events", reply, "application/json"); code != 200 {
			t.Fatalf("event: %d", code)
		}
	}
	s.waitFor("the final message", func(m []slackfake.Message) bool { return finalMsg(m, "completed") })
	q, _ := escalationMsg(msgs)
	for _, m := range s.slack.Messages() {
		if m.TS == q.TS && !strings.Contains(string(m.Blocks), "LRU, 1000 items") {
			t.Fatalf("the answered question does not show the guidance: %s", m.Blocks)
		}
	}
}

// Forged, stale and tampered requests get 401 and change nothing.
func TestSlackRejectsForgedRequests(t *testing.T) {
	t.Parallel()
	s := startServe(t)
	body := s.slack.SlashCommand("run examples/plans/hello.md", "U123ALICE", "C0RUNS")
	cases := map[string]func(*http.Request){
		"no signature": func(r *http.Request) { r.Header.Del("X-Slack-Signature") },
		"wrong secret": func(r *http.Request) {
			sig, ts := slackfake.Sign("not-the-secret", time.Now(), body)
			r.Header.Set("X-Slack-Signature", sig)
			r.Header.Set("X-Slack-Request-Timestamp", ts)
		},
		"stale": func(r *http.Request) {
			sig, ts := slackfake.Sign(testSecret, time.Now().Add(-6*time.Minute), body)
			r.Header.Set("X-Slack-Signature", sig)
			r.Header.Set("X-Slack-Request-Timestamp", ts)
		},
		"body changed after signing": func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader(strings.Replace(string(body), "hello", "HELLO", 1)))
		},
	}
	for name, tamper := range cases {
		req := slackfake.Request(s.url, "/slack/commands", testSecret, body, "application/x-www-form-urlencoded")
		tamper(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, resp.StatusCode)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(s.slack.Messages()); n != 0 {
		t.Fatalf("a rejected request started something: %d messages", n)
	}
}

// orch health names what fails and exits 1; Slack's auth.test is part of it when a token is set.
func TestHealth(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	fake := slackfake.New()
	defer fake.Close()
	r := orchEnv(t, dir, []string{"SLACK_BOT_TOKEN=xoxb-test", "SLACK_API_URL=" + fake.APIURL()}, nil, "health", "--agent", "sim")
	must(t, r, 0, "redis", "embedded store", "agent", "sim", "slack", "auth.test: orch")
	r = orchEnv(t, dir, []string{"PATH=/usr/bin:/bin"}, nil, "health", "--agent", "claude")
	must(t, r, 1, "claude is not on PATH", "unhealthy: agent")
	fake.Down()
	r = orchEnv(t, dir, []string{"SLACK_BOT_TOKEN=xoxb-test", "SLACK_API_URL=" + fake.APIURL()}, nil, "health", "--agent", "sim")
	must(t, r, 1, "unhealthy: slack")
}

// Someone outside ORCH_ALLOWED_USERS is refused, and the attempt is in the audit trail.
func TestSlackRefusalIsAudited(t *testing.T) {
	t.Parallel()
	s := startServe(t, "ORCH_ALLOWED_USERS=U123ALICE")
	code, body := s.post("/slack/commands", s.slack.SlashCommand("run examples/plans/hello.md", "U999MALLORY", "C0RUNS"), "application/x-www-form-urlencoded")
	if code != 200 || !strings.Contains(body, "not allowed") {
		t.Fatalf("slash command by a stranger: %d %s", code, body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := orch(t, s.dir, "", "escalation", "log")
		if r.code == 0 && strings.Contains(r.stdout, "refused") && strings.Contains(r.stdout, "U999MALLORY") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refusal is not in the audit trail:\n%s", r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(s.slack.Messages()); n != 0 {
		t.Fatalf("a refused request posted %d messages", n)
	}
}

// A request in words, end to end through `orch serve` and a real worker: `/orch do` runs the words as one task on a
// branch of its own; a mention in its thread once it has completed starts a follow-up whose branch starts from the
// first run's, linked both ways.
func TestSlackRequestInWordsAndItsFollowUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	writeFile(t, dir, "log.txt", "base\n")
	writeFile(t, dir, "words.sim.yaml", `tasks:
  "1":
    - output: "Added a line to log.txt. All tests pass."
      sh: 'echo "$ORCH_RUN_ID" >> log.txt'
`)
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "first")
	fake := slackfake.New()
	t.Cleanup(fake.Close)
	redisURL := isolatedRedis(t)
	s := startServeIn(t, dir, fake, "ORCH_REDIS_URL="+redisURL, "ORCH_SIM_SCENARIO="+filepath.Join(dir, "words.sim.yaml"),
		"ORCH_GIT_PUSH=", "ORCH_GITHUB_TOKEN=", "GITHUB_TOKEN=")
	code, body := s.post("/slack/commands", fake.SlashCommand("do add a line to the log", "U1ALICE", "C0RUNS"), "application/x-www-form-urlencoded")
	if code != 200 || !strings.Contains(body, "On it: “add a line to the log”") {
		t.Fatalf("/orch do: %d %s", code, body)
	}
	done := regexp.MustCompile(`Run (r-[a-z2-7]{10}) completed`)
	finals := func(m []slackfake.Message) []string {
		var ids []string
		for _, msg := range m {
			if id := done.FindStringSubmatch(msg.Text); id != nil {
				ids = append(ids, id[1])
			}
		}
		return ids
	}
	msgs := s.waitFor("the first run's end", func(m []slackfake.Message) bool { return len(finals(m)) == 1 })
	first := finals(msgs)[0]
	var root slackfake.Message
	for _, m := range msgs {
		if m.ThreadTS == "" && strings.Contains(m.Text, first) {
			root = m
		}
	}
	var blocks any
	json.Unmarshal(root.Blocks, &blocks)
	if text := fmt.Sprint(blocks); !strings.Contains(text, "> add a line to the log") || !strings.Contains(text, "asked by <@U1ALICE>") {
		t.Fatalf("the root message does not quote the request and who asked: %s", root.Blocks)
	}
	if got := gitT(t, dir, "show", "orch/"+first+":log.txt"); got != "base\n"+first {
		t.Fatalf("the first run's branch holds %q", got)
	}

	asked := fake.Say("C0RUNS", root.TS, "U1ALICE", "<@"+slackfake.BotUserID+"> now add one more")
	mention, _ := json.Marshal(map[string]any{"type": "event_callback", "team_id": "T0001", "api_app_id": "A0001",
		"event_id": "Ev0FOLLOWUP", "event_time": time.Now().Unix(), "event": map[string]any{"type": "app_mention",
			"user": "U1ALICE", "text": asked.Text, "ts": asked.TS, "thread_ts": root.TS, "channel": "C0RUNS", "event_ts": asked.TS}})
	if code, body := s.post("/slack/events", mention, "application/json"); code != 200 {
		t.Fatalf("app_mention: %d %s", code, body)
	}
	msgs = s.waitFor("the follow-up's end", func(m []slackfake.Message) bool { return len(finals(m)) == 2 })
	next := finals(msgs)[1]
	if got := gitT(t, dir, "show", "orch/"+next+":log.txt"); got != "base\n"+first+"\n"+next {
		t.Fatalf("the follow-up's branch holds %q: it did not start from the first run's", got)
	}
	s.waitFor("the first run's thread to lead to the follow-up", func(m []slackfake.Message) bool {
		for _, msg := range m {
			if msg.ThreadTS == root.TS && strings.Contains(string(msg.Blocks), "Follow-up started: run `"+next+"`") {
				return true
			}
		}
		return false
	})
	s.waitFor("the first run's root message to name its follow-up", func(m []slackfake.Message) bool {
		for _, msg := range m {
			if msg.TS == root.TS && strings.Contains(string(msg.Blocks), "Followed up by `"+next+"`") {
				return true
			}
		}
		return false
	})
	// The terminal tells the same story.
	r := orchEnv(t, dir, []string{"ORCH_REDIS_URL=" + redisURL}, nil, "status", first)
	must(t, r, 0, "request:   add a line to the log (asked by U1ALICE in Slack)", "followed:  by "+next)
	r = orchEnv(t, dir, []string{"ORCH_REDIS_URL=" + redisURL}, nil, "status", next)
	must(t, r, 0, "request:   now add one more", "follows:   "+first)
	r = orchEnv(t, dir, []string{"ORCH_REDIS_URL=" + redisURL}, nil, "history")
	must(t, r, 0, "“now add one more”", "“add a line to the log”")
}
