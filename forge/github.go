// Package forge puts a run's work up for review: the draft pull request of a completed run on GitHub or GitHub
// Enterprise (opened once, updated after), its summary (tasks, humans' decisions, cost, diffstat), and which remotes
// are GitHub's.
//
// It talks to GitHub through github.com/google/go-github (v92): the maintained Go client, with typed requests and
// responses, typed rate-limit errors and GitHub Enterprise base URLs, so orch writes none of that by hand.
package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v92/github"

	"github.com/orchrun/orch/internal/gfm"
	"github.com/orchrun/orch/internal/httpdeadline"
)

// DefaultAPIURL is GitHub's REST API.
const DefaultAPIURL = "https://api.github.com/"

// defaultTimeout bounds one request when the caller brings no http.Client of its own; the connection, the TLS
// handshake and the wait for the response's header have their own, shorter bounds (httpdeadline).
const defaultTimeout = 30 * time.Second

// GitHub opens pull requests with one token. Make it with NewGitHub; it is safe for concurrent use.
type GitHub struct {
	client *github.Client
	now    func() time.Time // when a rate limit that names a duration ends
	host   string           // the API's host, which errors name
}

// NewGitHub is a client of the REST API at apiURL ("" is DefaultAPIURL; anything else is a GitHub Enterprise server,
// "https://HOST" or "https://HOST/api/v3/", or a test server) that authenticates with token. httpClient nil is a
// client whose requests time out after 30 seconds, and whose connection and wait for an answer are bounded shorter. The token appears in no error and no log.
func NewGitHub(token, apiURL string, httpClient *http.Client) (*GitHub, error) {
	if strings.TrimSpace(token) == "" {
		return nil, errors.New("no GitHub token: set one to open pull requests")
	}
	if httpClient == nil {
		httpClient = httpdeadline.Client(defaultTimeout)
	}
	return newGitHub(apiURL, httpClient, github.WithAuthToken(token))
}

// newGitHub is a client of the REST API at apiURL over httpClient, which authenticates with auth (a token), or
// itself when auth is nil (an App's transport).
func newGitHub(apiURL string, httpClient *http.Client, auth github.ClientOptionsFunc) (*GitHub, error) {
	host := "api.github.com"
	opts := []github.ClientOptionsFunc{github.WithHTTPClient(httpClient), github.WithUserAgent("orch")}
	if auth != nil {
		opts = append(opts, auth)
	}
	if apiURL != "" && apiURL != DefaultAPIURL {
		u, err := checkAPIURL(apiURL)
		if err != nil {
			return nil, err
		}
		// The enterprise mechanism adds /api/v3/ to a server's URL (not to an api.* host), as GitHub Enterprise
		// Server serves its REST API there; uploads are not used.
		opts = append(opts, github.WithEnterpriseURLs(u.String(), u.String()))
		host = u.Host
	}
	c, err := github.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("making the GitHub client: %w", err)
	}
	return &GitHub{client: c, now: time.Now, host: host}, nil
}

// checkAPIURL parses a GitHub API URL, refusing one that is no http(s) address or that holds credentials.
func checkAPIURL(apiURL string) (*url.URL, error) {
	u, err := url.Parse(apiURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("GitHub API URL %q: want http(s)://HOST[/api/v3]", apiURL)
	}
	if u.User != nil {
		return nil, errors.New("GitHub API URL: it must not hold credentials; the token is given apart")
	}
	return u, nil
}

// PullRequest is what OpenDraft opens: Head, a branch of Owner/Repo, into its branch Base.
type PullRequest struct {
	Owner, Repo string
	Head, Base  string
	Title, Body string
}

// Bounds GitHub sets on a pull request.
const (
	// MaxBody is GitHub's limit on a pull request's body, in characters; orch holds it in bytes, which is never more.
	MaxBody = gfm.MaxBody
	// MaxTitle is a pull request's longest title (GitHub's issue title limit), in characters.
	MaxTitle = 256
)

// OpenDraft makes sure there is an open pull request from pr.Head into pr.Base on pr.Owner/pr.Repo with pr's title
// and body, and returns its web address. Three things might happen:
//
//   - an open pull request from that head into that base exists (from an earlier call, a redelivered job, or a
//     person): its title and body are replaced and it is returned, draft or not;
//   - there is none: it is created as a draft;
//   - GitHub refuses: the error says what to change — the token's permissions (401, 403), the repository's name or
//     the token's access to it (404), the branches (422: not pushed, nothing to merge; GitHub's words included) — or,
//     as a *RateLimitError, when to try again. OpenDraft never waits for a rate limit.
//
// A body longer than MaxBody is cut with a note; the title is bounded by MaxTitle.
func (g *GitHub) OpenDraft(ctx context.Context, pr PullRequest) (string, error) {
	if pr.Owner == "" || pr.Repo == "" || pr.Head == "" || pr.Base == "" {
		return "", errors.New("opening a pull request needs the repository's owner and name, a head branch and a base branch")
	}
	pr.Title = boundTitle(pr.Title)
	if pr.Title == "" {
		return "", errors.New("opening a pull request needs a title")
	}
	pr.Body = boundBody(pr.Body, "")
	existing, err := g.find(ctx, pr)
	if err != nil {
		return "", g.explain(fmt.Sprintf("looking for an open pull request from %s into %s on %s/%s", pr.Head, pr.Base, pr.Owner, pr.Repo), pr, err)
	}
	if existing != nil {
		return g.update(ctx, pr, existing)
	}
	created, _, err := g.client.PullRequests.Create(ctx, pr.Owner, pr.Repo, github.CreatePullRequest{
		Title: new(pr.Title),
		Head:  pr.Head,
		Base:  pr.Base,
		Body:  new(pr.Body),
		Draft: new(true),
	})
	if err == nil {
		return created.GetHTMLURL(), nil
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusUnprocessableEntity {
		// Another delivery of the same job may have opened it since the lookup ("A pull request already exists").
		if existing, ferr := g.find(ctx, pr); ferr == nil && existing != nil {
			return g.update(ctx, pr, existing)
		}
	}
	return "", g.explain(fmt.Sprintf("opening a draft pull request from %s into %s on %s/%s", pr.Head, pr.Base, pr.Owner, pr.Repo), pr, err)
}

// find is the open pull request from pr.Head into pr.Base, or nil.
func (g *GitHub) find(ctx context.Context, pr PullRequest) (*github.PullRequest, error) {
	owner, branch := pr.Owner, pr.Head
	if o, b, ok := strings.Cut(pr.Head, ":"); ok {
		owner, branch = o, b
	}
	list, _, err := g.client.PullRequests.List(ctx, pr.Owner, pr.Repo, &github.PullRequestListOptions{
		State: "open", Head: owner + ":" + branch, Base: pr.Base,
	})
	if err != nil {
		return nil, err
	}
	for _, p := range list {
		// The filter is GitHub's; checking it again costs nothing and never edits someone else's pull request.
		if p.GetHead().GetRef() == branch && p.GetBase().GetRef() == pr.Base && p.GetState() == "open" {
			return p, nil
		}
	}
	return nil, nil
}

// update gives an existing pull request pr's title and body.
func (g *GitHub) update(ctx context.Context, pr PullRequest, existing *github.PullRequest) (string, error) {
	n := existing.GetNumber()
	edited, _, err := g.client.PullRequests.Edit(ctx, pr.Owner, pr.Repo, n, &github.PullRequest{
		Title: new(pr.Title),
		Body:  new(pr.Body),
	})
	if err != nil {
		return "", g.explain(fmt.Sprintf("updating pull request #%d on %s/%s", n, pr.Owner, pr.Repo), pr, err)
	}
	if u := edited.GetHTMLURL(); u != "" {
		return u, nil
	}
	return existing.GetHTMLURL(), nil
}

// RateLimitError is GitHub refusing a request for a rate limit: nothing was changed, and the same call may succeed
// from RetryAt on.
type RateLimitError struct {
	RetryAt time.Time
	// Secondary is GitHub's secondary limit (too many requests, or too much content created, in a short time) rather
	// than the token's hourly allowance.
	Secondary bool
	op        string
}

func (e *RateLimitError) Error() string {
	which := "the token's GitHub API rate limit is used up"
	if e.Secondary {
		which = "GitHub's secondary rate limit holds (too many requests in a short time)"
	}
	return fmt.Sprintf("%s: %s; retry after %s", e.op, which, e.RetryAt.UTC().Format(time.RFC3339))
}

// RefusedError is GitHub answering a request with an error status (other than a rate limit): Status says which, the
// message what to do about it.
type RefusedError struct {
	Status int
	msg    string
}

func (e *RefusedError) Error() string { return e.msg }

// Gone reports whether err is GitHub saying that what the request names is not there, or no longer (404, 410): asking
// again will not bring it back.
func Gone(err error) bool {
	var re *RefusedError
	return errors.As(err, &re) && (re.Status == http.StatusNotFound || re.Status == http.StatusGone)
}

// secondaryWait is how long to wait after a secondary rate limit that names no time: GitHub's documentation says to
// wait at least a minute.
const secondaryWait = time.Minute

// explain turns a failed request into an error a user can act on. SDK types stay in this package, and the token is
// in none of the texts.
func (g *GitHub) explain(op string, pr PullRequest, err error) error {
	return g.explainWith(op, func(er *github.ErrorResponse) string { return refusal(pr, er) }, err)
}

// explainWith is explain with refused saying why GitHub answered an error status.
func (g *GitHub) explainWith(op string, refused func(*github.ErrorResponse) string, err error) error {
	var (
		rl    *github.RateLimitError
		abuse *github.AbuseRateLimitError
		er    *github.ErrorResponse
	)
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", op, err)
	case errors.As(err, &rl):
		at := rl.Rate.Reset.Time
		if at.IsZero() {
			at = g.now().Add(secondaryWait)
		}
		return &RateLimitError{RetryAt: at, op: op}
	case errors.As(err, &abuse):
		wait := secondaryWait
		if abuse.RetryAfter != nil && *abuse.RetryAfter > 0 {
			wait = *abuse.RetryAfter
		}
		return &RateLimitError{RetryAt: g.now().Add(wait), Secondary: true, op: op}
	case errors.As(err, &er) && er.Response != nil:
		return &RefusedError{Status: er.Response.StatusCode, msg: op + ": " + refused(er)}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		// The URL is left out (the host says which GitHub); the deadline that passed, if one did, is said.
		if ue.Timeout() {
			return fmt.Errorf("%s: GitHub at %s did not answer in time: %w", op, g.host, ue.Err)
		}
		return fmt.Errorf("%s: GitHub could not be reached at %s: %w", op, g.host, ue.Err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// permissions is what a token needs to open and update pull requests.
const permissions = `a fine-grained token needs the repository permissions "Pull requests: write" and "Contents: read" ` +
	`on the repository, a classic token the repo scope (public_repo for a public repository)`

// refusal says why GitHub answered an error status and what to do about it.
func refusal(pr PullRequest, er *github.ErrorResponse) string {
	status := er.Response.StatusCode
	said := fmt.Sprintf("%d %s", status, oneLine(er.Message))
	repo := pr.Owner + "/" + pr.Repo
	switch status {
	case http.StatusUnauthorized:
		return fmt.Sprintf("GitHub did not accept the token (%s): it is wrong, expired or revoked; %s", said, permissions)
	case http.StatusForbidden:
		return fmt.Sprintf("GitHub refused (%s): the token may not open pull requests on %s; %s", said, repo, permissions)
	case http.StatusNotFound:
		return fmt.Sprintf("GitHub has no repository %s that this token can see (%s): check the remote's owner and name, "+
			"and that a fine-grained token was given access to the repository", repo, said)
	case http.StatusUnprocessableEntity:
		var details, hints []string
		for _, e := range er.Errors {
			switch {
			case e.Message != "":
				details = append(details, oneLine(e.Message))
			case e.Field != "":
				details = append(details, e.Field+" "+e.Code)
			default:
				details = append(details, e.Code)
			}
			switch {
			case e.Field == "head" && e.Code == "invalid":
				hints = append(hints, fmt.Sprintf("the branch %s is not on GitHub: push it first", pr.Head))
			case e.Field == "base" && e.Code == "invalid":
				hints = append(hints, fmt.Sprintf("%s has no branch %s", repo, pr.Base))
			}
		}
		s := "GitHub refused the pull request (" + said
		if len(details) > 0 {
			s += ": " + strings.Join(details, "; ")
		}
		s += ")"
		if len(hints) > 0 {
			s += ": " + strings.Join(hints, "; ")
		}
		return s
	}
	return "GitHub answered " + said
}

// oneLine is s on one line, bounded: GitHub's messages are short, but they are not ours.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return gfm.Cut(s, 300)
}
