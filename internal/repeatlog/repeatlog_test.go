package repeatlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchrun/orch/internal/safetext"
)

// fakeClock runs the handler's windows when the test says time has passed.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// advance moves time on by d, running every timer due on the way, in order (synchronously: a test reads the log
// right after).
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		var due *fakeTimer
		for i, t := range c.timers {
			if !t.at.After(end) {
				due = t
				c.timers = append(c.timers[:i], c.timers[i+1:]...)
				break
			}
		}
		if due == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		c.now = due.at
		run := !due.stopped
		due.stopped = true
		c.mu.Unlock()
		if run {
			due.f()
		}
	}
}

type line struct {
	Level   string `json:"level"`
	Msg     string `json:"msg"`
	Repeats int    `json:"repeats"`
	Err     string `json:"err"`
}

func newTest(t *testing.T) (*slog.Logger, *Handler, *fakeClock, func() []line) {
	t.Helper()
	var mu sync.Mutex
	var buf bytes.Buffer
	clock := newFakeClock()
	h := New(slog.NewJSONHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelDebug}),
		Config{Window: 30 * time.Second, Redact: safetext.Redact, Clock: clock})
	lines := func() []line {
		mu.Lock()
		defer mu.Unlock()
		var out []line
		for _, s := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			if s == "" {
				continue
			}
			var l line
			if err := json.Unmarshal([]byte(s), &l); err != nil {
				t.Fatalf("%v: %q", err, s)
			}
			out = append(out, l)
		}
		return out
	}
	return slog.New(h), h, clock, lines
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// A burst of 1000 like errors (as a queue library logs them from its loops while Redis is away, each naming a port
// or a count of its own) is one line, then one line per window saying how many more there were.
func TestBurstIsSummarized(t *testing.T) {
	log, _, clock, lines := newTest(t)
	for i := range 1000 {
		log.Error(fmt.Sprintf("Dequeue error: dial tcp 127.0.0.1:%d: connect: connection refused (try %d)", 6000+i%7, i),
			"component", "asynq")
		if i == 499 {
			clock.advance(10 * time.Second) // still in the first window
		}
	}
	got := lines()
	if len(got) != 1 || !strings.HasPrefix(got[0].Msg, "Dequeue error") || got[0].Repeats != 0 {
		t.Fatalf("during the burst: %+v, want its first line alone", got)
	}
	clock.advance(20 * time.Second) // the window ends
	got = lines()
	if len(got) != 2 || got[1].Repeats != 999 || !strings.Contains(got[1].Msg, "and 999 more like it in the last 30s") ||
		got[1].Level != "ERROR" {
		t.Fatalf("after the window: %+v, want a summary of 999", got)
	}
	// The failure goes on, slower: one summary per window, never a line per repeat.
	for w := range 4 {
		for i := range 100 {
			log.Error(fmt.Sprintf("Dequeue error: dial tcp 127.0.0.1:6379: connect: connection refused (try %d)", 1000+w*100+i),
				"component", "asynq")
		}
		clock.advance(30 * time.Second)
	}
	got = lines()
	if len(got) != 6 {
		t.Fatalf("4 more windows of 100 each: %d lines, want 6: %+v", len(got), got)
	}
	total := 1
	for _, l := range got[1:] {
		total += l.Repeats
	}
	if total != 1400 {
		t.Fatalf("the lines account for %d errors, want 1400: %+v", total, got)
	}
	// A quiet window forgets the kind: the next one is a first again, logged as it is.
	clock.advance(30 * time.Second)
	clock.advance(30 * time.Second)
	log.Error("Dequeue error: dial tcp 127.0.0.1:6379: connect: connection refused (try 1)", "component", "asynq")
	got = lines()
	if len(got) != 7 || got[6].Repeats != 0 || strings.Contains(got[6].Msg, "more like it") {
		t.Fatalf("after the failure stopped and came back: %+v", got)
	}
}

// Errors that differ in what they say are not merged, nor are the same words at another level or with another
// attribute; errors that are not repeats are logged as they come; info lines pass untouched.
func TestDistinctRecordsAreNotMerged(t *testing.T) {
	log, _, _, lines := newTest(t)
	log.Error("Dequeue error: connection refused", "component", "asynq")
	log.Error("Failed to forward scheduled tasks: connection refused", "component", "asynq")
	log.Warn("Dequeue error: connection refused", "component", "asynq")
	log.Error("Dequeue error: connection refused", "component", "redis")
	log.Error("Dequeue error: NOSCRIPT no matching script", "component", "asynq")
	log.With("queue", "steps").Error("Dequeue error: connection refused", "component", "asynq")
	log.Warn("run.failed", "run_id", "r-abcdef2345", "reason", "sandbox: exit 1")
	log.Warn("run.failed", "run_id", "r-abcdef2346", "reason", "sandbox: exit 2")
	for range 3 {
		log.Info("task.started", "run_id", "r-1", "task_id", "1.1")
	}
	if got := lines(); len(got) != 11 {
		t.Fatalf("%d lines, want 11 (6 distinct errors, 2 runs failed, 3 info lines): %+v", len(got), got)
	}
}

// A secret in a message or an error is redacted, in the first line and in the summary, and it does not make two
// repeats of one failure look different.
func TestSecretsAreRedacted(t *testing.T) {
	log, h, _, lines := newTest(t)
	for _, pw := range []string{"hunter2hunter2", "s3cr3t-passw0rd"} {
		err := fmt.Errorf("dial redis://orch:%s@10.0.0.7:6379/0: i/o timeout", pw)
		log.Error("Failed to write server state data: "+err.Error(), "err", err, "token", "xoxb-1234567890-abcdefghij")
	}
	h.Flush()
	got := lines()
	if len(got) != 2 || got[1].Repeats != 1 {
		t.Fatalf("%+v, want the first line and a summary of one more", got)
	}
	for _, l := range got {
		for _, s := range []string{l.Msg, l.Err} {
			if strings.Contains(s, "hunter2") || strings.Contains(s, "s3cr3t") || !strings.Contains(s, "[REDACTED]") {
				t.Fatalf("not redacted: %q", s)
			}
		}
	}
	if all := fmt.Sprint(got); strings.Contains(all, "xoxb-1234567890") {
		t.Fatalf("a token was logged: %s", all)
	}
}

// Flush says what was counted and not said yet, and the windows it ends do not speak again.
func TestFlush(t *testing.T) {
	log, h, clock, lines := newTest(t)
	for range 5 {
		log.Warn("looking for steps of dead workers", "err", errors.New("dial tcp 127.0.0.1:6379: connection refused"))
	}
	h.Flush()
	clock.advance(time.Minute)
	got := lines()
	if len(got) != 2 || got[1].Repeats != 4 {
		t.Fatalf("%+v, want the first line and a summary of 4", got)
	}
}

func TestNormalize(t *testing.T) {
	same := [][2]string{
		{"dial tcp 127.0.0.1:6379: connect: connection refused", "dial tcp 10.1.2.3:16379: connect: connection refused"},
		{"dial tcp [::1]:6379: i/o timeout", "dial tcp [fe80::1%eth0]:7000: i/o timeout"},
		{"dial tcp redis.internal:6379: no such host", "dial tcp cache-2.example.com:6380: no such host"},
		{"task 5f3e9a01c2 failed after 3 tries", "task 0b7d22e4ff failed after 12 tries"},
		{"lease of 6c1f3d0e-8a4b-4c2d-9e7f-0a1b2c3d4e5f expired", "lease of 00000000-1111-4222-8333-444444444444 expired"},
	}
	for _, p := range same {
		if a, b := Normalize(p[0]), Normalize(p[1]); a != b {
			t.Errorf("%q and %q differ: %q, %q", p[0], p[1], a, b)
		}
	}
	if Normalize("connection refused") == Normalize("connection reset by peer") {
		t.Error("different words normalize alike")
	}
}

// Handlers made by WithAttrs and WithGroup share what was logged, and many goroutines may log at once.
func TestConcurrent(t *testing.T) {
	log, h, _, lines := newTest(t)
	child := log.With("component", "asynq")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 125 {
				child.Error("Failed to write server state data: connection refused")
			}
		})
	}
	wg.Wait()
	h.Flush()
	got := lines()
	if len(got) != 2 || got[1].Repeats != 999 {
		t.Fatalf("%+v, want one line and a summary of 999", got)
	}
}
