package bot

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
	mirror  *store.Mirror // who opened their Home lately
	allowed func(user string) bool
	// publish renders someone's Home as it is now and publishes it.
	publish func(ctx context.Context, user string) error

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

	health   string // the last health line, and when it was checked
	healthAt time.Time
}

// notice is a line shown at the top of someone's Home until it expires.
type notice struct {
	text  string // raw text, escaped when shown
	until time.Time
}

func newHomes(cfg Config, log *slog.Logger, mirror *store.Mirror, allowed func(string) bool,
	publish func(context.Context, string) error) *homes {
	return &homes{cfg: cfg, log: log, mirror: mirror, allowed: allowed, publish: publish, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
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
	h.mu.Lock()
	marked, askers := h.marked, h.askers
	h.marked, h.askers = map[string]bool{}, false
	h.mu.Unlock()
	if len(marked) > 0 || askers {
		recent, err := h.mirror.LookedSince(ctx, time.Now().Add(-homeRecent))
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
			return h.cfg.HomeInterval
		}
		// A question concerns its run's requester and, when ORCH_ALLOWED_USERS names who answers, each of them; with
		// no list a Home shows only the viewer's own runs' questions (mayAnswer), so the requester is all.
		everyone := askers && len(h.cfg.AllowedUsers) > 0
		for _, u := range recent {
			if marked[u] || everyone && h.allowed(u) {
				h.pending[u] = true
			}
		}
	}
	var wait time.Duration
	for u := range h.pending {
		if ctx.Err() != nil {
			return 0
		}
		if d := time.Until(h.lastPublish(u).Add(h.cfg.HomeInterval)); d > 0 {
			if wait == 0 || d < wait {
				wait = d
			}
			continue
		}
		delete(h.pending, u)
		if err := h.publish(ctx, u); err != nil && ctx.Err() == nil {
			// Tried again after the interval (the failed publish counts as one): a Home is not left stale.
			h.log.Warn("refreshing a Home tab; will try again", "user", u, "err", err)
			h.pending[u] = true
			if d := h.cfg.HomeInterval; wait == 0 || d < wait {
				wait = d
			}
		}
	}
	return wait
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

// homeOpened publishes the Home of someone who just opened it, and keeps it up to date for a while. A retried
// delivery of the same event is handled once.
func (s *Server) homeOpened(ctx context.Context, eventID, user string) {
	if user == "" || user == s.botID {
		return
	}
	if eventID != "" {
		if first, err := s.poster.once(ctx, "event:"+eventID); err != nil || !first {
			return
		}
	}
	if err := s.poster.mirror.Looked(ctx, user, time.Now(), homeRecent); err != nil {
		s.log.Warn("remembering who opened the Home", "user", user, "err", err)
	}
	if err := s.publishHome(ctx, user); err != nil {
		s.log.Warn("publishing a Home tab", "user", user, "err", err)
	}
}

// homeView reports whether viewID is one of the views orch last published as user's Home (a refresh may have replaced
// the one clicked on a moment before): a click that claims to come from someone's Home must come from theirs, not
// from another person's, nor from a view id made up.
func (s *Server) homeView(ctx context.Context, user, viewID string) (bool, error) {
	if user == "" || viewID == "" {
		return false, nil
	}
	return s.poster.mirror.ShownView(ctx, user, viewID)
}

// homeClick answers a question from a button on someone's Home, then republishes the Home, the outcome at its top
// when there is something to say (there is no response_url to say it through).
func (s *Server) homeClick(ctx context.Context, act blocks.ActionValue, user, viewID string) {
	if act.Kind == blocks.KindAnswer {
		return // the answer form opens from its own handler
	}
	ok, err := s.homeView(ctx, user, viewID)
	switch {
	case err != nil:
		s.log.Warn("checking a click on the Home", "run_id", act.RunID, "err", err)
		s.homes.tell(user, unavailableText)
	case !ok:
		s.log.Warn("a click whose view is not the Home orch published to its user", "user", user,
			"run_id", act.RunID, "escalation", act.EscalationID)
		s.homes.tell(user, "That button is not on the Home orch last showed you, so it answered nothing: "+
			"here is your Home as it is now.")
	default:
		if text := s.homeQuestion(ctx, act, user); text != "" {
			s.homes.tell(user, text)
		} else if text := s.resolveClick(ctx, act, user); text != "" {
			s.homes.tell(user, text)
		}
	}
	if err := s.publishHome(ctx, user); err != nil {
		s.log.Warn("publishing a Home tab", "user", user, "err", err)
	}
}

// homeQuestion says why user may not answer, from the Home, the question a Home button names ("" when they may):
// the Home shows only what mayAnswer lets a person see, and a click must not reach further.
func (s *Server) homeQuestion(ctx context.Context, act blocks.ActionValue, user string) string {
	if !s.allowed(user) {
		return "" // refused, and audited, as any click of theirs
	}
	run, err := s.cfg.Store.Get(ctx, act.RunID)
	switch {
	case errors.Is(err, jobs.ErrRunNotFound):
		return doesNotMatchText
	case err != nil:
		s.log.Warn("checking a click on the Home", "run_id", act.RunID, "err", err)
		return unavailableText
	case run.Origin.Kind != "slack" || !s.mayAnswer(user, "", run):
		s.log.Warn("a Home click on a question its user may not answer from there", "user", user, "run_id", act.RunID)
		return "That question is not yours to answer from here: answer it in its run's thread."
	}
	return ""
}

// publishHome renders user's Home as it is now and publishes it, waiting out Slack's 429s, and remembers the view's id
// for the clicks that come from it.
func (s *Server) publishHome(ctx context.Context, user string) error {
	l := s.homes.lock(user)
	l.Lock()
	defer l.Unlock()
	view, err := s.renderHome(ctx, user)
	if err != nil {
		return err
	}
	var resp *slack.ViewResponse
	err = s.poster.call(ctx, "home:"+user, func(ctx context.Context) error {
		var err error
		resp, err = s.api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: user, View: view})
		return err
	})
	s.homes.mu.Lock()
	s.homes.last[user] = time.Now()
	s.homes.mu.Unlock()
	if err != nil {
		return fmt.Errorf("views.publish: %w", err)
	}
	if resp == nil || resp.View.ID == "" {
		return errors.New("views.publish: Slack returned no view id")
	}
	return s.poster.mirror.SetView(ctx, user, resp.View.ID, homeViewTTL)
}

// renderHome reads what user's Home shows and renders it.
func (s *Server) renderHome(ctx context.Context, user string) (slack.HomeTabViewRequest, error) {
	h := blocks.Home{Viewer: user, Notice: s.homes.notice(user), CanAnswer: s.allowed(user), Links: map[string]string{},
		Now: s.cfg.Now()}
	h.Health = s.health(ctx)
	qs, total, err := s.openQuestions(ctx, user, "", blocks.MaxHomeQuestions)
	if err != nil {
		return slack.HomeTabViewRequest{}, fmt.Errorf("reading the open questions: %w", err)
	}
	h.Questions, h.More = qs, total-len(qs)
	h.Runs, _, err = s.cfg.Store.Find(ctx, store.Query{User: user}, 0, blocks.MaxHomeRuns)
	if err != nil {
		return slack.HomeTabViewRequest{}, fmt.Errorf("reading %s's runs: %w", user, err)
	}
	runs := make([]*jobs.Run, 0, len(qs)+len(h.Runs))
	for _, q := range qs {
		runs = append(runs, q.Run)
	}
	for _, r := range append(runs, h.Runs...) {
		if _, ok := h.Links[r.ID]; ok {
			continue
		}
		st, err := s.poster.mirror.State(ctx, r.ID)
		if err != nil {
			return slack.HomeTabViewRequest{}, err
		}
		h.Links[r.ID] = s.threadLink(st[fieldChannel], st[fieldRootTS])
	}
	return blocks.HomeView(h), nil
}

// health is the deployment's health line: Config.Health's, else whether the store answers.
func (s *Server) health(ctx context.Context) string {
	s.homes.mu.Lock()
	line, at := s.homes.health, s.homes.healthAt
	s.homes.mu.Unlock()
	if line != "" && time.Since(at) < healthTTL {
		return line // the same line for every Home refreshed at once: checked once
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	switch {
	case s.cfg.Health != nil:
		line = s.cfg.Health(ctx)
	case s.cfg.Store.Ping(ctx) != nil:
		line = "Redis does not answer"
	default:
		line = "Redis answers"
	}
	s.homes.mu.Lock()
	s.homes.health, s.homes.healthAt = line, time.Now()
	s.homes.mu.Unlock()
	return line
}
