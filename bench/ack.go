package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/orchrun/orch/bot"
	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/jobs"
)

// signingSecret signs the requests the benchmark sends as Slack would.
const signingSecret = "bench-signing-secret"

// ackConcurrency is how many signed requests are in flight at once, as in a burst from a busy workspace.
const ackConcurrency = 200

const formContentType = "application/x-www-form-urlencoded"

type ackResult struct {
	p50, p99 float64 // handler time, both endpoints together
	note     string
}

// measureAck sends rounds of 200 concurrent signed requests to the bot's slash command and interaction endpoints
// over loopback, and times each handler from the moment it gets the request to the ack written. The work a request
// asks for (a status lookup, resolving a click) happens after the ack, in the bot's background pool, on the same two
// cores: it is load, not latency.
func measureAck(ctx context.Context, r *rig, rounds int) (ackResult, error) {
	store, queue, _ := r.backend()
	fake := slackfake.New()
	defer fake.Close()
	ws, err := r.workspace("ack", nil)
	if err != nil {
		return ackResult{}, err
	}
	// A backlog large enough that no request is refused as "busy": the ack is what is measured.
	s, err := bot.New(bot.Config{SigningSecret: signingSecret, BotToken: "xoxb-bench", APIURL: fake.APIURL(),
		Workspace: ws, Store: store, Queue: queue, Starter: refuseStarts{}, Backlog: 1 << 20, Log: r.log})
	if err != nil {
		return ackResult{}, err
	}
	if err := s.Start(ctx); err != nil {
		return ackResult{}, err
	}
	defer shutdownBot(s)
	handlerTimes := &durations{}
	h := s.Handler()
	url, stop, err := serve(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		h.ServeHTTP(w, req)
		handlerTimes.add(time.Since(start))
	}))
	if err != nil {
		return ackResult{}, err
	}
	defer stop()

	// Each request is one Slack could send: its own trigger_id, so its own body and signature (a byte-identical
	// request is a replay, which orch refuses).
	click := func() []byte {
		return fake.Click(slackfake.Message{Channel: "C1", TS: "1700000000.000001", ThreadTS: "1700000000.000000"}, "U1",
			bot.ActionChoose+":B", bot.ActionValue{RunID: "r-nosuchrun1", EscalationID: "e1", Kind: "choose", Key: "B"}.Encode())
	}
	endpoints := []struct {
		name, path string
		body       func() []byte
	}{
		{"/orch status", "/slack/commands", func() []byte { return fake.SlashCommand("status r-nosuchrun1", "U1", "C1") }},
		{"button click", "/slack/interactions", click},
	}
	var all []time.Duration
	note := fmt.Sprintf("%d rounds of %d concurrent signed requests per endpoint, over loopback HTTP with keep-alive "+
		"(one unmeasured round first opens the connections), against the bot's real handler with a real Redis and a "+
		"fake Slack Web API. ack_* is the handler time: from the request reaching orch's handler to the ack written "+
		"(body read, signature check, the replay check in Redis, parse, hand-off to the background pool), both endpoints together.", rounds, ackConcurrency)
	for _, ep := range endpoints {
		rtt, err := fire(ctx, url, ep.path, ep.body, rounds, handlerTimes)
		if err != nil {
			return ackResult{}, fmt.Errorf("%s: %w", ep.name, err)
		}
		server := handlerTimes.take()
		all = append(all, server...)
		note += fmt.Sprintf(" %s: handler p50 %.3g ms, p99 %.3g ms; client round trip p50 %.3g ms, p99 %.3g ms (the %d "+
			"clients share the two cores with the server).", ep.name, percentileMs(server, 0.5), percentileMs(server, 0.99),
			percentileMs(rtt, 0.5), percentileMs(rtt, 0.99), ackConcurrency)
	}
	return ackResult{p50: percentileMs(all, 0.5), p99: percentileMs(all, 0.99), note: note}, nil
}

// fire sends rounds of ackConcurrency concurrent signed requests and returns every round trip. Each request is built
// and signed before its clock starts, as Slack signs before it sends.
func fire(ctx context.Context, base, path string, body func() []byte, rounds int, handlerTimes *durations) ([]time.Duration, error) {
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
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := slackfake.Request(base, path, signingSecret, body(), formContentType).WithContext(ctx)
				start := time.Now()
				resp, err := client.Do(req)
				d := time.Since(start)
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("status %d", resp.StatusCode)
					return
				}
				rtt.add(d)
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return nil, err
		}
	}
	return rtt.take(), nil
}

// serve serves h on a free loopback port, as `orch serve` serves the bot.
func serve(h http.Handler) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}

func shutdownBot(s *bot.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.Shutdown(ctx)
}

// refuseStarts is the starter of the ack measurement, which starts no runs.
type refuseStarts struct{}

func (refuseStarts) Start(context.Context, bot.StartRequest) (*jobs.Run, error) {
	return nil, errors.New("the ack measurement starts no runs")
}
