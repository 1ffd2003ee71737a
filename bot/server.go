package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"time"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/bot/mirror"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/httpdeadline"
	"github.com/orchrun/orch/internal/workpool"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// Starter creates and queues a run for a Slack request. It is wired in cmd, which knows plans and options.
type Starter interface {
	Start(ctx context.Context, req StartRequest) (*jobs.Run, error)
}

// StartRequest is a `/orch run`, `/orch do` or a mention of the bot as the bot understood it.
type StartRequest struct {
	Plan        string // absolute, inside the workspace; "" for a request in words
	Agent       string // "" = the server's default
	SimScenario string // absolute, inside the workspace, or ""
	// Text is a task in words instead of a plan, and Context the conversation it was asked in (redacted by the run).
	Text, Context string
	// FollowUp is the run a request follows up: a mention in its thread after it ended. The new run's branch starts
	// from FollowUp's.
	FollowUp *jobs.Run
	Origin   jobs.Origin
}

// Config wires the bot. SigningSecret (HTTP mode), BotToken, Store, Queue and Starter are required.
type Config struct {
	SigningSecret string
	BotToken      string
	// AppToken switches to Socket Mode: no public URL, Slack connects over a websocket.
	AppToken string
	// APIURL is the base URL of Slack's Web API, ending with "/" (tests and proxies set it).
	APIURL string
	// HTTPTimeout bounds one Web API call, whatever the caller's context allows. Default 30s: Slack answers in well
	// under a second, and a Slack that accepts a connection and says nothing must become an error that names it.
	HTTPTimeout time.Duration
	// Workspace is the directory plans resolve in; anything outside it is refused.
	Workspace string
	// AllowedUsers may start runs and answer; empty means anyone in the channel.
	AllowedUsers []string
	Store        *store.Store
	Queue        escalation.Enqueuer
	Starter      Starter
	Log          *slog.Logger
	Now          func() time.Time
	// Workers is how many background jobs (work done after an ack) run at once. Default 8.
	Workers int
	// Backlog bounds the background jobs waiting for a worker; beyond it requests are refused with a "busy"
	// message rather than piling up. Default 1024.
	Backlog int
	// MaxBody bounds a request body: Slack's payloads are small. Default 1 MiB.
	MaxBody int64
	// PollInterval is how often the poster looks for new events of the runs it follows. Default 200ms.
	PollInterval time.Duration
	// PostInterval is the least time between two posts to one channel (Slack allows about one a second).
	PostInterval time.Duration
	// UserRuns and ChannelRuns limit the new runs one person and one channel start (the zero Limit: none).
	UserRuns, ChannelRuns Limit
	// NudgeAfter is how long a question waits before it is announced again and its requester reminded, and again
	// after each further NudgeAfter until answered; 0: never. QuietHours hold the nudges back.
	NudgeAfter time.Duration
	QuietHours QuietHours
	// Health is the deployment's health in a few words, shown on the Home tab (Redis, queue, waiting runs). Without
	// it the Home says whether the store answers.
	Health func(ctx context.Context) string
	// HomeInterval is the least time between two refreshes of one person's Home tab after changes; the refresh shows
	// the state of its moment, however many changes came. Default 10s.
	HomeInterval time.Duration
	// PublicURL is where people reach orch's web view (ORCH_PUBLIC_URL); "" for nowhere. With it a question links its
	// run's page there (<PublicURL>/runs/<run id>).
	PublicURL string
}

// QuietHours is a daily span in which orch sends no nudges (mirror.QuietHours).
type QuietHours = mirror.QuietHours

// ParseQuietHours reads "HH:MM-HH:MM", optionally followed by an IANA time zone (mirror.ParseQuietHours).
func ParseQuietHours(s string, loc *time.Location) (QuietHours, error) {
	return mirror.ParseQuietHours(s, loc)
}

// The pool of deadline-bound work: a few workers, and a short backlog beyond which Slack's deadline would pass anyway.
const (
	urgentWorkers = 4
	urgentBacklog = 64
)

// Server is the Slack front end: HTTP endpoints (or Socket Mode) that verify each request, route it and ack at once,
// and the work after the ack, done by the commands, the answers and the conversations; and the mirror, which keeps
// each run's thread and each person's Home up to date.
type Server struct {
	cfg    Config
	log    *slog.Logger
	api    *slack.Client
	jobs   *workpool.Pool // the work after an ack
	urgent *workpool.Pool // the work Slack holds a deadline over
	mirror *mirror.Mirror

	replays       *replays
	talk          *talk
	commands      *commands
	answers       *answers
	conversations *conversations
}

// fillDefaults sets what the configuration leaves unset to its default.
func (cfg *Config) fillDefaults() {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	positive := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	positive(&cfg.Workers, 8)
	positive(&cfg.Backlog, 1024)
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	every := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	every(&cfg.HTTPTimeout, httpdeadline.Request) // the mirror's intervals have the mirror's defaults
}

// New validates the configuration and returns a server. It does not contact Slack.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.BotToken == "":
		return nil, errors.New("bot: SLACK_BOT_TOKEN is required")
	case cfg.SigningSecret == "" && cfg.AppToken == "":
		return nil, errors.New("bot: SLACK_SIGNING_SECRET is required (without it forged requests would be accepted); or set SLACK_APP_TOKEN for Socket Mode")
	case cfg.Store == nil || cfg.Queue == nil || cfg.Starter == nil:
		return nil, errors.New("bot: Store, Queue and Starter are required")
	case cfg.Workspace == "":
		return nil, errors.New("bot: ORCH_WORKSPACE is required: plans resolve inside it")
	}
	cfg.fillDefaults()
	ws, err := filepath.Abs(cfg.Workspace)
	if err != nil {
		return nil, fmt.Errorf("bot: workspace: %w", err)
	}
	cfg.Workspace = ws
	// Socket Mode's websocket is bounded by slack-go: its handshake by 45 s, its silence by the pings Slack sends
	// (none for 30 s ends the connection, which is then opened again); what opens it is a Web API call, bounded here.
	hc := httpdeadline.Client(cfg.HTTPTimeout)
	opts := []slack.Option{slack.OptionHTTPClient(hc)}
	if cfg.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(cfg.APIURL))
	}
	if cfg.AppToken != "" {
		opts = append(opts, slack.OptionAppLevelToken(cfg.AppToken))
	}
	api := slack.New(cfg.BotToken, opts...)
	s := &Server{cfg: cfg, log: cfg.Log, api: api}
	s.jobs = workpool.New(cfg.Workers, cfg.Backlog, cfg.Log)
	// Work Slack holds a deadline over (a form to open within its trigger's 3 s, a form submission to answer within
	// 3 s) has workers of its own: it never waits behind a backlog of other work.
	s.urgent = workpool.New(urgentWorkers, urgentBacklog, cfg.Log)
	allowed := mirror.Allowlist(cfg.AllowedUsers)
	s.mirror = mirror.New(mirror.Config{Store: cfg.Store, Queue: cfg.Queue, Slack: api, Log: cfg.Log, Now: cfg.Now,
		PollInterval: cfg.PollInterval, PostInterval: cfg.PostInterval, HomeInterval: cfg.HomeInterval,
		NudgeAfter: cfg.NudgeAfter, QuietHours: cfg.QuietHours, Allowed: allowed, Health: cfg.Health,
		PublicURL: cfg.PublicURL})
	s.replays = &replays{mirror: s.mirror, log: cfg.Log}
	s.talk = &talk{api: api, http: hc, log: cfg.Log, store: cfg.Store, mirror: s.mirror, jobs: s.jobs, allowed: allowed}
	runs := &newRuns{starter: cfg.Starter, store: cfg.Store, mirror: s.mirror,
		limits: newRunLimits(cfg.UserRuns, cfg.ChannelRuns, cfg.Now), log: cfg.Log, workspace: cfg.Workspace}
	s.commands = &commands{talk: s.talk, runs: runs, jobs: s.jobs, store: cfg.Store, queue: cfg.Queue, mirror: s.mirror,
		workspace: cfg.Workspace, now: cfg.Now, log: cfg.Log}
	s.answers = &answers{talk: s.talk, store: cfg.Store, queue: cfg.Queue, mirror: s.mirror, api: api, log: cfg.Log}
	s.conversations = &conversations{talk: s.talk, answers: s.answers, runs: runs, api: api, store: cfg.Store,
		mirror: s.mirror, log: cfg.Log}
	return s, nil
}

// Start learns who the bot is and starts the background workers and the poster. Stop with Shutdown.
func (s *Server) Start(ctx context.Context) error {
	auth, err := s.api.AuthTestContext(ctx)
	if err != nil {
		return fmt.Errorf("slack auth.test: %w", err)
	}
	s.talk.botID = auth.UserID
	s.mirror.Start(auth.URL)
	s.jobs.Start()
	s.urgent.Start()
	return nil
}

// Shutdown drains: acks already given are honoured (their background work finishes), then the mirror stops (see
// mirror.Shutdown).
func (s *Server) Shutdown(ctx context.Context) error {
	err := errors.Join(s.urgent.Shutdown(ctx), s.jobs.Shutdown(ctx))
	s.mirror.Shutdown()
	return err
}

// Handler serves Slack's requests and the health check.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /slack/commands", s.verified(s.handleCommand))
	mux.HandleFunc("POST /slack/interactions", s.verified(s.handleInteraction))
	mux.HandleFunc("POST /slack/events", s.verified(s.handleEvent))
	mux.HandleFunc("GET /healthz", s.handleHealth)
	return mux
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	if err := s.cfg.Store.Ping(ctx); err != nil {
		http.Error(w, "redis: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// AuthTest checks a bot token with Slack's auth.test and returns the bot's user and team names.
func AuthTest(ctx context.Context, token, apiURL string) (user, team string, err error) {
	opts := []slack.Option{slack.OptionHTTPClient(httpdeadline.Client(0))}
	if apiURL != "" {
		opts = append(opts, slack.OptionAPIURL(apiURL))
	}
	auth, err := slack.New(token, opts...).AuthTestContext(ctx)
	if err != nil {
		return "", "", fmt.Errorf("slack auth.test: %w", err)
	}
	return auth.User, auth.Team, nil
}
