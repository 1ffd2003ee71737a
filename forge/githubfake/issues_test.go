package githubfake

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-github/v92/github"
)

// client is go-github's client on the fake, as orch makes it.
func client(t *testing.T, g *GitHub, token string) *github.Client {
	t.Helper()
	base := g.URL() + "/"
	c, err := github.NewClient(github.WithAuthToken(token), github.WithURLs(&base, &base))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestIssuesAndComments(t *testing.T) {
	g := New("tok")
	defer g.Close()
	g.SetLogin("orch-bot")
	g.AddRepo("acme", "app")
	n := g.AddIssue("acme", "app", "Add a cache", "The client is slow.", "ann")
	said := g.Say("acme", "app", n, "bob", "@orch add a cache")
	c := client(t, g, "tok")
	ctx := context.Background()

	is, _, err := c.Issues.Get(ctx, "acme", "app", n)
	if err != nil || is.GetTitle() != "Add a cache" || is.GetUser().GetLogin() != "ann" || is.GetComments() != 1 || is.IsPullRequest() {
		t.Fatalf("Get: %v %+v", err, is)
	}
	made, resp, err := c.Issues.CreateComment(ctx, "acme", "app", n, github.IssueCommentRequest{Body: "On it."})
	if err != nil || resp.StatusCode != http.StatusCreated || made.GetUser().GetLogin() != "orch-bot" || resp.Header.Get("Location") == "" {
		t.Fatalf("CreateComment: %v %+v", err, made)
	}
	if _, _, err := c.Issues.UpdateComment(ctx, "acme", "app", made.GetID(), github.IssueCommentRequest{Body: "Done."}); err != nil {
		t.Fatal(err)
	}
	// A token with write access edits any comment of the repository.
	if _, _, err := c.Issues.UpdateComment(ctx, "acme", "app", said.ID, github.IssueCommentRequest{Body: "edited"}); err != nil {
		t.Fatal(err)
	}
	list, _, err := c.Issues.ListComments(ctx, "acme", "app", n, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 1, Page: 2}})
	if err != nil || len(list) != 1 || list[0].GetBody() != "Done." {
		t.Fatalf("ListComments page 2: %v %+v", err, list)
	}
	if got := g.Comments("acme", "app", n); len(got) != 2 || got[0].Body != "edited" || got[1].Author != "orch-bot" {
		t.Fatalf("Comments: %+v", got)
	}

	for name, do := range map[string]func() (*github.Response, error){
		"no issue": func() (*github.Response, error) {
			_, r, err := c.Issues.CreateComment(ctx, "acme", "app", 99, github.IssueCommentRequest{Body: "x"})
			return r, err
		},
		"no comment": func() (*github.Response, error) {
			_, r, err := c.Issues.UpdateComment(ctx, "acme", "app", 1, github.IssueCommentRequest{Body: "x"})
			return r, err
		},
		"empty body": func() (*github.Response, error) {
			_, r, err := c.Issues.CreateComment(ctx, "acme", "app", n, github.IssueCommentRequest{})
			return r, err
		},
		"too long": func() (*github.Response, error) {
			_, r, err := c.Issues.CreateComment(ctx, "acme", "app", n, github.IssueCommentRequest{Body: strings.Repeat("é", maxCommentBody+1)})
			return r, err
		},
	} {
		resp, err := do()
		var er *github.ErrorResponse
		want := map[string]int{"no issue": 404, "no comment": 404, "empty body": 422, "too long": 422}[name]
		if !errors.As(err, &er) || resp.StatusCode != want {
			t.Errorf("%s: %v, want %d", name, err, want)
		}
	}
	g.ReadOnly("acme", "app")
	if _, resp, _ := c.Issues.CreateComment(ctx, "acme", "app", n, github.IssueCommentRequest{Body: "x"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a read-only token commented: %d", resp.StatusCode)
	}
	if _, resp, _ := client(t, g, "wrong").Issues.Get(ctx, "acme", "app", n); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", resp.StatusCode)
	}
}

// A pull request is an issue too: the same numbers, its conversation's comments.
func TestAPullRequestIsAnIssue(t *testing.T) {
	g := New("tok")
	defer g.Close()
	g.AddRepo("acme", "app")
	g.Push("acme", "app", "main", "aaa")
	g.Push("acme", "app", "orch/r-1", "bbb")
	first := g.AddIssue("acme", "app", "Bug", "", "ann")
	c := client(t, g, "tok")
	ctx := context.Background()
	pr, _, err := c.PullRequests.Create(ctx, "acme", "app", github.CreatePullRequest{Title: new("Fix"), Head: "orch/r-1", Base: "main"})
	if err != nil || pr.GetNumber() != first+1 {
		t.Fatalf("a pull request after issue %d: %v %d", first, err, pr.GetNumber())
	}
	is, _, err := c.Issues.Get(ctx, "acme", "app", pr.GetNumber())
	if err != nil || !is.IsPullRequest() || is.GetTitle() != "Fix" {
		t.Fatalf("the pull request as an issue: %v %+v", err, is)
	}
}

func TestReactionsAndPermissions(t *testing.T) {
	g := New("tok")
	defer g.Close()
	g.AddRepo("acme", "app")
	n := g.AddIssue("acme", "app", "Bug", "", "ann")
	said := g.Say("acme", "app", n, "ann", "@orch fix it")
	c := client(t, g, "tok")
	ctx := context.Background()
	if _, resp, err := c.Reactions.CreateIssueCommentReaction(ctx, "acme", "app", said.ID, "eyes"); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("first reaction: %v", err)
	}
	if _, resp, err := c.Reactions.CreateIssueCommentReaction(ctx, "acme", "app", said.ID, "eyes"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the same reaction again: %v", err)
	}
	if _, resp, _ := c.Reactions.CreateIssueCommentReaction(ctx, "acme", "app", said.ID, "thumbsup"); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("an unknown reaction: %d", resp.StatusCode)
	}
	if got := g.Reactions("acme", "app", said.ID); len(got) != 1 || got[0] != "orch:eyes" {
		t.Errorf("Reactions: %q", got)
	}
	for role, want := range map[string]string{"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read"} {
		g.SetPermission("acme", "app", "Bob", role)
		p, _, err := c.Repositories.GetPermissionLevel(ctx, "acme", "app", "bob")
		if err != nil || p.GetPermission() != want || p.GetRoleName() != role {
			t.Errorf("%s: %v %+v", role, err, p)
		}
	}
	if _, resp, _ := c.Repositories.GetPermissionLevel(ctx, "acme", "app", "stranger"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a stranger's permission: %d", resp.StatusCode)
	}
}

// A delivery is signed as GitHub's documented example says, parses with go-github, and a redelivery is the same.
func TestDeliveries(t *testing.T) {
	const secret = "It's a Secret to Everybody"
	if got := Sign256(secret, []byte("Hello, World!")); got != "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17" {
		t.Fatalf("Sign256 = %s", got)
	}
	g := New("tok")
	defer g.Close()
	g.AddRepo("acme", "app")
	n := g.AddIssue("acme", "app", "Bug", "It breaks.", "ann")
	said := g.Say("acme", "app", n, "ann", "@orch fix it")
	var got []*http.Request
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, bodies = append(got, r), append(bodies, b)
	}))
	defer srv.Close()
	_, d, err := g.Deliver(srv.URL, secret, "issue_comment", g.IssueCommentPayload("acme", "app", said, "created"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Redeliver(srv.URL, secret, d); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Header.Get("X-GitHub-Delivery") != got[1].Header.Get("X-GitHub-Delivery") ||
		string(bodies[0]) != string(bodies[1]) {
		t.Fatalf("a redelivery differs from the delivery")
	}
	r := got[0]
	if r.Header.Get("X-Hub-Signature-256") != "sha256="+Sign256(secret, bodies[0]) || r.Header.Get("X-GitHub-Event") != "issue_comment" ||
		!strings.HasPrefix(r.Header.Get("User-Agent"), "GitHub-Hookshot/") {
		t.Fatalf("headers: %v", r.Header)
	}
	ev, err := github.ParseWebHook("issue_comment", bodies[0])
	if err != nil {
		t.Fatal(err)
	}
	e := ev.(*github.IssueCommentEvent)
	if e.GetComment().GetBody() != "@orch fix it" || e.GetIssue().GetNumber() != n || e.GetRepo().GetFullName() != "acme/app" ||
		e.GetSender().GetLogin() != "ann" || e.GetRepo().GetOwner().GetLogin() != "acme" {
		t.Fatalf("parsed: %+v", e)
	}
	assigned, err := github.ParseWebHook("issues", mustJSON(t, g.IssuesPayload("acme", "app", n, "assigned", "ann", "orch", "")))
	if err != nil || assigned.(*github.IssuesEvent).GetAssignee().GetLogin() != "orch" {
		t.Fatalf("issues assigned: %v", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRepositoryPermissions(t *testing.T) {
	g := New("tok")
	defer g.Close()
	g.AddRepo("acme", "app")
	c := client(t, g, "tok")
	r, _, err := c.Repositories.Get(context.Background(), "acme", "app")
	if err != nil || !r.GetPermissions().GetPush() || r.GetFullName() != "acme/app" {
		t.Fatalf("Get: %v %+v", err, r)
	}
	g.ReadOnly("acme", "app")
	if r, _, _ := c.Repositories.Get(context.Background(), "acme", "app"); r.GetPermissions().GetPush() || !r.GetPermissions().GetPull() {
		t.Fatalf("a read-only token's permissions: %+v", r.GetPermissions())
	}
}
