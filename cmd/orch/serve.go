package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/bot"
	"github.com/orchrun/orch/hub"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/runs"
	"github.com/orchrun/orch/web"
	"github.com/orchrun/orch/workspace"
)

// The long-running commands: the Slack front end and the worker, together or apart.
func (a *app) serveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the Slack front end and a worker in one process",
		Long: "Serve Slack (HTTP endpoints on ORCH_HTTP_ADDR, or Socket Mode when SLACK_APP_TOKEN is set) and run a\n" +
			"worker. Env: SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, SLACK_APP_TOKEN, SLACK_API_URL, ORCH_HTTP_ADDR,\n" +
			"ORCH_WORKSPACE, ORCH_ALLOWED_USERS, ORCH_REDIS_URL, ORCH_AGENT, ORCH_BRAIN, ORCH_SANDBOX, ORCH_SANDBOX_USER,\n" +
			"ORCH_INSTANCE; each run's branch: ORCH_REPO, ORCH_GIT_BASE, ORCH_GIT_PUSH, ORCH_GIT_AUTHOR, ORCH_WORKTREES,\n" +
			"ORCH_GITHUB_TOKEN; the web view beside the Slack endpoints: ORCH_WEB_TOKEN, ORCH_PUBLIC_URL; GitHub's webhook\n" +
			"on POST /github/webhook: ORCH_GITHUB_WEBHOOK_SECRET, ORCH_GITHUB_REPO, ORCH_GITHUB_API_URL,\n" +
			"ORCH_GITHUB_MENTION, ORCH_GITHUB_ALLOWED_USERS; a GitHub App instead of a token: ORCH_GITHUB_APP_ID,\n" +
			"ORCH_GITHUB_APP_PRIVATE_KEY.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error { return a.serve(cmd, true, true) },
	}
	a.runFlags(cmd)
	return cmd
}

func (a *app) botCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bot",
		Short: "Run the Slack front end only (workers run elsewhere on the same Redis)",
		Args:  args(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, args []string) error { return a.serve(cmd, true, false) },
	}
	a.runFlags(cmd)
	return cmd
}

func (a *app) workerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a worker: take runs off the queue until stopped",
		Args:  args(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, args []string) error { return a.serve(cmd, false, true) },
	}
	a.runFlags(cmd)
	return cmd
}

// serve runs the bot and/or a worker until SIGINT/SIGTERM, then drains: acks in flight finish, running steps are
// requeued.
func (a *app) serve(cmd *cobra.Command, withBot, withWorker bool) error {
	ctx := cmd.Context()
	opts, ws, brainNote, err := a.baseOptions(cmd, "docker")
	if err != nil {
		return err
	}
	// Check everything that can be checked before anything starts.
	var wk workerSettings
	if withWorker {
		if wk, err = a.workerSettings(cmd); err != nil {
			return err
		}
	}
	var slack bot.Config
	// Slack is served unless orch is on GitHub alone: a webhook secret and no Slack token.
	withSlack := withBot && (a.env("SLACK_BOT_TOKEN") != "" || a.env("ORCH_GITHUB_WEBHOOK_SECRET") == "")
	if withBot {
		if withSlack {
			if slack, err = a.slackConfig(ws); err != nil {
				return err
			}
		}
		if err := web.CheckPublicURL(a.env("ORCH_PUBLIC_URL")); err != nil {
			return usageErr("%v", err)
		}
	}
	addr := a.env("ORCH_HTTP_ADDR")
	if addr == "" {
		addr = ":3000"
	}
	// The address is taken before the worker starts: a worker that took a run and then found its port busy would
	// have to give the run back.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("listening on %s (ORCH_HTTP_ADDR): %w", addr, err))
	}
	defer ln.Close()
	fr := serveFront(ln)
	b, err := a.awaitBackend(cmd, fr)
	if errors.Is(err, errStoppedWaiting) {
		return nil
	}
	if err != nil {
		return err
	}
	defer b.Close()
	m := newMetrics(b)
	var f fronts
	if withBot {
		var stop bool
		if f, stop, err = a.fronts(cmd, fr, b, opts, ws, addr, slack, withSlack); stop || err != nil {
			return err
		}
	}
	if withWorker {
		e, err := a.startServiceWorker(b, wk, opts, ws)
		if err != nil {
			if f.slack != nil {
				f.slack.Shutdown(context.Background())
			}
			return err
		}
		defer e.Shutdown()
	}
	fmt.Fprintf(a.stderr, "orch: %s; agent %s, sandbox %s, workspace %s\n", brainNote, opts.Agent, opts.Sandbox, ws)
	if !withBot {
		return a.serveWorker(ctx, fr, ln, b, m)
	}
	return a.serveBot(ctx, fr, ln, f, slack.AppToken != "", m)
}

// fronts makes what the bot serves: Slack unless withSlack is false, GitHub's webhook when it is configured, the web
// view when it may be served on addr. The bot proves its token (auth.test) before the worker takes any work: a bot
// refused by Slack leaves no run half taken. stop is true when orch was stopped while it waited for Slack.
func (a *app) fronts(cmd *cobra.Command, fr *front, b *store.Backend, opts jobs.Options, ws, addr string, slack bot.Config,
	withSlack bool) (f fronts, stop bool, err error) {
	f.store = b.Store
	starter := &runs.Starter{Store: b.Store, Queue: b.Queue, FindTasks: a.findTasks}
	slack.Store, slack.Queue, slack.Log, slack.Health = b.Store, b.Queue, a.log, healthLine(b)
	slack.Starter = &slackStarter{runs: starter, base: opts, workspace: ws, git: a.branchRequest(cmd)}
	if f.github, err = a.githubSurface(cmd, b, starter, opts, ws); err != nil {
		return f, false, err
	}
	if !withSlack {
		fmt.Fprintln(a.stderr, "orch: no Slack (SLACK_BOT_TOKEN is not set): serving GitHub only")
	}
	// The web view shares the Slack endpoints' address: with ORCH_WEB_TOKEN people sign in; without it, it is
	// served only when that address is this machine's alone.
	if token := a.env("ORCH_WEB_TOKEN"); web.CheckAddr(addr, token) == nil {
		if f.view, err = a.webView(b, token, a.frontOf(cmd, b, opts, ws)); err != nil {
			return f, false, err
		}
		a.noteWebNames(addr, token)
	} else if a.env("ORCH_API_TOKENS") != "" {
		// The API's tokens guard it wherever it is served: without the view's token it is served alone.
		as, err := a.apiServer(b, a.frontOf(cmd, b, opts, ws))
		if err != nil {
			return f, false, err
		}
		f.view = withAPI(http.NotFoundHandler(), as)
		fmt.Fprintf(a.stderr, "orch: no web view on %s (set ORCH_WEB_TOKEN to serve it there); the API and MCP are served, behind ORCH_API_TOKENS\n", addr)
	} else {
		fmt.Fprintf(a.stderr, "orch: no web view, API or MCP on %s: set ORCH_WEB_TOKEN or ORCH_API_TOKENS to serve them there\n", addr)
	}
	if !withSlack {
		return f, false, nil
	}
	if f.slack, err = bot.New(slack); err != nil {
		return f, false, withCode(exitUsage, err)
	}
	fr.wait("asking Slack who the bot is (auth.test)")
	if err := a.awaitSlack(cmd.Context(), f.slack, fr); errors.Is(err, errStoppedWaiting) {
		return f, true, nil
	} else if err != nil {
		return f, false, err
	}
	return f, false, nil
}

// fronts are what serveBot serves: Slack, GitHub's webhook when it is configured, the web view when it may be.
type fronts struct {
	slack  *bot.Server // nil when orch is on GitHub alone
	github *hub.Server
	view   http.Handler
	store  *store.Store
}

// slackConfig reads the bot's settings from the environment.
func (a *app) slackConfig(ws string) (bot.Config, error) {
	c := bot.Config{SigningSecret: a.env("SLACK_SIGNING_SECRET"), BotToken: a.env("SLACK_BOT_TOKEN"),
		AppToken: a.env("SLACK_APP_TOKEN"), APIURL: a.env("SLACK_API_URL"), Workspace: ws,
		AllowedUsers: splitList(a.env("ORCH_ALLOWED_USERS")), PostInterval: time.Second, PublicURL: a.env("ORCH_PUBLIC_URL")}
	if c.BotToken == "" {
		return c, usageErr("SLACK_BOT_TOKEN is not set (or, to serve GitHub alone, set ORCH_GITHUB_WEBHOOK_SECRET and no Slack token)")
	}
	if c.SigningSecret == "" && c.AppToken == "" {
		return c, usageErr("SLACK_SIGNING_SECRET is not set: without it orch would accept forged requests (or set SLACK_APP_TOKEN for Socket Mode)")
	}
	if v := a.env("ORCH_SLACK_POST_INTERVAL"); v != "" {
		// 0 would not mean "no pacing" (Slack answers a burst with 429s) but the default: refused, not guessed at.
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return c, usageErr("ORCH_SLACK_POST_INTERVAL: %q: want a positive duration, e.g. 1s", safetext.OneLine(v, 40))
		}
		c.PostInterval = d
	}
	var err error
	for _, l := range []struct {
		env, def string
		to       *bot.Limit
	}{{"ORCH_SLACK_USER_RUNS", defaultUserRuns, &c.UserRuns}, {"ORCH_SLACK_CHANNEL_RUNS", defaultChannelRuns, &c.ChannelRuns}} {
		if *l.to, err = bot.ParseLimit(cmp.Or(a.env(l.env), l.def)); err != nil {
			return c, usageErr("%s: %v", l.env, err)
		}
	}
	c.NudgeAfter = defaultNudgeAfter
	if v := a.env("ORCH_SLACK_NUDGE_AFTER"); v == "off" || v == "0" {
		c.NudgeAfter = 0
	} else if v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute {
			return c, usageErr("ORCH_SLACK_NUDGE_AFTER: %q: want a duration of a minute or more (e.g. 4h), or off", v)
		}
		c.NudgeAfter = d
	}
	if c.QuietHours, err = bot.ParseQuietHours(a.env("ORCH_SLACK_QUIET_HOURS"), time.Local); err != nil {
		return c, usageErr("ORCH_SLACK_QUIET_HOURS: %v", err)
	}
	return c, nil
}

// The bot's defaults for its limits on new runs and its reminders of unanswered questions.
const (
	defaultUserRuns    = "20/h"
	defaultChannelRuns = "60/h"
	defaultNudgeAfter  = 4 * time.Hour
)

// startServiceWorker starts the worker of `orch serve` and `orch worker`: with the Docker sandbox its engine and
// image are checked before it takes any work, a warm pool is kept, and stray containers are reaped.
func (a *app) startServiceWorker(b *store.Backend, wk workerSettings, opts jobs.Options, ws string) (*engine, error) {
	e, err := a.startWorker(b, wk)
	if err != nil {
		return nil, err
	}
	if opts.Sandbox == "docker" {
		e.dockers.root = ws
		e.dockers.pool = wk.docker.warmPool
		if _, err := workspace.Toplevel(context.Background(), ws); err == nil && e.dockers.pool > 0 {
			// Runs in a repository work in worktrees of their own, each in a container made for it: a pooled
			// container, made before its run, could only show a run the whole workspace.
			a.log.Info("the warm pool is not used: the workspace is a git repository, whose runs get containers of their own",
				"workspace", ws)
			e.dockers.pool = 0
		}
		if _, err := e.dockers.forRun(opts); err != nil {
			e.Shutdown()
			return nil, withCode(exitUsage, err)
		}
	}
	e.reapEvery(b.Store, 5*time.Minute)
	return e, nil
}

// serveWorker serves a worker's metrics and health until ctx is done.
func (a *app) serveWorker(ctx context.Context, fr *front, ln net.Listener, b *store.Backend, m *metrics) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := b.Store.Ping(r.Context()); err != nil {
			http.Error(w, "redis: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	fr.use(mux)
	fmt.Fprintf(a.stderr, "orch: worker running (metrics on http://%s/metrics); stop with Ctrl-C\n", ln.Addr())
	<-ctx.Done()
	fr.shutdown(5 * time.Second)
	return nil
}

// serveBot serves Slack (HTTP endpoints, or Socket Mode) and the metrics until ctx is done, then drains.
func (a *app) serveBot(ctx context.Context, fr *front, ln net.Listener, f fronts, socketMode bool, m *metrics) error {
	srv, view := f.slack, f.view
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.handler())
	if f.github != nil {
		mux.Handle("POST /github/webhook", f.github.Handler())
		f.github.Start()
		fmt.Fprintf(a.stderr, "orch: GitHub webhook on http://%s/github/webhook\n", ln.Addr())
	}
	switch {
	case srv == nil:
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
			if err := f.store.Ping(r.Context()); err != nil {
				http.Error(w, "redis: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		})
		if view != nil {
			mux.Handle("/", view)
		}
	case view != nil:
		mux.Handle("/slack/", srv.Handler())
		mux.Handle("GET /healthz", srv.Handler())
		// Only the view's own routes check the Host header: Slack, monitors and probes reach the rest under any name.
		mux.Handle("/", view)
	default:
		mux.Handle("/", srv.Handler())
	}
	if view != nil {
		fmt.Fprintf(a.stderr, "orch: web view on http://%s/\n", ln.Addr())
	}
	fr.use(mux)
	switch {
	case srv == nil:
	case socketMode:
		fmt.Fprintf(a.stderr, "orch: Slack over Socket Mode; health on http://%s/healthz\n", ln.Addr())
		go func() {
			if err := srv.RunSocketMode(ctx); err != nil {
				a.log.Error("socket mode stopped", "err", err)
			}
		}()
	default:
		fmt.Fprintf(a.stderr, "orch: Slack endpoints on http://%s/slack/{commands,interactions,events}\n", ln.Addr())
	}
	<-ctx.Done()
	// First the HTTP server (requests in flight get their ack), then the bot's background work, each with its own
	// time: an ack given is work promised.
	herr := fr.shutdown(10 * time.Second)
	bctx, bcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer bcancel()
	err := herr
	if srv != nil {
		err = errors.Join(err, srv.Shutdown(bctx))
	}
	if f.github != nil {
		err = errors.Join(err, f.github.Shutdown(bctx))
	}
	if err != nil {
		a.log.Warn("shutting down", "err", err)
	}
	return nil
}

// healthLine is the deployment's health as the Home tab shows it: whether Redis answers, the steps queued for workers,
// and the runs waiting for a human (the same figures /metrics gives).
func healthLine(b *store.Backend) func(ctx context.Context) string {
	return func(ctx context.Context) string {
		if err := b.Store.Ping(ctx); err != nil {
			return "Redis does not answer (" + err.Error() + "): nothing moves until it does"
		}
		return fmt.Sprintf("Redis answers · %s queued for workers · %s waiting for a human",
			jobs.Count(b.Queue.StepsSize(), "step"), jobs.Count(int(parkedRuns(b.Store)), "run"))
	}
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

// slackStarter starts the runs Slack asks for, with the server's options, through the same runs.Prepare as the
// terminal: the plan, its tasks (the LLM's help included) and the agent are checked the same way.
type slackStarter struct {
	runs      *runs.Starter
	base      jobs.Options
	workspace string
	git       runs.Git
}

func (s *slackStarter) Start(ctx context.Context, req bot.StartRequest) (*jobs.Run, error) {
	opts := s.base
	if req.Agent != "" {
		opts.Agent = req.Agent
	}
	if req.SimScenario != "" {
		opts.SimScenario = req.SimScenario
	}
	if req.Plan == "" {
		// A request in words; a follow-up's branch starts where the run it follows left its work.
		git, follows := s.git, ""
		if f := req.FollowUp; f != nil {
			follows = f.ID
			if g := f.Git; g != nil && g.Commits > 0 {
				git.Base = g.Branch
			} else if g != nil && g.Base != "" {
				git.Base = g.Base
			}
		}
		return s.runs.Start(ctx, runs.Request{Text: req.Text, Context: req.Context, FollowUpOf: follows, Options: opts,
			Workspace: s.workspace, Origin: req.Origin, Confined: true, Git: git})
	}
	name, err := filepath.Rel(s.workspace, req.Plan)
	if err != nil {
		name = req.Plan
	}
	return s.runs.Start(ctx, runs.Request{Plan: req.Plan, PlanName: name, Options: opts, Workspace: s.workspace,
		Origin: req.Origin, Confined: true, Git: s.git})
}
