package main

import (
	"context"
	"fmt"
	"io"
	"net/mail"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/forge"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/runs"
	"github.com/orchrun/orch/workspace"
)

// gitConfig is orch.yaml's git section: how runs' branches are made, where their worktrees live, who commits.
type gitConfig struct {
	Base string `yaml:"base"`
	Repo string `yaml:"repo"`
	Push string `yaml:"push"`
	// Worktrees is the directory that holds the runs' worktrees (and the mirrors of cloned repositories); default
	// the state directory.
	Worktrees string `yaml:"worktrees"`
	// Author signs orch's commits, "Name <email>"; default "orch <orch@localhost>".
	Author string `yaml:"author"`
}

func gitFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("base", "", "the ref the run's branch starts from (env ORCH_GIT_BASE; default the workspace's HEAD)")
	f.String("repo", "", "clone this git repository (any URL, or a bare repository's path) instead of using the workspace (env ORCH_REPO)")
}

// branchRequest is how this process's runs make their branches: flags, then env, then orch.yaml.
func (a *app) branchRequest(cmd *cobra.Command) runs.Git {
	s, fc := a.set, a.set.file.Git
	return runs.Git{
		URL:  s.str(cmd, "repo", "ORCH_REPO", fc.Repo, ""),
		Base: s.str(cmd, "base", "ORCH_GIT_BASE", fc.Base, ""),
		Push: s.str(cmd, "", "ORCH_GIT_PUSH", fc.Push, ""),
	}
}

// spareWorktrees is how many worktrees of ended runs a worker keeps per repository for the next runs: two runs that
// start together both find one.
const spareWorktrees = 2

// worktrees is the manager of this process's worktrees: under ORCH_WORKTREES, orch.yaml git.worktrees, or the
// state directory.
func (a *app) worktrees(cmd *cobra.Command) (*workspace.Manager, error) {
	s := a.set
	root := s.str(cmd, "", "ORCH_WORKTREES", s.file.Git.Worktrees, "")
	if root == "" {
		root = s.str(cmd, "state-dir", "ORCH_STATE_DIR", s.file.StateDir, ".orch")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, usageErr("the worktree directory %s: %v", root, err)
	}
	who := workspace.DefaultIdentity
	if v := s.str(cmd, "", "ORCH_GIT_AUTHOR", s.file.Git.Author, ""); v != "" {
		if who, err = parseIdentity(v); err != nil {
			return nil, err
		}
	}
	return &workspace.Manager{Root: abs, Author: who, Log: a.log, Spares: spareWorktrees}, nil
}

// parseIdentity reads "Name <email>".
func parseIdentity(v string) (workspace.Identity, error) {
	addr, err := mail.ParseAddress(v)
	if err != nil || addr.Name == "" || strings.ContainsAny(addr.Address, "<>\n") {
		return workspace.Identity{}, usageErr("the commit author %q: want \"Name <email>\"", v)
	}
	return workspace.Identity{Name: addr.Name, Email: addr.Address}, nil
}

// describeBranch is the line that says where a run's work goes.
func describeBranch(branch, base, push string) string {
	s := fmt.Sprintf("branch %s from %s", branch, base)
	if push != "" {
		s += ", pushed to " + push
	}
	return s
}

func (a *app) diffCmd() *cobra.Command {
	var stat bool
	cmd := &cobra.Command{
		Use:   "diff [RUN_ID]",
		Short: "Print a run's work: its branch against its base (default: the latest run)",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := a.backend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			run, err := a.pickRun(cmd, b, args, func(r *jobs.Run) bool { return r.Git != nil }, false)
			if err != nil {
				return err
			}
			if run.Git == nil {
				return usageErr("run %s worked in %s, which is not a git repository: it has no branch to show", run.ID, run.Workspace)
			}
			if run.Git.BaseCommit == "" {
				fmt.Fprintf(a.stdout, "Run %s has not started its branch yet.\n", run.ID)
				return nil
			}
			trees, err := a.worktrees(cmd)
			if err != nil {
				return err
			}
			return trees.Diff(cmd.Context(), run.Git, stat, a.stdout)
		},
	}
	cmd.Flags().BoolVar(&stat, "stat", false, "print only the diffstat")
	return cmd
}

// shownRun is run as orch prints it: the repository's URL, which the run keeps whole so that any worker can clone it,
// without its password.
func shownRun(run *jobs.Run) *jobs.Run {
	if run.Git == nil || run.Git.URL == "" {
		return run
	}
	r, g := *run, *run.Git
	g.URL = redactURL(g.URL)
	r.Git = &g
	return &r
}

// printBranch is the part of `orch status` that says where a run's work is.
func printBranch(w io.Writer, run *jobs.Run) {
	g := run.Git
	if g == nil {
		return
	}
	where := g.Repo
	if g.URL != "" {
		where = redactURL(g.URL)
	}
	base := g.Base
	if base == "" {
		base = "HEAD"
	}
	if g.BaseCommit != "" {
		base += " (" + workspace.Short(g.BaseCommit) + ")"
	}
	fmt.Fprintf(w, "  branch:    %s in %s, from %s\n", g.Branch, where, base)
	wk := jobs.WorkOf(run)
	switch {
	case g.Commits > 0:
		fmt.Fprintf(w, "             %s, %s; orch diff %s\n", jobs.Count(g.Commits, "commit"), wk.Diffstat(), run.ID)
	case g.Head != "":
		fmt.Fprintf(w, "             no changes yet\n")
	}
	if g.Pushed != "" {
		fmt.Fprintf(w, "             pushed to %s at %s\n", g.Push, workspace.Short(g.Pushed))
	}
	if g.PullRequest != "" {
		fmt.Fprintf(w, "             pull request %s\n", g.PullRequest)
	}
	if g.Unfinished != "" {
		fmt.Fprintf(w, "             work left uncommitted when the run ended: %s (git show %s)\n", g.Unfinished, g.Unfinished)
	}
}

// pullRequests opens the draft pull request of a completed run when a GitHub token or App is set: on the GitHub
// repository that the run's push remote names (ORCH_GITHUB_REPO=owner/name names it outright, for a remote GitHub
// does not host under its own name, e.g. a mirror). ORCH_GITHUB_API_URL points at GitHub Enterprise. nil without a
// token or an App.
func (a *app) pullRequests() (func(ctx context.Context, r *jobs.Run) (string, error), error) {
	clientFor, err := a.githubClients()
	if err != nil || clientFor == nil {
		return nil, err
	}
	api := a.env("ORCH_GITHUB_API_URL")
	named := a.env("ORCH_GITHUB_REPO")
	if named != "" {
		if o, r, ok := strings.Cut(named, "/"); !ok || o == "" || r == "" || strings.Contains(r, "/") {
			return nil, usageErr("ORCH_GITHUB_REPO %q: want owner/name", named)
		}
	}
	host := ""
	if api != "" {
		if u, err := url.Parse(api); err == nil {
			host = u.Host
		}
	}
	return func(ctx context.Context, r *jobs.Run) (string, error) {
		g := r.Git
		owner, repo, _ := strings.Cut(named, "/")
		if named == "" {
			remote := g.URL
			if g.Push != "" && g.URL == "" {
				var err error
				if remote, err = workspace.RemoteURL(ctx, g.Repo, g.Push); err != nil {
					return "", err
				}
			}
			var ok bool
			if owner, repo, ok = forge.ParseGitHubRemote(remote, host); !ok {
				return "", fmt.Errorf("the remote %s is not a GitHub repository (set ORCH_GITHUB_REPO=owner/name to name it)", redactURL(remote))
			}
		}
		base, err := baseBranch(g)
		if err != nil {
			return "", err
		}
		gh, err := clientFor(ctx, forge.Repo{Owner: owner, Name: repo})
		if err != nil {
			return "", err
		}
		title, body := forge.SummaryRedacted(r, a.redactor.Redact)
		return gh.OpenDraft(ctx, forge.PullRequest{Owner: owner, Repo: repo, Head: g.Branch, Base: base, Title: title, Body: body})
	}, nil
}

// baseBranch is the branch a run's pull request goes into: the branch its base names.
func baseBranch(g *jobs.Git) (string, error) {
	b := strings.TrimPrefix(g.Base, "refs/heads/")
	if g.Push != "" {
		b = strings.TrimPrefix(b, "refs/remotes/"+g.Push+"/")
		b = strings.TrimPrefix(b, g.Push+"/")
	}
	if b == "" || b == "HEAD" || strings.HasPrefix(b, "refs/") || isHex(b) {
		return "", fmt.Errorf("the run started from %s, which is not a branch: a pull request needs a base branch (start runs with --base BRANCH)", g.Base)
	}
	return b, nil
}

func isHex(s string) bool {
	if len(s) < 7 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}
