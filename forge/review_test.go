package forge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/forge/githubfake"
)

var app = Repo{Owner: "acme", Name: "app"}

// reviewed is a fake GitHub whose acme/app is a real bare repository: main with app.go, the branch feature one
// commit ahead (line 10 changed), and pull request #1 from feature into main, opened through the API.
type reviewed struct {
	gh         *githubfake.GitHub
	g          *GitHub
	work, bare string
	lines      []string // app.go on feature
}

func git(t *testing.T, dir string, args ...string) string {
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

func newReviewed(t *testing.T) *reviewed {
	t.Helper()
	r := &reviewed{work: t.TempDir(), bare: filepath.Join(t.TempDir(), "app.git")}
	for i := 1; i <= 20; i++ {
		r.lines = append(r.lines, fmt.Sprintf("line %d", i))
	}
	git(t, r.work, "init", "-q", "-b", "main")
	r.write(t, "app.go")
	git(t, r.work, "init", "-q", "--bare", r.bare)
	git(t, r.work, "push", "-q", r.bare, "main")
	git(t, r.work, "checkout", "-q", "-b", "feature")
	r.lines[9] = "line 10, changed"
	r.write(t, "app.go")
	git(t, r.work, "push", "-q", r.bare, "feature")

	r.gh = githubfake.New(token)
	t.Cleanup(r.gh.Close)
	r.gh.AddGitRepo("acme", "app", r.bare)
	r.g = newClient(t, r.gh, token)
	if _, err := r.g.OpenDraft(context.Background(), PullRequest{Owner: "acme", Repo: "app", Head: "feature", Base: "main",
		Title: "Change line 10", Body: "As asked."}); err != nil {
		t.Fatal(err)
	}
	return r
}

// write commits app.go as r.lines say, in the work tree's branch.
func (r *reviewed) write(t *testing.T, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.work, name), []byte(strings.Join(r.lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, r.work, "add", name)
	git(t, r.work, "commit", "-q", "-m", "write "+name)
}

// withDraft is newFake with pull request #1 from orch/r-1 into main: no git behind it, for what needs none.
func withDraft(t *testing.T) (*githubfake.GitHub, *GitHub) {
	t.Helper()
	gh := newFake(t)
	g := newClient(t, gh, token)
	if _, err := g.OpenDraft(context.Background(), draft); err != nil {
		t.Fatal(err)
	}
	return gh, g
}

func (r *reviewed) head(t *testing.T) string {
	return git(t, r.work, "--git-dir", r.bare, "rev-parse", "feature")
}

func TestPullRequestFollowsItsHead(t *testing.T) {
	r := newReviewed(t)
	ctx := context.Background()
	p, err := r.g.PullRequest(ctx, app, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := Pull{Number: 1, HTMLURL: r.gh.HTMLURL("acme", "app", 1), State: "open", Draft: true, Title: "Change line 10",
		Body: "As asked.", Author: "orch", HeadRef: "feature", HeadSHA: r.head(t), HeadRepo: "acme/app", BaseRef: "main"}
	if p != want {
		t.Fatalf("PullRequest = %+v\nwant          %+v", p, want)
	}

	r.lines = append(r.lines, "line 21")
	r.write(t, "app.go")
	git(t, r.work, "push", "-q", r.bare, "feature")
	p, err = r.g.PullRequest(ctx, app, 1)
	if err != nil || p.HeadSHA != r.head(t) || p.HeadSHA == want.HeadSHA {
		t.Fatalf("after a push: %v, head %s, want %s", err, p.HeadSHA, r.head(t))
	}
}

func TestReviewComments(t *testing.T) {
	r := newReviewed(t)
	ctx := context.Background()
	id, made := r.gh.Review("acme", "app", 1, "ann", "CHANGES_REQUESTED", "Two things.",
		githubfake.Thread{Path: "app.go", Line: 10, Body: "Why this?"},
		githubfake.Thread{Path: "app.go", StartLine: 8, Line: 11, Body: "And these."})
	botID, replies := r.gh.Review("acme", "app", 1, "coderabbitai[bot]", "COMMENTED", "",
		githubfake.Thread{InReplyTo: made[0].ID, Body: "Agreed."})

	// The hunk above a comment is the pull request's diff, up to the commented line; git's header names the context
	// ("line 6": the last line before the hunk that starts with a letter), as GitHub's does.
	hunk := "@@ -7,7 +7,7 @@ line 6\n line 7\n line 8\n line 9\n-line 10\n+line 10, changed"
	head := r.head(t)
	first := ReviewComment{ID: made[0].ID, ReviewID: id, Author: "ann", Body: "Why this?", Path: "app.go", Line: 10,
		Side: "RIGHT", DiffHunk: hunk, CommitID: head}
	second := ReviewComment{ID: made[1].ID, ReviewID: id, Author: "ann", Body: "And these.", Path: "app.go", StartLine: 8,
		Line: 11, Side: "RIGHT", DiffHunk: hunk + "\n line 11", CommitID: head}
	reply := ReviewComment{ID: replies[0].ID, ReviewID: botID, InReplyTo: made[0].ID, Author: "coderabbitai[bot]", Bot: true,
		Body: "Agreed.", Path: "app.go", Line: 10, Side: "RIGHT", DiffHunk: hunk, CommitID: head}
	for _, tc := range []struct {
		review int64
		want   []ReviewComment
	}{{id, []ReviewComment{first, second}}, {botID, []ReviewComment{reply}}} {
		got, err := r.g.ReviewComments(ctx, app, 1, tc.review)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("review %d: %+v\nwant      %+v", tc.review, got, tc.want)
		}
	}
	if one, err := r.g.ReviewComment(ctx, app, made[1].ID); err != nil || one != second {
		t.Errorf("ReviewComment = %v %+v, want %+v", err, one, second)
	}
	want := Review{ID: id, Author: "ann", State: "CHANGES_REQUESTED", Body: "Two things."}
	if rv, err := r.g.Review(ctx, app, 1, id); err != nil || rv != want {
		t.Errorf("Review = %v %+v, want %+v", err, rv, want)
	}
	if _, err := r.g.Review(ctx, app, 1, id+1000); err == nil || !strings.Contains(err.Error(), "review") {
		t.Errorf("a review GitHub does not have: %v", err)
	}
}

// A review with more comments than a page holds is read whole, a page at a time.
func TestReviewCommentsEveryPage(t *testing.T) {
	gh, g := withDraft(t)
	var threads []githubfake.Thread
	for i := range 150 {
		threads = append(threads, githubfake.Thread{Path: "app.go", Line: 1 + i%20, Body: fmt.Sprint("note ", i)})
	}
	id, _ := gh.Review("acme", "app", 1, "ann", "COMMENTED", "", threads...)
	got, err := g.ReviewComments(context.Background(), app, 1, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 150 || got[0].Body != "note 0" || got[149].Body != "note 149" {
		t.Fatalf("got %d comments, want the 150 in order", len(got))
	}
	pages := 0
	for _, q := range gh.Requests() {
		if strings.HasSuffix(q.Path, fmt.Sprintf("/reviews/%d/comments", id)) {
			pages++
		}
	}
	if pages != 2 {
		t.Errorf("%d requests, want 2 pages of 100", pages)
	}
}

func TestReplyAndReact(t *testing.T) {
	r := newReviewed(t)
	ctx := context.Background()
	_, made := r.gh.Review("acme", "app", 1, "ann", "CHANGES_REQUESTED", "", githubfake.Thread{Path: "app.go", Line: 10, Body: "Why?"})
	id, err := r.g.Reply(ctx, app, 1, made[0].ID, "Because the task says so.")
	if err != nil {
		t.Fatal(err)
	}
	all := r.gh.ReviewComments("acme", "app", 1)
	if len(all) != 2 || all[1].ID != id || all[1].InReplyTo != made[0].ID || all[1].Author != "orch" ||
		all[1].Body != "Because the task says so." {
		t.Fatalf("review comments = %+v", all)
	}
	long := strings.Repeat("x", MaxBody+10)
	if _, err := r.g.Reply(ctx, app, 1, made[0].ID, long); err != nil {
		t.Fatal(err)
	}
	all = r.gh.ReviewComments("acme", "app", 1)
	if b := all[len(all)-1].Body; len(b) > MaxBody || !strings.Contains(b, "The rest is cut") {
		t.Errorf("a long reply was not cut: %d bytes", len(b))
	}

	for range 2 { // the second is GitHub's "Reaction exists"
		if err := r.g.ReactToReviewComment(ctx, app, made[0].ID, "eyes"); err != nil {
			t.Fatal(err)
		}
	}
	if got := r.gh.ReviewReactions("acme", "app", made[0].ID); len(got) != 1 || got[0] != "orch:eyes" {
		t.Errorf("reactions = %q", got)
	}
}

func TestCheckRuns(t *testing.T) {
	gh := newFake(t)
	g := newClient(t, gh, token)
	const sha = "2222222222222222222222222222222222222222"
	gh.AddCheckRun("acme", "app", sha, "test", "success", githubfake.CheckOutput{}, "")
	id := gh.AddCheckRun("acme", "app", sha, "test", "failure",
		githubfake.CheckOutput{Title: "1 test failed", Summary: "TestLogin", Text: "login_test.go:12: want 200"}, "")
	for i := range 120 {
		gh.AddCheckRun("acme", "app", sha, fmt.Sprint("lint-", i), "success", githubfake.CheckOutput{}, "")
	}
	gh.AddCheckRun("acme", "app", "1111111111111111111111111111111111111111", "test", "failure", githubfake.CheckOutput{}, "")

	runs, err := g.CheckRuns(context.Background(), app, sha)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 121 {
		t.Fatalf("%d runs, want the latest of each of 121 names", len(runs))
	}
	var test *CheckRun
	for i := range runs {
		if runs[i].Name == "test" {
			test = &runs[i]
		}
	}
	want := CheckRun{ID: id, Name: "test", Status: "completed", Conclusion: "failure", HeadSHA: sha, App: "github-actions",
		Title: "1 test failed", Summary: "TestLogin", Text: "login_test.go:12: want 200"}
	if test == nil || test.HTMLURL == "" {
		t.Fatalf("no test run with an address in %+v", runs)
	}
	if want.HTMLURL = test.HTMLURL; *test != want {
		t.Errorf("test = %+v\nwant   %+v", *test, want)
	}
}

func TestJobLogIsItsTail(t *testing.T) {
	gh := newFake(t)
	g := newClient(t, gh, token)
	var log strings.Builder
	for i := range 500 {
		fmt.Fprintf(&log, "2026-01-01T00:00:00Z step %d\n", i)
	}
	id := gh.AddCheckRun("acme", "app", "2222222222222222222222222222222222222222", "test", "failure",
		githubfake.CheckOutput{}, log.String())
	ctx := context.Background()
	got, err := g.JobLog(ctx, app, id, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := log.String()[log.Len()-100:]; got != want {
		t.Errorf("JobLog = %q, want the last 100 bytes %q", got, want)
	}
	if whole, err := g.JobLog(ctx, app, id, 1<<20); err != nil || whole != log.String() {
		t.Errorf("a log shorter than max: %v, %d bytes of %d", err, len(whole), log.Len())
	}

	var api, blob int
	for _, q := range gh.Requests() {
		switch {
		case strings.HasSuffix(q.Path, fmt.Sprintf("/actions/jobs/%d/logs", id)):
			api++
			if q.Authorization != "Bearer "+token {
				t.Errorf("the logs request carried %q", q.Authorization)
			}
		case strings.HasPrefix(q.Path, "/_blobs/"):
			blob++
			if q.Authorization != "" {
				t.Errorf("the download carried the token: %q", q.Authorization)
			}
		}
	}
	if api != 2 || blob != 2 {
		t.Errorf("%d logs requests and %d downloads, want 2 of each", api, blob)
	}
}

// Each refusal names what is missing, and which permission the token needs.
func TestReviewRefusals(t *testing.T) {
	const sha = "2222222222222222222222222222222222222222"
	for _, tc := range []struct {
		name  string
		setup func(gh *githubfake.GitHub)
		tok   string
		do    func(g *GitHub, comment, job int64) error
		want  []string
	}{
		{"no pull request", nil, token, func(g *GitHub, _, _ int64) error {
			_, err := g.PullRequest(context.Background(), app, 99)
			return err
		}, []string{"reading pull request #99 on acme/app", "no pull request #99 on acme/app", "404 Not Found"}},
		{"no pull request permission", func(gh *githubfake.GitHub) { gh.Withhold("acme", "app", "pull_requests") }, token,
			func(g *GitHub, _, _ int64) error {
				_, err := g.PullRequest(context.Background(), app, 1)
				return err
			}, []string{"403 Resource not accessible by personal access token", "may not read pull request #1", `"Pull requests: write"`}},
		{"no review", nil, token, func(g *GitHub, _, _ int64) error {
			_, err := g.ReviewComments(context.Background(), app, 1, 5)
			return err
		}, []string{"no review 5 on pull request #1 on acme/app", "404"}},
		{"no review comment", nil, token, func(g *GitHub, _, _ int64) error {
			_, err := g.ReviewComment(context.Background(), app, 123)
			return err
		}, []string{"no review comment 123 on acme/app", "404"}},
		{"reply to no comment", nil, token, func(g *GitHub, _, _ int64) error {
			_, err := g.Reply(context.Background(), app, 1, 77, "x")
			return err
		}, []string{"replying to review comment 77 on acme/app#1", "no review comment 77 on pull request #1", "404"}},
		{"reply read-only", func(gh *githubfake.GitHub) { gh.ReadOnly("acme", "app") }, token, func(g *GitHub, c, _ int64) error {
			_, err := g.Reply(context.Background(), app, 1, c, "x")
			return err
		}, []string{"403", "may not write on review comment", `"Pull requests: write"`}},
		{"react read-only", func(gh *githubfake.GitHub) { gh.ReadOnly("acme", "app") }, token, func(g *GitHub, c, _ int64) error {
			return g.ReactToReviewComment(context.Background(), app, c, "eyes")
		}, []string{"reacting to review comment", "403", `"Pull requests: write"`}},
		{"no checks permission", func(gh *githubfake.GitHub) { gh.Withhold("acme", "app", "checks") }, token,
			func(g *GitHub, _, _ int64) error {
				_, err := g.CheckRuns(context.Background(), app, sha)
				return err
			}, []string{"403", "may not read the check runs of commit " + sha, `"Checks: read"`, "checks:read"}},
		{"checks of no repository", nil, token, func(g *GitHub, _, _ int64) error {
			_, err := g.CheckRuns(context.Background(), Repo{"acme", "nope"}, sha)
			return err
		}, []string{"404 Not Found", "acme/nope", `"Checks: read"`}},
		{"no actions permission", func(gh *githubfake.GitHub) { gh.Withhold("acme", "app", "actions") }, token,
			func(g *GitHub, _, job int64) error {
				_, err := g.JobLog(context.Background(), app, job, 10)
				return err
			}, []string{"403 Forbidden", "may not read GitHub Actions job", `"Actions: read"`, "actions:read"}},
		{"no job", nil, token, func(g *GitHub, _, _ int64) error {
			_, err := g.JobLog(context.Background(), app, 42, 10)
			return err
		}, []string{"reading the log of GitHub Actions job 42 on acme/app", "no GitHub Actions job 42 on acme/app",
			"404 Not Found", `"Actions: read"`}},
		{"a wrong token", nil, "ghp_wrong", func(g *GitHub, _, job int64) error {
			_, err := g.JobLog(context.Background(), app, job, 10)
			return err
		}, []string{"did not accept the token", "401"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh, _ := withDraft(t)
			_, made := gh.Review("acme", "app", 1, "ann", "COMMENTED", "", githubfake.Thread{Path: "app.go", Line: 10, Body: "?"})
			job := gh.AddCheckRun("acme", "app", sha, "test", "failure", githubfake.CheckOutput{}, "log")
			if tc.setup != nil {
				tc.setup(gh)
			}
			err := tc.do(newClient(t, gh, tc.tok), made[0].ID, job)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("error %q holds the token", err)
			}
		})
	}
}

func TestTailKeepsTheLastBytes(t *testing.T) {
	const text = "abcdefghijklmnopqrstuvwxyz"
	for _, size := range []int{1, 5, 26, 40} {
		for _, chunk := range []int{1, 3, 5, 7, 26} {
			t.Run(fmt.Sprint(size, "/", chunk), func(t *testing.T) {
				tl := &tail{buf: make([]byte, size)}
				for i := 0; i < len(text); i += chunk {
					if n, err := tl.Write([]byte(text[i:min(i+chunk, len(text))])); err != nil || n != min(chunk, len(text)-i) {
						t.Fatalf("Write = %d, %v", n, err)
					}
				}
				if want := text[max(0, len(text)-size):]; tl.String() != want {
					t.Errorf("tail = %q, want %q", tl.String(), want)
				}
			})
		}
	}
}

// GitHub's rate limit on the logs request is a *RateLimitError, as on every other call, though go-github's
// GetWorkflowJobLogs reports it only as an unexpected status.
func TestJobLogRateLimited(t *testing.T) {
	gh := newFake(t)
	g := newClient(t, gh, token)
	id := gh.AddCheckRun("acme", "app", "2222222222222222222222222222222222222222", "test", "failure", githubfake.CheckOutput{}, "log")
	reset := time.Date(2026, 3, 1, 12, 20, 0, 0, time.UTC)
	gh.RateLimit(reset)
	_, err := g.JobLog(context.Background(), app, id, 10)
	var rl *RateLimitError
	if !errors.As(err, &rl) || !rl.RetryAt.Equal(reset) || rl.Secondary {
		t.Fatalf("JobLog = %v, want the rate limit until %s", err, reset)
	}
}
