package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/orchrun/orch/bot"
	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/jobs/store"
)

// asynqDefaultPoll is asynq's own TaskCheckInterval, which orch overrides (worker.Config.PollInterval).
const asynqDefaultPoll = time.Second

// clickToResume measures, for clicks runs of the ambiguous-task example started from Slack and parked on their
// question, the time from a click's POST on the question's button to the resumed attempt starting: the commit of
// its task_started event, after which the worker starts the sim agent process. The path is the real one: the
// bot's handler, its background pool, the atomic resolution, the resume task on the control queue, the worker's
// resume handler, the step task on the step queue and the step handler; poll is the workers' TaskCheckInterval.
func clickToResume(ctx context.Context, r *rig, poll time.Duration, clicks int) ([]time.Duration, error) {
	ws, plan, err := r.ambiguousWorkspace()
	if err != nil {
		return nil, err
	}
	resumed := newSignals()
	return measureClicks(ctx, r, poll, clicks, clickCase{ws: ws, plan: plan, opts: simOptions(plan), button: "B",
		observe: func(e jobs.Event, at time.Time) {
			if b, ok := e.Body.(jobs.TaskStartedEvent); ok && b.Started == 2 { // the attempt after the human's answer
				resumed.fire(e.RunID, at)
			}
		},
		resumed: func(runID string) (time.Time, error) { return await(ctx, resumed.expect(runID), time.Second) },
	})
}

// clickCase is what one click measurement runs: the runs' workspace, plan and options, the button clicked on their
// question, and when a run's agent resumed after the click (asked once the run ended).
type clickCase struct {
	ws, plan string
	opts     jobs.Options
	button   string
	observe  func(e jobs.Event, at time.Time)
	resumed  func(runID string) (time.Time, error)
}

// measureClicks starts clicks runs of c from Slack, waits for each to ask, then clicks c.button on each question in
// turn, at a random moment of the workers' poll loops, and returns the time from each click's POST to its run's agent
// resuming.
func measureClicks(ctx context.Context, r *rig, poll time.Duration, clicks int, c clickCase) ([]time.Duration, error) {
	store, queue, events := r.backend()
	ended := newSignals()
	events.hook(func(e jobs.Event, at time.Time) {
		if c.observe != nil {
			c.observe(e, at)
		}
		switch e.Body.(type) {
		case jobs.RunCompletedEvent, jobs.RunFailedEvent, jobs.RunAbortedEvent:
			ended.fire(e.RunID, at)
		}
	})
	w, err := r.startWorker(store, queue, poll)
	if err != nil {
		return nil, err
	}
	defer w.Shutdown()
	fake := slackfake.New()
	defer fake.Close()
	// Posts to a channel are spaced by PostInterval (1 s in production, for Slack's rate limit); the fake has none,
	// and posting is not on the measured path.
	s, err := bot.New(bot.Config{SigningSecret: signingSecret, BotToken: "xoxb-bench", APIURL: fake.APIURL(),
		Workspace: c.ws, Store: store, Queue: queue, PostInterval: time.Millisecond, Log: r.log,
		Starter: &planStarter{store: store, queue: queue, ws: c.ws, opts: c.opts}})
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	defer shutdownBot(s)
	url, stop, err := serve(s.Handler())
	if err != nil {
		return nil, err
	}
	defer stop()
	client := &http.Client{Timeout: 30 * time.Second}

	for range clicks {
		if err := post(ctx, client, url, "/slack/commands", fake.SlashCommand("run "+filepath.Base(c.plan), "U1", "C1")); err != nil {
			return nil, err
		}
	}
	action := bot.ActionChoose + ":" + c.button
	questions, err := waitQuestions(ctx, fake, action, clicks, time.Minute+time.Duration(clicks)*(time.Second+2*poll))
	if err != nil {
		return nil, err
	}
	time.Sleep(200 * time.Millisecond) // the poster records a message just after posting it: a click needs that record

	var lat []time.Duration
	for _, q := range questions {
		// A person clicks at any moment of the workers' poll loops, not in step with them.
		if err := sleep(ctx, rand.N(poll)); err != nil {
			return nil, err
		}
		body := fake.Click(q.msg, "U1", action, q.act.Encode())
		start := time.Now()
		if err := post(ctx, client, url, "/slack/interactions", body); err != nil {
			return nil, err
		}
		// The next click waits for this run to end, so that it finds the workers idle, as a click mostly does.
		if _, err := await(ctx, ended.expect(q.act.RunID), 30*time.Second+4*poll); err != nil {
			return nil, fmt.Errorf("run %s did not end after the click: %w", q.act.RunID, err)
		}
		at, err := c.resumed(q.act.RunID)
		if err != nil {
			return nil, fmt.Errorf("run %s did not resume after the click: %w", q.act.RunID, err)
		}
		lat = append(lat, at.Sub(start))
	}
	return lat, nil
}

// question is a run's question as posted in its thread, with the value of the button clicked.
type question struct {
	msg slackfake.Message
	act bot.ActionValue
}

// waitQuestions waits until n runs have their question posted with the button action, and returns one per run.
func waitQuestions(ctx context.Context, fake *slackfake.Slack, action string, n int, timeout time.Duration) ([]question, error) {
	deadline := time.Now().Add(timeout)
	for {
		byRun := map[string]question{}
		var order []string
		for _, m := range fake.Messages() {
			v, ok := slackfake.Buttons(m)[action]
			if !ok {
				continue
			}
			act, err := bot.DecodeAction(action, v)
			if err != nil {
				return nil, err
			}
			if _, seen := byRun[act.RunID]; !seen {
				byRun[act.RunID] = question{msg: m, act: act}
				order = append(order, act.RunID)
			}
		}
		if len(order) >= n {
			out := make([]question, 0, n)
			for _, id := range order[:n] {
				out = append(out, byRun[id])
			}
			return out, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d questions posted after %s; ephemerals: %v", len(order), n, timeout, fake.Ephemerals())
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// planStarter creates the runs `/orch run` asks for, as the server's starter does, with the sim agent.
type planStarter struct {
	store *store.Store
	queue *queue.Queue
	ws    string
	opts  jobs.Options
}

func (s *planStarter) Start(ctx context.Context, req bot.StartRequest) (*jobs.Run, error) {
	run, err := planRun(req.Plan, s.ws, s.opts, req.Origin)
	if err != nil {
		return nil, err
	}
	return run, startRun(ctx, s.store, s.queue, run)
}

// post sends one signed request and checks it was acked.
func post(ctx context.Context, client *http.Client, base, path string, body []byte) error {
	resp, err := client.Do(slackfake.Request(base, path, signingSecret, body, formContentType).WithContext(ctx))
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: status %d", path, resp.StatusCode)
	}
	return nil
}

// signals hands the moment of one event per run to whoever waits for it, whichever of the two comes first.
type signals struct {
	mu sync.Mutex
	ch map[string]chan time.Time
}

func newSignals() *signals { return &signals{ch: map[string]chan time.Time{}} }

func (s *signals) get(id string) chan time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.ch[id]
	if !ok {
		c = make(chan time.Time, 1)
		s.ch[id] = c
	}
	return c
}

// fire records the event of run id; only the first one counts.
func (s *signals) fire(id string, at time.Time) {
	select {
	case s.get(id) <- at:
	default:
	}
}

func (s *signals) expect(id string) <-chan time.Time { return s.get(id) }

func await(ctx context.Context, c <-chan time.Time, timeout time.Duration) (time.Time, error) {
	select {
	case at := <-c:
		return at, nil
	case <-time.After(timeout):
		return time.Time{}, fmt.Errorf("nothing after %s", timeout)
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
