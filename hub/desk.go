package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v92/github"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/forge"
	"github.com/orchrun/orch/internal/gfm"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/pipeline"
	"github.com/orchrun/orch/runs"
)

// The desk does what deliveries ask, after their ack: it starts runs from issues and answers their questions through
// escalation.Resolve, as every surface does, and tells people in the issue when it cannot.

const (
	// permTTL is how long a person's permission on a repository is trusted before it is read again.
	permTTL = time.Minute
	// contextComments is how many of an issue's latest comments a run started there reads.
	contextComments = 10
	// maxContext bounds what a run is told of its issue, in characters.
	maxContext = 8000
)

type desk struct {
	cfg    Config
	log    *slog.Logger
	issues *store.Mirror // which run serves which issue
	mirror *mirror       // follows the runs the desk starts
	perms  *permissions
}

func newDesk(cfg Config, issues *store.Mirror, m *mirror) *desk {
	return &desk{cfg: cfg, log: cfg.Log, issues: issues, mirror: m,
		perms: &permissions{talker: cfg.GitHub, allowed: cfg.Allowed, now: cfg.Now, known: map[string]perm{}}}
}

// asked is one person's request in an issue: who, where, and what they said.
type asked struct {
	repo     forge.Repo
	cloneURL string
	issue    int
	login    string
	comment  int64 // 0 when it is no comment (an assignment, a label)
}

// route turns a delivery into its work; nil when there is none.
func (d *desk) route(event string, body []byte) (func(context.Context), error) {
	v, err := parse(event, body)
	if err != nil || v == nil {
		return nil, err
	}
	switch e := v.(type) {
	case *github.IssueCommentEvent:
		return d.comment(e), nil
	case *github.IssuesEvent:
		return d.issue(e), nil
	case *github.PullRequestReviewEvent:
		return d.review(e), nil
	case *github.PullRequestReviewCommentEvent:
		return d.reviewComment(e), nil
	case *github.CheckRunEvent:
		return d.checkRun(e), nil
	case *github.WorkflowRunEvent:
		return d.workflowRun(e), nil
	}
	return nil, nil
}

// comment is the work of a new comment: a command, when it starts with the mention and comes from a person.
func (d *desk) comment(e *github.IssueCommentEvent) func(context.Context) {
	c := e.GetComment()
	if e.GetAction() != "created" || d.fromBot(c.GetUser()) || d.fromBot(e.GetSender()) {
		return nil // an edit asks nothing new; bots, orch included, never steer
	}
	cmd, ok := ParseCommand(c.GetBody(), d.cfg.Mention)
	if !ok {
		return nil
	}
	a := asked{repo: repoOf(e.GetRepo()), cloneURL: e.GetRepo().GetCloneURL(), issue: e.GetIssue().GetNumber(),
		login: c.GetUser().GetLogin(), comment: c.GetID()}
	return func(ctx context.Context) {
		if !d.may(ctx, a, "steer orch") {
			return
		}
		if err := d.cfg.GitHub.React(ctx, a.repo, a.comment, "eyes"); err != nil {
			d.log.Warn("github: acknowledging a command", "repo", a.repo, "err", err)
		}
		d.command(ctx, a, cmd, e.GetIssue())
	}
}

// issue is the work of an issue assigned to orch or labelled for it: a run of the issue.
func (d *desk) issue(e *github.IssuesEvent) func(context.Context) {
	switch {
	case d.fromBot(e.GetSender()):
		return nil
	case e.GetAction() == "assigned" && d.cfg.Login != "" && strings.EqualFold(e.GetAssignee().GetLogin(), d.cfg.Login):
	case e.GetAction() == "labeled" && strings.EqualFold(e.GetLabel().GetName(), d.cfg.Label):
	default:
		return nil
	}
	a := asked{repo: repoOf(e.GetRepo()), cloneURL: e.GetRepo().GetCloneURL(), issue: e.GetIssue().GetNumber(),
		login: e.GetSender().GetLogin()}
	is := e.GetIssue()
	return func(ctx context.Context) {
		if !d.may(ctx, a, "start a run") {
			return
		}
		d.start(ctx, a, strings.TrimSpace(is.GetTitle()+"\n\n"+is.GetBody()), is)
	}
}

// fromBot reports a user that is a bot or an app, or orch itself.
func (d *desk) fromBot(u *github.User) bool {
	return u.GetType() == "Bot" || strings.HasSuffix(u.GetLogin(), "[bot]") ||
		(d.cfg.Login != "" && strings.EqualFold(u.GetLogin(), d.cfg.Login))
}

// command does what a command in an issue asks: answer the question its run waits on, or start a run of its words.
// In a pull request's conversation it is the pull request's (pullCommand).
func (d *desk) command(ctx context.Context, a asked, cmd Command, is *github.Issue) {
	if is.IsPullRequest() {
		d.pullCommand(ctx, a, cmd)
		return
	}
	run, err := d.runOf(ctx, a)
	if err != nil {
		d.say(ctx, a, "orch cannot read its runs right now: "+safetext.OneLine(err.Error(), 200)+". Try again in a moment.")
		return
	}
	if run == nil || run.Status.Terminal() {
		if cmd.Verb != VerbNone || cmd.Words == "" {
			d.say(ctx, a, fmt.Sprintf("There is no run here to answer. %s followed by what to do starts one.",
				gfm.Code(d.cfg.Mention+" <words>")))
			return
		}
		d.start(ctx, a, cmd.Words, is)
		return
	}
	d.answer(ctx, a, run, cmd)
}

// answer gives a run at work what a command says: the answer to its open question, or its end.
func (d *desk) answer(ctx context.Context, a asked, run *jobs.Run, cmd Command) {
	e := run.OpenEscalation()
	if e == nil {
		if cmd.Verb == VerbAbort {
			d.abort(ctx, a, run, cmd)
			return
		}
		d.say(ctx, a, fmt.Sprintf("Run %s is at work and waits for no answer; it asks here when it needs one.", gfm.Code(run.ID)))
		return
	}
	req, err := cmd.Answer(e, run.ID, a.login)
	if err == nil {
		_, _, err = escalation.Resolve(ctx, d.cfg.Store, d.cfg.Queue, req)
	}
	d.answered(ctx, a, err)
}

// answered tells the person what became of their answer when it was not taken.
func (d *desk) answered(ctx context.Context, a asked, err error) {
	switch {
	case err == nil:
	case errors.Is(err, escalation.ErrInvalid), errors.Is(err, escalation.ErrAlreadyResolved),
		errors.Is(err, escalation.ErrNoOpenEscalation):
		// The error says what to do, or who answered first.
		d.say(ctx, a, "Your answer was not taken: "+gfm.Inline(safetext.Redact(err.Error()), 600))
	default:
		d.log.Error("github: answering from a comment", "repo", a.repo, "issue", a.issue, "err", err)
		d.say(ctx, a, "orch could not take your answer right now; send it again in a moment.")
	}
}

// abort ends a run at work at a person's word.
func (d *desk) abort(ctx context.Context, a asked, run *jobs.Run, cmd Command) {
	reason := cmd.Reason
	if reason == "" {
		reason = "aborted by " + a.login + " on GitHub"
	}
	if _, err := escalation.Abort(ctx, d.cfg.Store, d.cfg.Queue, run.ID, a.login, Via, reason); err != nil {
		d.answered(ctx, a, err)
	}
}

// start starts a run of text for a person in an issue, with the issue as its context, and follows it there.
func (d *desk) start(ctx context.Context, a asked, text string, is *github.Issue) {
	if strings.TrimSpace(text) == "" {
		d.say(ctx, a, "Say what to do after the mention, or give the issue a description.")
		return
	}
	req := StartRequest{Repo: a.repo, CloneURL: a.cloneURL, Issue: a.issue, Text: text, By: a.login,
		Context: fmt.Sprintf("GitHub issue %s#%d: %s", a.repo, a.issue, d.context(ctx, a, is.GetTitle(), is.GetBody()))}
	run, err := d.cfg.Starter.Start(ctx, req)
	if err != nil {
		d.say(ctx, a, d.cannotStart(a, err))
		return
	}
	if err := d.issues.SetThread(ctx, issueKey(a.repo, a.issue), run.ID); err != nil {
		d.log.Error("github: remembering an issue's run", "run_id", run.ID, "err", err)
	}
	if err := d.mirror.follow(ctx, run.ID, a.repo, a.issue); err != nil {
		d.log.Error("github: following a run", "run_id", run.ID, "err", err)
	}
}

// cannotStart says why a run could not start: a request orch refuses says why in its own words (redacted); anything
// else is orch's own trouble, which goes to its log and not to a conversation the public may read.
func (d *desk) cannotStart(a asked, err error) string {
	var plan *pipeline.PlanError
	if errors.Is(err, runs.ErrInvalid) || errors.As(err, &plan) {
		return "orch could not start a run: " + gfm.Inline(safetext.Redact(err.Error()), 600)
	}
	d.log.Error("github: starting a run", "repo", a.repo, "issue", a.issue, "err", err)
	return "orch could not start a run: something on orch's side failed, which its operators find in its log. Ask again in a moment."
}

// context is what a run started in an issue or a pull request is told of it: its title, text and the latest
// comments of people who may steer orch, bounded.
func (d *desk) context(ctx context.Context, a asked, title, body string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n%s\n", title, body)
	if full, err := d.cfg.GitHub.ReadIssue(ctx, a.repo, a.issue, contextComments); err == nil {
		for _, c := range full.Comments {
			// Only the words of people who may steer orch reach its agent: on a public repository anyone may
			// comment, and a comment is text the agent would read as part of its task.
			if c.Bot {
				continue
			}
			if ok, err := d.perms.may(ctx, a.repo, c.Author); err != nil || !ok {
				continue
			}
			fmt.Fprintf(&b, "\n%s wrote:\n%s\n", c.Author, c.Body)
		}
	} else {
		d.log.Warn("github: reading an issue's comments", "repo", a.repo, "issue", a.issue, "err", err)
	}
	return safetext.Bound(safetext.Redact(b.String()), maxContext)
}

// runOf is the run that serves the person's issue, nil for none.
func (d *desk) runOf(ctx context.Context, a asked) (*jobs.Run, error) {
	id, err := d.issues.RunOfThread(ctx, issueKey(a.repo, a.issue))
	if err != nil || id == "" {
		return nil, err
	}
	run, err := d.cfg.Store.Get(ctx, id)
	if errors.Is(err, jobs.ErrRunNotFound) {
		return nil, nil
	}
	return run, err
}

// may reports whether the person may do what they ask; when not, it tells them and records the refusal.
func (d *desk) may(ctx context.Context, a asked, what string) bool {
	ok, err := d.perms.may(ctx, a.repo, a.login)
	if err != nil {
		d.log.Error("github: reading a person's permission", "repo", a.repo, "login", a.login, "err", err)
		d.say(ctx, a, "orch could not check your permission on this repository; try again in a moment.")
		return false
	}
	if ok {
		return true
	}
	if err := d.cfg.Store.AuditOutsideRuns(ctx, jobs.AuditEntry{Action: "refused",
		Detail: fmt.Sprintf("%s: %s#%d", what, a.repo, a.issue), By: a.login, Via: Via}); err != nil {
		d.log.Warn("github: recording a refusal", "err", err)
	}
	d.say(ctx, a, "Sorry, only people with write access to this repository may "+what+" here.")
	return false
}

// say answers the person in their issue; with no person (a red check asks), it says it to the issue.
func (d *desk) say(ctx context.Context, a asked, text string) {
	if a.login != "" {
		text = "@" + a.login + " " + text
	}
	if _, err := d.cfg.GitHub.Comment(ctx, a.repo, a.issue, text); err != nil {
		d.log.Warn("github: answering in an issue", "repo", a.repo, "issue", a.issue, "err", err)
	}
}

// permissions knows who may steer orch in a repository: the allowed logins when there are any (DESIGN §12:
// ORCH_GITHUB_ALLOWED_USERS, "empty = anyone with write access"), else anyone GitHub says has write access, which is
// remembered for permTTL.
type permissions struct {
	talker  Talker
	allowed []string
	now     func() time.Time
	mu      sync.Mutex
	known   map[string]perm
}

type perm struct {
	ok    bool
	until time.Time
}

func (p *permissions) may(ctx context.Context, repo forge.Repo, login string) (bool, error) {
	if len(p.allowed) > 0 {
		return slices.ContainsFunc(p.allowed, func(a string) bool { return strings.EqualFold(a, login) }), nil
	}
	key := strings.ToLower(repo.String() + " " + login)
	p.mu.Lock()
	k, ok := p.known[key]
	p.mu.Unlock()
	if ok && p.now().Before(k.until) {
		return k.ok, nil
	}
	level, err := p.talker.Permission(ctx, repo, login)
	if err != nil {
		return false, err
	}
	k = perm{ok: level == "admin" || level == "write", until: p.now().Add(permTTL)}
	p.mu.Lock()
	p.known[key] = k
	p.mu.Unlock()
	return k.ok, nil
}
