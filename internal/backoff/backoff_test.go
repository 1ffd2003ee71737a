package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDelayGrowsToItsCap(t *testing.T) {
	p := Policy{Initial: 100 * time.Millisecond, Factor: 2, Max: time.Second}
	want := []time.Duration{0, 100, 200, 400, 800, 1000, 1000}
	for n, w := range want {
		if got := p.Delay(n); got != w*time.Millisecond {
			t.Errorf("Delay(%d) = %v, want %v", n, got, w*time.Millisecond)
		}
	}
	if d := (Policy{Initial: time.Second}).Delay(5); d != time.Second {
		t.Errorf("constant policy: %v", d)
	}
	if d := (Policy{}).Delay(3); d != 0 {
		t.Errorf("zero policy waits %v", d)
	}
}

func TestJitterStaysInItsWindow(t *testing.T) {
	for range 1000 {
		if d := (Policy{Initial: time.Second, Jitter: Full}).Delay(1); d < 0 || d >= time.Second {
			t.Fatalf("full jitter %v", d)
		}
		if d := (Policy{Initial: time.Second, Jitter: Spread}).Delay(1); d < time.Second/2 || d >= 3*time.Second/2 {
			t.Fatalf("spread jitter %v", d)
		}
	}
}

// A drawn jitter is the draw: the same draw waits the same, at either end of the window.
func TestDrawnJitter(t *testing.T) {
	full, spread := Policy{Initial: time.Second, Jitter: Full}, Policy{Initial: time.Second, Jitter: Spread}
	for _, c := range []struct {
		p    Policy
		u    float64
		want time.Duration
	}{{full, 0, 0}, {full, 0.25, time.Second / 4}, {spread, 0, time.Second / 2}, {spread, 0.5, time.Second}} {
		if got := c.p.Drawn(1, c.u); got != c.want || c.p.Drawn(1, c.u) != got {
			t.Errorf("Drawn(1, %v) with jitter %d = %v, want %v", c.u, c.p.Jitter, got, c.want)
		}
	}
}

// noSleep records the waits and lets no time pass.
type noSleep []time.Duration

func (s *noSleep) sleep(ctx context.Context, d time.Duration) error {
	*s = append(*s, d)
	return ctx.Err()
}

func TestRetryUntilSuccess(t *testing.T) {
	var waits noSleep
	calls := 0
	err := Retry{Policy: Policy{Initial: time.Millisecond, Factor: 2}, Tries: 5, Sleep: waits.sleep}.Do(context.Background(),
		func(context.Context) error {
			calls++
			if calls < 3 {
				return errors.New("not yet")
			}
			return nil
		})
	if err != nil || calls != 3 || len(waits) != 2 || waits[1] != 2*time.Millisecond {
		t.Fatalf("err %v, calls %d, waits %v", err, calls, waits)
	}
}

func TestRetryStops(t *testing.T) {
	boom := errors.New("boom")
	var waits noSleep
	calls := 0
	err := Retry{Tries: 3, Sleep: waits.sleep}.Do(context.Background(), func(context.Context) error { calls++; return boom })
	if !errors.Is(err, boom) || calls != 3 {
		t.Fatalf("tries: err %v, calls %d", err, calls)
	}
	calls = 0
	err = Retry{Sleep: waits.sleep}.Do(context.Background(), func(context.Context) error { calls++; return Permanent(boom) })
	if err != boom || calls != 1 {
		t.Fatalf("permanent: err %v, calls %d", err, calls)
	}
	calls = 0
	clock := time.Unix(0, 0)
	err = Retry{Patience: 30 * time.Millisecond,
		Sleep: func(context.Context, time.Duration) error { clock = clock.Add(10 * time.Millisecond); return nil },
		Now:   func() time.Time { return clock }}.Do(
		context.Background(), func(context.Context) error { calls++; return boom })
	// Failures at 0, 10, 20 and 30 ms are within patience; the one at 40 ms is past it.
	if !errors.Is(err, boom) || calls != 5 {
		t.Fatalf("patience: err %v, calls %d", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (Retry{}).Do(ctx, func(context.Context) error { return boom }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestRetryHonoursAfter(t *testing.T) {
	var waits noSleep
	var told []time.Duration
	calls := 0
	r := Retry{Policy: Policy{Initial: time.Hour}, Tries: 2, Sleep: waits.sleep,
		OnRetry: func(n int, err error, wait time.Duration) { told = append(told, wait) }}
	err := r.Do(context.Background(), func(context.Context) error {
		calls++
		if calls == 1 {
			return After(errors.New("429"), 3*time.Second)
		}
		return nil
	})
	if err != nil || len(waits) != 1 || waits[0] != 3*time.Second || told[0] != 3*time.Second {
		t.Fatalf("err %v, waits %v, told %v", err, waits, told)
	}
}

func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled sleep: %v", err)
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("zero sleep on a done context: %v", err)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatal(err)
	}
}
