// Package githubfake is a fake GitHub on loopback for tests: the REST endpoints orch calls (pull requests here;
// issues, comments, reactions and permissions in issues.go; reviews, review comments, check runs and GitHub Actions
// logs in reviews.go), with GitHub's authentication, status codes and error bodies, a record of the requests it got,
// and webhook deliveries signed as GitHub signs them (hooks.go).
//
// Where each behaviour comes from:
//
//   - The endpoints, their parameters, request fields and status codes: GitHub's OpenAPI description of the REST API,
//     version 2022-11-28 (github/rest-api-description, descriptions/api.github.com), operations pulls/list
//     (GET /repos/{owner}/{repo}/pulls: state open|closed|all, default open; head "user:ref-name" or
//     "organization:ref-name"; base; per_page, page; 200 or 422), pulls/create (POST /repos/{owner}/{repo}/pulls:
//     title, head, base, body, draft, maintainer_can_modify; head and base required, title unless issue; 201 with a
//     Location header, 403, 422) and pulls/update (PATCH /repos/{owner}/{repo}/pulls/{pull_number}: title, body,
//     state open|closed, base, maintainer_can_modify; 200, 403, 422). The same pages on docs.github.com: "REST API
//     endpoints for pull requests" (List, Create, Update a pull request).
//   - The bodies: the description's schemas basic-error (message, documentation_url, status) for 401, 403 and 404,
//     validation-error (message "Validation Failed", errors of resource, field, code, message) for 422; the codes
//     missing_field, invalid and custom as "Getting started with the REST API" (client errors) defines them; the
//     pull-request schema's fields for a pull request (a subset: the ones a client reads, html_url, number, draft,
//     state, head and base among them).
//   - Authentication: "Authenticating to the REST API" — a token goes in "Authorization: Bearer TOKEN" or
//     "Authorization: token TOKEN"; a wrong one is 401 "Bad credentials"; a private repository a request cannot see
//     is 404 "Not Found", never 403, so that its existence does not leak ("Troubleshooting the REST API").
//   - A token without write access: 403 "Resource not accessible by personal access token", GitHub's answer to a
//     fine-grained token that lacks the permission.
//   - The 422 messages for a head branch GitHub does not have (field head, code invalid), no commits between base and
//     head ("No commits between BASE and HEAD") and a second open pull request for the same head and base ("A pull
//     request already exists for OWNER:HEAD.") are GitHub's answers as its users have reported them; GitHub documents
//     only that they are 422 validation errors.
//   - Rate limits: "Rate limits for the REST API" — over the primary limit, 403 with x-ratelimit-remaining: 0 and
//     x-ratelimit-reset (UTC epoch seconds); over a secondary limit, 403 with retry-after (seconds) and a
//     documentation_url that points at the secondary rate limits.
//   - GitHub Enterprise Server answers the same API under /api/v3, so the fake answers at / and at /api/v3/.
//   - A repository's branches are what was pushed to it (Push, or with AddGitRepo the branches of a real bare
//     repository the test pushes to with git): GitHub knows a branch once it was pushed, and a pull request of a
//     branch it does not have is the 422 above. The fake adds no branch of its own.
//
// What it leaves out: forks and cross-repository heads, the Link header of the pull request list (reviews.go's lists
// have it), sorting other than newest first, issue conversion, and every other endpoint (404, as GitHub answers an
// unknown route).
package githubfake

import (
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Documentation URLs GitHub puts in its error bodies.
const (
	docsPulls     = "https://docs.github.com/rest/pulls/pulls"
	docsAuth      = "https://docs.github.com/rest"
	docsPrimary   = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits"
	docsSecondary = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)

// Request is one request the fake got.
type Request struct {
	Method        string
	Path          string // as sent, /api/v3 included
	Query         url.Values
	Authorization string
	APIVersion    string // X-GitHub-Api-Version
	Body          json.RawMessage
}

// PullRequest is a pull request as the fake holds it.
type PullRequest struct {
	Number int
	Title  string
	Body   string
	Head   string // a branch of the repository
	Base   string
	State  string // open or closed
	Draft  bool
	Author string // who opened it; "" is the token's user, who opened it through the API
}

type repo struct {
	owner, name string
	branches    map[string]string // name → commit
	// gitDir, when set, is a bare repository whose branches the repository also has: what a test pushes there is
	// on the fake GitHub, as a push to GitHub would be.
	gitDir   string
	readOnly bool
	pulls    []*PullRequest
	issues   []*Issue
	comments []*Comment
	reacted  map[int64][]string // comment → "login:content"
	roles    map[string]string  // login (lower case) → role
	rv       reviewState        // reviews, review comments and check runs (reviews.go)
}

// branch is the commit a branch of the repository is at.
func (rp *repo) branch(name string) (string, bool) {
	if sha, ok := rp.branches[name]; ok || rp.gitDir == "" {
		return sha, ok
	}
	out, err := exec.Command("git", "--git-dir", rp.gitDir, "rev-parse", "--verify", "--quiet",
		"refs/heads/"+name).Output()
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(out)), true
}

// GitHub is the fake. Its zero value is not usable; call New.
type GitHub struct {
	srv   *httptest.Server
	token string

	mu       sync.Mutex
	repos    map[string]*repo // "owner/name", lower case: GitHub's names are not case sensitive
	requests []Request
	next     int // the number of the next issue or pull request
	// login is the token's user; nextComment numbers comments, from where firstComment says.
	login         string
	nextComment   int64
	apps          map[int64]*app
	installs      []*installation
	installTokens map[string]*installation // the installation tokens minted, and what they reach
	// firstComment is where this fake's comment ids start: GitHub's ids are unique across all of GitHub, so two fakes
	// (two tests on one store) must not give two comments the same id.
	firstComment int64
	// limit, when set, answers the next request with a rate limit.
	limit *rateLimit
	// dl serves GitHub Actions logs on a host of its own, as GitHub's download URLs are (reviews.go).
	dl downloads
}

type rateLimit struct {
	secondary  bool
	reset      time.Time // primary
	retryAfter int       // secondary, seconds
}

// New starts a fake GitHub that accepts token; it runs until Close.
func New(token string) *GitHub {
	g := &GitHub{token: token, repos: map[string]*repo{}, next: 1, login: "orch",
		firstComment: 1_000_000 + mrand.Int64N(1_000_000_000)}
	mux := http.NewServeMux()
	for _, prefix := range []string{"", "/api/v3"} {
		mux.HandleFunc("GET "+prefix+"/repos/{owner}/{repo}/pulls", g.list)
		mux.HandleFunc("POST "+prefix+"/repos/{owner}/{repo}/pulls", g.create)
		mux.HandleFunc("PATCH "+prefix+"/repos/{owner}/{repo}/pulls/{number}", g.update)
		g.routeIssues(mux, prefix)
		g.routeApps(mux, prefix)
		g.routeReviews(mux, prefix)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		g.record(r, nil)
		notFound(w)
	})
	g.srv = httptest.NewServer(mux)
	g.dl.srv = httptest.NewServer(http.HandlerFunc(g.serveDownload))
	return g
}

// Close stops the server.
func (g *GitHub) Close() {
	g.srv.Close()
	g.dl.srv.Close()
}

// URL is the server's address: the API URL for a GitHub Enterprise client, which adds /api/v3/.
func (g *GitHub) URL() string { return g.srv.URL }

// AddRepo creates an empty private repository the token can write to.
func (g *GitHub) AddRepo(owner, name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.repos[key(owner, name)] = &repo{owner: owner, name: name, branches: map[string]string{}}
}

// AddGitRepo creates a repository like AddRepo whose branches are also those of the bare git repository at gitDir:
// a test pushes there with the real git, and the fake GitHub sees the branch.
func (g *GitHub) AddGitRepo(owner, name, gitDir string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.repos[key(owner, name)] = &repo{owner: owner, name: name, branches: map[string]string{}, gitDir: gitDir}
}

// Push sets a branch of a repository to a commit, as a push would.
func (g *GitHub) Push(owner, name, branch, commit string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.repo(owner, name).branches[branch] = commit
}

// ReadOnly makes the token read-only on a repository: it sees it, but may not open or change pull requests.
func (g *GitHub) ReadOnly(owner, name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.repo(owner, name).readOnly = true
}

// ClosePull closes a pull request, as a person on github.com would.
func (g *GitHub) ClosePull(owner, name string, number int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.repo(owner, name).pulls {
		if p.Number == number {
			p.State = "closed"
		}
	}
}

// RateLimit answers the next request with the primary rate limit exceeded until reset.
func (g *GitHub) RateLimit(reset time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.limit = &rateLimit{reset: reset}
}

// SecondaryRateLimit answers the next request with a secondary rate limit, retry-after seconds long.
func (g *GitHub) SecondaryRateLimit(retryAfter int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.limit = &rateLimit{secondary: true, retryAfter: retryAfter}
}

// Pulls are the repository's pull requests, oldest first.
func (g *GitHub) Pulls(owner, name string) []PullRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []PullRequest
	for _, p := range g.repo(owner, name).pulls {
		out = append(out, *p)
	}
	return out
}

// Requests are the requests the fake got, in order.
func (g *GitHub) Requests() []Request {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Request(nil), g.requests...)
}

// HTMLURL is the web address of a pull request: on the fake's host, in GitHub's form /OWNER/REPO/pull/NUMBER.
func (g *GitHub) HTMLURL(owner, name string, number int) string {
	return fmt.Sprintf("%s/%s/%s/pull/%d", g.srv.URL, owner, name, number)
}

func key(owner, name string) string { return strings.ToLower(owner + "/" + name) }

// repo is a repository the test set up; the caller holds mu.
func (g *GitHub) repo(owner, name string) *repo {
	r := g.repos[key(owner, name)]
	if r == nil {
		panic("githubfake: no repository " + owner + "/" + name + "; call AddRepo first")
	}
	return r
}

func (g *GitHub) record(r *http.Request, body []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.requests = append(g.requests, Request{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(),
		Authorization: r.Header.Get("Authorization"), APIVersion: r.Header.Get("X-GitHub-Api-Version"),
		Body: body,
	})
}

// begin records a request and does what every endpoint does first: the rate limit, the token and the repository.
// It returns the repository, or nil when it has answered.
func (g *GitHub) begin(w http.ResponseWriter, r *http.Request, write bool) (*repo, []byte) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	g.record(r, body)
	g.mu.Lock()
	defer g.mu.Unlock()
	if l := g.limit; l != nil {
		g.limit = nil
		if l.secondary {
			w.Header().Set("Retry-After", strconv.Itoa(l.retryAfter))
			writeJSON(w, http.StatusForbidden, map[string]any{
				"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
				"documentation_url": docsSecondary, "status": "403"})
			return nil, nil
		}
		w.Header().Set("X-RateLimit-Limit", "5000")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Used", "5000")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(l.reset.Unix(), 10))
		w.Header().Set("X-RateLimit-Resource", "core")
		writeJSON(w, http.StatusForbidden, map[string]any{
			"message": "API rate limit exceeded for user ID 1.", "documentation_url": docsPrimary, "status": "403"})
		return nil, nil
	}
	authed := false
	var inst *installation // the installation an installation token acts for
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, tok, _ := strings.Cut(a, " ")
		inst = g.installTokens[tok]
		if !(strings.EqualFold(scheme, "bearer") || strings.EqualFold(scheme, "token")) || (inst == nil && (tok != g.token || g.token == "")) {
			writeJSON(w, http.StatusUnauthorized, map[string]any{
				"message": "Bad credentials", "documentation_url": docsAuth, "status": "401"})
			return nil, nil
		}
		authed = true
	}
	k := key(r.PathValue("owner"), r.PathValue("repo"))
	rp := g.repos[k]
	if rp == nil || !authed || (inst != nil && !inst.repos[k]) {
		notFound(w)
		return nil, nil
	}
	if write && rp.readOnly {
		writeJSON(w, http.StatusForbidden, map[string]any{
			"message": "Resource not accessible by personal access token", "documentation_url": docsPulls, "status": "403"})
		return nil, nil
	}
	return rp, body
}

func (g *GitHub) list(w http.ResponseWriter, r *http.Request) {
	rp, _ := g.begin(w, r, false)
	if rp == nil {
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	if state != "open" && state != "closed" && state != "all" {
		validationFailed(w, fieldError("PullRequest", "state", "invalid"))
		return
	}
	perPage, page := 30, 1
	if n, err := strconv.Atoi(q.Get("per_page")); err == nil && n > 0 {
		perPage = min(n, 100)
	}
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n > 0 {
		page = n
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*PullRequest
	for _, p := range rp.pulls {
		if state != "all" && p.State != state {
			continue
		}
		if h := q.Get("head"); h != "" {
			// "user:ref-name"; GitHub reads a head without the owner as no filter at all.
			if owner, branch, ok := strings.Cut(h, ":"); ok && (!strings.EqualFold(owner, rp.owner) || branch != p.Head) {
				continue
			}
		}
		if b := q.Get("base"); b != "" && b != p.Base {
			continue
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number > out[j].Number }) // created, desc
	from := min((page-1)*perPage, len(out))
	out = out[from:min(from+perPage, len(out))]
	resp := make([]map[string]any, 0, len(out))
	for _, p := range out {
		resp = append(resp, g.pullJSON(r, rp, p))
	}
	writeJSON(w, http.StatusOK, resp)
}

// createRequest is the body of POST /repos/{owner}/{repo}/pulls.
type createRequest struct {
	Title               *string `json:"title"`
	Head                string  `json:"head"`
	Base                string  `json:"base"`
	Body                *string `json:"body"`
	Draft               bool    `json:"draft"`
	MaintainerCanModify *bool   `json:"maintainer_can_modify"`
	Issue               *int64  `json:"issue"`
}

// missing is GitHub's missing_field errors of a create request, sorted by field.
func (in createRequest) missing() []map[string]any {
	var missing []map[string]any
	for field, v := range map[string]string{"head": in.Head, "base": in.Base} {
		if v == "" {
			missing = append(missing, fieldError("PullRequest", field, "missing_field"))
		}
	}
	if in.Issue == nil && (in.Title == nil || *in.Title == "") {
		missing = append(missing, fieldError("PullRequest", "title", "missing_field"))
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i]["field"].(string) < missing[j]["field"].(string) })
	return missing
}

func (g *GitHub) create(w http.ResponseWriter, r *http.Request) {
	rp, body := g.begin(w, r, true)
	if rp == nil {
		return
	}
	var in createRequest
	if err := json.Unmarshal(body, &in); err != nil {
		problemsParsingJSON(w)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if missing := in.missing(); len(missing) > 0 {
		validationFailed(w, missing...)
		return
	}
	if in.Issue != nil {
		// Not GitHub's answer: the fake's own, so that a test relying on it fails plainly.
		writeJSON(w, http.StatusInternalServerError, map[string]any{"message": "githubfake: converting an issue is not modelled"})
		return
	}
	head, refused := rp.createHead(in)
	if refused != nil {
		validationFailed(w, refused...)
		return
	}
	p := &PullRequest{Number: g.next, Title: *in.Title, Head: head, Base: in.Base, State: "open", Draft: in.Draft}
	if in.Body != nil {
		p.Body = *in.Body
	}
	g.next++
	rp.pulls = append(rp.pulls, p)
	out := g.pullJSON(r, rp, p)
	w.Header().Set("Location", out["url"].(string))
	writeJSON(w, http.StatusCreated, out)
}

// createHead is the branch a create request's head names (OWNER:BRANCH or BRANCH), or GitHub's validation errors:
// a fork's head (not modelled), a branch that is not there, a pull request already open for it, no commits between.
func (rp *repo) createHead(in createRequest) (string, []map[string]any) {
	head := in.Head
	if owner, branch, ok := strings.Cut(head, ":"); ok {
		if !strings.EqualFold(owner, rp.owner) {
			return "", []map[string]any{fieldError("PullRequest", "head", "invalid")}
		}
		head = branch
	}
	headSHA, okHead := rp.branch(head)
	baseSHA, okBase := rp.branch(in.Base)
	var bad []map[string]any
	if !okBase {
		bad = append(bad, fieldError("PullRequest", "base", "invalid"))
	}
	if !okHead {
		bad = append(bad, fieldError("PullRequest", "head", "invalid"))
	}
	if len(bad) > 0 {
		return "", bad
	}
	for _, p := range rp.pulls {
		if p.State == "open" && p.Head == head && p.Base == in.Base {
			return "", []map[string]any{customError(fmt.Sprintf("A pull request already exists for %s:%s.", rp.owner, head))}
		}
	}
	if headSHA == baseSHA {
		return "", []map[string]any{customError(fmt.Sprintf("No commits between %s and %s", in.Base, head))}
	}
	return head, nil
}

func (g *GitHub) update(w http.ResponseWriter, r *http.Request) {
	rp, body := g.begin(w, r, true)
	if rp == nil {
		return
	}
	var in struct {
		Title               *string `json:"title"`
		Body                *string `json:"body"`
		State               *string `json:"state"`
		Base                *string `json:"base"`
		MaintainerCanModify *bool   `json:"maintainer_can_modify"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			problemsParsingJSON(w)
			return
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n, _ := strconv.Atoi(r.PathValue("number"))
	var p *PullRequest
	for _, q := range rp.pulls {
		if q.Number == n {
			p = q
		}
	}
	if p == nil {
		notFound(w)
		return
	}
	if in.State != nil && *in.State != "open" && *in.State != "closed" {
		validationFailed(w, fieldError("PullRequest", "state", "invalid"))
		return
	}
	if in.Base != nil {
		if _, ok := rp.branch(*in.Base); !ok {
			validationFailed(w, fieldError("PullRequest", "base", "invalid"))
			return
		}
	}
	if in.Title != nil {
		p.Title = *in.Title
	}
	if in.Body != nil {
		p.Body = *in.Body
	}
	if in.State != nil {
		p.State = *in.State
	}
	if in.Base != nil {
		p.Base = *in.Base
	}
	writeJSON(w, http.StatusOK, g.pullJSON(r, rp, p))
}

// pullJSON is a pull request in the fields of GitHub's pull-request schema that a client reads. The API URLs follow
// the request's own prefix (/api/v3 or none); the caller holds mu.
func (g *GitHub) pullJSON(r *http.Request, rp *repo, p *PullRequest) map[string]any {
	api := g.apiBase(r, rp)
	html := g.HTMLURL(rp.owner, rp.name, p.Number)
	var body any
	if p.Body != "" {
		body = p.Body // GitHub's body is null when empty
	}
	branch := func(ref string) map[string]any {
		sha, _ := rp.branch(ref) // a branch's current commit: head.sha follows pushes
		return map[string]any{"label": rp.owner + ":" + ref, "ref": ref, "sha": sha,
			"user": g.userJSON(rp.owner, "Organization"), "repo": g.repoJSON(rp)}
	}
	author := p.Author
	if author == "" {
		author = g.login
	}
	created := time.Date(2026, 1, 1, 0, 0, p.Number, 0, time.UTC).Format(time.RFC3339)
	return map[string]any{
		"url":                   fmt.Sprintf("%s/pulls/%d", api, p.Number),
		"id":                    1000 + p.Number,
		"html_url":              html,
		"diff_url":              html + ".diff",
		"patch_url":             html + ".patch",
		"issue_url":             fmt.Sprintf("%s/issues/%d", api, p.Number),
		"number":                p.Number,
		"state":                 p.State,
		"locked":                false,
		"title":                 p.Title,
		"body":                  body,
		"draft":                 p.Draft,
		"user":                  g.userJSON(author, "User"),
		"head":                  branch(p.Head),
		"base":                  branch(p.Base),
		"created_at":            created,
		"updated_at":            created,
		"merged":                false,
		"maintainer_can_modify": false,
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func notFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found", "documentation_url": docsAuth, "status": "404"})
}

func problemsParsingJSON(w http.ResponseWriter) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Problems parsing JSON", "documentation_url": docsPulls, "status": "400"})
}

func validationFailed(w http.ResponseWriter, errs ...map[string]any) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"message": "Validation Failed", "errors": errs, "documentation_url": docsPulls, "status": "422"})
}

func fieldError(resource, field, code string) map[string]any {
	return map[string]any{"resource": resource, "field": field, "code": code}
}

func customError(message string) map[string]any {
	return map[string]any{"resource": "PullRequest", "code": "custom", "message": message}
}
