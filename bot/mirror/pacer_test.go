package mirror

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

// sends records what a pacer sent, in order.
type sends struct {
	mu   sync.Mutex
	done []string
}

func (s *sends) add(what string) {
	s.mu.Lock()
	s.done = append(s.done, what)
	s.mu.Unlock()
}

func (s *sends) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.done)
}

func (s *sends) progress(what string) progressUpdate {
	return func(context.Context) error { s.add(what); return nil }
}

// waitUntil polls cond for up to 10 seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waiting is how many calls wait for a turn in channel key.
func (p *pacer) waiting(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lane(key).waiters)
}

// A progress update replaced before its turn is never sent: of three updates of one message left while the channel was
// busy, only the last goes, once; another message's update goes too.
func TestPacerSendsOnlyTheLatestProgress(t *testing.T) {
	p := newPacer(time.Millisecond, slog.New(slog.DiscardHandler))
	defer p.shutdown()
	var s sends
	release, err := p.turn(context.Background(), "C1")
	if err != nil {
		t.Fatal(err)
	}
	p.progress("C1", "m1", s.progress("m1 v1"))
	p.progress("C1", "m2", s.progress("m2 v1"))
	p.progress("C1", "m1", s.progress("m1 v2"))
	p.progress("C1", "m1", s.progress("m1 v3"))
	if got := s.list(); len(got) != 0 {
		t.Fatalf("sent %v while the channel was busy", got)
	}
	release()
	waitUntil(t, "the progress to be sent", func() bool { return p.pending("C1") == 0 && len(s.list()) == 2 })
	if got := s.list(); !slices.Equal(got, []string{"m1 v3", "m2 v1"}) {
		t.Errorf("sent %v, want the latest of m1 (first queued), then m2", got)
	}
}

// A call that shapes a thread goes before progress left earlier: progress takes only the turns nobody wanted.
func TestPacerImportantFirst(t *testing.T) {
	p := newPacer(time.Millisecond, slog.New(slog.DiscardHandler))
	defer p.shutdown()
	var s sends
	release, err := p.turn(context.Background(), "C1")
	if err != nil {
		t.Fatal(err)
	}
	p.progress("C1", "m1", s.progress("progress"))
	done := make(chan error, 2)
	for i, name := range []string{"final 1", "final 2"} {
		go func() {
			r, err := p.turn(context.Background(), "C1")
			if err == nil {
				s.add(name)
				r()
			}
			done <- err
		}()
		waitUntil(t, name+" in line", func() bool { return p.waiting("C1") == i+1 })
	}
	release()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "the progress", func() bool { return len(s.list()) == 3 })
	if got := s.list(); !slices.Equal(got, []string{"final 1", "final 2", "progress"}) {
		t.Errorf("sent %v, want the calls in line first, in the order they came, then the progress", got)
	}
}

// A call waiting in line returns when its context ends, and gives no turn away.
func TestPacerTurnCancelled(t *testing.T) {
	p := newPacer(time.Millisecond, slog.New(slog.DiscardHandler))
	defer p.shutdown()
	release, err := p.turn(context.Background(), "C1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		r, err := p.turn(ctx, "C1")
		if err == nil {
			r()
		}
		errc <- err
	}()
	waitUntil(t, "the call in line", func() bool { return p.waiting("C1") == 1 })
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Fatalf("turn = %v, want context.Canceled", err)
	}
	release()
	if r, err := p.turn(context.Background(), "C1"); err != nil {
		t.Fatal(err)
	} else {
		r()
	}
}

// While the poster brings its runs up to date, progress waits for the pass to end: the questions and ends the pass
// finds come as its workers reach them, and a gap between two of them is no turn nobody wants.
func TestPacerHoldsProgressForThePass(t *testing.T) {
	p := newPacer(time.Millisecond, slog.New(slog.DiscardHandler))
	defer p.shutdown()
	var s sends
	end := p.pass()
	p.progress("C1", "m1", s.progress("m1 v1"))
	time.Sleep(50 * time.Millisecond) // many idle windows of the lane: none may let it go while the pass lasts
	if got := s.list(); len(got) != 0 {
		t.Fatalf("sent %v during the pass", got)
	}
	release, err := p.turn(context.Background(), "C1") // the pass's final message still takes its turn
	if err != nil {
		t.Fatal(err)
	}
	release()
	end()
	waitUntil(t, "the progress to be sent after the pass", func() bool { return len(s.list()) == 1 })
}

// A Web API call waits out Slack's 429s (the first call and five more at most), is not retried on other errors, and
// returns promptly when its context is done, whether it is waiting for Slack's Retry-After or for the channel's pace.
func TestPacerCall(t *testing.T) {
	// call uses neither Redis nor Slack's API but through fn.
	newPacerEvery := func(every time.Duration) *pacer { return newPacer(every, slog.New(slog.DiscardHandler)) }
	limited := func(after time.Duration) error { return &slack.RateLimitedError{RetryAfter: after} }

	t.Run("gives up after six 429s", func(t *testing.T) {
		p, calls := newPacerEvery(time.Millisecond), 0
		err := p.call(context.Background(), "C1", func(context.Context) error { calls++; return limited(time.Millisecond) })
		var rl *slack.RateLimitedError
		if calls != 6 || !errors.As(err, &rl) {
			t.Fatalf("%d calls, %v; want 6 and the 429", calls, err)
		}
	})

	t.Run("waits out Retry-After", func(t *testing.T) {
		p, calls := newPacerEvery(time.Millisecond), 0
		start := time.Now()
		err := p.call(context.Background(), "C1", func(context.Context) error {
			if calls++; calls == 1 {
				return limited(200 * time.Millisecond)
			}
			return nil
		})
		if err != nil || calls != 2 {
			t.Fatalf("%d calls, %v; want 2 and success", calls, err)
		}
		if waited := time.Since(start); waited < 200*time.Millisecond {
			t.Errorf("the second call came %v after the first, before the 200ms Slack asked for", waited)
		}
	})

	t.Run("other errors are not retried", func(t *testing.T) {
		p, calls := newPacerEvery(time.Millisecond), 0
		boom := errors.New("channel_not_found")
		if err := p.call(context.Background(), "C1", func(context.Context) error { calls++; return boom }); calls != 1 || !errors.Is(err, boom) {
			t.Fatalf("%d calls, %v; want 1 and the error", calls, err)
		}
	})

	returnsPromptly := func(t *testing.T, p *pacer, fn func(context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		err := p.call(ctx, "C1", fn)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("call = %v, want the context's error", err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("call returned %v after its context was done", took)
		}
	}
	t.Run("cancelled during Retry-After", func(t *testing.T) {
		returnsPromptly(t, newPacerEvery(time.Millisecond), func(context.Context) error { return limited(time.Hour) })
	})
	t.Run("cancelled while paced", func(t *testing.T) {
		p := newPacerEvery(time.Hour)
		if err := p.call(context.Background(), "C1", func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		// Another channel has a pace of its own.
		if err := p.call(context.Background(), "C2", func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		returnsPromptly(t, p, func(context.Context) error { return nil })
	})
}
