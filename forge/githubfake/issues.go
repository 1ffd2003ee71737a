package githubfake

// Issues, their comments, reactions to comments, and a person's permission on a repository: the endpoints orch's
// GitHub surface calls. Where each behaviour comes from (GitHub's REST API reference, API version 2022-11-28, and the
// OpenAPI description of the same version):
//
//   - issues/get (GET /repos/{owner}/{repo}/issues/{issue_number}): an issue, or a pull request ("every pull request
//     is an issue, but not every issue is a pull request": a pull request has a pull_request key); 200, 404, or 410
//     Gone for a deleted issue (issues/get, issues/list-comments and issues/create-comment document 410; the message
//     is the fake's own words).
//     Issues and pull requests of a repository share one sequence of numbers.
//   - issues/list-comments (GET …/issues/{issue_number}/comments): the comments of an issue or of a pull request's
//     conversation, "ordered by ascending ID"; per_page (default 30, at most 100) and page; 200 or 404.
//   - issues/create-comment (POST …/issues/{issue_number}/comments): body required; 201 with the comment and a
//     Location header; 403 for a token that may not write; 404 for an issue the repository does not have; 422 for a
//     missing body (validation-error, field body, code missing_field). A body longer than 65536 characters is refused
//     with 422: GitHub documents no limit for comments; the figure and the message ("body is too long (maximum is
//     65536 characters)") are what its users report, and the limit its issue and pull request bodies have.
//   - issues/get-comment and issues/update-comment (GET and PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}):
//     200, 404 for an id the repository does not have; PATCH requires body (422 as above). A token with write access
//     to the repository may edit any comment in it, as people with write access may on github.com ("Managing
//     disruptive comments").
//   - reactions/create-for-issue-comment (POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions): content
//     one of +1, -1, laugh, confused, heart, hooray, rocket, eyes; 201 "Reaction created", 200 "Reaction exists" when
//     the user already reacted so; 422 for any other content.
//   - repos/get (GET /repos/{owner}/{repo}): the repository, with permissions (admin, maintain, push, triage, pull)
//     of the authenticated user; a read-only token has pull and not push.
//   - repos/get-collaborator-permission-level (GET /repos/{owner}/{repo}/collaborators/{username}/permission):
//     permission is the legacy base role (admin, write, read, none), "where the maintain role is mapped to write and
//     the triage role is mapped to read", role_name the role itself, user the person; 404 for someone who is not a
//     collaborator (the documented statuses are 200, 403 and 404; whether GitHub answers 404 or "none" for a user with
//     no access is not documented, and orch reads both as no permission).
//
// A comment the token writes is the token's user's (SetLogin), of type "User" (a personal access token acts as a
// person; an App's comments are its bot user's, type "Bot", which the fake does not model).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const docsIssues = "https://docs.github.com/rest/issues/comments"

// maxCommentBody is the longest comment GitHub takes, in characters.
const maxCommentBody = 65536

// Issue is an issue (or a pull request's conversation) as the fake holds it.
type Issue struct {
	Number      int
	Title, Body string
	Author      string
	State       string
	Deleted     bool // 410 Gone from then on, as GitHub answers for a deleted issue
}

// Comment is a comment on an issue as the fake holds it.
type Comment struct {
	ID       int64
	Issue    int
	Author   string
	UserType string // User or Bot
	Body     string
	Created  time.Time
	Updated  time.Time
}

// reactionContents are the reactions GitHub takes.
var reactionContents = []string{"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}

// legacyPermission maps a repository role to the legacy permission the permission endpoint names.
var legacyPermission = map[string]string{"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read"}

func (g *GitHub) routeIssues(mux *http.ServeMux, prefix string) {
	mux.HandleFunc("GET "+prefix+"/repos/{owner}/{repo}/issues/{number}", g.getIssue)
	// GET …/issues/{number}/comments and GET …/issues/comments/{id} overlap as patterns: one route tells them apart.
	mux.HandleFunc("GET "+prefix+"/repos/{owner}/{repo}/issues/{a}/{b}", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.PathValue("b") == "comments":
			r.SetPathValue("number", r.PathValue("a"))
			g.listComments(w, r)
		case r.PathValue("a") == "comments":
			r.SetPathValue("id", r.PathValue("b"))
			g.getComment(w, r)
		default:
			g.record(r, nil)
			notFound(w)
		}
	})
	mux.HandleFunc("POST "+prefix+"/repos/{owner}/{repo}/issues/{number}/comments", g.createComment)
	mux.HandleFunc("PATCH "+prefix+"/repos/{owner}/{repo}/issues/comments/{id}", g.updateComment)
	mux.HandleFunc("POST "+prefix+"/repos/{owner}/{repo}/issues/comments/{id}/reactions", g.react)
	mux.HandleFunc("GET "+prefix+"/repos/{owner}/{repo}/collaborators/{username}/permission", g.permission)
	mux.HandleFunc("GET "+prefix+"/repos/{owner}/{repo}", g.getRepo)
}

// SetLogin names the token's user: the author of the comments it writes.
func (g *GitHub) SetLogin(login string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.login = login
}

// AddIssue opens an issue by author and returns its number, from the sequence pull requests number from too.
func (g *GitHub) AddIssue(owner, name, title, body, author string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	rp := g.repo(owner, name)
	n := g.next
	g.next++
	rp.issues = append(rp.issues, &Issue{Number: n, Title: title, Body: body, Author: author, State: "open"})
	return n
}

// SetPermission gives login a role on the repository: admin, maintain, write, triage or read; "" takes it away.
func (g *GitHub) SetPermission(owner, name, login, role string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rp := g.repo(owner, name)
	if rp.roles == nil {
		rp.roles = map[string]string{}
	}
	if role == "" {
		delete(rp.roles, strings.ToLower(login))
		return
	}
	rp.roles[strings.ToLower(login)] = role
}

// Say adds a person's comment to an issue, as they would on github.com, and returns it.
func (g *GitHub) Say(owner, name string, number int, login, body string) Comment {
	g.mu.Lock()
	defer g.mu.Unlock()
	return *g.repo(owner, name).addComment(g, number, login, "User", body)
}

// DeleteComment deletes a comment, as a person with write access may on github.com: it is 404 from then on.
func (g *GitHub) DeleteComment(owner, name string, id int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rp := g.repo(owner, name)
	rp.comments = slices.DeleteFunc(rp.comments, func(c *Comment) bool { return c.ID == id })
}

// DeleteIssue deletes an issue, as an admin may on github.com: the issue is 410 Gone from then on, and its comments,
// deleted with it, 404.
func (g *GitHub) DeleteIssue(owner, name string, number int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rp := g.repo(owner, name)
	if is, _ := rp.issue(number); is != nil {
		is.Deleted = true
		rp.comments = slices.DeleteFunc(rp.comments, func(c *Comment) bool { return c.Issue == number })
	}
}

// Comments are an issue's comments, oldest first.
func (g *GitHub) Comments(owner, name string, number int) []Comment {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []Comment
	for _, c := range g.repo(owner, name).comments {
		if c.Issue == number {
			out = append(out, *c)
		}
	}
	return out
}

// Reactions are the reactions to a comment, as "login:content", in the order they came.
func (g *GitHub) Reactions(owner, name string, commentID int64) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.repo(owner, name).reacted[commentID]...)
}

// issue is the repository's issue number, or a pull request's conversation; nil for neither. The caller holds mu.
func (rp *repo) issue(number int) (*Issue, bool) {
	for _, is := range rp.issues {
		if is.Number == number {
			return is, false
		}
	}
	for _, p := range rp.pulls {
		if p.Number == number {
			return &Issue{Number: p.Number, Title: p.Title, Body: p.Body, State: p.State}, true
		}
	}
	return nil, false
}

// open reports whether issue number is there to read or comment on, answering 404 or 410 when it is not.
func (rp *repo) open(w http.ResponseWriter, number int) bool {
	is, _ := rp.issue(number)
	switch {
	case is == nil:
		notFound(w)
		return false
	case is.Deleted:
		gone(w)
		return false
	}
	return true
}

func gone(w http.ResponseWriter) {
	writeJSON(w, http.StatusGone, map[string]any{"message": "This issue was deleted", "documentation_url": docsIssues, "status": "410"})
}

func (rp *repo) addComment(g *GitHub, number int, login, userType, body string) *Comment {
	g.nextComment++
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(g.nextComment) * time.Second)
	c := &Comment{ID: g.firstComment + g.nextComment, Issue: number, Author: login, UserType: userType, Body: body,
		Created: now, Updated: now}
	rp.comments = append(rp.comments, c)
	return c
}

func (rp *repo) comment(id string) *Comment {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil
	}
	for _, c := range rp.comments {
		if c.ID == n {
			return c
		}
	}
	return nil
}

func (g *GitHub) getIssue(w http.ResponseWriter, r *http.Request) {
	rp, _ := g.begin(w, r, false)
	if rp == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n, _ := strconv.Atoi(r.PathValue("number"))
	is, pull := rp.issue(n)
	if is == nil {
		notFound(w)
		return
	}
	if is.Deleted {
		gone(w)
		return
	}
	writeJSON(w, http.StatusOK, g.issueJSON(r, rp, is, pull))
}

func (g *GitHub) listComments(w http.ResponseWriter, r *http.Request) {
	rp, _ := g.begin(w, r, false)
	if rp == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n, _ := strconv.Atoi(r.PathValue("number"))
	if !rp.open(w, n) {
		return
	}
	per, page := 30, 1
	if v, err := strconv.Atoi(r.URL.Query().Get("per_page")); err == nil && v > 0 {
		per = min(v, 100)
	}
	if v, err := strconv.Atoi(r.URL.Query().Get("page")); err == nil && v > 0 {
		page = v
	}
	var all []*Comment
	for _, c := range rp.comments {
		if c.Issue == n {
			all = append(all, c)
		}
	}
	out := []any{}
	for i := (page - 1) * per; i < len(all) && i < page*per; i++ {
		out = append(out, g.commentJSON(r, rp, all[i]))
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *GitHub) createComment(w http.ResponseWriter, r *http.Request) {
	rp, body := g.begin(w, r, true)
	if rp == nil {
		return
	}
	in, ok := commentBody(w, body)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n, _ := strconv.Atoi(r.PathValue("number"))
	if !rp.open(w, n) {
		return
	}
	c := rp.addComment(g, n, g.login, "User", in)
	out := g.commentJSON(r, rp, c)
	w.Header().Set("Location", out["url"].(string))
	writeJSON(w, http.StatusCreated, out)
}

func (g *GitHub) getComment(w http.ResponseWriter, r *http.Request) {
	rp, _ := g.begin(w, r, false)
	if rp == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	c := rp.comment(r.PathValue("id"))
	if c == nil {
		notFound(w)
		return
	}
	writeJSON(w, http.StatusOK, g.commentJSON(r, rp, c))
}

func (g *GitHub) updateComment(w http.ResponseWriter, r *http.Request) {
	rp, body := g.begin(w, r, true)
	if rp == nil {
		return
	}
	in, ok := commentBody(w, body)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	c := rp.comment(r.PathValue("id"))
	if c == nil {
		notFound(w)
		return
	}
	c.Body = in
	c.Updated = c.Updated.Add(time.Second)
	writeJSON(w, http.StatusOK, g.commentJSON(r, rp, c))
}

// commentBody is a create or update request's body, or GitHub's answer when there is none or it is too long.
func commentBody(w http.ResponseWriter, body []byte) (string, bool) {
	var in struct {
		Body *string `json:"body"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		problemsParsingJSON(w)
		return "", false
	}
	switch {
	case in.Body == nil || *in.Body == "":
		validation(w, docsIssues, map[string]any{"resource": "IssueComment", "field": "body", "code": "missing_field"})
		return "", false
	case utf8.RuneCountInString(*in.Body) > maxCommentBody:
		validation(w, docsIssues, map[string]any{"resource": "IssueComment", "field": "body", "code": "custom",
			"message": "body is too long (maximum is 65536 characters)"})
		return "", false
	}
	return *in.Body, true
}

func (g *GitHub) react(w http.ResponseWriter, r *http.Request) {
	rp, body := g.begin(w, r, true)
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
	c := rp.comment(r.PathValue("id"))
	if c == nil {
		notFound(w)
		return
	}
	if !slices.Contains(reactionContents, in.Content) {
		validation(w, "https://docs.github.com/rest/reactions/reactions",
			map[string]any{"resource": "Reaction", "field": "content", "code": "invalid"})
		return
	}
	if rp.reacted == nil {
		rp.reacted = map[int64][]string{}
	}
	mark := g.login + ":" + in.Content
	status := http.StatusOK // Reaction exists
	if !slices.Contains(rp.reacted[c.ID], mark) {
		rp.reacted[c.ID] = append(rp.reacted[c.ID], mark)
		status = http.StatusCreated
	}
	writeJSON(w, status, map[string]any{"id": 9000 + len(rp.reacted[c.ID]), "content": in.Content,
		"user": g.userJSON(g.login, "User"), "created_at": c.Created.Format(time.RFC3339)})
}

func (g *GitHub) permission(w http.ResponseWriter, r *http.Request) {
	rp, _ := g.begin(w, r, false)
	if rp == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	login := r.PathValue("username")
	role, ok := rp.roles[strings.ToLower(login)]
	if !ok {
		notFound(w)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"permission": legacyPermission[role], "role_name": role,
		"user": g.userJSON(login, "User")})
}

func (g *GitHub) getRepo(w http.ResponseWriter, r *http.Request) {
	rp, _ := g.begin(w, r, false)
	if rp == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.repoJSON(rp)
	write := !rp.readOnly
	out["permissions"] = map[string]bool{"admin": false, "maintain": false, "push": write, "triage": write, "pull": true}
	writeJSON(w, http.StatusOK, out)
}

func (g *GitHub) userJSON(login, typ string) map[string]any {
	if login == "" {
		return nil
	}
	return map[string]any{"login": login, "id": len(login) * 1000, "type": typ,
		"html_url": g.srv.URL + "/" + login}
}

// issueJSON is an issue in the fields of GitHub's issue schema a client reads; the caller holds mu.
func (g *GitHub) issueJSON(r *http.Request, rp *repo, is *Issue, pull bool) map[string]any {
	api := g.apiBase(r, rp)
	n := 0
	for _, c := range rp.comments {
		if c.Issue == is.Number {
			n++
		}
	}
	var body any
	if is.Body != "" {
		body = is.Body
	}
	out := map[string]any{
		"url":      fmt.Sprintf("%s/issues/%d", api, is.Number),
		"html_url": fmt.Sprintf("%s/%s/%s/issues/%d", g.srv.URL, rp.owner, rp.name, is.Number),
		"id":       2000 + is.Number, "number": is.Number, "title": is.Title, "body": body, "state": is.State,
		"comments": n, "user": g.userJSON(is.Author, "User"),
	}
	if pull {
		out["html_url"] = g.HTMLURL(rp.owner, rp.name, is.Number)
		out["pull_request"] = map[string]any{"url": fmt.Sprintf("%s/pulls/%d", api, is.Number),
			"html_url": g.HTMLURL(rp.owner, rp.name, is.Number)}
	}
	return out
}

// commentJSON is a comment in the fields of GitHub's issue-comment schema a client reads; the caller holds mu.
func (g *GitHub) commentJSON(r *http.Request, rp *repo, c *Comment) map[string]any {
	assoc := "NONE"
	if _, ok := rp.roles[strings.ToLower(c.Author)]; ok {
		assoc = "COLLABORATOR"
	}
	return map[string]any{
		"id": c.ID, "node_id": fmt.Sprintf("IC_%d", c.ID),
		"url":        fmt.Sprintf("%s/issues/comments/%d", g.apiBase(r, rp), c.ID),
		"html_url":   fmt.Sprintf("%s/%s/%s/issues/%d#issuecomment-%d", g.srv.URL, rp.owner, rp.name, c.Issue, c.ID),
		"issue_url":  fmt.Sprintf("%s/issues/%d", g.apiBase(r, rp), c.Issue),
		"body":       c.Body,
		"user":       g.userJSON(c.Author, c.UserType),
		"created_at": c.Created.Format(time.RFC3339), "updated_at": c.Updated.Format(time.RFC3339),
		"author_association": assoc,
	}
}

// apiBase is the repository's API address under the request's own prefix (/api/v3 or none).
func (g *GitHub) apiBase(r *http.Request, rp *repo) string {
	prefix := ""
	if r != nil && strings.HasPrefix(r.URL.Path, "/api/v3/") {
		prefix = "/api/v3"
	}
	return fmt.Sprintf("%s%s/repos/%s/%s", g.srv.URL, prefix, rp.owner, rp.name)
}

func validation(w http.ResponseWriter, docs string, errs ...map[string]any) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"message": "Validation Failed", "errors": errs, "documentation_url": docs, "status": "422"})
}
