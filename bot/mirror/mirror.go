package mirror

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs/store"
)

// The mirror's state lives in the store (store.Mirror), not in memory, so that a restarted bot carries on where the
// last one stopped: nothing posted twice, nothing lost.
const (
	// Name is the mirror's name in the store: its keys are orch:slack:….
	Name = "slack"
	// LockTTL is how long the poster's lock of a run outlives the poster that took it; a sync gives up before.
	LockTTL = 2 * time.Minute
)

// Config is what the mirror needs. Store and Slack are required; the rest have defaults.
type Config struct {
	Store *store.Store
	// Queue lets the poster abort a run whose channel takes no message from the bot.
	Queue escalation.Enqueuer
	Slack *slack.Client
	Log   *slog.Logger
	Now   func() time.Time
	// PollInterval is how often the poster looks for new events of the runs it follows. Default 200ms.
	PollInterval time.Duration
	// PostInterval is the least time between two posts to one channel (Slack allows about one a second). Default 1s.
	PostInterval time.Duration
	// HomeInterval is the least time between two refreshes of one person's Home tab after changes. Default 10s.
	HomeInterval time.Duration
	// NudgeAfter is how long a question waits before it is announced again and its requester reminded, and again
	// after each further NudgeAfter until answered; 0: never. QuietHours hold the nudges back.
	NudgeAfter time.Duration
	QuietHours QuietHours
	// Allowed decides whose Home shows which questions.
	Allowed Allowlist
	// Health is the deployment's health in a few words, for the Home tab; without it the Home says whether the store
	// answers.
	Health func(ctx context.Context) string
	// PublicURL is where people reach orch's web view ("https://orch.example.com/"); "" for nowhere. With it a question
	// links its run's page there.
	PublicURL string
}

// runPage is run runID's page in the web view at publicURL, "" without one.
func runPage(publicURL, runID string) string {
	u := strings.TrimSuffix(strings.TrimSpace(publicURL), "/")
	if u == "" || runID == "" {
		return ""
	}
	return u + "/runs/" + url.PathEscape(runID)
}

func (cfg *Config) fillDefaults() {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	every := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	every(&cfg.PollInterval, 200*time.Millisecond)
	every(&cfg.PostInterval, time.Second)
	every(&cfg.HomeInterval, 10*time.Second)
}

// Mirror is the poster, the Home tabs and the pace of Slack calls they share.
type Mirror struct {
	store   *store.Store
	allowed Allowlist
	log     *slog.Logger
	records *store.Mirror
	ws      *workspace
	pace    *pacer
	poster  *poster
	homes   *homes
}

// New returns a mirror; Start starts it.
func New(cfg Config) *Mirror {
	cfg.fillDefaults()
	m := &Mirror{store: cfg.Store, allowed: cfg.Allowed, log: cfg.Log, records: cfg.Store.Mirror(Name), ws: &workspace{},
		pace: newPacer(cfg.PostInterval, cfg.Log)}
	m.homes = newHomes(cfg, m.records, m.pace, m.ws)
	m.poster = newPoster(cfg, m.records, m.homes, m.pace, m.ws)
	return m
}

// Start starts the poster and the Home tabs' refreshes. teamURL is the workspace's address as auth.test gives it
// ("https://acme.slack.com/"), for links to messages; "" when Slack did not say.
func (m *Mirror) Start(teamURL string) {
	if teamURL != "" {
		m.ws.url = strings.TrimSuffix(teamURL, "/") + "/"
	}
	m.poster.start()
	m.homes.start()
}

// Shutdown stops the poster after its pass in progress, then drops the progress updates not sent yet, then stops the
// Home tabs' refreshes (which the poster's events ask for; their calls still get their turns until then).
func (m *Mirror) Shutdown() {
	m.poster.shutdown()
	m.pace.shutdown()
	m.homes.shutdown()
}

// Follow starts keeping a run's thread up to date.
func (m *Mirror) Follow(ctx context.Context, runID string) error {
	return m.records.Follow(ctx, runID)
}

// RunOfThread finds the run whose root message is the thread's parent: "" for a thread that is no run's.
func (m *Mirror) RunOfThread(ctx context.Context, channel, threadTS string) (string, error) {
	return m.records.RunOfThread(ctx, threadKey(channel, threadTS))
}

// RunThread is a link to a run's thread, or "" when it has none (yet) or the workspace's address is unknown.
func (m *Mirror) RunThread(ctx context.Context, runID string) (string, error) {
	st, err := m.records.State(ctx, runID)
	if err != nil {
		return "", err
	}
	return m.ws.link(st[fieldChannel], st[fieldRootTS]), nil
}

// IsQuestionMessage reports whether a click on message ts, in thread threadTS of channel, can be about escalation escID
// of run runID: the message must be in the run's thread, and be the question's own message once that is on record (it
// is saved a moment after it is posted).
func (m *Mirror) IsQuestionMessage(ctx context.Context, runID, escID, channel, threadTS, ts string) (bool, error) {
	st, err := m.poster.state(ctx, runID)
	if err != nil {
		return false, err
	}
	if st.Channel == "" || st.Channel != channel || st.RootTS == "" || st.RootTS != threadTS {
		return false, nil
	}
	if known := st.Esc[escID]; known != "" && known != ts {
		return false, nil
	}
	return true, nil
}

// QuestionMessage is where escalation escID of run runID was posted: the run's channel and thread, and the question's
// message ("" for what is not on record yet).
func (m *Mirror) QuestionMessage(ctx context.Context, runID, escID string) (channel, threadTS, ts string, err error) {
	st, err := m.poster.state(ctx, runID)
	if err != nil {
		return "", "", "", err
	}
	return st.Channel, st.RootTS, st.Esc[escID], nil
}

// Once reports whether key (a delivery of Slack's, a request's signature) is seen for the first time within ttl,
// across the bot's replicas.
func (m *Mirror) Once(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	return m.records.Once(ctx, key, ttl)
}

// Unsee forgets key, seen by Once, for a request that was seen but not taken.
func (m *Mirror) Unsee(ctx context.Context, key string) error {
	return m.records.Unsee(ctx, key)
}

// HomeOpened publishes the Home of someone who just opened it, and keeps it up to date for a while.
func (m *Mirror) HomeOpened(ctx context.Context, user string) error {
	if err := m.records.Looked(ctx, user, time.Now(), homeRecent); err != nil {
		m.log.Warn("remembering who opened the Home", "user", user, "err", err)
	}
	return m.homes.publish(ctx, user)
}

// PublishHome renders user's Home as it is now and publishes it.
func (m *Mirror) PublishHome(ctx context.Context, user string) error {
	return m.homes.publish(ctx, user)
}

// TellHome sets the notice at the top of user's Home, shown from its next publish for a little while.
func (m *Mirror) TellHome(user, text string) { m.homes.tell(user, text) }

// IsHome reports whether viewID is one of the views orch last published as user's Home (a refresh may have replaced
// the one clicked on a moment before): a click that claims to come from someone's Home must come from theirs, not
// from another person's, nor from a view id made up.
func (m *Mirror) IsHome(ctx context.Context, user, viewID string) (bool, error) {
	if user == "" || viewID == "" {
		return false, nil
	}
	return m.records.ShownView(ctx, user, viewID)
}

// OpenQuestions returns the open questions of Slack runs that user may answer from where they look (channel; "" for
// the Home), oldest first: at most limit of them, and how many there are in all.
func (m *Mirror) OpenQuestions(ctx context.Context, user, channel string, limit int) ([]blocks.Question, int, error) {
	return openQuestions(ctx, m.store, m.allowed, user, channel, limit)
}

// workspace is where the bot's Slack workspace is, for links to its messages: learned when the mirror starts
// (auth.test), before its loops do and before the bot serves anything.
type workspace struct {
	url string // "https://acme.slack.com/", or "" when Slack did not say
}

// link is a link to a message in a channel (a run's root message opens its thread), or "" when the workspace's address
// is unknown. Slack's web and desktop clients open such links in place.
func (w *workspace) link(channel, ts string) string {
	if w.url == "" || channel == "" || ts == "" {
		return ""
	}
	return w.url + "archives/" + channel + "/p" + strings.Replace(ts, ".", "", 1)
}
