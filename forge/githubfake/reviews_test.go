package githubfake

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v92/github"
)

const (
	mainSHA    = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	featureSHA = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// withPull is a fake with acme/app, its branches main and orch/r-1, and pull request #1 from orch/r-1 into main.
func withPull(t *testing.T) (*GitHub, *github.Client) {
	t.Helper()
	g := New("tok")
	t.Cleanup(g.Close)
	g.AddRepo("acme", "app")
	g.Push("acme", "app", "main", mainSHA)
	g.Push("acme", "app", "orch/r-1", featureSHA)
	c := client(t, g, "tok")
	if _, _, err := c.PullRequests.Create(context.Background(), "acme", "app",
		github.CreatePullRequest{Title: new("Fix"), Head: "orch/r-1", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	return g, c
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=U", "GIT_AUTHOR_EMAIL=u@x", "GIT_COMMITTER_NAME=U",
		"GIT_COMMITTER_EMAIL=u@x", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commitFile commits name with lines in the work tree dir.
func commitFile(t *testing.T, dir, name string, lines []string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", name)
	gitIn(t, dir, "commit", "-q", "-m", name)
}

func TestGetPullFollowsPushes(t *testing.T) {
	work, bare := t.TempDir(), filepath.Join(t.TempDir(), "app.git")
	lines := []string{"a", "b", "c"}
	gitIn(t, work, "init", "-q", "-b", "main")
	commitFile(t, work, "f.txt", lines)
	gitIn(t, work, "init", "-q", "--bare", bare)
	gitIn(t, work, "push", "-q", bare, "main")
	gitIn(t, work, "checkout", "-q", "-b", "feature")
	lines[1] = "B"
	commitFile(t, work, "f.txt", lines)
	gitIn(t, work, "push", "-q", bare, "feature")

	g := New("tok")
	defer g.Close()
	g.AddGitRepo("acme", "app", bare)
	g.SetLogin("orch-bot")
	c := client(t, g, "tok")
	ctx := context.Background()
	if _, _, err := c.PullRequests.Create(ctx, "acme", "app", github.CreatePullRequest{Title: new("B"), Head: "feature", Base: "main", Draft: new(true)}); err != nil {
		t.Fatal(err)
	}
	p, _, err := c.PullRequests.Get(ctx, "acme", "app", 1)
	if err != nil {
		t.Fatal(err)
	}
	head := gitIn(t, work, "--git-dir", bare, "rev-parse", "feature")
	seen := fmt.Sprintf("%s by %s, %s draft %t merged %t, %s:%s@%s into %s", p.GetHTMLURL(), p.GetUser().GetLogin(), p.GetState(),
		p.GetDraft(), p.GetMerged(), p.GetHead().GetRepo().GetFullName(), p.GetHead().GetRef(), p.GetHead().GetSHA(), p.GetBase().GetRef())
	if want := g.HTMLURL("acme", "app", 1) + " by orch-bot, open draft true merged false, acme/app:feature@" + head + " into main"; seen != want {
		t.Fatalf("Get: %s\nwant %s", seen, want)
	}

	// A review comment's hunk is the diff's, up to the commented line.
	_, made := g.Review("acme", "app", 1, "ann", "COMMENTED", "", Thread{Path: "f.txt", Line: 2, Body: "why B?"})
	if want := "@@ -1,3 +1,3 @@\n a\n-b\n+B"; made[0].DiffHunk != want || made[0].CommitID != head {
		t.Errorf("hunk %q at %s, want %q at %s", made[0].DiffHunk, made[0].CommitID, want, head)
	}

	commitFile(t, work, "f.txt", append(lines, "d"))
	gitIn(t, work, "push", "-q", bare, "feature")
	p, _, err = c.PullRequests.Get(ctx, "acme", "app", 1)
	if moved := gitIn(t, work, "--git-dir", bare, "rev-parse", "feature"); err != nil || p.GetHead().GetSHA() != moved || moved == head {
		t.Fatalf("after a push: %v, head %s, want %s", err, p.GetHead().GetSHA(), moved)
	}
}

func TestReviewCommentsEndpoints(t *testing.T) {
	g, c := withPull(t)
	ctx := context.Background()
	id, made := g.Review("acme", "app", 1, "ann", "CHANGES_REQUESTED", "Please.",
		Thread{Path: "a.go", Line: 10, Body: "one"}, Thread{Path: "a.go", StartLine: 3, Line: 5, Body: "two"},
		Thread{Path: "b.go", Line: 1, Body: "three"})
	_, replies := g.Review("acme", "app", 1, "bob", "COMMENTED", "", Thread{InReplyTo: made[0].ID, Body: "agreed"})

	page1, resp, err := c.PullRequests.ListReviewComments(ctx, "acme", "app", 1, id, &github.ListOptions{PerPage: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%d comments, prev %d next %d last %d", len(page1), resp.PrevPage, resp.NextPage, resp.LastPage); got != "2 comments, prev 0 next 2 last 2" {
		t.Fatalf("page 1: %s", got)
	}
	page2, resp, err := c.PullRequests.ListReviewComments(ctx, "acme", "app", 1, id, &github.ListOptions{PerPage: 2, Page: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%d comments, prev %d next %d, %s", len(page2), resp.PrevPage, resp.NextPage, page2[0].GetBody()); got != "1 comments, prev 1 next 0, three" {
		t.Fatalf("page 2: %s", got)
	}
	reply, _, err := c.PullRequests.GetComment(ctx, "acme", "app", replies[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	g.Push("acme", "app", "fix", "cccccccccccccccccccccccccccccccccccccccc")
	if p, _, err := c.PullRequests.Get(ctx, "acme", "app", g.OpenPull("acme", "app", "fix", "main", "By hand", "ann")); err != nil ||
		p.GetUser().GetLogin() != "ann" {
		t.Errorf("a pull request a person opened: %v %+v", err, p.GetUser())
	}
	for _, tc := range []struct {
		got  *github.PullRequestComment
		want string
	}{
		{page1[0], fmt.Sprintf("%d of review %d by ann, reply to 0: a.go lines 0-10 RIGHT (start \"\") at %s, hunk %q: one",
			made[0].ID, id, featureSHA, "@@ -10,1 +10,1 @@")},
		{page1[1], fmt.Sprintf("%d of review %d by ann, reply to 0: a.go lines 3-5 RIGHT (start \"RIGHT\") at %s, hunk %q: two",
			made[1].ID, id, featureSHA, "@@ -5,1 +5,1 @@")},
		{reply, fmt.Sprintf("%d of review %d by bob, reply to %d: a.go lines 0-10 RIGHT (start \"\") at %s, hunk %q: agreed",
			replies[0].ID, replies[0].ReviewID, made[0].ID, featureSHA, "@@ -10,1 +10,1 @@")},
	} {
		if got := seenComment(tc.got); got != tc.want {
			t.Errorf("comment: %s\nwant      %s", got, tc.want)
		}
	}

	for name, do := range map[string]func() (*github.Response, error){
		"no comment": func() (*github.Response, error) {
			_, r, err := c.PullRequests.GetComment(ctx, "acme", "app", 1)
			return r, err
		},
		"no review": func() (*github.Response, error) {
			_, r, err := c.PullRequests.ListReviewComments(ctx, "acme", "app", 1, 12345, nil)
			return r, err
		},
		"another pull request's review": func() (*github.Response, error) {
			_, r, err := c.PullRequests.ListReviewComments(ctx, "acme", "app", 2, id, nil)
			return r, err
		},
		"no pull request": func() (*github.Response, error) {
			_, r, err := c.PullRequests.Get(ctx, "acme", "app", 99)
			return r, err
		},
	} {
		if resp, err := do(); err == nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %v, want 404", name, err)
		}
	}
}

// seenComment is a review comment as the tests read it.
func seenComment(c *github.PullRequestComment) string {
	return fmt.Sprintf("%d of review %d by %s, reply to %d: %s lines %d-%d %s (start %q) at %s, hunk %q: %s", c.GetID(),
		c.GetPullRequestReviewID(), c.GetUser().GetLogin(), c.GetInReplyTo(), c.GetPath(), c.GetStartLine(), c.GetLine(),
		c.GetSide(), c.GetStartSide(), c.GetCommitID(), c.GetDiffHunk(), c.GetBody())
}

func TestReplies(t *testing.T) {
	g, _ := withPull(t)
	_, made := g.Review("acme", "app", 1, "ann", "COMMENTED", "", Thread{Path: "a.go", Line: 10, Body: "one"})
	path := fmt.Sprintf("/repos/acme/app/pulls/1/comments/%d/replies", made[0].ID)
	status, h, body := call(t, g, "POST", path, "Bearer tok", `{"body":"done"}`)
	m, _ := body.(map[string]any)
	if status != http.StatusCreated || h.Get("Location") != m["url"] || m["in_reply_to_id"] != float64(made[0].ID) ||
		m["body"] != "done" || m["path"] != "a.go" || m["line"] != float64(10) {
		t.Fatalf("reply: %d %v", status, body)
	}
	all := g.ReviewComments("acme", "app", 1)
	if len(all) != 2 || all[1].InReplyTo != made[0].ID || all[1].Author != "orch" || all[1].ReviewID == made[0].ReviewID {
		t.Fatalf("ReviewComments: %+v", all)
	}
	replyTo := fmt.Sprintf("/repos/acme/app/pulls/1/comments/%d/replies", all[1].ID)
	for _, tc := range []struct {
		name, path, auth, body string
		status                 int
	}{
		{"empty body", path, "Bearer tok", `{"body":""}`, 422},
		{"no body", path, "Bearer tok", `{}`, 422},
		{"bad JSON", path, "Bearer tok", `{`, 400},
		{"no comment", "/repos/acme/app/pulls/1/comments/7/replies", "Bearer tok", `{"body":"x"}`, 404},
		{"another pull request", fmt.Sprintf("/repos/acme/app/pulls/9/comments/%d/replies", made[0].ID), "Bearer tok", `{"body":"x"}`, 404},
		{"a reply to a reply is not modelled", replyTo, "Bearer tok", `{"body":"x"}`, 500},
		{"wrong token", path, "Bearer nope", `{"body":"x"}`, 401},
		{"no token", path, "", `{"body":"x"}`, 404},
	} {
		if status, _, body := call(t, g, "POST", tc.path, tc.auth, tc.body); status != tc.status {
			t.Errorf("%s: %d %v, want %d", tc.name, status, body, tc.status)
		}
	}
	g.ReadOnly("acme", "app")
	if status, _, _ := call(t, g, "POST", path, "Bearer tok", `{"body":"x"}`); status != http.StatusForbidden {
		t.Errorf("a read-only token replied: %d", status)
	}
}

func TestReviewCommentReactions(t *testing.T) {
	g, c := withPull(t)
	ctx := context.Background()
	_, made := g.Review("acme", "app", 1, "ann", "COMMENTED", "", Thread{Path: "a.go", Line: 10, Body: "one"})
	id := made[0].ID
	if _, resp, err := c.Reactions.CreatePullRequestCommentReaction(ctx, "acme", "app", id, "+1"); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("first: %v", err)
	}
	if _, resp, err := c.Reactions.CreatePullRequestCommentReaction(ctx, "acme", "app", id, "+1"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("again: %v", err)
	}
	if _, resp, _ := c.Reactions.CreatePullRequestCommentReaction(ctx, "acme", "app", id, "thumbsup"); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("an unknown reaction: %d", resp.StatusCode)
	}
	if _, resp, _ := c.Reactions.CreatePullRequestCommentReaction(ctx, "acme", "app", 3, "+1"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("no comment: %d", resp.StatusCode)
	}
	if got := g.ReviewReactions("acme", "app", id); len(got) != 1 || got[0] != "orch:+1" {
		t.Errorf("ReviewReactions: %q", got)
	}
	g.Withhold("acme", "app", "pull_requests")
	if _, resp, _ := c.Reactions.CreatePullRequestCommentReaction(ctx, "acme", "app", id, "eyes"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("without the pull requests permission: %d", resp.StatusCode)
	}
}

func TestCheckRunsEndpoint(t *testing.T) {
	g, c := withPull(t)
	ctx := context.Background()
	g.AddCheckRun("acme", "app", featureSHA, "test", "success", CheckOutput{}, "")
	id := g.AddCheckRun("acme", "app", featureSHA, "test", "failure", CheckOutput{Title: "failed", Summary: "s", Text: "t"}, "")
	g.AddCheckRun("acme", "app", featureSHA, "lint", "", CheckOutput{}, "")
	onMain := g.AddCheckRun("acme", "app", mainSHA, "test", "success", CheckOutput{}, "")

	// The latest run of each name, newest first, whichever way the commit is named; or every run; a page at a time.
	for _, tc := range []struct {
		ref, filter string
		per         int
		want        string
	}{
		{featureSHA, "", 0, fmt.Sprintf("2 runs: lint in_progress <nil>; %d test completed failure, github-actions, %q %q %q, pull requests #1 orch/r-1@%s into main",
			id, "failed", "s", "t", featureSHA)},
		{"orch/r-1", "latest", 0, "2 runs: lint; test"},
		{"heads/orch/r-1", "", 0, "2 runs: lint; test"},
		{featureSHA, "all", 2, "3 runs: lint; test"},
		{"main", "", 0, fmt.Sprintf(`1 runs: %d test completed success, github-actions, "" "" "", pull requests none`, onMain)},
	} {
		opts := &github.ListCheckRunsOptions{ListOptions: github.ListOptions{PerPage: tc.per}}
		if tc.filter != "" {
			opts.Filter = new(tc.filter)
		}
		res, _, err := c.Checks.ListCheckRunsForRef(ctx, "acme", "app", tc.ref, opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.ref, err)
		}
		if got := seenRuns(res, strings.Contains(tc.want, "github-actions")); got != tc.want {
			t.Errorf("%s %s: %s\nwant %s", tc.ref, tc.filter, got, tc.want)
		}
	}
	if _, resp, _ := c.Checks.ListCheckRunsForRef(ctx, "acme", "app", "nope", nil); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("an unknown ref: %d", resp.StatusCode)
	}
	g.Withhold("acme", "app", "checks")
	if _, resp, _ := c.Checks.ListCheckRunsForRef(ctx, "acme", "app", featureSHA, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("without the checks permission: %d", resp.StatusCode)
	}
}

// seenRuns is a list of check runs as the tests read it: their names, or, in full, what orch reads of each.
func seenRuns(res *github.ListCheckRunsResults, full bool) string {
	var runs []string
	for _, r := range res.CheckRuns {
		if !full {
			runs = append(runs, r.GetName())
			continue
		}
		if r.GetStatus() != "completed" {
			runs = append(runs, fmt.Sprintf("%s %s %v", r.GetName(), r.GetStatus(), r.Conclusion))
			continue
		}
		o := r.GetOutput()
		runs = append(runs, fmt.Sprintf("%d %s %s %s, %s, %q %q %q, pull requests %s", r.GetID(), r.GetName(), r.GetStatus(),
			r.GetConclusion(), r.GetApp().GetSlug(), o.GetTitle(), o.GetSummary(), o.GetText(), cmp.Or(pulls(r.PullRequests), "none")))
	}
	return fmt.Sprintf("%d runs: %s", res.GetTotal(), strings.Join(runs, "; "))
}

func TestJobLogsAreDownloadedFromAnotherHost(t *testing.T) {
	g, c := withPull(t)
	ctx := context.Background()
	id := g.AddCheckRun("acme", "app", featureSHA, "test", "failure", CheckOutput{}, "step 1\nFAIL\n")
	none := g.AddCheckRun("acme", "app", featureSHA, "lint", "success", CheckOutput{}, "")
	loc, _, err := c.Actions.GetWorkflowJobLogs(ctx, "acme", "app", id, 1)
	if err != nil {
		t.Fatal(err)
	}
	api, _ := url.Parse(g.URL())
	if loc.Host == api.Host || !strings.HasPrefix(loc.Path, "/_blobs/") {
		t.Fatalf("the download URL %s is on the API's host", loc)
	}
	// No token: the URL is all it takes.
	if got, want := fetchText(t, loc.String()), `200 text/plain; charset=utf-8 "step 1\nFAIL\n"`; got != want {
		t.Errorf("download: %s, want %s", got, want)
	}
	if got := fetchText(t, loc.Scheme+"://"+loc.Host+"/_blobs/0123"); !strings.HasPrefix(got, "404 ") {
		t.Errorf("a URL the fake did not give: %s", got)
	}

	for _, tc := range []struct {
		name   string
		c      *github.Client
		job    int64
		status int
	}{
		{"no job", c, 99, 404},
		{"a check run without a log", c, none, 404},
		{"a wrong token", client(t, g, "nope"), id, 401},
	} {
		if _, resp, err := tc.c.Actions.GetWorkflowJobLogs(ctx, "acme", "app", tc.job, 1); err == nil || resp.StatusCode != tc.status {
			t.Errorf("%s: %v, want %d", tc.name, err, tc.status)
		}
	}
	if status, _, _ := call(t, g, "GET", fmt.Sprintf("/repos/acme/app/actions/jobs/%d/logs", id), "", ""); status != http.StatusNotFound {
		t.Errorf("logs of a private repository without a token: %d", status)
	}
	g.Withhold("acme", "app", "actions")
	if _, resp, _ := c.Actions.GetWorkflowJobLogs(ctx, "acme", "app", id, 1); resp.StatusCode != http.StatusForbidden {
		t.Errorf("without the actions permission: %d", resp.StatusCode)
	}
}

// fetchText GETs u without a token and says what came: the status, the type and the body.
func fetchText(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
}

func TestReviewPayloadsParse(t *testing.T) {
	g, c := withPull(t)
	ctx := context.Background()
	// #1 is closed and #2 heads another commit: neither is a pull request of the runs on featureSHA; #3 is.
	g.Push("acme", "app", "other", "cccccccccccccccccccccccccccccccccccccccc")
	g.ClosePull("acme", "app", 1)
	for _, head := range []string{"other", "orch/r-1"} {
		if _, _, err := c.PullRequests.Create(ctx, "acme", "app", github.CreatePullRequest{Title: new("x"), Head: head, Base: "main"}); err != nil {
			t.Fatal(err)
		}
	}
	const open = 3

	review, made := g.Review("acme", "app", open, "ann", "CHANGES_REQUESTED", "Fix it.", Thread{Path: "a.go", Line: 4, Body: "here"})
	ev := parse(t, "pull_request_review", g.PullRequestReviewPayload("acme", "app", open, review, "submitted")).(*github.PullRequestReviewEvent)
	rv, pr := ev.GetReview(), ev.GetPullRequest()
	seen := []any{ev.GetAction(), rv.GetID(), rv.GetState(), rv.GetUser().GetLogin(), rv.GetCommitID(), rv.GetBody(), pr.GetNumber(),
		pr.GetHead().GetSHA(), pr.GetHead().GetRepo().GetFullName(), pr.GetBase().GetRef(), ev.GetRepo().GetFullName(), ev.GetSender().GetLogin()}
	want := []any{"submitted", review, "changes_requested", "ann", featureSHA, "Fix it.", open,
		featureSHA, "acme/app", "main", "acme/app", "ann"}
	if !slices.Equal(seen, want) {
		t.Errorf("pull_request_review: %v\nwant                 %v", seen, want)
	}

	cev := parse(t, "pull_request_review_comment", g.PullRequestReviewCommentPayload("acme", "app", open, made[0].ID, "created")).(*github.PullRequestReviewCommentEvent)
	cm := cev.GetComment()
	seen = []any{cev.GetAction(), cm.GetID(), cm.GetPullRequestReviewID(), cm.GetPath(), cm.GetLine(), cm.GetDiffHunk(), cm.GetBody(),
		cm.GetUser().GetLogin(), cev.GetPullRequest().GetNumber(), cev.GetSender().GetLogin(), cev.GetRepo().GetFullName()}
	want = []any{"created", made[0].ID, review, "a.go", 4, "@@ -4,1 +4,1 @@", "here", "ann", open, "ann", "acme/app"}
	if !slices.Equal(seen, want) {
		t.Errorf("pull_request_review_comment: %v\nwant                         %v", seen, want)
	}

	id := g.AddCheckRun("acme", "app", featureSHA, "test", "failure", CheckOutput{Title: "1 failed", Summary: "s", Text: "t"}, "log")
	run := parse(t, "check_run", g.CheckRunPayload("acme", "app", id, "completed")).(*github.CheckRunEvent)
	cr := run.GetCheckRun()
	seen = []any{run.GetAction(), cr.GetID(), cr.GetApp().GetSlug(), cr.GetConclusion(), cr.GetStatus(), cr.GetHeadSHA(),
		cr.GetOutput().GetTitle(), cr.GetOutput().GetSummary(), cr.GetOutput().GetText(), pulls(cr.PullRequests), run.GetRepo().GetFullName()}
	want = []any{"completed", id, "github-actions", "failure", "completed", featureSHA, "1 failed", "s", "t",
		"#3 orch/r-1@" + featureSHA + " into main", "acme/app"}
	if !slices.Equal(seen, want) {
		t.Errorf("check_run: %v\nwant       %v", seen, want)
	}

	wf := parse(t, "workflow_run", g.WorkflowRunPayload("acme", "app", "orch/r-1", featureSHA, "failure")).(*github.WorkflowRunEvent)
	r := wf.GetWorkflowRun()
	seen = []any{wf.GetAction(), r.GetHeadBranch(), r.GetHeadSHA(), r.GetStatus(), r.GetConclusion(), pulls(r.PullRequests),
		wf.GetRepo().GetFullName(), strings.HasPrefix(r.GetHTMLURL(), g.URL()+"/acme/app/actions/runs/")}
	want = []any{"completed", "orch/r-1", featureSHA, "completed", "failure", "#3 orch/r-1@" + featureSHA + " into main", "acme/app", true}
	if !slices.Equal(seen, want) {
		t.Errorf("workflow_run: %v\nwant          %v", seen, want)
	}
}

// pulls is how the pull requests of a check run or a workflow run read: number, head and base.
func pulls(ps []*github.PullRequest) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("#%d %s@%s into %s", p.GetNumber(), p.GetHead().GetRef(), p.GetHead().GetSHA(), p.GetBase().GetRef()))
	}
	return strings.Join(out, ", ")
}

func parse(t *testing.T, event string, payload map[string]any) any {
	t.Helper()
	ev, err := github.ParseWebHook(event, mustJSON(t, payload))
	if err != nil {
		t.Fatalf("%s: %v", event, err)
	}
	return ev
}
