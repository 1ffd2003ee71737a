package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/bot"
	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/runs"
	"github.com/orchrun/orch/sandbox"
	"github.com/orchrun/orch/worker"
)

// BenchmarkClickToResume measures, from a click's POST to the resumed agent attempt starting (its task_started event,
// stamped just before the agent process is started), p50 and p99: with orch's poll interval and with asynq's default
// of one second, in the same run.
func BenchmarkClickToResume(b *testing.B) {
	for _, poll := range []time.Duration{20 * time.Millisecond, time.Second} {
		b.Run(fmt.Sprintf("poll=%s", poll), func(b *testing.B) { clickToResume(b, poll) })
	}
}

func clickToResume(b *testing.B, poll time.Duration) {
	var rdb redis.UniversalClient
	if url := os.Getenv("ORCH_TEST_REDIS_URL"); url != "" {
		opt, _ := redis.ParseURL(url)
		rdb = redis.NewClient(opt)
	} else {
		rdb = redis.NewClient(&redis.Options{Addr: miniredis.RunT(b).Addr()})
	}
	defer rdb.Close()
	ctx := context.Background()
	st := store.New(rdb, nil)
	queue := queue.New(rdb)
	ws, _ := filepath.Abs("../../examples/plans")
	w, err := worker.New(worker.Config{Store: st, Queue: queue, Sandbox: sandbox.NewLocal(sandbox.LocalConfig{}),
		Brain: func(jobs.Options) (worker.Brain, error) { return &brain.Fallback{}, nil },
		Agent: func(o jobs.Options) (agent.Adapter, error) {
			return agent.NewSim(agent.SimConfig{Binary: orchBin, Scenario: o.SimScenario}), nil
		},
		PollInterval: poll})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Start(rdb); err != nil {
		b.Fatal(err)
	}
	defer w.Shutdown()
	fake := slackfake.New()
	defer fake.Close()
	s, err := bot.New(bot.Config{SigningSecret: testSecret, BotToken: "xoxb-bench", APIURL: fake.APIURL(), Workspace: ws,
		Store: st, Queue: queue, PostInterval: time.Millisecond,
		Starter: &slackStarter{runs: &runs.Starter{Store: st, Queue: queue}, workspace: ws, base: jobs.Options{
			Agent: "sim", Brain: "heuristic", Sandbox: "local", MaxAttempts: 3, AgentTimeout: time.Minute}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown(ctx)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		before := len(fake.Messages())
		resp, err := http.DefaultClient.Do(slackfake.Request(srv.URL, "/slack/commands", testSecret,
			fake.SlashCommand("run ambiguous_task.md", "U1", "C1"), "application/x-www-form-urlencoded"))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		// The question of the new run, as posted in its thread.
		var question slackfake.Message
		var act bot.ActionValue
		for deadline := time.Now().Add(30 * time.Second); question.TS == ""; time.Sleep(5 * time.Millisecond) {
			msgs := fake.Messages()
			for _, m := range msgs[before:] {
				if v, ok := slackfake.Buttons(m)[bot.ActionChoose+":B"]; ok {
					question = m
					act, _ = bot.DecodeAction(bot.ActionChoose+":B", v)
				}
			}
			if time.Now().After(deadline) {
				b.Fatal("the question was not posted")
			}
		}
		time.Sleep(20 * time.Millisecond) // the poster records the message just after posting it
		run := &jobs.Run{ID: act.RunID}
		cursor, _ := st.LastEventID(ctx, run.ID)
		body := fake.Click(question, "U1", bot.ActionChoose+":B", act.Encode())
		b.StartTimer()
		start := time.Now()
		resp, err = http.DefaultClient.Do(slackfake.Request(srv.URL, "/slack/interactions", testSecret, body, "application/x-www-form-urlencoded"))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		var resumed time.Time
		for deadline := time.Now().Add(30 * time.Second); resumed.IsZero(); {
			evs, _ := st.Events(ctx, run.ID, cursor, 100*time.Millisecond)
			for _, e := range evs {
				cursor = e.ID
				if b, ok := e.Body.(jobs.TaskStartedEvent); ok && b.Started == 2 {
					resumed = e.Time
				}
			}
			if time.Now().After(deadline) {
				r, _ := st.Get(ctx, run.ID)
				b.Fatalf("the run did not resume: %s, escalations %+v, ephemerals %v", r.Status, r.Escalations[0].Resolution, fake.Ephemerals())
			}
		}
		b.StopTimer()
		lat = append(lat, resumed.Sub(start))
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if r, _ := st.Get(ctx, run.ID); r.Status.Terminal() {
				break
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
