package bot

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/orchrun/orch/bot/blocks"
)

// Limit is how many new runs one person, or one channel, may start in a period: a bucket of N that refills evenly
// over Per. The zero Limit is no limit.
type Limit struct {
	N   int
	Per time.Duration
}

// ParseLimit reads a limit written "N/PERIOD": "20/h", "5/10m", "100/24h" (h, m and s stand for one hour, minute or
// second). "off" and "0" mean no limit.
func ParseLimit(s string) (Limit, error) {
	s = strings.TrimSpace(s)
	if s == "off" || s == "0" {
		return Limit{}, nil
	}
	n, per, ok := strings.Cut(s, "/")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count <= 0 {
		return Limit{}, fmt.Errorf("%q: want N/PERIOD, e.g. 20/h or 5/10m, or off", s)
	}
	if per == "h" || per == "m" || per == "s" {
		per = "1" + per
	}
	d, err := time.ParseDuration(per)
	if err != nil || d <= 0 {
		return Limit{}, fmt.Errorf("%q: the period %q is not a duration (e.g. h, 10m, 24h)", s, per)
	}
	return Limit{N: count, Per: d}, nil
}

func (l Limit) String() string {
	if l.N == 0 {
		return "off"
	}
	return fmt.Sprintf("%d per %s", l.N, blocks.HumanDuration(l.Per))
}

// maxLimiters bounds the limiters kept: beyond it those that are full again (whose key has not started a run for a
// while) are forgotten, which changes nothing for them.
const maxLimiters = 10000

// runLimits holds a bot's limits on new runs: one bucket per person and one per channel. They are this process's
// own: with several bot replicas each allows the limit.
type runLimits struct {
	user, channel Limit
	now           func() time.Time

	mu       sync.Mutex
	limiters map[string]*rate.Limiter
}

func newRunLimits(user, channel Limit, now func() time.Time) *runLimits {
	return &runLimits{user: user, channel: channel, now: now, limiters: map[string]*rate.Limiter{}}
}

// take spends one new run of user's and of channel's, or none and says why: which limit, and when the next run may
// start. refund gives the run back, for one that did not start after all.
func (l *runLimits) take(user, channel string) (refund func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var taken []*rate.Reservation
	for _, k := range []struct {
		key, who string
		lim      Limit
	}{{"u:" + user, "one person", l.user}, {"c:" + channel, "this channel", l.channel}} {
		if k.lim.N == 0 {
			continue
		}
		r := l.limiter(k.key, k.lim, now).ReserveN(now, 1)
		if wait := r.DelayFrom(now); wait > 0 {
			r.CancelAt(now)
			for _, t := range taken {
				t.CancelAt(now)
			}
			return nil, fmt.Errorf("that is more new runs than %s may start here (%s): the next can start in %s",
				k.who, k.lim, blocks.HumanDuration(wait.Round(time.Second)))
		}
		taken = append(taken, r)
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, t := range taken {
			t.CancelAt(l.now())
		}
	}, nil
}

func (l *runLimits) limiter(key string, lim Limit, now time.Time) *rate.Limiter {
	if r := l.limiters[key]; r != nil {
		return r
	}
	if len(l.limiters) >= maxLimiters {
		for k, r := range l.limiters {
			if r.TokensAt(now) >= float64(r.Burst()) {
				delete(l.limiters, k)
			}
		}
	}
	r := rate.NewLimiter(rate.Every(lim.Per/time.Duration(lim.N)), lim.N)
	l.limiters[key] = r
	return r
}
