package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/orchrun/orch/forge"
	"github.com/orchrun/orch/internal/gfm"
	"github.com/orchrun/orch/jobs"
)

// Pull requests orch opened: a comment, a review or a red check there is the next iteration of the work, a run that
// goes on with the pull request's branch. A pull request is orch's when its branch is a run's own (orch/<run id>) in
// the very repository it is asked in and that run's record names this pull request: a branch someone named orch/… or
// a fork's is not, and orch never pushes to it.

// orchPull is a pull request orch opened, read from GitHub, and the run that worked on its branch last.
type orchPull struct {
	forge.Pull
	run *jobs.Run
}

// pullOf reads pull request number of repo; ok is false when it is not orch's.
func (d *desk) pullOf(ctx context.Context, repo forge.Repo, number int) (p orchPull, ok bool, err error) {
	pr, err := d.cfg.GitHub.PullRequest(ctx, repo, number)
	if err != nil {
		return p, false, err
	}
	id, mine := strings.CutPrefix(pr.HeadRef, jobs.BranchPrefix)
	if !mine || !strings.EqualFold(pr.HeadRepo, repo.String()) || !runID(id) {
		return p, false, nil
	}
	first, err := d.cfg.Store.Get(ctx, id)
	if errors.Is(err, jobs.ErrRunNotFound) {
		return p, false, nil
	}
	if err != nil {
		return p, false, err
	}
	if first.Git == nil || first.Git.Branch != pr.HeadRef || !strings.EqualFold(first.Git.PullRequest, pr.HTMLURL) {
		return p, false, nil
	}
	p.Pull, p.run = pr, first
	latest, err := d.runOf(ctx, asked{repo: repo, issue: number})
	if err != nil {
		return p, false, err
	}
	if latest != nil && latest.Git != nil && latest.Git.Branch == pr.HeadRef {
		p.run = latest
	}
	return p, true, nil
}

// runID reports whether s can be a run's id (jobs.NewRunID: "r-" and ten base32 characters).
func runID(s string) bool {
	rest, ok := strings.CutPrefix(s, "r-")
	return ok && len(rest) == 10 && strings.Trim(rest, "abcdefghijklmnopqrstuvwxyz234567") == ""
}

// goOn starts a run that goes on with pull request p's branch for a person's request (words, a review, a red check),
// and follows it in the pull request; fields are more of the mirror's state of the run (the review threads its tasks
// answer). It says why when it cannot: the pull request is closed, or a run still works on its branch.
func (d *desk) goOn(ctx context.Context, a asked, p orchPull, req StartRequest, fields ...string) (*jobs.Run, bool) {
	if p.State != "open" {
		d.say(ctx, a, fmt.Sprintf("This pull request is %s: orch works on open pull requests only.", p.State))
		return nil, false
	}
	busy := fmt.Sprintf("Run %s is still at work on this pull request's branch, and one run at a time works on a "+
		"branch. Ask again once it ends.", gfm.Code(p.run.ID))
	if !p.run.Status.Terminal() {
		d.say(ctx, a, busy)
		return nil, false
	}
	// One run at a time on a branch: of the requests that find the same ended run last on it, one goes on (a compare
	// and set on that run), whatever process or delivery it comes in.
	after := fmt.Sprintf("after:%s:%s", issueKey(a.repo, p.Number), p.run.ID)
	first, err := d.issues.Once(ctx, after, seenTTL)
	if err != nil {
		d.log.Error("github: taking a pull request's branch", "repo", a.repo, "pull", p.Number, "err", err)
		d.say(ctx, a, "orch cannot reach its store right now; ask again in a moment.")
		return nil, false
	}
	if !first {
		busy = "Another request on this pull request was taken a moment ago, and one run at a time works on a branch. " +
			"Ask again once its run ends."
		d.say(ctx, a, busy)
		return nil, false
	}
	req.Repo, req.CloneURL, req.Issue = a.repo, a.cloneURL, p.Number
	if req.By == "" {
		req.By = a.login
	}
	req.Pull = &PullTarget{Number: p.Number, Branch: p.HeadRef, Head: p.HeadSHA, URL: p.HTMLURL}
	run, err := d.cfg.Starter.Start(ctx, req)
	if err != nil {
		_ = d.issues.Unsee(ctx, after)
		d.say(ctx, a, d.cannotStart(a, err))
		return nil, false
	}
	if err := d.issues.SetThread(ctx, issueKey(a.repo, p.Number), run.ID); err != nil {
		d.log.Error("github: remembering a pull request's run", "run_id", run.ID, "err", err)
	}
	if err := d.mirror.follow(ctx, run.ID, a.repo, p.Number, fields...); err != nil {
		d.log.Error("github: following a run", "run_id", run.ID, "err", err)
	}
	return run, true
}

// pullCommand does what a command in an orch pull request's conversation asks: it answers the question of the run at
// work on the branch, or, when none is, words are the next iteration of the work.
func (d *desk) pullCommand(ctx context.Context, a asked, cmd Command) {
	p, ok, err := d.pullOf(ctx, a.repo, a.issue)
	switch {
	case err != nil:
		d.log.Error("github: reading a pull request", "repo", a.repo, "pull", a.issue, "err", err)
		d.say(ctx, a, "orch could not read this pull request right now; try again in a moment.")
		return
	case !ok:
		d.say(ctx, a, "orch works on pull requests it opened, and takes new requests in issues: ask in an issue.")
		return
	}
	if !p.run.Status.Terminal() {
		d.answer(ctx, a, p.run, cmd)
		return
	}
	if cmd.Verb != VerbNone || cmd.Words == "" {
		d.say(ctx, a, fmt.Sprintf("There is no run here to answer. %s followed by what to change goes on with this "+
			"pull request's branch.", gfm.Code(d.cfg.Mention+" <words>")))
		return
	}
	ctxText := fmt.Sprintf("This is the next iteration of pull request %s#%d (%s), which orch opened; the run works on "+
		"its branch %s.\n\n%s", a.repo, p.Number, p.Title, p.HeadRef, d.context(ctx, a, p.Title, p.Body))
	if st, err := d.issues.State(ctx, "pull:"+issueKey(a.repo, p.Number)); err == nil && st[fieldLastFailure] != "" {
		ctxText += "\n\nThe checks orch stopped fixing on its own, as they failed last:\n\n" + st[fieldLastFailure]
	}
	if _, ok := d.goOn(ctx, a, p, StartRequest{Text: cmd.Words, Context: ctxText}); ok {
		// A person's own words are new: the checks' loop detection starts again from them.
		d.resetFixes(ctx, a.repo, p.Number)
	}
}
