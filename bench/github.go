package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/orchrun/orch/forge"
	"github.com/orchrun/orch/forge/githubfake"
	"github.com/orchrun/orch/hub"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/jobs/store"
)

// The GitHub surface's two measurements, made as Slack's are (ack.go, resume.go): the webhook's ack under a burst of
// deliveries, and a comment answering a parked run's question to the resumed agent starting.

const (
	// webhookSecret signs the deliveries the benchmark sends as GitHub would; githubToken is orch's token on the fake.
	webhookSecret = "bench-webhook-secret"
	githubToken   = "bench-token"
	// The repository of the deliveries, and a person the fake says may write to it.
	githubOwner, githubRepo = "acme", "api"
	writer                  = "ann"
)

// githubSide is orch's GitHub surface on a fake GitHub: the hub's webhook served on loopback.
type githubSide struct {
	fake   *githubfake.GitHub
	server *hub.Server
	url    string // the webhook
	stop   func()
	once   sync.Once
}

// startGitHub serves a hub on the store and queue, talking to a fake GitHub in which writer may write; wrap, when not
// nil, wraps its handler (to time it). backlog 0 is the hub's default.
func startGitHub(r *rig, st *store.Store, q *queue.Queue, starter hub.Starter, backlog int,
	wrap func(http.Handler) http.Handler) (*githubSide, error) {
	fake := githubfake.New(githubToken)
	fake.AddRepo(githubOwner, githubRepo)
	fake.SetPermission(githubOwner, githubRepo, writer, "write")
	talker, err := forge.NewGitHub(githubToken, fake.URL()+"/", nil)
	if err != nil {
		fake.Close()
		return nil, err
	}
	s, err := hub.New(hub.Config{Secret: webhookSecret, Store: st, Queue: q, GitHub: talker, Starter: starter,
		Backlog: backlog, Log: r.log})
	if err != nil {
		fake.Close()
		return nil, err
	}
	s.Start()
	h := s.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	base, stop, err := serve(h)
	if err != nil {
		shutdownHub(s)
		fake.Close()
		return nil, err
	}
	return &githubSide{fake: fake, server: s, url: base + "/github/webhook", stop: stop}, nil
}

// drain stops taking deliveries and waits for the work already acked.
func (g *githubSide) drain() {
	g.once.Do(func() {
		g.stop()
		shutdownHub(g.server)
	})
}

// close drains, then stops the fake GitHub.
func (g *githubSide) close() {
	g.drain()
	g.fake.Close()
}

func shutdownHub(s *hub.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.Shutdown(ctx)
}

// comment has login write text in an issue of the fake and returns the issue_comment delivery's body, as GitHub
// would send it.
func (g *githubSide) comment(issue int, login, text string) ([]byte, error) {
	c := g.fake.Say(githubOwner, githubRepo, issue, login, text)
	return json.Marshal(g.fake.IssueCommentPayload(githubOwner, githubRepo, c, "created"))
}

// delivery is a signed webhook delivery of body, with the headers GitHub sends.
func delivery(ctx context.Context, url, event string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	var guid [16]byte
	rand.Read(guid[:])
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/044aadd")
	h.Set("X-GitHub-Event", event)
	h.Set("X-GitHub-Delivery", fmt.Sprintf("%x-%x-%x-%x-%x", guid[:4], guid[4:6], guid[6:8], guid[8:10], guid[10:]))
	h.Set("X-GitHub-Hook-ID", fmt.Sprint(githubfake.HookID))
	h.Set(hub.SignatureHeader, "sha256="+githubfake.Sign256(webhookSecret, body))
	return req, nil
}

// deliver sends one delivery and checks that it was taken (202).
func deliver(client *http.Client, req *http.Request) error {
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("delivery: status %d, want 202", resp.StatusCode)
	}
	return nil
}

// measureGitHubAck sends rounds of 200 concurrent signed issue_comment deliveries to the hub's webhook over loopback,
// and times its handler from the moment it gets the delivery to the ack written. Each delivery is a comment of its
// own, `@orch retry` by a person with write access in an issue with no run: its work after the ack is real (the
// permission, the 👀 reaction, the issue's run looked up, orch's reply that there is nothing to retry) and is load,
// not latency, as in Slack's measurement. slack is the Slack ack of the same run, for the note.
func measureGitHubAck(ctx context.Context, r *rig, rounds int, slack ackResult) (ackResult, error) {
	st, q, _ := r.backend()
	handlerTimes := &durations{}
	timed := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			start := time.Now()
			h.ServeHTTP(w, req)
			handlerTimes.add(time.Since(start))
		})
	}
	// A backlog large enough that no delivery is refused as "busy": the ack is what is measured.
	g, err := startGitHub(r, st, q, refuseGitHubStarts{}, 1<<20, timed)
	if err != nil {
		return ackResult{}, err
	}
	defer g.close()
	issue := g.fake.AddIssue(githubOwner, githubRepo, "The client is slow", "Every call takes 2 s.", writer)
	body := func() ([]byte, error) { return g.comment(issue, writer, "@orch retry") }
	rtt, err := fireDeliveries(ctx, g.url, body, rounds, handlerTimes)
	if err != nil {
		return ackResult{}, err
	}
	server := handlerTimes.take()
	// Every delivery's work is done by the time the hub has drained: orch answered each comment.
	g.drain()
	if n, want := orchReplies(g.fake, issue), (rounds+1)*ackConcurrency; n != want {
		return ackResult{}, fmt.Errorf("orch answered %d of %d commands", n, want)
	}
	res := ackResult{p50: percentileMs(server, 0.5), p99: percentileMs(server, 0.99)}
	res.note = fmt.Sprintf("%d rounds of %d concurrent signed issue_comment deliveries, over loopback HTTP with "+
		"keep-alive (one unmeasured round first opens the connections), against the hub's real webhook handler with a "+
		"real Redis and a fake GitHub API (forge/githubfake). Each delivery is a comment of its own (its own id, so its "+
		"own body and X-Hub-Signature-256: no replay), `@orch retry` by a person the fake gives write access, in an "+
		"issue with no run: a command, rather than a comment that is none, so that its work after the ack is the real "+
		"one, on the same two cores: the permission (read from the fake once, then remembered a minute), the 👀 "+
		"reaction, the issue's run looked up in Redis, and orch's reply that there is no run there to answer (one per "+
		"delivery, counted once the hub has drained). github_ack_* is "+
		"the handler time: from the delivery reaching orch's handler to the 202 written (body read, signature check, "+
		"the delivery's once-check in Redis, the payload parsed, the command parsed, hand-off to the background pool). "+
		"Handler p50 %.3g ms, p99 %.3g ms (Slack's ack in the same run: p50 %.3g, p99 %.3g ms; %.2f× its p99); client "+
		"round trip p50 %.3g ms, p99 %.3g ms.", rounds, ackConcurrency, res.p50, res.p99, slack.p50, slack.p99,
		res.p99/slack.p99, percentileMs(rtt, 0.5), percentileMs(rtt, 0.99))
	return res, nil
}

// fireDeliveries sends rounds of ackConcurrency concurrent deliveries and returns every round trip. Each delivery is
// built and signed before its clock starts, as GitHub signs before it sends.
func fireDeliveries(ctx context.Context, url string, body func() ([]byte, error), rounds int,
	handlerTimes *durations) ([]time.Duration, error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: ackConcurrency}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	rtt := &durations{}
	for round := -1; round < rounds; round++ {
		if round == 0 { // the warm-up round opened the connections; it is not counted
			rtt.reset()
			handlerTimes.reset()
		}
		errs := make(chan error, ackConcurrency)
		var wg sync.WaitGroup
		for range ackConcurrency {
			wg.Go(func() {
				if err := deliverTimed(ctx, client, url, body, rtt); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return nil, err
		}
	}
	return rtt.take(), nil
}

// deliverTimed builds one delivery, then sends it and records its round trip.
func deliverTimed(ctx context.Context, client *http.Client, url string, body func() ([]byte, error), rtt *durations) error {
	b, err := body()
	if err != nil {
		return err
	}
	req, err := delivery(ctx, url, "issue_comment", b)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := deliver(client, req); err != nil {
		return err
	}
	rtt.add(time.Since(start))
	return nil
}

// orchReplies counts orch's comments in an issue of the fake.
func orchReplies(fake *githubfake.GitHub, issue int) int {
	n := 0
	for _, c := range fake.Comments(githubOwner, githubRepo, issue) {
		if c.Author == "orch" {
			n++
		}
	}
	return n
}

// refuseGitHubStarts is the starter of the ack measurement, which starts no runs.
type refuseGitHubStarts struct{}

func (refuseGitHubStarts) Start(context.Context, hub.StartRequest) (*jobs.Run, error) {
	return nil, errors.New("the ack measurement starts no runs")
}

// githubResume is what the comment measurement found: each answer's time to the resumed agent, and how often the hub
// read a person's permission from GitHub while answering.
type githubResume struct {
	lat       []time.Duration
	permReads int
}

// commentToResume measures, for n runs of the ambiguous-task example each started by a comment in an issue of its
// own and parked on its question, the time from the POST of a signed issue_comment delivery of `@orch B` to the
// resumed attempt starting (the commit of its task_started event), as clickToResume measures a click. The path is
// the hub's: its handler, its background pool, the permission (remembered), the 👀 reaction, the issue's run read,
// then what a click does: the atomic resolution, the resume task, the worker's resume and step handlers.
func commentToResume(ctx context.Context, r *rig, poll time.Duration, n int) (githubResume, error) {
	st, q, events := r.backend()
	ended, resumed := watchAnswers(events)
	w, err := r.startWorker(st, q, poll)
	if err != nil {
		return githubResume{}, err
	}
	defer w.Shutdown()
	ws, plan, err := r.ambiguousWorkspace()
	if err != nil {
		return githubResume{}, err
	}
	starter := &issueStarter{store: st, queue: q, ws: ws, plan: plan, opts: simOptions(plan), runs: map[int]string{}}
	g, err := startGitHub(r, st, q, starter, 0, nil)
	if err != nil {
		return githubResume{}, err
	}
	defer g.close()
	client := &http.Client{Timeout: 30 * time.Second}
	issues, err := startFromIssues(ctx, g, client, n)
	if err != nil {
		return githubResume{}, err
	}
	if err := waitAsked(ctx, g.fake, issues, time.Minute+time.Duration(n)*(time.Second+2*poll)); err != nil {
		return githubResume{}, err
	}
	before := permissionReads(g.fake)
	res := githubResume{}
	for _, issue := range issues {
		d, err := answerByComment(ctx, g, client, issue, starter.run(issue), poll, ended, resumed)
		if err != nil {
			return githubResume{}, err
		}
		res.lat = append(res.lat, d)
	}
	res.permReads = permissionReads(g.fake) - before
	return res, nil
}

// watchAnswers signals each run's end, and its agent resuming after a human's answer (its second attempt starting).
func watchAnswers(events *tally) (ended, resumed *signals) {
	ended, resumed = newSignals(), newSignals()
	events.hook(func(e jobs.Event, at time.Time) {
		switch b := e.Body.(type) {
		case jobs.TaskStartedEvent:
			if b.Started == 2 { // the attempt after the human's answer
				resumed.fire(e.RunID, at)
			}
		case jobs.RunCompletedEvent, jobs.RunFailedEvent, jobs.RunAbortedEvent:
			ended.fire(e.RunID, at)
		}
	})
	return ended, resumed
}

// startFromIssues opens n issues and starts a run in each with a comment, as a person would.
func startFromIssues(ctx context.Context, g *githubSide, client *http.Client, n int) ([]int, error) {
	var issues []int
	for i := range n {
		issue := g.fake.AddIssue(githubOwner, githubRepo, fmt.Sprintf("Slow client %d", i), "Every call takes 2 s.", writer)
		body, err := g.comment(issue, writer, "@orch add caching")
		if err != nil {
			return nil, err
		}
		req, err := delivery(ctx, g.url, "issue_comment", body)
		if err != nil {
			return nil, err
		}
		if err := deliver(client, req); err != nil {
			return nil, err
		}
		issues = append(issues, issue)
	}
	return issues, nil
}

// answerByComment answers issue's question with `@orch B` at a random moment of the workers' poll loops, waits for
// its run to end, and returns the time from the delivery's POST to the run's agent resuming.
func answerByComment(ctx context.Context, g *githubSide, client *http.Client, issue int, runID string,
	poll time.Duration, ended, resumed *signals) (time.Duration, error) {
	if runID == "" {
		return 0, fmt.Errorf("issue #%d has no run", issue)
	}
	if err := sleep(ctx, mrand.N(poll)); err != nil {
		return 0, err
	}
	body, err := g.comment(issue, writer, "@orch B")
	if err != nil {
		return 0, err
	}
	req, err := delivery(ctx, g.url, "issue_comment", body)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := deliver(client, req); err != nil {
		return 0, err
	}
	// The next answer waits for this run to end, so that it finds the workers idle, as an answer mostly does.
	if _, err := await(ctx, ended.expect(runID), 30*time.Second+4*poll); err != nil {
		return 0, fmt.Errorf("run %s did not end after the comment: %w", runID, err)
	}
	at, err := await(ctx, resumed.expect(runID), time.Second)
	if err != nil {
		return 0, fmt.Errorf("run %s did not resume after the comment: %w", runID, err)
	}
	return at.Sub(start), nil
}

// waitAsked waits until orch has written its question in every issue: a person answers what they have read.
func waitAsked(ctx context.Context, fake *githubfake.GitHub, issues []int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		asked := 0
		for _, issue := range issues {
			if orchAsked(fake.Comments(githubOwner, githubRepo, issue)) {
				asked++
			}
		}
		if asked == len(issues) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("orch asked its question in %d of %d issues after %s", asked, len(issues), timeout)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

func orchAsked(comments []githubfake.Comment) bool {
	for _, c := range comments {
		if c.Author == "orch" && strings.Contains(c.Body, "orch needs an answer") {
			return true
		}
	}
	return false
}

// permissionReads counts the fake's answers to "what may this person do here".
func permissionReads(fake *githubfake.GitHub) int {
	n := 0
	for _, req := range fake.Requests() {
		if strings.Contains(req.Path, "/collaborators/") && strings.HasSuffix(req.Path, "/permission") {
			n++
		}
	}
	return n
}

// issueStarter creates the runs comments ask for, as the server's GitHub starter does, whatever their words: a run of
// the ambiguous-task example with the sim agent, which asks which cache to build.
type issueStarter struct {
	store *store.Store
	queue *queue.Queue
	ws    string
	plan  string
	opts  jobs.Options
	mu    sync.Mutex
	runs  map[int]string // issue → its run
}

func (s *issueStarter) Start(ctx context.Context, req hub.StartRequest) (*jobs.Run, error) {
	run, err := planRun(s.plan, s.ws, s.opts, jobs.Origin{Kind: "github", User: req.By, Repo: req.Repo.String(),
		Issue: req.Issue})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.runs[req.Issue] = run.ID
	s.mu.Unlock()
	return run, startRun(ctx, s.store, s.queue, run)
}

func (s *issueStarter) run(issue int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[issue]
}

// githubResumeNote says how github_resume_* was measured, beside the p50 of the Slack click of the same run.
func githubResumeNote(g githubResume, slackP50 float64) string {
	lat := g.lat
	return fmt.Sprintf("%d comments with orch's poll interval (20 ms), each answering the question of its own run of "+
		"examples/plans/ambiguous_task.md, started by a comment `@orch add caching` in an issue of its own (the "+
		"bench's starter runs the example with the sim agent, whatever the words) and parked on its question, which "+
		"the hub's mirror wrote in the issue before the answer: from the POST of a signed issue_comment delivery of "+
		"`@orch B`, by a person the fake GitHub gives write access, to the commit of the resumed attempt's "+
		"task_started, as resume_p50_ms measures a click. Path: hub handler (signature, the delivery's once-check in "+
		"Redis, payload and command parsed), background pool, then what a click has not: the person's permission (the "+
		"fake was asked for it %d times in these %d answers: it is remembered a minute, and the comments that started "+
		"the runs had asked), the 👀 reaction (an API call to the fake on loopback, made before the answer is taken), "+
		"the issue's run looked up and read from the store; then a click's path from escalation.Resolve on. The hub's "+
		"mirror, at its default poll (500 ms), edits the question and status comments after the answer, beside the "+
		"measured path. Each comment comes at a random moment within one poll interval after the previous run ended. "+
		"Nearest-rank percentiles: p50 %.1f, p90 %.1f, max %.1f ms; the Slack click in the same run: p50 %.1f ms, so "+
		"%+.1f ms.", len(lat), g.permReads, len(lat), percentileMs(lat, 0.5), percentileMs(lat, 0.9),
		percentileMs(lat, 1), slackP50, percentileMs(lat, 0.5)-slackP50)
}

// measureGitHubResume measures comment to resume with orch's poll interval, as many as Slack's clicks, and sets the
// github_resume_* results beside the click's of the same run.
func measureGitHubResume(ctx context.Context, r *rig, n int, res *Results) error {
	g, err := commentToResume(ctx, r, 20*time.Millisecond, n)
	if err != nil {
		return err
	}
	res.GitHubResumeP50Ms = roundTo(percentileMs(g.lat, 0.5), 2)
	res.GitHubResumeP90Ms = roundTo(percentileMs(g.lat, 0.9), 2)
	res.GitHubResumeMaxMs = roundTo(percentileMs(g.lat, 1), 2)
	res.Notes.GitHubResume = githubResumeNote(g, res.ResumeP50Ms)
	return nil
}
