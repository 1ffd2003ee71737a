// Package backoff is how orch waits between tries of anything that can fail for a while (Redis restarting, an LLM
// overloaded, Slack rate-limiting): one delay policy, a sleep that honours its context, and a loop that tries until
// it succeeds, meets an error no retry fixes, or runs out of tries or patience.
package backoff

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Jitter spreads delays so that many clients hit by the same outage do not come back in step.
type Jitter int

const (
	NoJitter Jitter = iota
	// Full waits a uniform time in [0, d): the widest spread, for a crowd of clients of one service.
	Full
	// Spread waits a uniform time in [d/2, 3d/2): about d, never nothing.
	Spread
)

// Policy says how long to wait after the n-th failed try. The zero value waits nothing.
type Policy struct {
	Initial time.Duration // the wait after the first failure
	Factor  float64       // growth per failure; 0 or 1 keeps the wait constant
	Max     time.Duration // the longest wait before jitter; 0 for none
	Jitter  Jitter
}

// Delay is the wait after n failed tries (n >= 1), its jitter drawn at random.
func (p Policy) Delay(n int) time.Duration { return p.Drawn(n, rand.Float64()) }

// Drawn is Delay with its jitter drawn as u, in [0, 1): the same draw gives the same wait, so that a decision taken
// again (a transaction played twice) waits the same.
func (p Policy) Drawn(n int, u float64) time.Duration {
	if p.Initial <= 0 || n < 1 {
		return 0
	}
	d := float64(p.Initial)
	for i := 1; i < n && (p.Max <= 0 || d < float64(p.Max)); i++ {
		d *= max(p.Factor, 1)
	}
	if p.Max > 0 {
		d = min(d, float64(p.Max))
	}
	switch p.Jitter {
	case Full:
		return time.Duration(d * u)
	case Spread:
		return time.Duration(d * (0.5 + u))
	}
	return time.Duration(d)
}

// Sleep waits d, or until ctx is done: then it returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Retry is a loop of tries: Do calls a function until it succeeds, returns an error marked Permanent, or Tries or
// Patience run out.
type Retry struct {
	Policy
	// Tries bounds the calls (0: no bound but Patience and the context).
	Tries int
	// Patience bounds the time from the first failure (0: no bound but Tries and the context).
	Patience time.Duration
	// OnRetry, when set, is told of each failure that will be tried again and the wait before the next try.
	OnRetry func(n int, err error, wait time.Duration)
	// Sleep waits between tries (default: Sleep); tests make time pass instantly.
	Sleep func(context.Context, time.Duration) error
	// Now tells the time Patience is measured by (default: time.Now); tests pair it with Sleep.
	Now func() time.Time
}

// Do calls fn until it returns nil or an error no retry fixes, tries or patience run out (the last error is
// returned), or ctx is done (ctx's error, wrapping nothing of fn's).
func (r Retry) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	sleep := r.Sleep
	if sleep == nil {
		sleep = Sleep
	}
	now := r.Now
	if now == nil {
		now = time.Now
	}
	var first time.Time
	for n := 1; ; n++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var p *permanent
		if errors.As(err, &p) {
			return p.err
		}
		if first.IsZero() {
			first = now()
		}
		if r.Tries > 0 && n >= r.Tries || r.Patience > 0 && now().Sub(first) > r.Patience {
			return err
		}
		wait := r.Delay(n)
		var a *after
		if errors.As(err, &a) {
			wait = a.d
		}
		if r.OnRetry != nil {
			r.OnRetry(n, err, wait)
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// Permanent marks an error no retry can fix: Do returns it (unwrapped) at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanent{err}
}

type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// After marks an error whose source said when to try again (an HTTP 429's Retry-After): Do waits d instead of the
// policy's delay.
func After(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &after{err: err, d: d}
}

type after struct {
	err error
	d   time.Duration
}

func (a *after) Error() string { return a.err.Error() }
func (a *after) Unwrap() error { return a.err }
