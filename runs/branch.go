package runs

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/workspace"
)

// branch is where run runID's work goes: a branch of its own in the workspace's repository, or in the repository it
// clones; nil for a workspace that is not a repository, which the run then works in directly.
func branch(ctx context.Context, ws string, req Git, runID string) (*jobs.Git, error) {
	if req.Continue != nil {
		return continuation(req)
	}
	if req.URL != "" {
		push := req.Push
		if push == "" {
			push = "origin"
		}
		return &jobs.Git{URL: req.URL, Base: req.Base, Branch: jobs.BranchPrefix + runID, Push: push}, nil
	}
	if ws == "" {
		return nil, nil
	}
	top, err := workspace.Toplevel(ctx, ws)
	if errors.Is(err, workspace.ErrNotRepository) {
		if req.Base != "" {
			return nil, invalidf("a base (%s) was given, but the workspace %s is not a git repository", req.Base, ws)
		}
		return nil, nil
	}
	if err != nil {
		return nil, invalidf("reading the workspace's repository: %v", err)
	}
	base := req.Base
	if base == "" {
		base = "HEAD"
	}
	commit, err := workspace.Resolve(ctx, top, base)
	if err != nil {
		if req.Base == "" {
			// A repository without a first commit has nothing to branch from: the run works in it as in a plain
			// directory.
			return nil, nil
		}
		return nil, invalidf("the base %s: %v", req.Base, err)
	}
	if base == "HEAD" {
		base = workspace.CurrentBranch(ctx, top, commit)
	}
	dir, err := placeIn(top, ws)
	if err != nil {
		return nil, err
	}
	return &jobs.Git{Repo: top, Dir: dir, Base: base, BaseCommit: commit, Branch: jobs.BranchPrefix + runID,
		Push: req.Push}, nil
}

// placeIn is ws's place in the repository at top ("" for top itself).
func placeIn(top, ws string) (string, error) {
	abs, err := filepath.Abs(ws)
	if err != nil {
		return "", invalidf("the workspace %s: %v", ws, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if real, err := filepath.EvalSymlinks(top); err == nil {
		top = real
	}
	rel, err := filepath.Rel(top, abs)
	if err != nil || rel == ".." || filepath.IsAbs(rel) || len(rel) > 2 && rel[:3] == ".."+string(filepath.Separator) {
		return "", invalidf("the workspace %s is not inside its repository %s", ws, top)
	}
	if rel == "." {
		return "", nil
	}
	return rel, nil
}

// continuation is the branch of a run that goes on with one of orch's branches: cloned from the remote, started at the
// commit the branch is at there, pushed back over that commit alone.
func continuation(req Git) (*jobs.Git, error) {
	c := req.Continue
	switch {
	case req.URL == "":
		return nil, invalidf("going on with the branch %s needs the repository's URL: the branch is what the remote holds", c.Branch)
	case !strings.HasPrefix(c.Branch, jobs.BranchPrefix) || len(c.Branch) == len(jobs.BranchPrefix):
		return nil, invalidf("orch goes on only with branches of its own (%s…), not with %q", jobs.BranchPrefix, c.Branch)
	case !isCommitName(c.At):
		return nil, invalidf("the branch %s's commit %q is not a full commit name", c.Branch, c.At)
	}
	push := req.Push
	if push == "" {
		push = "origin"
	}
	return &jobs.Git{URL: req.URL, Base: c.Branch, BaseCommit: c.At, Branch: c.Branch, Push: push, Pushed: c.At,
		PullRequest: c.PullRequest}, nil
}

// isCommitName reports a full commit name: 40 (SHA-1) or 64 (SHA-256) lower-case hex digits.
func isCommitName(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
