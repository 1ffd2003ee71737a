package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// The Home tab: each person's own view of orch, published with views.publish when they open it, when they click on it,
// and when something it shows changes.
const (
	// homeRecent is how long someone who opened the Home is kept up to date: Slack shows the last view published
	// when they come back, so it should not be stale.
	homeRecent = 24 * time.Hour
	// homeViewTTL is how long the id of the view last published to someone is kept, to check their clicks; each
	// publish starts it again.
	homeViewTTL = 30 * 24 * time.Hour
	// noticeTTL is how long a notice (a refused click, an answer that came too late) stays at the top of the Home.
	noticeTTL = 2 * time.Minute
	// healthTimeout bounds the health line's checks: the Home is published without it rather than late.
	healthTimeout = 2 * time.Second
	// healthTTL is how long a health line is shown before it is checked again.
	healthTTL = 5 * time.Second
)

// homes keeps the Home tabs of the people who opened theirs lately up to date. Changes (a question opened or
// answered, a run ended) only mark whom they concern; a loop of its own publishes, at most one views.publish per
// person per Config.HomeInterval and always the state of the moment, so that neither the poster nor a burst of changes
// waits on Slack. What a person does on the Home (opening it, clicking) is published at once.
//
// The last publish time and the notices are this process's: with several bots, each paces what it publishes.
type homes struct {
	cfg     Config
	log     *slog.Logger
	api     *slack.Client
	records *store.Mirror // who opened their Home lately, the views published, the runs' threads
	pace    *pacer        // Slack's pace for each person's Home, beside the channels'
	ws      *workspace

	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	mu      sync.Mutex
	marked  map[string]bool // the requesters of changed runs
	askers  bool            // a question opened or was answered: whoever may answer is concerned
	last    map[string]time.Time
	notices map[string]notice
	locks   map[string]*sync.Mutex // one publish per person at a time, so the latest state is the last published

	pending map[string]bool // the loop's own: people whose Home waits for its interval

	healthLine string // the last health line, and when it was checked
	healthAt   time.Time
}

// notice is a line shown at the top of someone's Home until it expires.
type notice struct {
	text  string // raw text, escaped when shown
	until time.Time
}

func newHomes(cfg Config, records *store.Mirror, pace *pacer, ws *workspace) *homes {
	return &homes{cfg: cfg, log: cfg.Log, api: cfg.Slack, records: records, pace: pace, ws: ws,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		marked: map[string]bool{}, last: map[string]time.Time{}, notices: map[string]notice{},
		locks: map[string]*sync.Mutex{}, pending: map[string]bool{}}
}

func (h *homes) start() { go h.loop() }

// shutdown stops the loop after the publish in progress; refreshes not yet made are dropped (the next open publishes).
func (h *homes) shutdown() {
	h.stopOnce.Do(func() { close(h.stop) })
	<-h.done
}

// event marks the Homes an event of a run changes: a question opening or answered concerns the run's requester and
// whoever may answer; the end of a run, its requester. It does not wait.
func (h *homes) event(run *jobs.Run, ev jobs.Event) {
	question := false
	switch ev.Describe().Moment {
	case jobs.MomentAsk, jobs.MomentAnswer:
		question = true
	case jobs.MomentEnd:
	default:
		return
	}
	h.mu.Lock()
	if run.Origin.Kind == "slack" && run.Origin.User != "" {
		h.marked[run.Origin.User] = true
	}
	h.askers = h.askers || question
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

func (h *homes) loop() {
	defer close(h.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-h.stop; cancel() }()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-h.stop:
			timer.Stop()
			return
		case <-h.wake:
		case <-timer.C:
		}
		if wait := h.pass(ctx); wait > 0 {
			timer.Reset(wait)
		}
	}
}

// pass turns the marks into the people to refresh (those who opened their Home lately), publishes those whose
// interval has passed, and returns when to come back for the others (0: nobody waits).
func (h *homes) pass(ctx context.Context) time.Duration {
	if err := h.takeMarks(ctx); err != nil {
		return h.cfg.HomeInterval
	}
	var wait time.Duration
	soonest := func(d time.Duration) {
		if wait == 0 || d < wait {
			wait = d
		}
	}
	for u := range h.pending {
		if ctx.Err() != nil {
			return 0
		}
		if d := time.Until(h.lastPublish(u).Add(h.cfg.HomeInterval)); d > 0 {
			soonest(d)
			continue
		}
		delete(h.pending, u)
		if err := h.publish(ctx, u); err != nil && ctx.Err() == nil {
			// Tried again after the interval (the failed publish counts as one): a Home is not left stale.
			h.log.Warn("refreshing a Home tab; will try again", "user", u, "err", err)
			h.pending[u] = true
			soonest(h.cfg.HomeInterval)
		}
	}
	return wait
}

// takeMarks turns the marks into pending refreshes of the Homes of those who opened theirs lately. When the store
// cannot say who that is, the marks are kept for the next pass, and the error returned.
func (h *homes) takeMarks(ctx context.Context) error {
	h.mu.Lock()
	marked, askers := h.marked, h.askers
	h.marked, h.askers = map[string]bool{}, false
	h.mu.Unlock()
	if len(marked) == 0 && !askers {
		return nil
	}
	recent, err := h.records.LookedSince(ctx, time.Now().Add(-homeRecent))
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("finding whose Home to refresh; will try again", "err", err)
		}
		h.mu.Lock()
		for u := range marked {
			h.marked[u] = true
		}
		h.askers = h.askers || askers
		h.mu.Unlock()
		return err
	}
	// A question concerns its run's requester and, when ORCH_ALLOWED_USERS names who answers, each of them; with
	// no list a Home shows only the viewer's own runs' questions (MayAnswer), so the requester is all.
	everyone := askers && len(h.cfg.Allowed) > 0
	for _, u := range recent {
		if marked[u] || everyone && h.cfg.Allowed.Allows(u) {
			h.pending[u] = true
		}
	}
	return nil
}

func (h *homes) lastPublish(user string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last[user]
}

// lock is the lock of user's publishes.
func (h *homes) lock(user string) *sync.Mutex {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.locks[user]
	if l == nil {
		l = &sync.Mutex{}
		h.locks[user] = l
	}
	return l
}

// tell sets the notice at the top of user's Home.
func (h *homes) tell(user, text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notices[user] = notice{text: text, until: time.Now().Add(noticeTTL)}
}

// notice is user's notice, or "" when there is none or it expired.
func (h *homes) notice(user string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, ok := h.notices[user]
	if ok && time.Now().After(n.until) {
		delete(h.notices, user)
		return ""
	}
	return n.text
}

// publish renders user's Home as it is now and publishes it, waiting out Slack's 429s, and remembers the view's id
// for the clicks that come from it.
func (h *homes) publish(ctx context.Context, user string) error {
	l := h.lock(user)
	l.Lock()
	defer l.Unlock()
	view, err := h.render(ctx, user)
	if err != nil {
		return err
	}
	var resp *slack.ViewResponse
	err = h.pace.call(ctx, "home:"+user, func(ctx context.Context) error {
		var err error
		resp, err = h.api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: user, View: view})
		return err
	})
	h.mu.Lock()
	h.last[user] = time.Now()
	h.mu.Unlock()
	if err != nil {
		return fmt.Errorf("views.publish: %w", err)
	}
	if resp == nil || resp.View.ID == "" {
		return errors.New("views.publish: Slack returned no view id")
	}
	return h.records.SetView(ctx, user, resp.View.ID, homeViewTTL)
}

// render reads what user's Home shows and renders it.
func (h *homes) render(ctx context.Context, user string) (slack.HomeTabViewRequest, error) {
	home := blocks.Home{Viewer: user, Notice: h.notice(user), CanAnswer: h.cfg.Allowed.Allows(user), Links: map[string]string{},
		Pages: map[string]string{}, Now: h.cfg.Now()}
	home.Health = h.health(ctx)
	qs, total, err := openQuestions(ctx, h.cfg.Store, h.cfg.Allowed, user, "", blocks.MaxHomeQuestions)
	if err != nil {
		return slack.HomeTabViewRequest{}, fmt.Errorf("reading the open questions: %w", err)
	}
	home.Questions, home.More = qs, total-len(qs)
	home.Runs, _, err = h.cfg.Store.Find(ctx, store.Query{User: user}, 0, blocks.MaxHomeRuns)
	if err != nil {
		return slack.HomeTabViewRequest{}, fmt.Errorf("reading %s's runs: %w", user, err)
	}
	runs := make([]*jobs.Run, 0, len(qs)+len(home.Runs))
	for _, q := range qs {
		runs = append(runs, q.Run)
		home.Pages[q.Run.ID] = runPage(h.cfg.PublicURL, q.Run.ID)
	}
	for _, r := range append(runs, home.Runs...) {
		if _, ok := home.Links[r.ID]; ok {
			continue
		}
		st, err := h.records.State(ctx, r.ID)
		if err != nil {
			return slack.HomeTabViewRequest{}, err
		}
		home.Links[r.ID] = h.ws.link(st[fieldChannel], st[fieldRootTS])
	}
	return blocks.HomeView(home), nil
}

// health is the deployment's health line: Config.Health's, else whether the store answers.
func (h *homes) health(ctx context.Context) string {
	h.mu.Lock()
	line, at := h.healthLine, h.healthAt
	h.mu.Unlock()
	if line != "" && time.Since(at) < healthTTL {
		return line // the same line for every Home refreshed at once: checked once
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	switch {
	case h.cfg.Health != nil:
		line = h.cfg.Health(ctx)
	case h.cfg.Store.Ping(ctx) != nil:
		line = "Redis does not answer"
	default:
		line = "Redis answers"
	}
	h.mu.Lock()
	h.healthLine, h.healthAt = line, time.Now()
	h.mu.Unlock()
	return line
}
