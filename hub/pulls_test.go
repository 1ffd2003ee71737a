package hub

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/forge"
	"github.com/orchrun/orch/forge/githubfake"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
	"github.com/orchrun/orch/jobs/store"
)

// sha is a full commit name made of one hex digit, for a branch of the fake's.
func sha(c string) string { return strings.Repeat(c, 40) }

// orchPull opens a pull request as a run of orch's does: the run's branch on GitHub, and the run's record naming the
// pull request. It returns the run and the pull request's number.
func (f *surfaceFixture) orchPull(t *testing.T, head string) (*jobs.Run, int) {
	t.Helper()
	ctx := context.Background()
	r := &jobs.Run{ID: jobs.NewRunID(), PlanTitle: "Add a cache", Status: jobs.RunCompleted, CreatedAt: time.Now(),
		Origin: jobs.Origin{Kind: "github", User: "ann", Repo: "acme/" + f.name, Issue: f.issue},
		Tasks:  []*jobs.Task{{ID: "1", Title: "Add a cache", Status: jobs.TaskCompleted}}}
	r.Git = &jobs.Git{URL: "https://github.test/acme/" + f.name + ".git", Base: "main", BaseCommit: sha("1"),
		Branch: jobs.BranchPrefix + r.ID, Head: head, Pushed: head, Commits: 1}
	f.gh.Push("acme", f.name, "main", sha("1"))
	f.gh.Push("acme", f.name, r.Git.Branch, head)
	url, err := f.talker.OpenDraft(ctx, forge.PullRequest{Owner: "acme", Repo: f.name, Head: r.Git.Branch, Base: "main",
		Title: "Add a cache", Body: "Orch-Run: " + r.ID})
	if err != nil {
		t.Fatal(err)
	}
	r.Git.PullRequest = url
	if err := f.st.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	pulls := f.gh.Pulls("acme", f.name)
	return r, pulls[len(pulls)-1].Number
}

// deliver sends event's payload as GitHub would, and wants it taken.
func (f *surfaceFixture) deliver(t *testing.T, event string, payload any) {
	t.Helper()
	resp, _, err := f.gh.Deliver(f.url, secret, event, payload)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the %s delivery: %d", event, resp.StatusCode)
	}
}

// in waits until orch's comments in issue or pull request n satisfy ok, and returns them.
func (f *surfaceFixture) in(t *testing.T, n int, what string, ok func([]githubfake.Comment) bool) []githubfake.Comment {
	t.Helper()
	was := f.issue
	f.issue = n
	defer func() { f.issue = was }()
	return f.orchSaid(t, what, ok)
}

// finish ends run id as a worker would, after change.
func (f *surfaceFixture) finish(t *testing.T, id string, change func(*jobs.Run)) {
	t.Helper()
	if _, err := f.st.Update(context.Background(), id, func(r *jobs.Run, c *jobs.Change) error {
		change(r)
		r.Complete(c, time.Now())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A command in an orch pull request's conversation is the next iteration of its work: a run that goes on with the
// pull request's branch from where GitHub has it, followed in the pull request. While that run works, commands
// answer it; a pull request orch did not open starts nothing.
func TestAPullRequestCommentGoesOnWithItsBranch(t *testing.T) {
	for name, rdb := range jobstest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			st := store.New(rdb, nil)
			f := newSurface(t, st)
			first, pr := f.orchPull(t, sha("2"))
			c := f.gh.Say("acme", f.name, pr, "ann", "@orch also cover the error path")
			f.deliver(t, "issue_comment", f.gh.IssueCommentPayload("acme", f.name, c, "created"))
			f.in(t, pr, "a status comment in the pull request", containing("orch run"))
			reqs := f.starter.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d runs started", len(reqs))
			}
			req := reqs[0]
			want := PullTarget{Number: pr, Branch: first.Git.Branch, Head: sha("2"), URL: first.Git.PullRequest}
			if req.Pull == nil || *req.Pull != want || req.Text != "also cover the error path" || req.Issue != pr ||
				!strings.Contains(req.Context, first.Git.Branch) {
				t.Fatalf("the request: %+v (pull %+v)", req, req.Pull)
			}

			// While that run works, a command is for it.
			c = f.gh.Say("acme", f.name, pr, "ann", "@orch and the docs")
			f.deliver(t, "issue_comment", f.gh.IssueCommentPayload("acme", f.name, c, "created"))
			f.in(t, pr, "that the run is at work", containing("is at work and waits for no answer"))
			// A review that comes meanwhile is told to come back; once the run ended, the branch takes the next one.
			review, _ := f.gh.Review("acme", f.name, pr, "ann", "CHANGES_REQUESTED", "@orch rename the cache")
			f.deliver(t, "pull_request_review", f.gh.PullRequestReviewPayload("acme", f.name, pr, review, "submitted"))
			f.in(t, pr, "that a run works on the branch", containing("is still at work on this pull request's branch"))
			if n := len(f.starter.requests()); n != 1 {
				t.Fatalf("%d runs started while one works on the branch", n)
			}
			f.finish(t, f.starter.last(), func(r *jobs.Run) { r.Tasks[0].Status = jobs.TaskCompleted })
			c = f.gh.Say("acme", f.name, pr, "ann", "@orch now the docs")
			f.deliver(t, "issue_comment", f.gh.IssueCommentPayload("acme", f.name, c, "created"))
			for deadline := time.Now().Add(60 * time.Second); len(f.starter.requests()) != 2; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("after the run ended, %d runs; want the next one started", len(f.starter.requests()))
				}
			}
			if got := f.starter.requests()[1]; got.Text != "now the docs" || got.Pull == nil {
				t.Fatalf("the next run: %+v", got)
			}

			// A pull request someone else opened, even on a branch named like orch's, is not orch's.
			f.gh.Push("acme", f.name, "orch/r-aaaaaaaaaa", sha("3"))
			if _, err := f.talker.OpenDraft(context.Background(), forge.PullRequest{Owner: "acme", Repo: f.name,
				Head: "orch/r-aaaaaaaaaa", Base: "main", Title: "Mine"}); err != nil {
				t.Fatal(err)
			}
			pulls := f.gh.Pulls("acme", f.name)
			theirs := pulls[len(pulls)-1].Number
			c = f.gh.Say("acme", f.name, theirs, "ann", "@orch make it faster")
			f.deliver(t, "issue_comment", f.gh.IssueCommentPayload("acme", f.name, c, "created"))
			f.in(t, theirs, "where to ask", containing("orch works on pull requests it opened"))
			if n := len(f.starter.requests()); n != 2 {
				t.Fatalf("%d runs started, want the 2 on orch's pull request", n)
			}
		})
	}
}

// A review that requests changes is one run with a task per thread — whatever number of deliveries its comments
// make — and each thread is answered in place when the run ends: the commit that addresses it, or the agent's answer.
func TestAReviewIsOneRunAndEachThreadIsAnswered(t *testing.T) {
	st := store.New(jobstest.Clients(t)["miniredis"], nil)
	f := newSurface(t, st)
	_, pr := f.orchPull(t, sha("2"))
	review, comments := f.gh.Review("acme", f.name, pr, "ann", "CHANGES_REQUESTED", "Close, but not yet.",
		githubfake.Thread{Path: "cache.go", Line: 12, Body: "@orch this map needs a lock"},
		githubfake.Thread{Path: "cache_test.go", Line: 3, StartLine: 1, Body: "Why a sleep here?"})
	f.deliver(t, "pull_request_review", f.gh.PullRequestReviewPayload("acme", f.name, pr, review, "submitted"))
	for _, c := range comments {
		f.deliver(t, "pull_request_review_comment", f.gh.PullRequestReviewCommentPayload("acme", f.name, pr, c.ID, "created"))
	}
	f.in(t, pr, "a status comment", containing("orch run"))
	reqs := f.starter.requests()
	if len(reqs) != 1 || len(reqs[0].Tasks) != 2 || reqs[0].Pull == nil {
		t.Fatalf("requests: %+v", reqs)
	}
	tasks := reqs[0].Tasks
	if !strings.HasPrefix(tasks[0].Title, "cache.go:12: ") || !strings.Contains(tasks[0].Description, "needs a lock") ||
		!strings.HasPrefix(tasks[1].Title, "cache_test.go:1-3: ") || !strings.Contains(reqs[0].Context, "Close, but not yet.") {
		t.Fatalf("tasks: %+v\ncontext: %s", tasks, reqs[0].Context)
	}
	// The delivery of the comment that mentions orch comes after the review's: it starts nothing more, and the 👀
	// goes on it only when it is the one taken.
	time.Sleep(100 * time.Millisecond)
	if n := len(f.starter.requests()); n != 1 {
		t.Fatalf("%d runs for one review", n)
	}

	runID := f.starter.last()
	commit := sha("4")
	f.finish(t, runID, func(r *jobs.Run) {
		r.Git.Head, r.Git.Pushed = commit, commit
		r.Tasks[0].Status, r.Tasks[0].Commit, r.Tasks[0].Summary = jobs.TaskCompleted, commit, "Guarded the map with a mutex."
		r.Tasks[1].Status, r.Tasks[1].Summary = jobs.TaskCompleted, "The sleep waits for the cache's janitor; a clock would be better."
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		var replies []githubfake.ReviewComment
		for _, c := range f.gh.ReviewComments("acme", f.name, pr) {
			if c.Author == "orch" {
				replies = append(replies, c)
			}
		}
		if len(replies) == 2 {
			if replies[0].InReplyTo != comments[0].ID || !strings.Contains(replies[0].Body, "Addressed in "+commit) ||
				replies[1].InReplyTo != comments[1].ID || !strings.Contains(replies[1].Body, "janitor") ||
				strings.Contains(replies[1].Body, "Addressed in") {
				t.Fatalf("the replies: %+v", replies)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("orch replied %d times in the threads: %+v", len(replies), replies)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	n := 0
	for _, c := range f.gh.ReviewComments("acme", f.name, pr) {
		if c.Author == "orch" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("orch replied %d times, want once per thread", n)
	}
}

// A red check on an orch pull request's head is a fix run with the check's log; a failure of a commit the branch has
// moved past is not; the same failure a third time is a question, not another attempt.
func TestARedCheckIsAFixUntilItFailsTheSameWayThrice(t *testing.T) {
	st := store.New(jobstest.Clients(t)["miniredis"], nil)
	f := newSurface(t, st)
	first, pr := f.orchPull(t, sha("2"))
	fail := func(head, at string) {
		t.Helper()
		f.gh.Push("acme", f.name, first.Git.Branch, head)
		log := at + " === RUN TestCache\n" + at + " cache_test.go:14: got 2 entries, want 1\n" + at + " --- FAIL: TestCache (0.0" + at[len(at)-1:] + "s)\nFAIL\n"
		id := f.gh.AddCheckRun("acme", f.name, head, "test", "failure", githubfake.CheckOutput{Title: "1 test failed"}, log)
		f.deliver(t, "check_run", f.gh.CheckRunPayload("acme", f.name, id, "completed"))
	}
	started := func(n int) StartRequest {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for len(f.starter.requests()) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d fix runs started, want %d", len(f.starter.requests()), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
		reqs := f.starter.requests()
		return reqs[len(reqs)-1]
	}
	finishLast := func() {
		t.Helper()
		f.finish(t, f.starter.last(), func(r *jobs.Run) {
			r.Tasks[0].Status = jobs.TaskCompleted
			r.Git.Head, r.Git.Pushed, r.Git.Commits = sha("9"), sha("9"), 1 // the fix pushed a commit
		})
	}

	fail(sha("2"), "2026-11-28T10:00:01Z")
	req := started(1)
	if !strings.Contains(req.Text, "test") || !strings.Contains(req.Context, "got 2 entries, want 1") ||
		req.Pull == nil || req.Pull.Head != sha("2") {
		t.Fatalf("the fix run: %+v", req)
	}
	// The workflow of the same commit failing as well is the same fix.
	f.deliver(t, "workflow_run", f.gh.WorkflowRunPayload("acme", f.name, first.Git.Branch, sha("2"), "failure"))
	finishLast()

	// A failure reported late for a commit the branch has moved past fixes nothing.
	f.gh.Push("acme", f.name, first.Git.Branch, sha("5"))
	old := f.gh.AddCheckRun("acme", f.name, sha("2"), "lint", "failure", githubfake.CheckOutput{Title: "lint"}, "")
	f.deliver(t, "check_run", f.gh.CheckRunPayload("acme", f.name, old, "completed"))

	fail(sha("6"), "2026-11-28T10:20:07Z") // the same failure, at another time
	started(2)
	finishLast()
	fail(sha("7"), "2026-11-28T10:40:13Z")
	f.in(t, pr, "the question", containing("failed the same way 3 times"))
	time.Sleep(100 * time.Millisecond)
	if n := len(f.starter.requests()); n != 2 {
		t.Fatalf("%d fix runs, want 2 and a question", n)
	}
}

// ORCH_GITHUB_FIX_CHECKS: every check by default, none when off, else the checks named (GitHub's names are shown as
// typed; orch matches them whatever their case).
func TestWhichChecksAreFixed(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		name string
		want bool
	}{
		{Config{}, "test", true},
		{Config{FixOff: true}, "test", false},
		{Config{FixChecks: []string{"Test", "lint"}}, "test", true},
		{Config{FixChecks: []string{"lint"}}, "test", false},
	} {
		if got := (&desk{cfg: c.cfg}).fixes(c.name); got != c.want {
			t.Errorf("%+v fixes %q: %v, want %v", c.cfg, c.name, got, c.want)
		}
	}
}

// The same failure has the same signature whatever changes between two runs of it (times, durations, commits); a
// failure of another test, or of another check, has another.
func TestFailureSignature(t *testing.T) {
	run := func(at, dur, test string) []failure {
		return []failure{{name: "test", text: at + " --- FAIL: " + test + " (" + dur + "s)\n" + at +
			" cache_test.go:14: got 2 entries, want 1\nat commit 3f2c9a1b\nFAIL"}}
	}
	a := signature(run("2026-11-28T10:00:01Z", "0.02", "TestCache"))
	if b := signature(run("2026-11-28T11:42:17Z", "0.31", "TestCache")); a != b {
		t.Errorf("the same failure signs %s and %s", a, b)
	}
	if b := signature(run("2026-11-28T10:00:01Z", "0.02", "TestEvict")); a == b {
		t.Error("another test's failure has the same signature")
	}
	other := run("2026-11-28T10:00:01Z", "0.02", "TestCache")
	other[0].name = "lint"
	if signature(other) == a {
		t.Error("another check's failure has the same signature")
	}
}
