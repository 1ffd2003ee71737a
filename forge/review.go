package forge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v92/github"

	"github.com/orchrun/orch/internal/gfm"
	"github.com/orchrun/orch/internal/httpdeadline"
)

// What a token needs to read checks and GitHub Actions logs, besides talkPermissions.
const (
	checksPermissions = `a fine-grained token needs the repository permission "Checks: read", a GitHub App checks:read, ` +
		`a classic token the repo scope on a private repository`
	actionsPermissions = `a fine-grained token needs the repository permission "Actions: read", a GitHub App actions:read, ` +
		`a classic token the repo scope on a private repository`
)

// refusalAbout says why GitHub refused a request about what (a pull request, a comment, a job…) on repo, and which
// permissions the token needs (needs); write says whether the request would have changed something.
func refusalAbout(repo Repo, what, needs string, write bool) func(*github.ErrorResponse) string {
	talk := talkRefusal(repo)
	return func(er *github.ErrorResponse) string {
		said := fmt.Sprintf("%d %s", er.Response.StatusCode, oneLine(er.Message))
		verb := "read"
		if write {
			verb = "write on"
		}
		switch er.Response.StatusCode {
		case http.StatusUnauthorized:
			return fmt.Sprintf("GitHub did not accept the token (%s): it is wrong, expired or revoked; %s", said, needs)
		case http.StatusForbidden:
			return fmt.Sprintf("GitHub refused (%s): the token may not %s %s on %s; %s", said, verb, what, repo, needs)
		case http.StatusNotFound:
			// GitHub answers 404, not 403, for what a token may not see: the permission may be what is missing.
			return fmt.Sprintf("GitHub has no %s on %s that this token can see (%s); %s", what, repo, said, needs)
		}
		return talk(er)
	}
}

// Pull is a pull request as orch steers it. (PullRequest is what OpenDraft opens.)
type Pull struct {
	Number           int
	HTMLURL          string
	State            string // "open" or "closed"
	Merged, Draft    bool
	Title, Body      string
	Author           string
	HeadRef, HeadSHA string
	HeadRepo         string // owner/name of the head branch's repository ("" when the fork was deleted)
	BaseRef          string
}

// PullRequest is pull request number of repo as GitHub has it now: HeadSHA is its head branch's latest commit.
func (g *GitHub) PullRequest(ctx context.Context, repo Repo, number int) (Pull, error) {
	p, _, err := g.client.PullRequests.Get(ctx, repo.Owner, repo.Name, number)
	if err != nil {
		what := fmt.Sprintf("pull request #%d", number)
		return Pull{}, g.explainWith("reading "+what+" on "+repo.String(), refusalAbout(repo, what, talkPermissions, false), err)
	}
	return Pull{
		Number: p.GetNumber(), HTMLURL: p.GetHTMLURL(), State: p.GetState(), Merged: p.GetMerged(), Draft: p.GetDraft(),
		Title: p.GetTitle(), Body: p.GetBody(), Author: p.GetUser().GetLogin(),
		HeadRef: p.GetHead().GetRef(), HeadSHA: p.GetHead().GetSHA(), HeadRepo: p.GetHead().GetRepo().GetFullName(),
		BaseRef: p.GetBase().GetRef(),
	}, nil
}

// ReviewComment is a comment on a line (or lines) of a pull request's diff.
type ReviewComment struct {
	ID, ReviewID, InReplyTo int64 // InReplyTo: the first comment of the thread this one answers, 0 for that one
	Author                  string
	Bot                     bool // a bot or an app wrote it (type "Bot" or a login ending in "[bot]")
	Body                    string
	Path                    string
	// Line and StartLine are the file's lines it comments (StartLine 0 for a single line), in CommitID's version of
	// the file. GitHub no longer places an outdated comment on the diff (its line is null): then they are the lines
	// it was written on (original_line), CommitID the commit it was written on, and Outdated is true.
	Line, StartLine int
	Outdated        bool
	Side            string // "LEFT" or "RIGHT"
	DiffHunk        string
	CommitID        string
}

// Review is a submitted review of a pull request: who, its state (APPROVED, CHANGES_REQUESTED, COMMENTED) and its
// own text ("" for none).
type Review struct {
	ID          int64
	Author      string
	State, Body string
}

// Review is review id of pull request number (GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}).
func (g *GitHub) Review(ctx context.Context, repo Repo, number int, id int64) (Review, error) {
	what := fmt.Sprintf("review %d on pull request #%d", id, number)
	rv, _, err := g.client.PullRequests.GetReview(ctx, repo.Owner, repo.Name, number, id)
	if err != nil {
		return Review{}, g.explainWith("reading "+what+" on "+repo.String(), refusalAbout(repo, what, talkPermissions, false), err)
	}
	return Review{ID: rv.GetID(), Author: rv.GetUser().GetLogin(), State: rv.GetState(), Body: rv.GetBody()}, nil
}

// ReviewComments are the comments of review reviewID on pull request number, oldest first (GET
// /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments, every page).
func (g *GitHub) ReviewComments(ctx context.Context, repo Repo, number int, reviewID int64) ([]ReviewComment, error) {
	what := fmt.Sprintf("review %d on pull request #%d", reviewID, number)
	refused := refusalAbout(repo, what, talkPermissions, false)
	var out []ReviewComment
	opts := &github.ListOptions{PerPage: 100}
	for {
		cs, resp, err := g.client.PullRequests.ListReviewComments(ctx, repo.Owner, repo.Name, number, reviewID, opts)
		if err != nil {
			return nil, g.explainWith("reading the comments of "+what+" on "+repo.String(), refused, err)
		}
		for _, c := range cs {
			out = append(out, reviewComment(c))
		}
		if resp.NextPage <= opts.Page || resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// ReviewComment is one review comment by id (GET /repos/{owner}/{repo}/pulls/comments/{comment_id}).
func (g *GitHub) ReviewComment(ctx context.Context, repo Repo, id int64) (ReviewComment, error) {
	c, _, err := g.client.PullRequests.GetComment(ctx, repo.Owner, repo.Name, id)
	if err != nil {
		what := fmt.Sprintf("review comment %d", id)
		return ReviewComment{}, g.explainWith("reading "+what+" on "+repo.String(),
			refusalAbout(repo, what, talkPermissions, false), err)
	}
	return reviewComment(c), nil
}

func reviewComment(c *github.PullRequestComment) ReviewComment {
	u := c.GetUser()
	out := ReviewComment{
		ID: c.GetID(), ReviewID: c.GetPullRequestReviewID(), InReplyTo: c.GetInReplyTo(),
		Author: u.GetLogin(), Bot: u.GetType() == "Bot" || strings.HasSuffix(u.GetLogin(), "[bot]"), Body: c.GetBody(),
		Path: c.GetPath(), Line: c.GetLine(), StartLine: c.GetStartLine(), Side: c.GetSide(), DiffHunk: c.GetDiffHunk(),
		CommitID: c.GetCommitID(),
	}
	if out.Line == 0 && c.GetOriginalLine() != 0 {
		out.Line, out.StartLine, out.Outdated = c.GetOriginalLine(), c.GetOriginalStartLine(), true
		out.CommitID = c.GetOriginalCommitID()
	}
	return out
}

// Reply answers the thread of review comment id on pull request number (POST
// /repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies) and returns the reply's id. id must be
// the thread's first comment: GitHub does not take replies to replies (a reply's InReplyTo names its thread's first
// comment). A body longer than GitHub takes is cut with a note.
func (g *GitHub) Reply(ctx context.Context, repo Repo, number int, id int64, body string) (int64, error) {
	// go-github has no method for this endpoint; its request and response are go-github's all the same.
	u := fmt.Sprintf("repos/%s/%s/pulls/%d/comments/%d/replies", url.PathEscape(repo.Owner), url.PathEscape(repo.Name), number, id)
	op := fmt.Sprintf("replying to review comment %d on %s#%d", id, repo, number)
	req, err := g.client.NewRequest(ctx, http.MethodPost, u, struct {
		Body string `json:"body"`
	}{gfm.Bound(body, cutNote)})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	var c github.PullRequestComment
	if _, err := g.client.Do(req, &c); err != nil {
		what := fmt.Sprintf("review comment %d on pull request #%d", id, number)
		return 0, g.explainWith(op, refusalAbout(repo, what, talkPermissions, true), err)
	}
	return c.GetID(), nil
}

// ReactToReviewComment adds reaction content ("eyes", "+1", …) to review comment id (POST
// /repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions); a reaction already there is no error.
func (g *GitHub) ReactToReviewComment(ctx context.Context, repo Repo, id int64, content string) error {
	_, _, err := g.client.Reactions.CreatePullRequestCommentReaction(ctx, repo.Owner, repo.Name, id, content)
	if err != nil {
		what := fmt.Sprintf("review comment %d", id)
		return g.explainWith(fmt.Sprintf("reacting to %s on %s", what, repo), refusalAbout(repo, what, talkPermissions, true), err)
	}
	return nil
}

// CheckRun is a check run on a commit.
type CheckRun struct {
	ID                   int64
	Name                 string
	Status, Conclusion   string
	HeadSHA              string
	App                  string // the app's slug ("github-actions" for a GitHub Actions job)
	Title, Summary, Text string // its output
	HTMLURL              string
}

// CheckRuns are the check runs of commit sha, the latest of each name (GET
// /repos/{owner}/{repo}/commits/{ref}/check-runs, every page, filter=latest).
func (g *GitHub) CheckRuns(ctx context.Context, repo Repo, sha string) ([]CheckRun, error) {
	what := "the check runs of commit " + sha
	refused := refusalAbout(repo, what, checksPermissions, false)
	var out []CheckRun
	opts := &github.ListCheckRunsOptions{Filter: new("latest"), ListOptions: github.ListOptions{PerPage: 100}}
	for {
		res, resp, err := g.client.Checks.ListCheckRunsForRef(ctx, repo.Owner, repo.Name, sha, opts)
		if err != nil {
			return nil, g.explainWith("reading "+what+" on "+repo.String(), refused, err)
		}
		for _, c := range res.CheckRuns {
			o := c.GetOutput()
			out = append(out, CheckRun{ID: c.GetID(), Name: c.GetName(), Status: c.GetStatus(), Conclusion: c.GetConclusion(),
				HeadSHA: c.GetHeadSHA(), App: c.GetApp().GetSlug(), Title: o.GetTitle(), Summary: o.GetSummary(),
				Text: o.GetText(), HTMLURL: c.GetHTMLURL()})
		}
		if resp.NextPage <= opts.Page || resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// JobLog is the last max bytes of GitHub Actions job id's log (a job's id is its check run's). GitHub answers GET
// /repos/{owner}/{repo}/actions/jobs/{job_id}/logs with a short-lived download URL, usually on another host; the
// token goes there only when the host is the API's own. The log is read through a window of max bytes, so a large
// one is never held whole. The window's first byte may be inside a UTF-8 character.
func (g *GitHub) JobLog(ctx context.Context, repo Repo, id int64, max int) (string, error) {
	op := fmt.Sprintf("reading the log of GitHub Actions job %d on %s", id, repo)
	if max <= 0 {
		return "", nil
	}
	// go-github asks without following the redirect, and follows a 301 only to the API's own host.
	loc, resp, err := g.client.Actions.GetWorkflowJobLogs(ctx, repo.Owner, repo.Name, id, 1)
	if err != nil {
		return "", g.explainWith(op, refusalAbout(repo, fmt.Sprintf("GitHub Actions job %d", id), actionsPermissions, false),
			refusedLogs(resp, err))
	}
	api, err := url.Parse(g.client.BaseURL())
	if err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	return download(ctx, op, api.ResolveReference(loc), api.Host, g.client.Client(), max)
}

// refusedLogs is GitHub's refusal of a logs request as go-github's other calls give it: GetWorkflowJobLogs says only
// "unexpected status code", having closed the answer's body, so the status and the headers (a rate limit's among
// them) are all there is to read.
func refusedLogs(resp *github.Response, err error) error {
	if resp == nil || resp.Response == nil || resp.StatusCode == http.StatusFound {
		return err
	}
	refused := github.CheckResponse(resp.Response)
	if er, ok := errors.AsType[*github.ErrorResponse](refused); ok && er.Message == "" {
		er.Message = http.StatusText(resp.StatusCode)
	}
	if refused == nil {
		return err
	}
	return refused
}

// download is the last max bytes at loc.
func download(ctx context.Context, op string, loc *url.URL, apiHost string, api *http.Client, max int) (string, error) {
	resp, err := fetch(ctx, loc, apiHost, api)
	if err != nil {
		return "", fmt.Errorf("%s: downloading it: %w", op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s answered %s to its download", op, resp.Request.URL.Host, resp.Status)
	}
	size := max
	if n := resp.ContentLength; n >= 0 && n < int64(max) {
		size = int(n) // a short log takes no more room than it needs
	}
	t := &tail{buf: make([]byte, size)}
	if _, err := io.Copy(t, resp.Body); err != nil {
		return "", fmt.Errorf("%s: downloading it from %s: %w", op, resp.Request.URL.Host, err)
	}
	return t.String(), nil
}

// maxHops bounds the redirects a download follows.
const maxHops = 5

// fetch GETs loc, following redirects itself: a hop to the API's host goes through api (the token included), any
// other through a client of this call's own that sends no token. A download URL is signed, and the token is none of
// the download host's business.
func fetch(ctx context.Context, loc *url.URL, apiHost string, api *http.Client) (*http.Response, error) {
	stop := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	withToken := *api
	withToken.CheckRedirect = stop
	bare := httpdeadline.StreamClient(0) // a log is long: bounded by silence, not by its length
	bare.CheckRedirect = stop
	for hops := 0; ; hops++ {
		c := bare
		if loc.Host == apiHost {
			c = &withToken
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
		if err != nil {
			return nil, err
		}
		req.Close = true // bare is this call's: it keeps no connection for another
		resp, err := c.Do(req)
		if err != nil {
			// The URL is a secret while it lasts: the host names the peer.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return nil, fmt.Errorf("from %s: %w", loc.Host, err)
		}
		next, lerr := resp.Location()
		if resp.StatusCode < 300 || resp.StatusCode > 399 || lerr != nil || hops == maxHops {
			return resp, nil
		}
		resp.Body.Close()
		loc = next
	}
}

// tail keeps the last len(buf) bytes written to it, in a ring.
type tail struct {
	buf  []byte
	next int  // where the next byte goes
	full bool // the ring has wrapped: buf[next:] comes before buf[:next]
}

func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= len(t.buf) {
		copy(t.buf, p[len(p)-len(t.buf):])
		t.next, t.full = 0, true
		return n, nil
	}
	k := copy(t.buf[t.next:], p)
	if k < len(p) {
		copy(t.buf, p[k:])
		t.full = true
	}
	t.next = (t.next + len(p)) % len(t.buf)
	if t.next == 0 {
		t.full = true
	}
	return n, nil
}

func (t *tail) String() string {
	if !t.full {
		return string(t.buf[:t.next])
	}
	return string(t.buf[t.next:]) + string(t.buf[:t.next])
}
