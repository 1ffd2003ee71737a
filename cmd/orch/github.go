package main

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/forge"
	"github.com/orchrun/orch/hub"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/runs"
	"github.com/orchrun/orch/workspace"
)

// githubSurface is orch on GitHub, served beside Slack when ORCH_GITHUB_WEBHOOK_SECRET is set: the webhook on
// POST /github/webhook, with ORCH_GITHUB_TOKEN (or GITHUB_TOKEN) to answer in issues, ORCH_GITHUB_API_URL for GitHub
// Enterprise, ORCH_GITHUB_MENTION (default @orch), ORCH_GITHUB_ALLOWED_USERS, and ORCH_PUBLIC_URL for links to the
// web view. nil, nil when no secret is set.
func (a *app) githubSurface(cmd *cobra.Command, b *store.Backend, starter *runs.Starter, base jobs.Options,
	ws string) (*hub.Server, error) {
	secret := a.env("ORCH_GITHUB_WEBHOOK_SECRET")
	if secret == "" {
		return nil, nil
	}
	clientFor, err := a.githubClients()
	if err != nil {
		return nil, err
	}
	if clientFor == nil {
		return nil, usageErr("ORCH_GITHUB_WEBHOOK_SECRET is set but no GitHub token is: set ORCH_GITHUB_TOKEN (a token " +
			"that may write issues and pull requests on the repository), or a GitHub App (ORCH_GITHUB_APP_ID and " +
			"ORCH_GITHUB_APP_PRIVATE_KEY), for orch to answer on GitHub")
	}
	git := a.branchRequest(cmd)
	served, err := a.servedRepo(cmd.Context(), git, ws)
	if err != nil {
		return nil, err
	}
	gh, err := clientFor(cmd.Context(), served)
	if err != nil {
		return nil, err
	}
	mention := a.env("ORCH_GITHUB_MENTION")
	if mention == "" {
		mention = "@orch"
	}
	if !strings.HasPrefix(mention, "@") || strings.ContainsAny(mention, " \t\n") {
		return nil, usageErr("ORCH_GITHUB_MENTION %q: want @ and a login, such as @orch", mention)
	}
	fixOff, fixChecks := false, []string(nil)
	switch v := strings.TrimSpace(a.env("ORCH_GITHUB_FIX_CHECKS")); strings.ToLower(v) {
	case "", "on":
	case "off":
		fixOff = true
	default:
		fixChecks = splitList(v)
	}
	srv, err := hub.New(hub.Config{Secret: secret, Mention: mention, Login: strings.TrimPrefix(mention, "@"),
		Allowed: splitList(a.env("ORCH_GITHUB_ALLOWED_USERS")), Store: b.Store, Queue: b.Queue, GitHub: gh,
		Starter: &githubStarter{runs: starter, base: base, workspace: ws, git: git, served: served},
		Log:     a.log, PublicURL: a.env("ORCH_PUBLIC_URL"), FixOff: fixOff, FixChecks: fixChecks})
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return srv, nil
}

// githubClients is how orch reaches GitHub for a repository: as a GitHub App's installation on it when
// ORCH_GITHUB_APP_ID is set (its key at ORCH_GITHUB_APP_PRIVATE_KEY), else with ORCH_GITHUB_TOKEN (or GITHUB_TOKEN).
// nil, nil when neither is set.
func (a *app) githubClients() (func(ctx context.Context, repo forge.Repo) (*forge.GitHub, error), error) {
	api := a.env("ORCH_GITHUB_API_URL")
	if id := a.env("ORCH_GITHUB_APP_ID"); id != "" {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n <= 0 {
			return nil, usageErr("ORCH_GITHUB_APP_ID %q: want the App's numeric id", id)
		}
		key := a.env("ORCH_GITHUB_APP_PRIVATE_KEY")
		if key == "" {
			return nil, usageErr("ORCH_GITHUB_APP_ID is set but ORCH_GITHUB_APP_PRIVATE_KEY is not: set it to the path of the App's private key (PEM)")
		}
		app := forge.App{ID: n, KeyFile: key}
		return func(ctx context.Context, repo forge.Repo) (*forge.GitHub, error) {
			return forge.NewGitHubApp(ctx, app, api, repo, nil)
		}, nil
	}
	token := cmp.Or(a.env("ORCH_GITHUB_TOKEN"), a.env("GITHUB_TOKEN"))
	if token == "" {
		return nil, nil
	}
	gh, err := forge.NewGitHub(token, api, nil)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return func(context.Context, forge.Repo) (*forge.GitHub, error) { return gh, nil }, nil
}

// servedRepo is the GitHub repository this orch works on, owner/name: ORCH_GITHUB_REPO, or the one its repository
// (ORCH_REPO) or its workspace's push remote names. A delivery from any other repository starts nothing.
func (a *app) servedRepo(ctx context.Context, git runs.Git, ws string) (forge.Repo, error) {
	if named := a.env("ORCH_GITHUB_REPO"); named != "" {
		o, r, ok := strings.Cut(named, "/")
		if !ok || o == "" || r == "" || strings.Contains(r, "/") {
			return forge.Repo{}, usageErr("ORCH_GITHUB_REPO %q: want owner/name", named)
		}
		return forge.Repo{Owner: o, Name: r}, nil
	}
	remote := git.URL
	if remote == "" {
		push := git.Push
		if push == "" {
			push = "origin"
		}
		remote, _ = workspace.RemoteURL(ctx, ws, push)
	}
	host := ""
	if u, err := url.Parse(a.env("ORCH_GITHUB_API_URL")); err == nil {
		host = u.Host
	}
	if o, r, ok := forge.ParseGitHubRemote(remote, host); ok {
		return forge.Repo{Owner: o, Name: r}, nil
	}
	return forge.Repo{}, usageErr("orch serves GitHub but cannot tell which repository it works on: set ORCH_GITHUB_REPO=owner/name " +
		"(or ORCH_REPO to the repository's GitHub URL)")
}

// githubStarter starts the runs GitHub asks for, as the Slack starter does, on the one repository this orch serves.
type githubStarter struct {
	runs      *runs.Starter
	base      jobs.Options
	workspace string
	git       runs.Git
	served    forge.Repo
}

func (s *githubStarter) Start(ctx context.Context, req hub.StartRequest) (*jobs.Run, error) {
	if !strings.EqualFold(req.Repo.String(), s.served.String()) {
		return nil, fmt.Errorf("this orch works on %s, not on %s", s.served, req.Repo)
	}
	origin := jobs.Origin{Kind: "github", User: req.By, Repo: req.Repo.String(), Issue: req.Issue}
	git := s.git
	if p := req.Pull; p != nil {
		// The next iteration of a pull request works on its branch as GitHub has it: the run clones the repository
		// the branch was pushed to, whatever this orch's workspace holds.
		url, err := s.remote(ctx)
		if err != nil {
			return nil, err
		}
		git = runs.Git{URL: url, Push: s.git.Push, Continue: &runs.Continuation{Branch: p.Branch, At: p.Head, PullRequest: p.URL}}
		if s.git.URL == "" {
			git.Push = "" // the clone's own remote, origin, is the URL
		}
	}
	return s.runs.Start(ctx, runs.Request{Text: req.Text, Context: req.Context, Tasks: req.Tasks, Options: s.base,
		Workspace: s.workspace, Origin: origin, Confined: true, Git: git})
}

// remote is the URL of the repository orch's branches are pushed to: the repository runs clone (ORCH_REPO), else
// the workspace's push remote.
func (s *githubStarter) remote(ctx context.Context) (string, error) {
	if s.git.URL != "" {
		return s.git.URL, nil
	}
	push := cmp.Or(s.git.Push, "origin")
	url, err := workspace.RemoteURL(ctx, s.workspace, push)
	if err != nil || url == "" {
		return "", fmt.Errorf("orch pushes its branches to no remote it can name (%s: %v): set ORCH_GIT_PUSH, or ORCH_REPO to "+
			"the repository's URL", push, err)
	}
	return url, nil
}
