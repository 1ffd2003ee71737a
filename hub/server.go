package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v92/github"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/forge"
	"github.com/orchrun/orch/internal/workpool"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/pipeline"
)

// The webhook: GitHub POSTs a delivery; orch checks its signature before it reads anything of it, answers at once,
// and does the work after the answer, as it does for Slack (GitHub waits 10 seconds for an answer and does not
// deliver again on its own).

// MirrorName is the store's name for what orch keeps of GitHub: deliveries seen, the run of each issue, the comments
// of each run.
const MirrorName = "github"

const (
	// maxPayload is GitHub's cap on a delivery ("Webhook events and payloads": payloads are capped at 25 MB).
	maxPayload = 25 << 20
	// seenTTL is how long a delivery is remembered, and refused when it comes again. GitHub signs no time into a
	// delivery, so one replayed later than that would be taken: a secret that may have leaked is rotated, which makes
	// every delivery signed with it worthless.
	seenTTL = 30 * 24 * time.Hour
)

// Talker is what orch says on GitHub and reads there; forge.GitHub is one.
type Talker interface {
	Comment(ctx context.Context, repo forge.Repo, number int, body string) (int64, error)
	EditComment(ctx context.Context, repo forge.Repo, id int64, body string) error
	React(ctx context.Context, repo forge.Repo, id int64, content string) error
	Permission(ctx context.Context, repo forge.Repo, login string) (string, error)
	ReadIssue(ctx context.Context, repo forge.Repo, number, last int) (forge.Issue, error)
	PullRequest(ctx context.Context, repo forge.Repo, number int) (forge.Pull, error)
	Review(ctx context.Context, repo forge.Repo, number int, id int64) (forge.Review, error)
	ReviewComments(ctx context.Context, repo forge.Repo, number int, reviewID int64) ([]forge.ReviewComment, error)
	Reply(ctx context.Context, repo forge.Repo, number int, id int64, body string) (int64, error)
	ReactToReviewComment(ctx context.Context, repo forge.Repo, id int64, content string) error
	CheckRuns(ctx context.Context, repo forge.Repo, sha string) ([]forge.CheckRun, error)
	JobLog(ctx context.Context, repo forge.Repo, id int64, max int) (string, error)
}

// Starter creates and queues a run for a request made on GitHub; cmd wires it, as it knows plans and options.
type Starter interface {
	Start(ctx context.Context, req StartRequest) (*jobs.Run, error)
}

// StartRequest is a run asked for on GitHub: an issue's words, or the next iteration of an orch pull request, in its
// repository.
type StartRequest struct {
	Repo     forge.Repo
	CloneURL string // the repository, which the run clones
	Issue    int    // the issue or pull request it was asked in
	// Text is the task; Context what it was asked in (the issue's title, text and latest comments), bounded.
	Text, Context string
	// Tasks, when set, are the run's tasks (a review's threads, one each), and Text what the run as a whole is asked.
	Tasks []pipeline.Task
	// Pull, when set, is the orch pull request whose branch the run goes on with.
	Pull *PullTarget
	By   string // who asked
}

// PullTarget is an orch pull request a run goes on with: its branch, at the commit it is at on GitHub.
type PullTarget struct {
	Number       int
	Branch, Head string
	URL          string // the pull request's page
}

// Config wires the GitHub surface. Secret, Store, Queue, GitHub and Starter are required.
type Config struct {
	// Secret is the webhook's secret (ORCH_GITHUB_WEBHOOK_SECRET): without it no delivery is accepted.
	Secret string
	// Mention starts a command ("@orch", ORCH_GITHUB_MENTION).
	Mention string
	// Login is orch's own user on GitHub: an issue assigned to it starts a run. Its comments, as every bot's, start
	// nothing.
	Login string
	// Allowed are the logins that may start, answer and steer (ORCH_GITHUB_ALLOWED_USERS); empty: anyone with write
	// access to the repository.
	Allowed []string
	// Label on an issue starts a run of it ("orch").
	Label   string
	Store   *store.Store
	Queue   escalation.Enqueuer
	GitHub  Talker
	Starter Starter
	Log     *slog.Logger
	Now     func() time.Time
	// Workers and Backlog size the pool of work after an ack (defaults 4 and 256).
	Workers, Backlog int
	// PublicURL is where the web view is reachable ("" for nowhere): the status comment links the run's page.
	PublicURL string
	// FixChecks says which failing checks on an orch pull request start a fix run (ORCH_GITHUB_FIX_CHECKS): every
	// check when empty, none when FixOff, else the checks (or workflows) of these names.
	FixChecks []string
	FixOff    bool
	// MaxFixes is how many fix runs a red check may start on one pull request before orch asks instead (default 3).
	MaxFixes int
	// PollInterval is how often the mirror looks for new events of the runs it follows (default 500ms);
	// ProgressEvery the least time between two edits of a status comment for progress alone (default 30s).
	PollInterval, ProgressEvery time.Duration
}

func (cfg *Config) fillDefaults() {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Mention == "" {
		cfg.Mention = "@orch"
	}
	if cfg.Label == "" {
		cfg.Label = "orch"
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Backlog <= 0 {
		cfg.Backlog = 256
	}
	if cfg.MaxFixes <= 0 {
		cfg.MaxFixes = 3
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 500 * time.Millisecond
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 30 * time.Second
	}
}

// Server is orch on GitHub: the webhook that takes deliveries, the work they ask for, and the mirror that keeps each
// run's comments up to date.
type Server struct {
	cfg    Config
	log    *slog.Logger
	seen   *store.Mirror
	jobs   *workpool.Pool
	desk   *desk
	mirror *mirror
}

// New checks the configuration and returns a server; it contacts nothing.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Secret == "":
		return nil, errors.New("github: ORCH_GITHUB_WEBHOOK_SECRET is required: without it forged deliveries would be accepted")
	case cfg.Store == nil || cfg.Queue == nil || cfg.GitHub == nil || cfg.Starter == nil:
		return nil, errors.New("github: Store, Queue, GitHub and Starter are required")
	}
	cfg.fillDefaults()
	seen := cfg.Store.Mirror(MirrorName)
	m := newMirror(cfg, seen)
	d := newDesk(cfg, seen, m)
	m.ended = d.afterRun
	return &Server{cfg: cfg, log: cfg.Log, seen: seen, jobs: workpool.New(cfg.Workers, cfg.Backlog, cfg.Log),
		desk: d, mirror: m}, nil
}

// Start starts the work after acks and the mirror. Stop with Shutdown.
func (s *Server) Start() {
	s.jobs.Start()
	s.mirror.start()
}

// Shutdown drains the work already acknowledged, then stops the mirror.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.jobs.Shutdown(ctx)
	s.mirror.shutdown()
	return err
}

// Handler serves POST /github/webhook.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /github/webhook", s.handleWebhook)
	return mux
}

// handleWebhook verifies a delivery, answers it, and leaves its work to the pool. A delivery whose signature does
// not hold is 401 and changes nothing; one seen before (the same signed body: GitHub's redelivery, or a replay) is
// 200 and changes nothing.
func (s *Server) handleWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPayload))
	if err != nil {
		http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	sig := r.Header.Get(SignatureHeader)
	if err := Verify(s.cfg.Secret, sig, body); err != nil {
		s.log.Warn("github: refused a delivery whose signature does not hold", "delivery", r.Header.Get("X-GitHub-Delivery"))
		http.Error(w, "signature mismatch", http.StatusUnauthorized)
		return
	}
	event := r.Header.Get("X-GitHub-Event")
	if event == "ping" {
		fmt.Fprintln(w, "pong")
		return
	}
	first, err := s.seen.Once(r.Context(), "delivery:"+sig, seenTTL)
	if err != nil {
		// GitHub will not deliver it again on its own: say why, so that someone redelivers it once the store is back.
		s.log.Error("github: the store does not answer; a delivery was refused", "delivery", r.Header.Get("X-GitHub-Delivery"), "err", err)
		http.Error(w, "orch's store does not answer; redeliver this delivery once it does", http.StatusServiceUnavailable)
		return
	}
	if !first {
		fmt.Fprintln(w, "already received")
		return
	}
	job, err := s.desk.route(event, body)
	if err != nil {
		s.forget(sig)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if job == nil {
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintln(w, "nothing to do")
		return
	}
	if err := s.jobs.Submit(job); err != nil {
		s.forget(sig)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintln(w, "accepted")
}

// forget unmarks a delivery that was not taken, so that its redelivery is.
func (s *Server) forget(sig string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.seen.Unsee(ctx, "delivery:"+sig); err != nil {
		s.log.Warn("github: forgetting a delivery that was not taken", "err", err)
	}
}

// Events are the webhook events orch acts on; deploy/github-app-manifest.yaml subscribes the App to these.
var Events = []string{"issue_comment", "issues", "pull_request_review", "pull_request_review_comment", "check_run",
	"workflow_run"}

// parse reads a delivery's payload as event; an event orch does not handle is nil.
func parse(event string, body []byte) (any, error) {
	if !slices.Contains(Events, event) {
		return nil, nil
	}
	v, err := github.ParseWebHook(event, body)
	if err != nil {
		return nil, fmt.Errorf("the %s delivery's payload does not parse: %w", event, err)
	}
	return v, nil
}

// repoOf names a payload's repository.
func repoOf(r *github.Repository) forge.Repo {
	return forge.Repo{Owner: r.GetOwner().GetLogin(), Name: r.GetName()}
}

// issueKey is an issue's name in the mirror: "owner/name#12", lower case (GitHub's names are not case sensitive).
func issueKey(repo forge.Repo, number int) string {
	return strings.ToLower(repo.String()) + "#" + fmt.Sprint(number)
}
