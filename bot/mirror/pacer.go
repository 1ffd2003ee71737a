package mirror

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/internal/backoff"
)

// pacer keeps Slack's pace in each channel (and each Home tab): one call at a time, at least interval apart, with room
// for what matters when a channel is behind. A call that shapes a thread (its root, a question, an answer's update, the
// final message, a nudge) takes a turn, in line in the order the calls came, and its caller waits for it. A progress
// message's update does not wait in that line: it is left aside, one per message, a newer one replacing the one not yet
// sent, and it is sent in a turn nothing else wanted, after a turn left unused, rendered as the run is at that moment.
// So in a channel with many runs the questions and the ends go first, and a progress message is brought up to date
// once, in its latest state, however often its run moved meanwhile.
type pacer struct {
	interval time.Duration
	log      *slog.Logger
	// ctx is what progress updates are sent under; shutdown cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	lanes  map[string]*lane
	// passing is set while the poster brings its runs up to date (pass), since passStart: the questions and ends it
	// finds come one run at a time, as its workers reach them, and the gaps between them say nothing of whether more
	// are coming. Progress waits for the pass to end, or for maxHold.
	passing   bool
	passStart time.Time
}

// maxHold bounds how long a pass keeps progress updates waiting: a pass that never ends (a channel far behind) must
// not leave its progress messages for ever as they were.
const maxHold = 10 * time.Second

// lane is one channel's line.
type lane struct {
	busy          bool      // a call holds the channel
	start         time.Time // when the call that holds it (or the last one) started
	next          time.Time // the earliest start of the next call
	lastImportant time.Time // when the last call that shaped a thread started
	waiters       []chan struct{}
	progress      map[string]progressUpdate // by message
	order         []string                  // progress's keys, oldest first
	timer         *time.Timer
}

// progressUpdate sends a progress message's update as its run is when it is sent. It runs holding the channel's turn,
// so it calls Slack directly.
type progressUpdate func(ctx context.Context) error

func newPacer(interval time.Duration, log *slog.Logger) *pacer {
	ctx, cancel := context.WithCancel(context.Background())
	return &pacer{interval: interval, log: log, ctx: ctx, cancel: cancel, lanes: map[string]*lane{}}
}

func (p *pacer) lane(key string) *lane {
	l := p.lanes[key]
	if l == nil {
		l = &lane{progress: map[string]progressUpdate{}}
		p.lanes[key] = l
	}
	return l
}

// turn waits for a turn in the channel key; the caller makes its call and then releases the turn. It returns ctx's
// error when ctx ends first.
func (p *pacer) turn(ctx context.Context, key string) (release func(), err error) {
	granted := make(chan struct{})
	p.mu.Lock()
	l := p.lane(key)
	l.waiters = append(l.waiters, granted)
	p.dispatchLocked(key, l)
	p.mu.Unlock()
	release = func() { p.release(key) }
	select {
	case <-granted:
		return release, nil
	case <-ctx.Done():
		p.mu.Lock()
		if i := slices.Index(l.waiters, granted); i >= 0 {
			l.waiters = slices.Delete(l.waiters, i, i+1)
			p.mu.Unlock()
			return nil, ctx.Err()
		}
		p.mu.Unlock()
		release() // granted meanwhile: given back
		return nil, ctx.Err()
	}
}

// release ends the call holding channel key: the next may start interval after it started.
func (p *pacer) release(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lane(key)
	l.busy = false
	if n := l.start.Add(p.interval); n.After(l.next) {
		l.next = n
	}
	p.dispatchLocked(key, l)
}

// slowDown keeps channel key quiet for d (Slack's Retry-After).
func (p *pacer) slowDown(key string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lane(key)
	if n := time.Now().Add(d); n.After(l.next) {
		l.next = n
	}
}

// progress leaves a progress message's update (id names the message) to be sent in a free turn of channel key,
// replacing one of the same message not sent yet.
func (p *pacer) progress(key, id string, send progressUpdate) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	l := p.lane(key)
	if _, waiting := l.progress[id]; !waiting {
		l.order = append(l.order, id)
	}
	l.progress[id] = send
	p.dispatchLocked(key, l)
}

// pending reports how many progress updates wait in channel key.
func (p *pacer) pending(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lane(key).order)
}

// dispatchLocked gives channel key's free turn to who should have it: the first call in line, else (after a turn left
// unused) the oldest progress update; or arms a timer for when the turn comes.
func (p *pacer) dispatchLocked(key string, l *lane) {
	if l.busy {
		return
	}
	now := time.Now()
	if now.Before(l.next) {
		p.armLocked(key, l, l.next.Sub(now))
		return
	}
	if len(l.waiters) > 0 {
		granted := l.waiters[0]
		l.waiters = l.waiters[1:]
		l.busy, l.start, l.lastImportant = true, now, now
		close(granted)
		return
	}
	if len(l.order) == 0 || p.closed {
		return
	}
	// Progress waits for a turn nobody wanted: while a pass posts a channel's questions and ends, their calls come a
	// moment apart, and a progress update must not slip in between.
	if p.passing && now.Before(p.passStart.Add(maxHold)) {
		p.armLocked(key, l, p.passStart.Add(maxHold).Sub(now)) // or sooner: the pass's end dispatches
		return
	}
	if idle := l.lastImportant.Add(2 * p.interval); now.Before(idle) {
		p.armLocked(key, l, idle.Sub(now))
		return
	}
	id := l.order[0]
	send := l.progress[id]
	l.order = l.order[1:]
	delete(l.progress, id)
	l.busy, l.start = true, now
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer p.release(key)
		err := send(p.ctx)
		if err == nil || p.ctx.Err() != nil {
			return
		}
		if wait, limited := retryAfter(err); limited {
			p.slowDown(key, wait)
		}
		if !transient(err) {
			p.log.Warn("updating a progress message", "channel", key, "err", err)
			return
		}
		// Slack asked to slow down, or did not answer: the update waits for another turn, unless a newer one came.
		p.mu.Lock()
		if _, newer := l.progress[id]; !newer && !p.closed {
			l.order = append([]string{id}, l.order...)
			l.progress[id] = send
		}
		p.mu.Unlock()
	}()
}

// armLocked makes the lane look again after d.
func (p *pacer) armLocked(key string, l *lane, d time.Duration) {
	fire := func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.dispatchLocked(key, l)
	}
	if l.timer == nil {
		l.timer = time.AfterFunc(d, fire)
		return
	}
	l.timer.Reset(d)
}

// pass says that the poster is bringing its runs up to date, until the returned func is called: progress updates wait
// for its end (or maxHold), so that they come after every question and end the pass posts.
func (p *pacer) pass() (end func()) {
	p.mu.Lock()
	p.passing, p.passStart = true, time.Now()
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.passing = false
		for key, l := range p.lanes {
			if len(l.order) > 0 {
				p.dispatchLocked(key, l)
			}
		}
	}
}

// shutdown drops the progress updates not sent, and waits for those being sent (cancelled). Calls that take turns
// still get them: the Home tabs' refreshes outlive the poster.
func (p *pacer) shutdown() {
	p.mu.Lock()
	p.closed = true
	for _, l := range p.lanes {
		if l.timer != nil {
			l.timer.Stop()
		}
		l.progress, l.order = map[string]progressUpdate{}, nil
	}
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
}

// slackTries bounds the calls of one Web API method that Slack keeps answering with 429: the first and five more.
const slackTries = 6

// call makes one Web API call in a turn of channel key (a channel, or "home:" and a person), waiting out a 429's
// Retry-After. Other errors are returned at once: the poster's next pass tries again.
func (p *pacer) call(ctx context.Context, channel string, fn func(context.Context) error) error {
	retry := backoff.Retry{Tries: slackTries, OnRetry: func(_ int, _ error, wait time.Duration) {
		p.log.Info("Slack asked to slow down", "channel", channel, "retry_after", wait)
	}}
	return retry.Do(ctx, func(ctx context.Context) error {
		release, err := p.turn(ctx, channel)
		if err != nil {
			return backoff.Permanent(err)
		}
		defer release()
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		err = fn(cctx)
		if wait, limited := retryAfter(err); limited {
			p.slowDown(channel, wait)
			return backoff.After(err, wait)
		}
		return backoff.Permanent(err)
	})
}

// transient reports whether a Web API call that failed with err may succeed as it is later: Slack asked to slow down or
// did not answer, rather than refusing the call (an error of its own, such as message_not_found).
func transient(err error) bool {
	var se slack.SlackErrorResponse
	return err != nil && !errors.As(err, &se)
}

// retryAfter reports whether err is Slack's 429, and how long it asked to wait.
func retryAfter(err error) (time.Duration, bool) {
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return rl.RetryAfter, true
	}
	return 0, false
}
