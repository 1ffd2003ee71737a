package hub

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/go-github/v92/github"

	"github.com/orchrun/orch/forge"
	"github.com/orchrun/orch/internal/gfm"
	"github.com/orchrun/orch/pipeline"
)

// Reviews of orch's pull requests: a review that requests changes, or review comments that mention orch, are one run
// on the pull request's branch — one per review, not per comment — with a task per review thread (its file, lines and
// diff hunk). When the run ends, each thread it took up is answered in place: the commit that addresses it, or the
// agent's answer when the comment was a question and nothing changed (the mirror, ThreadReply).

// fieldThread + a task's id, in a run's mirror state: the first comment of the review thread the task takes up, which
// the answer replies to; fieldReplied + the task's id once it is answered.
const (
	fieldThread  = "thread:"
	fieldReplied = "replied:"
)

// review is the work of a submitted review: a run of its threads, when it requests changes or mentions orch.
func (d *desk) review(e *github.PullRequestReviewEvent) func(context.Context) {
	rv := e.GetReview()
	if e.GetAction() != "submitted" || d.fromBot(rv.GetUser()) || d.fromBot(e.GetSender()) {
		return nil
	}
	if !strings.EqualFold(rv.GetState(), "changes_requested") && !Mentions(rv.GetBody(), d.cfg.Mention) {
		return nil // an approval, or comments for the author: nothing is asked of orch
	}
	a := asked{repo: repoOf(e.GetRepo()), cloneURL: e.GetRepo().GetCloneURL(), issue: e.GetPullRequest().GetNumber(),
		login: rv.GetUser().GetLogin()}
	return func(ctx context.Context) { d.takeReview(ctx, a, rv.GetID(), rv.GetBody(), 0) }
}

// reviewComment is the work of a review comment that mentions orch: the run of the review it belongs to. A review's
// comments and the review itself are separate deliveries; whichever comes first starts the one run.
func (d *desk) reviewComment(e *github.PullRequestReviewCommentEvent) func(context.Context) {
	c := e.GetComment()
	if e.GetAction() != "created" || d.fromBot(c.GetUser()) || d.fromBot(e.GetSender()) ||
		!Mentions(c.GetBody(), d.cfg.Mention) {
		return nil
	}
	a := asked{repo: repoOf(e.GetRepo()), cloneURL: e.GetRepo().GetCloneURL(), issue: e.GetPullRequest().GetNumber(),
		login: c.GetUser().GetLogin()}
	return func(ctx context.Context) { d.takeReview(ctx, a, c.GetPullRequestReviewID(), "", c.GetID()) }
}

// takeReview starts the run of review reviewID on pull request a.issue, once. body is the review's own text ("" when
// unknown); mention is the comment that mentioned orch (0 for the review itself), which gets the 👀.
func (d *desk) takeReview(ctx context.Context, a asked, reviewID int64, body string, mention int64) {
	// Once per review, before anything is said: a review's deliveries (the review, each comment) get one answer.
	key := fmt.Sprintf("review:%s:%d", strings.ToLower(a.repo.String()), reviewID)
	if first, err := d.issues.Once(ctx, key, seenTTL); err != nil || !first {
		if err != nil {
			d.log.Error("github: taking a review", "repo", a.repo, "pull", a.issue, "err", err)
		}
		return
	}
	p, ok, err := d.pullOf(ctx, a.repo, a.issue)
	switch {
	case err != nil:
		d.log.Error("github: reading a reviewed pull request", "repo", a.repo, "pull", a.issue, "err", err)
		_ = d.issues.Unsee(ctx, key) // GitHub's redelivery of it is taken
		return
	case !ok:
		if mention != 0 || Mentions(body, d.cfg.Mention) {
			d.say(ctx, a, "orch works on pull requests it opened, and takes new requests in issues: ask in an issue.")
		}
		return // a review of someone else's pull request is not orch's business
	}
	if !d.may(ctx, a, "ask orch for changes") {
		return
	}
	if mention != 0 {
		if err := d.cfg.GitHub.ReactToReviewComment(ctx, a.repo, mention, "eyes"); err != nil {
			d.log.Warn("github: acknowledging a review comment", "repo", a.repo, "err", err)
		}
	}
	if body == "" && mention != 0 {
		// A comment's delivery came first: the review's own words are read from GitHub.
		if rv, err := d.cfg.GitHub.Review(ctx, a.repo, a.issue, reviewID); err == nil {
			body = rv.Body
		} else {
			d.log.Warn("github: reading a review", "repo", a.repo, "pull", a.issue, "err", err)
		}
	}
	comments, err := d.cfg.GitHub.ReviewComments(ctx, a.repo, a.issue, reviewID)
	if err != nil {
		d.log.Error("github: reading a review's comments", "repo", a.repo, "pull", a.issue, "err", err)
		_ = d.issues.Unsee(ctx, key)
		d.say(ctx, a, "orch could not read your review's comments right now; its operators find why in its log.")
		return
	}
	req, fields, ok := reviewRequest(a, p, body, comments)
	if !ok {
		d.say(ctx, a, "Your review asks nothing orch can act on: comment on the lines to change, or say what to change.")
		return
	}
	d.goOn(ctx, a, p, req, fields...)
}

// reviewRequest is the run of a review of pull request p: a task per thread of its comments, or the review's own
// words when it has none (ok is false when it has neither), and the mirror's fields that tie each task to its
// thread.
func reviewRequest(a asked, p orchPull, body string, comments []forge.ReviewComment) (req StartRequest, fields []string, ok bool) {
	tasks, roots := reviewTasks(comments)
	req.Text, req.Tasks = fmt.Sprintf("Address @%s's review of pull request #%d", a.login, p.Number), tasks
	said, review := strings.TrimSpace(body), ""
	switch {
	case len(tasks) > 0 && said != "":
		review = fmt.Sprintf("\n\nThe review's own words, by @%s:\n\n%s", a.login, said)
	case len(tasks) == 0 && said == "":
		return req, nil, false
	case len(tasks) == 0:
		req.Text = said // the review's words are its one task
	}
	req.Context = fmt.Sprintf("This is the next iteration of pull request %s#%d (%s), which orch opened; the run works "+
		"on its branch %s, after a review.%s\n\nThe pull request:\n\n%s", a.repo, p.Number, p.Title, p.HeadRef, review, p.Body)
	for i, root := range roots {
		fields = append(fields, fieldThread+tasks[i].ID, strconv.FormatInt(root, 10))
	}
	return req, fields, true
}

// reviewTasks are a review's threads as tasks, in the order the review has them, and for each the id of the thread's
// first comment (which a reply answers: GitHub takes no reply to a reply). Comments of bots are no part of a task.
func reviewTasks(comments []forge.ReviewComment) (tasks []pipeline.Task, roots []int64) {
	threads := map[int64][]forge.ReviewComment{}
	for _, c := range comments {
		if c.Bot {
			continue
		}
		root := c.ID
		if c.InReplyTo != 0 {
			root = c.InReplyTo
		}
		if _, ok := threads[root]; !ok {
			roots = append(roots, root)
		}
		threads[root] = append(threads[root], c)
	}
	for i, root := range roots {
		tasks = append(tasks, threadTask(strconv.Itoa(i+1), threads[root]))
	}
	return tasks, roots
}

// threadTask is the task of one review thread: where it is, what it says, and what to do — change the code, or, for
// a question to the author, answer it and change nothing.
func threadTask(id string, cs []forge.ReviewComment) pipeline.Task {
	first := cs[0]
	var said []string
	for _, c := range cs {
		said = append(said, fmt.Sprintf("@%s wrote:\n%s", c.Author, strings.TrimSpace(c.Body)))
	}
	where := first.Path + ":" + lines(first)
	var b strings.Builder
	fmt.Fprintf(&b, "A reviewer commented on %s in the pull request's diff.\n\n%s\n", where, strings.Join(said, "\n\n"))
	if h := strings.TrimSpace(first.DiffHunk); h != "" {
		fmt.Fprintf(&b, "\nThe diff hunk the comment is on (its last line is the line commented):\n\n%s\n", gfm.Block(h))
	}
	// The agent, which reads the code, tells a question to the author ("why a sleep here?") from a request for a
	// change ("could you rename this?"); its answer goes to the thread either way, with the commit when there is one.
	b.WriteString("\nIf the comment asks the author a question rather than for a change, answer it in your final " +
		"message, in a few plain sentences for the reviewer, and change no file. Otherwise change the code so that the " +
		"comment is addressed, and say in your final message what you changed.")
	line, _, _ := strings.Cut(strings.TrimSpace(first.Body), "\n")
	return pipeline.Task{ID: id, Title: where + ": " + line, Description: b.String()}
}

// lines names the lines a review comment is on: "12", "10-14", or "outdated" for a comment on a diff that changed
// since.
func lines(c forge.ReviewComment) string {
	switch {
	case c.Line == 0:
		return "outdated"
	case c.StartLine > 0 && c.StartLine != c.Line:
		return fmt.Sprintf("%d-%d", c.StartLine, c.Line)
	}
	return strconv.Itoa(c.Line)
}
