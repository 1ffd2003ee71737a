package bot

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/jobs/store"
)

const benchSecret = "bench-signing-secret"

type nopStarter struct{}

func (nopStarter) Start(ctx context.Context, req StartRequest) (*jobs.Run, error) {
	return nil, fmt.Errorf("benchmarks start no runs")
}

// benchServer is the bot on loopback with real Redis when ORCH_TEST_REDIS_URL is set (miniredis otherwise) and a
// fake Slack.
func benchServer(b *testing.B) (*httptest.Server, *slackfake.Slack, *timings) {
	var rdb redis.UniversalClient
	if url := os.Getenv("ORCH_TEST_REDIS_URL"); url != "" {
		opt, err := redis.ParseURL(url)
		if err != nil {
			b.Fatal(err)
		}
		rdb = redis.NewClient(opt)
	} else {
		m := miniredis.RunT(b)
		rdb = redis.NewClient(&redis.Options{Addr: m.Addr()})
	}
	b.Cleanup(func() { rdb.Close() })
	fake := slackfake.New()
	b.Cleanup(fake.Close)
	store := store.New(rdb, nil)
	s, err := New(Config{SigningSecret: benchSecret, BotToken: "xoxb-bench", APIURL: fake.APIURL(), Workspace: b.TempDir(),
		Store: store, Queue: queue.New(rdb), Starter: nopStarter{}, Backlog: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	tm := &timings{}
	h := s.Handler()
	// Server-side time: from the request reaching the handler to the ack written, without the client's own queueing.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h.ServeHTTP(w, r)
		tm.add(time.Since(start))
	}))
	b.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return srv, fake, tm
}

type timings struct {
	mu  sync.Mutex
	all []time.Duration
}

func (t *timings) add(d time.Duration) { t.mu.Lock(); t.all = append(t.all, d); t.mu.Unlock() }

func (t *timings) reset() { t.mu.Lock(); t.all = t.all[:0]; t.mu.Unlock() }

func (t *timings) sorted() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]time.Duration(nil), t.all...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// ackLatencies sends rounds of 200 concurrent signed requests and returns every latency, sorted.
// Each request has a body of its own, as each of Slack's has (its trigger_id): a byte-identical one is a replay.
func ackLatencies(b *testing.B, srv *httptest.Server, tm *timings, path string, body func() []byte, contentType string) []time.Duration {
	const concurrency = 200
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}
	var mu sync.Mutex
	var lat []time.Duration
	// One unmeasured round opens the connections: Slack keeps its connections alive too.
	for round := -1; round < b.N; round++ {
		if round == 0 {
			mu.Lock()
			lat = lat[:0]
			mu.Unlock()
			tm.reset()
			b.ResetTimer()
		}
		var wg sync.WaitGroup
		for range concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := slackfake.Request(srv.URL, path, benchSecret, body(), contentType)
				start := time.Now()
				resp, err := client.Do(req)
				d := time.Since(start)
				if err != nil {
					b.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("status %d", resp.StatusCode)
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat
}

// report gives the client-side (loopback round trip, 200 at once) and server-side (handler) latencies.
func report(b *testing.B, lat []time.Duration, tm *timings) {
	q := func(d []time.Duration, p float64) float64 {
		if len(d) == 0 {
			return 0
		}
		return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000
	}
	srv := tm.sorted()
	b.ReportMetric(q(lat, 0.50), "rtt-p50-ms")
	b.ReportMetric(q(lat, 0.99), "rtt-p99-ms")
	b.ReportMetric(q(srv, 0.50), "srv-p50-ms")
	b.ReportMetric(q(srv, 0.99), "srv-p99-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAckCommand: `/orch status` acks under 200 concurrent requests; the lookup happens after the ack.
func BenchmarkAckCommand(b *testing.B) {
	srv, fake, tm := benchServer(b)
	body := func() []byte { return fake.SlashCommand("status r-nosuchrun1", "U1", "C1") }
	report(b, ackLatencies(b, srv, tm, "/slack/commands", body, "application/x-www-form-urlencoded"), tm)
}

// BenchmarkAckInteraction: a button click acks under 200 concurrent requests; the resolution happens after the ack.
func BenchmarkAckInteraction(b *testing.B) {
	srv, fake, tm := benchServer(b)
	m := slackfake.Message{Channel: "C1", TS: "1700000000.000001", ThreadTS: "1700000000.000000"}
	body := func() []byte {
		return fake.Click(m, "U1", ActionChoose+":B", ActionValue{RunID: "r-nosuchrun1", EscalationID: "e1", Kind: "choose", Key: "B"}.Encode())
	}
	report(b, ackLatencies(b, srv, tm, "/slack/interactions", body, "application/x-www-form-urlencoded"), tm)
}
