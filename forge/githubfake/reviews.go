package githubfake

// Pull requests read one at a time, their reviews and review comments, check runs and the logs of GitHub Actions
// jobs: what orch reads to take a review, or a failed check, back to its agent. Where each behaviour comes from
// (GitHub's OpenAPI description of the REST API, version 2022-11-28, and the same operations on docs.github.com):
//
//   - pulls/get (GET /repos/{owner}/{repo}/pulls/{pull_number}): the pull-request schema (user, state, draft, merged,
//     html_url; head and base with ref, sha, user and repo); 200 or 404. head.sha is the head branch's commit now:
//     with AddGitRepo, what git rev-parse says in the bare repository, so it follows pushes as GitHub's does.
//   - pulls/get-review (GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}): the pull-request-review
//     schema (id, user, body — "" when the review has none —, state upper case: APPROVED, CHANGES_REQUESTED,
//     COMMENTED, commit_id, submitted_at, html_url); 200 or 404. The webhook's review has the state in lower case.
//   - pulls/list-comments-for-review (GET …/pulls/{pull_number}/reviews/{review_id}/comments): the review-comment
//     schema (id, pull_request_review_id, in_reply_to_id, path, line, start_line, side, original_line, diff_hunk,
//     commit_id, user, body, html_url); per_page (default 30, at most 100) and page, with the Link header of "Using
//     pagination in the REST API" (rel next, prev, first, last); 200 or 404 (a pull request or a review it does not
//     have).
//   - pulls/get-review-comment (GET /repos/{owner}/{repo}/pulls/comments/{comment_id}): the
//     pull-request-review-comment schema; 200 or 404.
//   - pulls/create-reply-for-review-comment (POST …/pulls/{pull_number}/comments/{comment_id}/replies): body
//     required; 201 with the comment and a Location header, or 404. "For the comment_id, provide the ID of the review
//     comment you are replying to. This must be the ID of a top-level review comment, not a reply to that comment.
//     Replies to replies are not supported." GitHub documents no answer for a reply's id, so the fake does not make
//     one up: it answers 500 with its own message, and a test that relies on it fails plainly. A comment the pull
//     request in the path does not have is 404 (the documented status for what the path names and GitHub lacks). A
//     missing body is 422 (validation-error, resource PullRequestReviewComment, field body, code missing_field), a
//     token that may not write 403, as for issue comments (issues.go). A reply is a review of its own, state
//     COMMENTED, as a reply shows on a pull request's conversation.
//   - reactions/create-for-pull-request-review-comment (POST /repos/{owner}/{repo}/pulls/comments/{comment_id}/
//     reactions): content one of +1, -1, laugh, confused, heart, hooray, rocket, eyes; 201 "Reaction created", 200
//     "Reaction exists", 422 for any other content.
//   - checks/list-for-ref (GET /repos/{owner}/{repo}/commits/{ref}/check-runs): "The ref can be a SHA, branch name, or
//     a tag name"; {total_count, check_runs} of the check-run schema (id, name, head_sha, status, conclusion, app with
//     its slug, output with title, summary and text, html_url, pull_requests); filter latest (the default: the most
//     recent run of each name) or all; per_page and page with the Link header. A run's pull_requests are the
//     pull-request-minimal schema of the open pull requests whose head matches the run ("Pull requests that are open
//     with a head_sha or head_branch that matches the check"); "the endpoints to manage checks only look for pushes in
//     the repository where the check suite or check run were created", and the fake has no forks, so every head is
//     in the repository. GitHub documents only 200: a ref that is no commit the repository has is answered 422 "No
//     commit found for SHA: REF", as its users report it.
//   - actions/download-job-logs-for-workflow-run (GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs): "Gets a
//     redirect URL to download a plain text file of logs for a workflow job": 302 with Location, on another host than
//     the API's (the description's example is on pipelines.actions.githubusercontent.com); the fake serves the
//     download from a second loopback server, text/plain, to anyone who has the URL, as GitHub's signed URL is, and
//     404 for a URL it did not give. The API request itself needs the token (404 without, for a private
//     repository). A GitHub Actions job is a check run whose id is the job's id ("Using the REST API to interact with
//     checks": GitHub Actions creates a check run for each job).
//   - A fine-grained token without a repository permission an endpoint needs ("Permissions required for fine-grained
//     personal access tokens": Pull requests for the pull request endpoints, Checks for check runs, Actions for job
//     logs) is 403 "Resource not accessible by personal access token" (Withhold).
//   - The webhook payloads ("Webhook events and payloads": pull_request_review, pull_request_review_comment,
//     check_run, workflow_run; the webhook-* schemas of the same description): review with its state in lower case
//     ("changes_requested", "commented", "approved") as the webhook sends it, unlike the REST API's upper case;
//     comment with pull_request_review_id and in_reply_to_id; check_run with app.slug and pull_requests;
//     workflow_run with head_branch, head_sha, conclusion and pull_requests, matched as for check runs.
//
// A review comment's diff_hunk is what GitHub shows above it: the hunk of the pull request's diff (git diff
// BASE...HEAD in the bare repository) that holds the commented line, cut after that line. Where the line is in no
// hunk, or there is no bare repository, the fake writes a hunk header and the lines of the file above the commented
// one (git show HEAD:PATH), or the header alone.
//
// What it leaves out: outdated comments (GitHub sets line to null when a push moves the commented line away), review
// comments on a file rather than lines, the LEFT side, tags as refs, check_name and status filters, check suites,
// and the expiry of download URLs (a minute on GitHub).

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	docsReviewComments = "https://docs.github.com/rest/pulls/comments"
	docsChecks         = "https://docs.github.com/rest/checks/runs"
)

// Thread is a review comment left with a review: on Line of Path in the pull request's head (StartLine to Line for
// several lines; StartLine 0 for one), or a reply to comment InReplyTo, whose thread it joins.
type Thread struct {
	Path            string
	Line, StartLine int
	Body            string
	InReplyTo       int64
}

// ReviewComment is a comment on a pull request's diff as the fake holds it.
type ReviewComment struct {
	ID, ReviewID, InReplyTo int64 // InReplyTo: the thread's first comment, 0 for that one
	PR                      int
	Author                  string
	UserType                string // User or Bot
	Body                    string
	Path                    string
	Line, StartLine         int
	Side                    string // RIGHT
	DiffHunk                string
	CommitID                string
	Created                 time.Time
}

// CheckOutput is what a check run says: a title, a summary and a text, Markdown all three.
type CheckOutput struct{ Title, Summary, Text string }

type review struct {
	id       int64
	pr       int
	author   string
	userType string
	state    string // APPROVED, CHANGES_REQUESTED or COMMENTED
	body     string
	commit   string
	at       time.Time
}

type checkRun struct {
	id         int64
	name, sha  string
	conclusion string // "" while it runs
	out        CheckOutput
	log        string
	at         time.Time
}

// reviewState is what a repository holds of reviews and checks; its zero value is empty.
type reviewState struct {
	reviews  []*review
	comments []*ReviewComment
	reacted  map[int64][]string // review comment → "login:content"
	checks   []*checkRun
	withheld map[string]bool // repository permissions the token lacks: pull_requests, checks, actions
}

// downloads is the host GitHub Actions logs are downloaded from.
type downloads struct {
	srv  *httptest.Server
	logs map[string]string // the secret part of a download URL → the log
}

var reviewStates = []string{"APPROVED", "CHANGES_REQUESTED", "COMMENTED"}

func (g *GitHub) routeReviews(mux *http.ServeMux, prefix string) {
	rp := prefix + "/repos/{owner}/{repo}"
	mux.HandleFunc("GET "+rp+"/pulls/{number}", g.getPull)
	mux.HandleFunc("GET "+rp+"/pulls/{number}/reviews/{review}", g.getReview)
	mux.HandleFunc("GET "+rp+"/pulls/{number}/reviews/{review}/comments", g.listReviewComments)
	mux.HandleFunc("GET "+rp+"/pulls/comments/{id}", g.getReviewComment)
	mux.HandleFunc("POST "+rp+"/pulls/{number}/comments/{id}/replies", g.reply)
	mux.HandleFunc("POST "+rp+"/pulls/comments/{id}/reactions", g.reactToReviewComment)
	// A branch's name may hold slashes, and GitHub's clients send them as they are.
	mux.HandleFunc("GET "+rp+"/commits/{rest...}", g.listCheckRuns)
	mux.HandleFunc("GET "+rp+"/actions/jobs/{job}/logs", g.jobLogs)
}

// OpenPull opens a pull request from head into base, two branches of the repository, as author does on github.com,
// and returns its number, from the sequence issues number from too.
func (g *GitHub) OpenPull(owner, name, head, base, title, author string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	rp := g.repo(owner, name)
	if _, err := rp.createHead(createRequest{Title: &title, Head: head, Base: base}); err != nil {
		panic(fmt.Sprintf("githubfake: GitHub would not open a pull request from %s into %s: %v", head, base, err))
	}
	n := g.next
	g.next++
	rp.pulls = append(rp.pulls, &PullRequest{Number: n, Title: title, Head: head, Base: base, State: "open", Author: author})
	return n
}

// Review submits a review of pull request pr by login (a login ending in [bot] is an app's bot) with state APPROVED,
// CHANGES_REQUESTED or COMMENTED, its body, and a comment for each thread, as a person does on github.com. It returns
// the review's id and its comments.
func (g *GitHub) Review(owner, name string, pr int, login, state, body string, threads ...Thread) (int64, []ReviewComment) {
	if !slices.Contains(reviewStates, state) {
		panic("githubfake: a review's state is APPROVED, CHANGES_REQUESTED or COMMENTED, not " + state)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	rp := g.repo(owner, name)
	p := rp.pull(pr)
	if p == nil {
		panic(fmt.Sprintf("githubfake: %s/%s has no pull request %d", owner, name, pr))
	}
	rv := rp.addReview(g, pr, login, state, body)
	var out []ReviewComment
	for _, t := range threads {
		out = append(out, *rp.addThread(g, p, rv, t))
	}
	return rv.id, out
}

// ReviewComments are the review comments of pull request pr, oldest first, replies included.
func (g *GitHub) ReviewComments(owner, name string, pr int) []ReviewComment {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []ReviewComment
	for _, c := range g.repo(owner, name).rv.comments {
		if c.PR == pr {
			out = append(out, *c)
		}
	}
	return out
}

// ReviewReactions are the reactions to review comment id, as "login:content", in the order they came.
func (g *GitHub) ReviewReactions(owner, name string, id int64) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.repo(owner, name).rv.reacted[id]...)
}

// AddCheckRun records a GitHub Actions job's check run named checkName on commit sha, concluded (success, failure,
// cancelled, …; "" while it runs) with out, and returns its id, which is the job's. log, when not "", is the job's
// log, which the logs endpoint serves; a run without one has no log to download (404).
func (g *GitHub) AddCheckRun(owner, name, sha, checkName, conclusion string, out CheckOutput, log string) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	rp := g.repo(owner, name)
	id := g.newID()
	rp.rv.checks = append(rp.rv.checks, &checkRun{id: id, name: checkName, sha: sha, conclusion: conclusion, out: out,
		log: log, at: g.idTime(id)})
	return id
}

// Withhold takes a repository permission from the token, as a fine-grained token made without it: pull_requests,
// checks or actions. The endpoints that need it answer 403.
func (g *GitHub) Withhold(owner, name, permission string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rp := g.repo(owner, name)
	if rp.rv.withheld == nil {
		rp.rv.withheld = map[string]bool{}
	}
	rp.rv.withheld[permission] = true
}

// newID is a new id for a review, a review comment or a check run, from the sequence comments take theirs: GitHub's
// ids are unique, and two of the fake's never meet. The caller holds mu.
func (g *GitHub) newID() int64 {
	g.nextComment++
	return g.firstComment + g.nextComment
}

// idTime is when the thing with id was made: ids grow with time, a second apart.
func (g *GitHub) idTime(id int64) time.Time {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(id-g.firstComment) * time.Second)
}

// pull is the repository's pull request number, or nil; the caller holds mu.
func (rp *repo) pull(number int) *PullRequest {
	for _, p := range rp.pulls {
		if p.Number == number {
			return p
		}
	}
	return nil
}

func (rp *repo) addReview(g *GitHub, pr int, login, state, body string) *review {
	p := rp.pull(pr)
	head, _ := rp.branch(p.Head)
	id := g.newID()
	rv := &review{id: id, pr: pr, author: login, userType: userType(login), state: state, body: body, commit: head,
		at: g.idTime(id)}
	rp.rv.reviews = append(rp.rv.reviews, rv)
	return rv
}

// addThread adds t to review rv of pull request p; a reply joins its thread, whose first comment it names.
func (rp *repo) addThread(g *GitHub, p *PullRequest, rv *review, t Thread) *ReviewComment {
	id := g.newID()
	c := &ReviewComment{ID: id, ReviewID: rv.id, PR: p.Number, Author: rv.author, UserType: rv.userType, Body: t.Body,
		Created: g.idTime(id)}
	if t.InReplyTo != 0 {
		first := rp.threadStart(t.InReplyTo)
		if first == nil {
			panic(fmt.Sprintf("githubfake: no review comment %d to reply to", t.InReplyTo))
		}
		c.joinThread(first)
	} else {
		c.Path, c.Line, c.StartLine, c.Side, c.CommitID = t.Path, t.Line, t.StartLine, "RIGHT", rv.commit
		c.DiffHunk = rp.diffHunk(p, t.Path, t.Line)
	}
	rp.rv.comments = append(rp.rv.comments, c)
	return c
}

// joinThread makes c a reply in the thread first starts: the same lines, the same hunk.
func (c *ReviewComment) joinThread(first *ReviewComment) {
	c.InReplyTo, c.Path, c.Line, c.StartLine, c.Side = first.ID, first.Path, first.Line, first.StartLine, first.Side
	c.DiffHunk, c.CommitID = first.DiffHunk, first.CommitID
}

// threadStart is the first comment of the thread comment id is in, or nil.
func (rp *repo) threadStart(id int64) *ReviewComment {
	c := rp.reviewComment(id)
	if c != nil && c.InReplyTo != 0 {
		return rp.reviewComment(c.InReplyTo)
	}
	return c
}

func (rp *repo) reviewComment(id int64) *ReviewComment {
	for _, c := range rp.rv.comments {
		if c.ID == id {
			return c
		}
	}
	return nil
}

func (rp *repo) review(id int64) *review {
	for _, r := range rp.rv.reviews {
		if r.id == id {
			return r
		}
	}
	return nil
}

func (rp *repo) checkRun(id int64) *checkRun {
	for _, c := range rp.rv.checks {
		if c.id == id {
			return c
		}
	}
	return nil
}

func userType(login string) string {
	if strings.HasSuffix(login, "[bot]") {
		return "Bot"
	}
	return "User"
}

// diffHunk is the diff_hunk GitHub shows above a comment on line of path in pull request p.
func (rp *repo) diffHunk(p *PullRequest, path string, line int) string {
	if rp.gitDir != "" {
		base, _ := rp.branch(p.Base)
		head, _ := rp.branch(p.Head)
		diff, err := exec.Command("git", "--git-dir", rp.gitDir, "diff", "--no-color", "--unified=3",
			base+"..."+head, "--", path).Output()
		if h := hunkAt(string(diff), line); err == nil && h != "" {
			return h
		}
		if file, err := exec.Command("git", "--git-dir", rp.gitDir, "show", head+":"+path).Output(); err == nil {
			return contextHunk(string(file), line)
		}
	}
	return fmt.Sprintf("@@ -%d,1 +%d,1 @@", line, line)
}

var hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@`)

// hunkAt is the hunk of a unified diff that holds new line line, up to that line, or "".
func hunkAt(diff string, line int) string {
	var hunk []string
	next := 0 // the new line the hunk's next line is; 0 outside a hunk
	for _, l := range strings.Split(diff, "\n") {
		if m := hunkHeader.FindStringSubmatch(l); m != nil {
			next, _ = strconv.Atoi(m[1])
			hunk = []string{l}
			continue
		}
		if next == 0 || l == "" {
			continue
		}
		hunk = append(hunk, l)
		if l[0] == ' ' || l[0] == '+' {
			if next == line {
				return strings.Join(hunk, "\n")
			}
			next++
		}
	}
	return ""
}

// contextHunk is a hunk header and the lines of file above line, line included, unchanged.
func contextHunk(file string, line int) string {
	lines := strings.Split(file, "\n")
	from := max(1, line-3)
	out := []string{fmt.Sprintf("@@ -%d,%d +%d,%d @@", from, line-from+1, from, line-from+1)}
	for i := from; i <= line && i <= len(lines); i++ {
		out = append(out, " "+lines[i-1])
	}
	return strings.Join(out, "\n")
}

// beginNeeding is begin for an endpoint that needs the repository permission perm.
func (g *GitHub) beginNeeding(w http.ResponseWriter, r *http.Request, write bool, perm string) (*repo, []byte) {
	rp, body := g.begin(w, r, write)
	if rp == nil {
		return nil, nil
	}
	g.mu.Lock()
	withheld := rp.rv.withheld[perm]
	g.mu.Unlock()
	if withheld {
		writeJSON(w, http.StatusForbidden, map[string]any{"message": "Resource not accessible by personal access token",
			"documentation_url": docsAuth, "status": "403"})
		return nil, nil
	}
	return rp, body
}

func (g *GitHub) getPull(w http.ResponseWriter, r *http.Request) {
	rp, _ := g.beginNeeding(w, r, false, "pull_requests")
	if rp == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n, _ := strconv.Atoi(r.PathValue("number"))
	p := rp.pull(n)
	if p == nil {
		notFound(w)
		return
	}
	writeJSON(w, http.StatusOK, g.pullJSON(r, rp, p))
}

func (g *GitHub) listReviewComments(w http.ResponseWriter, r *http.Request) {
	rp, _ := g.beginNeeding(w, r, false, "pull_requests")
	if rp == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n, _ := strconv.Atoi(r.PathValue("number"))
	id, _ := strconv.ParseInt(r.PathValue("review"), 10, 64)
	if rv := rp.review(id); rp.pull(n) == nil || rv == nil || rv.pr != n {
		notFound(w)
		return
	}
	var all []*ReviewComment
	for _, c := range rp.rv.comments {
		if c.ReviewID == id {
			all = append(all, c)
		}
	}
	from, to := g.page(w, r, len(all))
	out := []any{}
	for _, c := range all[from:to] {
		out = append(out, g.reviewCommentJSON(r, rp, c))
	}
	writeJSON(w, http.StatusOK, out)
}

// page is the part [from:to] of a list of total items that the request's per_page (default 30, at most 100) and page
// (from 1) ask for; it sets the Link header that names the other pages.
func (g *GitHub) page(w http.ResponseWriter, r *http.Request, total int) (from, to int) {
	q := r.URL.Query()
	per, page := 30, 1
	if v, err := strconv.Atoi(q.Get("per_page")); err == nil && v > 0 {
		per = min(v, 100)
	}
	if v, err := strconv.Atoi(q.Get("page")); err == nil && v > 0 {
		page = v
	}
	last := max(1, (total+per-1)/per)
	link := func(p int, rel string) string {
		q.Set("page", strconv.Itoa(p))
		q.Set("per_page", strconv.Itoa(per))
		return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, g.srv.URL, r.URL.Path, q.Encode(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(min(page-1, last), "prev"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	from = min((page-1)*per, total)
	return from, min(from+per, total)
}

func (g *GitHub) getReviewComment(w http.ResponseWriter, r *http.Request) {
	rp, _ := g.beginNeeding(w, r, false, "pull_requests")
	if rp == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	c := rp.reviewComment(id)
	if c == nil {
		notFound(w)
		return
	}
	writeJSON(w, http.StatusOK, g.reviewCommentJSON(r, rp, c))
}

func (g *GitHub) reply(w http.ResponseWriter, r *http.Request) {
	rp, body := g.beginNeeding(w, r, true, "pull_requests")
	if rp == nil {
		return
	}
	text, ok := reviewCommentBody(w, body)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n, _ := strconv.Atoi(r.PathValue("number"))
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	p, to := rp.pull(n), rp.reviewComment(id)
	switch {
	case p == nil || to == nil || to.PR != n:
		notFound(w)
		return
	case to.InReplyTo != 0:
		writeJSON(w, http.StatusInternalServerError, map[string]any{
			"message": "githubfake: a reply to a reply is not modelled: GitHub documents only that it is not supported"})
		return
	}
	rv := rp.addReview(g, n, g.login, "COMMENTED", "")
	c := rp.addThread(g, p, rv, Thread{Body: text, InReplyTo: id})
	out := g.reviewCommentJSON(r, rp, c)
	w.Header().Set("Location", out["url"].(string))
	writeJSON(w, http.StatusCreated, out)
}

// reviewCommentBody is a reply's body, or GitHub's answer when there is none or it is too long (as for issue comments).
func reviewCommentBody(w http.ResponseWriter, body []byte) (string, bool) {
	var in struct {
		Body *string `json:"body"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		problemsParsingJSON(w)
		return "", false
	}
	switch {
	case in.Body == nil || *in.Body == "":
		validation(w, docsReviewComments, map[string]any{"resource": "PullRequestReviewComment", "field": "body",
			"code": "missing_field"})
		return "", false
	case utf8.RuneCountInString(*in.Body) > maxCommentBody:
		validation(w, docsReviewComments, map[string]any{"resource": "PullRequestReviewComment", "field": "body",
			"code": "custom", "message": "body is too long (maximum is 65536 characters)"})
		return "", false
	}
	return *in.Body, true
}

func (g *GitHub) reactToReviewComment(w http.ResponseWriter, r *http.Request) {
	rp, body := g.beginNeeding(w, r, true, "pull_requests")
	if rp == nil {
		return
	}
	var in struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		problemsParsingJSON(w)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	c := rp.reviewComment(id)
	if c == nil {
		notFound(w)
		return
	}
	if !slices.Contains(reactionContents, in.Content) {
		validation(w, "https://docs.github.com/rest/reactions/reactions",
			map[string]any{"resource": "Reaction", "field": "content", "code": "invalid"})
		return
	}
	if rp.rv.reacted == nil {
		rp.rv.reacted = map[int64][]string{}
	}
	mark := g.login + ":" + in.Content
	status := http.StatusOK // Reaction exists
	if !slices.Contains(rp.rv.reacted[id], mark) {
		rp.rv.reacted[id] = append(rp.rv.reacted[id], mark)
		status = http.StatusCreated
	}
	writeJSON(w, status, map[string]any{"id": 9000 + len(rp.rv.reacted[id]), "content": in.Content,
		"user": g.userJSON(g.login, "User"), "created_at": c.Created.Format(time.RFC3339)})
}

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

// commit is the commit ref names: a full SHA, or a branch (NAME, heads/NAME or refs/heads/NAME); "" for none.
func (rp *repo) commit(ref string) string {
	if fullSHA.MatchString(ref) {
		return ref
	}
	name := strings.TrimPrefix(strings.TrimPrefix(ref, "refs/"), "heads/")
	if sha, ok := rp.branch(name); ok {
		return sha
	}
	if sha, ok := rp.branch(ref); ok {
		return sha
	}
	return ""
}

func (g *GitHub) listCheckRuns(w http.ResponseWriter, r *http.Request) {
	ref, ok := strings.CutSuffix(r.PathValue("rest"), "/check-runs")
	if !ok {
		g.record(r, nil)
		notFound(w)
		return
	}
	rp, _ := g.beginNeeding(w, r, false, "checks")
	if rp == nil {
		return
	}
	filter := r.URL.Query().Get("filter")
	if filter == "" {
		filter = "latest"
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	sha := rp.commit(ref)
	switch {
	case filter != "latest" && filter != "all":
		validation(w, docsChecks, map[string]any{"resource": "CheckRun", "field": "filter", "code": "invalid"})
		return
	case sha == "":
		validation(w, docsChecks, map[string]any{"resource": "Commit", "code": "custom",
			"message": "No commit found for SHA: " + ref})
		return
	}
	runs := rp.runsOn(sha, filter == "all")
	from, to := g.page(w, r, len(runs))
	out := []any{}
	for _, c := range runs[from:to] {
		out = append(out, g.checkRunJSON(r, rp, c))
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(runs), "check_runs": out})
}

// runsOn are the check runs on commit sha, newest first: of each name the latest only, unless all.
func (rp *repo) runsOn(sha string, all bool) []*checkRun {
	var out []*checkRun
	seen := map[string]bool{}
	for i := len(rp.rv.checks) - 1; i >= 0; i-- {
		c := rp.rv.checks[i]
		if c.sha != sha || (!all && seen[c.name]) {
			continue
		}
		seen[c.name] = true
		out = append(out, c)
	}
	return out
}

func (g *GitHub) jobLogs(w http.ResponseWriter, r *http.Request) {
	rp, _ := g.beginNeeding(w, r, false, "actions")
	if rp == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	id, _ := strconv.ParseInt(r.PathValue("job"), 10, 64)
	c := rp.checkRun(id)
	if c == nil || c.log == "" {
		notFound(w)
		return
	}
	var secret [16]byte
	_, _ = rand.Read(secret[:])
	if g.dl.logs == nil {
		g.dl.logs = map[string]string{}
	}
	g.dl.logs[hex.EncodeToString(secret[:])] = c.log
	w.Header().Set("Location", g.dl.srv.URL+"/_blobs/"+hex.EncodeToString(secret[:]))
	w.WriteHeader(http.StatusFound)
}

// serveDownload serves the logs jobLogs gave URLs for, without asking who asks, as a signed URL does.
func (g *GitHub) serveDownload(w http.ResponseWriter, r *http.Request) {
	g.record(r, nil)
	g.mu.Lock()
	log, ok := g.dl.logs[strings.TrimPrefix(r.URL.Path, "/_blobs/")]
	g.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !ok || r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/_blobs/") {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("The specified blob does not exist.\n"))
		return
	}
	_, _ = w.Write([]byte(log))
}

// reviewCommentJSON is a review comment in the fields of the pull-request-review-comment schema a client reads; the
// caller holds mu.
func (g *GitHub) reviewCommentJSON(r *http.Request, rp *repo, c *ReviewComment) map[string]any {
	api := g.apiBase(r, rp)
	self := fmt.Sprintf("%s/pulls/comments/%d", api, c.ID)
	html := fmt.Sprintf("%s#discussion_r%d", g.HTMLURL(rp.owner, rp.name, c.PR), c.ID)
	pull := fmt.Sprintf("%s/pulls/%d", api, c.PR)
	var start, startSide any // null for a comment on one line
	if c.StartLine != 0 {
		start, startSide = c.StartLine, c.Side
	}
	out := map[string]any{
		"url": self, "id": c.ID, "node_id": fmt.Sprintf("PRRC_%d", c.ID), "pull_request_review_id": c.ReviewID,
		"diff_hunk": c.DiffHunk, "path": c.Path, "commit_id": c.CommitID, "original_commit_id": c.CommitID,
		"user": g.userJSON(c.Author, c.UserType), "body": c.Body,
		"created_at": c.Created.Format(time.RFC3339), "updated_at": c.Created.Format(time.RFC3339),
		"html_url": html, "pull_request_url": pull, "author_association": association(rp, c.Author),
		"_links": map[string]any{"self": map[string]string{"href": self}, "html": map[string]string{"href": html},
			"pull_request": map[string]string{"href": pull}},
		"start_line": start, "original_start_line": start, "start_side": startSide,
		"line": c.Line, "original_line": c.Line, "side": c.Side, "subject_type": "line",
	}
	if c.InReplyTo != 0 {
		out["in_reply_to_id"] = c.InReplyTo
	}
	return out
}

func association(rp *repo, login string) string {
	if _, ok := rp.roles[strings.ToLower(login)]; ok {
		return "COLLABORATOR"
	}
	return "NONE"
}

// checkRunJSON is a check run in the fields of the check-run schema a client reads; the caller holds mu.
func (g *GitHub) checkRunJSON(r *http.Request, rp *repo, c *checkRun) map[string]any {
	status, conclusion := "completed", any(c.conclusion)
	var completed any = c.at.Add(time.Minute).Format(time.RFC3339)
	if c.conclusion == "" {
		status, conclusion, completed = "in_progress", nil, nil
	}
	text := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	api := g.apiBase(r, rp)
	return map[string]any{
		"id": c.id, "node_id": fmt.Sprintf("CR_%d", c.id), "name": c.name, "head_sha": c.sha, "external_id": "",
		"url":      fmt.Sprintf("%s/check-runs/%d", api, c.id),
		"html_url": fmt.Sprintf("%s/%s/%s/runs/%d", g.srv.URL, rp.owner, rp.name, c.id), "details_url": nil,
		"status": status, "conclusion": conclusion, "started_at": c.at.Format(time.RFC3339), "completed_at": completed,
		"output": map[string]any{"title": text(c.out.Title), "summary": text(c.out.Summary), "text": text(c.out.Text),
			"annotations_count": 0, "annotations_url": fmt.Sprintf("%s/check-runs/%d/annotations", api, c.id)},
		"check_suite": map[string]any{"id": c.id + 1},
		"app": map[string]any{"id": 15368, "slug": "github-actions", "name": "GitHub Actions",
			"owner": g.userJSON("github", "Organization")},
		"pull_requests": g.matchingPulls(r, rp, c.sha, ""),
	}
}

// matchingPulls are the open pull requests whose head is commit sha or branch, in the pull-request-minimal schema;
// the caller holds mu.
func (g *GitHub) matchingPulls(r *http.Request, rp *repo, sha, branch string) []any {
	api := g.apiBase(r, rp)
	end := func(ref string) map[string]any {
		at, _ := rp.branch(ref)
		return map[string]any{"ref": ref, "sha": at, "repo": map[string]any{"id": 35129377, "url": api, "name": rp.name}}
	}
	out := []any{}
	for _, p := range rp.pulls {
		head, _ := rp.branch(p.Head)
		if p.State != "open" || (head != sha && (branch == "" || p.Head != branch)) {
			continue
		}
		out = append(out, map[string]any{"url": fmt.Sprintf("%s/pulls/%d", api, p.Number), "id": 1000 + p.Number,
			"number": p.Number, "head": end(p.Head), "base": end(p.Base)})
	}
	return out
}

// PullRequestReviewPayload is the pull_request_review event of review reviewID on pull request pr, action submitted
// (or edited, dismissed); the reviewer is the sender.
func (g *GitHub) PullRequestReviewPayload(owner, name string, pr int, reviewID int64, action string) map[string]any {
	g.mu.Lock()
	defer g.mu.Unlock()
	rp := g.repo(owner, name)
	rv, p := rp.review(reviewID), rp.pull(pr)
	if rv == nil || p == nil || rv.pr != pr {
		panic(fmt.Sprintf("githubfake: %s/%s has no review %d on pull request %d", owner, name, reviewID, pr))
	}
	var body any
	if rv.body != "" {
		body = rv.body
	}
	review := g.reviewJSON(nil, rp, rv)
	review["body"], review["state"] = body, strings.ToLower(rv.state) // the webhook's state is lower case
	return map[string]any{"action": action, "review": review, "pull_request": g.pullJSON(nil, rp, p),
		"repository": g.repoJSON(rp), "sender": g.userJSON(rv.author, rv.userType)}
}

// reviewJSON is a review as the pull-request-review schema has it; the REST API's state is upper case
// (pulls/get-review: APPROVED, CHANGES_REQUESTED, COMMENTED) and its body "" when there is none.
func (g *GitHub) reviewJSON(r *http.Request, rp *repo, rv *review) map[string]any {
	html := g.HTMLURL(rp.owner, rp.name, rv.pr)
	return map[string]any{"id": rv.id, "node_id": fmt.Sprintf("PRR_%d", rv.id),
		"user": g.userJSON(rv.author, rv.userType), "body": rv.body, "commit_id": rv.commit,
		"submitted_at": rv.at.Format(time.RFC3339), "state": rv.state,
		"html_url":           fmt.Sprintf("%s#pullrequestreview-%d", html, rv.id),
		"pull_request_url":   fmt.Sprintf("%s/pulls/%d", g.apiBase(r, rp), rv.pr),
		"author_association": association(rp, rv.author)}
}

// getReview is pulls/get-review: GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}, 200 or 404.
func (g *GitHub) getReview(w http.ResponseWriter, r *http.Request) {
	rp, _ := g.beginNeeding(w, r, false, "pull_requests")
	if rp == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n, _ := strconv.Atoi(r.PathValue("number"))
	id, _ := strconv.ParseInt(r.PathValue("review"), 10, 64)
	rv := rp.review(id)
	if rp.pull(n) == nil || rv == nil || rv.pr != n {
		notFound(w)
		return
	}
	writeJSON(w, http.StatusOK, g.reviewJSON(r, rp, rv))
}

// PullRequestReviewCommentPayload is the pull_request_review_comment event of review comment commentID on pull
// request pr, action created (or edited, deleted); its author is the sender.
func (g *GitHub) PullRequestReviewCommentPayload(owner, name string, pr int, commentID int64, action string) map[string]any {
	g.mu.Lock()
	defer g.mu.Unlock()
	rp := g.repo(owner, name)
	c, p := rp.reviewComment(commentID), rp.pull(pr)
	if c == nil || p == nil || c.PR != pr {
		panic(fmt.Sprintf("githubfake: %s/%s has no review comment %d on pull request %d", owner, name, commentID, pr))
	}
	return map[string]any{"action": action, "comment": g.reviewCommentJSON(nil, rp, c),
		"pull_request": g.pullJSON(nil, rp, p), "repository": g.repoJSON(rp), "sender": g.userJSON(c.Author, c.UserType)}
}

// CheckRunPayload is the check_run event of check run id, action completed (or created, rerequested,
// requested_action), sent by GitHub Actions' bot.
func (g *GitHub) CheckRunPayload(owner, name string, id int64, action string) map[string]any {
	g.mu.Lock()
	defer g.mu.Unlock()
	rp := g.repo(owner, name)
	c := rp.checkRun(id)
	if c == nil {
		panic(fmt.Sprintf("githubfake: %s/%s has no check run %d", owner, name, id))
	}
	return map[string]any{"action": action, "check_run": g.checkRunJSON(nil, rp, c), "repository": g.repoJSON(rp),
		"sender": g.userJSON("github-actions[bot]", "Bot")}
}

// WorkflowRunPayload is the workflow_run event, action completed, of a workflow run on commit sha of headBranch that
// concluded (success, failure, cancelled, …); the token's user, who pushed, is the sender.
func (g *GitHub) WorkflowRunPayload(owner, name, headBranch, sha, conclusion string) map[string]any {
	g.mu.Lock()
	defer g.mu.Unlock()
	rp := g.repo(owner, name)
	id := g.newID()
	at := g.idTime(id).Format(time.RFC3339)
	html := fmt.Sprintf("%s/%s/%s/actions/runs/%d", g.srv.URL, rp.owner, rp.name, id)
	run := map[string]any{"id": id, "node_id": fmt.Sprintf("WFR_%d", id), "name": "CI", "display_title": "CI",
		"head_branch": headBranch, "head_sha": sha, "path": ".github/workflows/ci.yml", "event": "push",
		"status": "completed", "conclusion": conclusion, "workflow_id": 161335, "check_suite_id": id + 1,
		"run_number": 1, "run_attempt": 1, "url": fmt.Sprintf("%s/actions/runs/%d", g.apiBase(nil, rp), id),
		"html_url": html, "pull_requests": g.matchingPulls(nil, rp, sha, headBranch),
		"created_at": at, "updated_at": at, "run_started_at": at,
		"repository": g.repoJSON(rp), "head_repository": g.repoJSON(rp)}
	return map[string]any{"action": "completed", "workflow_run": run,
		"workflow":   map[string]any{"id": 161335, "name": "CI", "path": ".github/workflows/ci.yml"},
		"repository": g.repoJSON(rp), "sender": g.userJSON(g.login, "User")}
}
