package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v92/github"

	"github.com/orchrun/orch/internal/gfm"
)

// Repo names a repository on GitHub.
type Repo struct{ Owner, Name string }

func (r Repo) String() string { return r.Owner + "/" + r.Name }

// talkPermissions is what a token needs to talk in a repository's issues and pull requests.
const talkPermissions = `a fine-grained token needs the repository permissions "Issues: write", "Pull requests: write" ` +
	`and "Metadata: read" on the repository, a classic token the repo scope (public_repo for a public repository)`

// talkRefusal says why GitHub refused a request about repo's issues and comments, and what to do about it.
func talkRefusal(repo Repo) func(*github.ErrorResponse) string {
	return func(er *github.ErrorResponse) string {
		said := fmt.Sprintf("%d %s", er.Response.StatusCode, oneLine(er.Message))
		switch er.Response.StatusCode {
		case http.StatusUnauthorized:
			return fmt.Sprintf("GitHub did not accept the token (%s): it is wrong, expired or revoked; %s", said, talkPermissions)
		case http.StatusForbidden:
			return fmt.Sprintf("GitHub refused (%s): the token may not write on %s; %s", said, repo, talkPermissions)
		case http.StatusNotFound:
			return fmt.Sprintf("GitHub has no such issue or comment on %s that this token can see (%s)", repo, said)
		case http.StatusUnprocessableEntity:
			var details []string
			for _, e := range er.Errors {
				if e.Message != "" {
					details = append(details, oneLine(e.Message))
				} else {
					details = append(details, strings.TrimSpace(e.Field+" "+e.Code))
				}
			}
			if len(details) > 0 {
				return fmt.Sprintf("GitHub refused the request (%s: %s)", said, strings.Join(details, "; "))
			}
		}
		return "GitHub answered " + said
	}
}

// Issue is an issue or a pull request as a person reads it: its title, its text and its latest comments.
type Issue struct {
	Number      int
	Title, Body string
	Author      string
	PullRequest bool
	Comments    []Comment // the latest, oldest first
}

// Comment is a comment on an issue or a pull request.
type Comment struct {
	ID     int64
	Author string
	Bot    bool // written by a bot or an app (orch's own comments included)
	Body   string
}

// Comment writes body as a new comment on issue (or pull request) number of repo and returns its id. A body longer
// than GitHub takes is cut with a note.
func (g *GitHub) Comment(ctx context.Context, repo Repo, number int, body string) (int64, error) {
	c, _, err := g.client.Issues.CreateComment(ctx, repo.Owner, repo.Name, number,
		github.IssueCommentRequest{Body: gfm.Bound(body, cutNote)})
	if err != nil {
		return 0, g.explainWith(fmt.Sprintf("commenting on %s#%d", repo, number), talkRefusal(repo), err)
	}
	return c.GetID(), nil
}

// EditComment replaces the body of comment id of repo.
func (g *GitHub) EditComment(ctx context.Context, repo Repo, id int64, body string) error {
	_, _, err := g.client.Issues.UpdateComment(ctx, repo.Owner, repo.Name, id,
		github.IssueCommentRequest{Body: gfm.Bound(body, cutNote)})
	if err != nil {
		return g.explainWith(fmt.Sprintf("editing comment %d on %s", id, repo), talkRefusal(repo), err)
	}
	return nil
}

const cutNote = "\n\n---\n_The rest is cut: GitHub takes at most 65536 characters here._\n"

// React adds reaction content ("eyes", "+1", …) to comment id of repo; a reaction already there is no error.
func (g *GitHub) React(ctx context.Context, repo Repo, id int64, content string) error {
	_, _, err := g.client.Reactions.CreateIssueCommentReaction(ctx, repo.Owner, repo.Name, id, content)
	if err != nil {
		return g.explainWith(fmt.Sprintf("reacting to comment %d on %s", id, repo), talkRefusal(repo), err)
	}
	return nil
}

// Permission is login's permission on repo as GitHub names it: "admin", "write", "read" or "none" (a user GitHub
// does not know as a collaborator is "none").
func (g *GitHub) Permission(ctx context.Context, repo Repo, login string) (string, error) {
	p, _, err := g.client.Repositories.GetPermissionLevel(ctx, repo.Owner, repo.Name, login)
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound {
		return "none", nil
	}
	if err != nil {
		return "", g.explainWith(fmt.Sprintf("reading %s's permission on %s", login, repo), talkRefusal(repo), err)
	}
	return p.GetPermission(), nil
}

// ReadIssue is issue (or pull request) number of repo with its latest comments, at most last of them.
func (g *GitHub) ReadIssue(ctx context.Context, repo Repo, number, last int) (Issue, error) {
	is, _, err := g.client.Issues.Get(ctx, repo.Owner, repo.Name, number)
	if err != nil {
		return Issue{}, g.explainWith(fmt.Sprintf("reading %s#%d", repo, number), talkRefusal(repo), err)
	}
	out := Issue{Number: number, Title: is.GetTitle(), Body: is.GetBody(), Author: is.GetUser().GetLogin(),
		PullRequest: is.IsPullRequest()}
	if last <= 0 || is.GetComments() == 0 {
		return out, nil
	}
	// The last page holds the latest comments: GitHub lists them oldest first.
	per := min(last, 100)
	page := (is.GetComments()-1)/per + 1
	cs, _, err := g.client.Issues.ListComments(ctx, repo.Owner, repo.Name, number,
		&github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: per, Page: page}})
	if err != nil {
		return Issue{}, g.explainWith(fmt.Sprintf("reading the comments of %s#%d", repo, number), talkRefusal(repo), err)
	}
	for _, c := range cs {
		u := c.GetUser()
		out.Comments = append(out.Comments, Comment{ID: c.GetID(), Author: u.GetLogin(), Body: c.GetBody(),
			Bot: u.GetType() == "Bot"})
	}
	return out, nil
}

// MayWrite reports whether the token may write on repo (push, and so comment and open pull requests), as GitHub says
// of the authenticated user; an error says what is wrong with the token or the repository's name. A repository
// GitHub names no permissions with (an App's installation token may get none) is taken as writable: nothing says
// otherwise.
func (g *GitHub) MayWrite(ctx context.Context, repo Repo) (bool, error) {
	r, _, err := g.client.Repositories.Get(ctx, repo.Owner, repo.Name)
	if err != nil {
		return false, g.explainWith("reading "+repo.String(), talkRefusal(repo), err)
	}
	if r.Permissions == nil {
		return true, nil
	}
	return r.GetPermissions().GetPush(), nil
}
