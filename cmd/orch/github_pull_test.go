package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/forge/githubfake"
)

// startGitHubServe starts `orch serve` in dir on GitHub alone (no Slack token), and returns its address.
func startGitHubServe(t *testing.T, dir string, env ...string) (url string, out *syncBuffer) {
	t.Helper()
	cmd := exec.Command(orchBin, "serve")
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "ORCH_REDIS_URL="+isolatedRedis(t), "ANTHROPIC_API_KEY=", "SLACK_BOT_TOKEN=",
		"SLACK_SIGNING_SECRET=", "SLACK_APP_TOKEN=", "ORCH_HTTP_ADDR=127.0.0.1:0", "ORCH_WORKSPACE="+dir,
		"ORCH_SANDBOX=local", "ORCH_AGENT=sim", "ORCH_BRAIN=heuristic", "GITHUB_TOKEN=", "ORCH_PUBLIC_URL="), env...)
	out = &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	addr := regexp.MustCompile(`GitHub webhook on (http://[0-9.:]+)/github/webhook`)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := addr.FindStringSubmatch(out.String()); m != nil {
			return m[1] + "/github/webhook", out
		}
	}
	t.Fatalf("orch serve did not serve GitHub:\n%s", out.String())
	return "", nil
}

// eventually waits for ok, for at most 90 seconds, and says what did not happen.
func eventually(t *testing.T, what string, ok func() bool, out *syncBuffer) {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen; orch:\n%s", what, out.String())
		}
	}
}

// The loop after the pull request, through `orch serve` on GitHub alone: a review with two threads is one run on the
// pull request's branch — one commit for the thread that asks for a change, an answer for the one that asks why,
// each thread replied to in place; then a red check on the new head is a fix run that pushes a commit on top, and a
// green check after it starts nothing. No second pull request is opened.
func TestGitHubReviewAndRedCheckIterateOnThePullRequest(t *testing.T) {
	t.Parallel()
	dir, origin := githubWorkspace(t, `tasks:
  "1":
    - output: "Added a line to log.txt. All tests pass."
      sh: 'echo "$ORCH_RUN_ID" >> log.txt'
  "2":
    - output: "The run id tells which run wrote the line; no change is needed. Done. All tests pass."
`)

	gh := githubfake.New("ghp_test")
	t.Cleanup(gh.Close)
	gh.AddGitRepo("acme", "app", origin)
	gh.SetPermission("acme", "app", "ann", "write")
	issue := gh.AddIssue("acme", "app", "Log every call", "We need a line per call in log.txt.", "ann")
	hook, out := startGitHubServe(t, dir, "ORCH_SIM_SCENARIO="+filepath.Join(dir, "words.sim.yaml"), "ORCH_GIT_PUSH=origin",
		"ORCH_GITHUB_TOKEN=ghp_test", "ORCH_GITHUB_API_URL="+gh.URL(), "ORCH_GITHUB_REPO=acme/app",
		"ORCH_GITHUB_WEBHOOK_SECRET="+hookSecret)
	if !strings.Contains(out.String(), "serving GitHub only") {
		t.Errorf("orch serve does not say it serves GitHub alone:\n%s", out.String())
	}
	deliver := func(event string, payload any) {
		t.Helper()
		resp, _, err := gh.Deliver(hook, hookSecret, event, payload)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("the %s delivery: %d", event, resp.StatusCode)
		}
	}
	completed := func(number, n int) func() bool {
		return func() bool {
			done := 0
			for _, c := range gh.Comments("acme", "app", number) {
				if c.Author == "orch" && strings.Contains(c.Body, "Completed") {
					done++
				}
			}
			return done >= n
		}
	}

	deliver("issue_comment", gh.IssueCommentPayload("acme", "app", gh.Say("acme", "app", issue, "ann", "@orch add a line to the log"), "created"))
	eventually(t, "the first run's pull request", func() bool { return completed(issue, 1)() && len(gh.Pulls("acme", "app")) == 1 }, out)
	pr := gh.Pulls("acme", "app")[0]
	first := gitT(t, origin, "rev-parse", pr.Head)

	review, comments := gh.Review("acme", "app", pr.Number, "ann", "CHANGES_REQUESTED", "",
		githubfake.Thread{Path: "log.txt", Line: 2, Body: "@orch log one more line per call"},
		githubfake.Thread{Path: "log.txt", Line: 2, Body: "Why is the run id logged?"})
	deliver("pull_request_review", gh.PullRequestReviewPayload("acme", "app", pr.Number, review, "submitted"))
	for _, c := range comments {
		deliver("pull_request_review_comment", gh.PullRequestReviewCommentPayload("acme", "app", pr.Number, c.ID, "created"))
	}
	var replies []githubfake.ReviewComment
	eventually(t, "a reply in each thread", func() bool {
		replies = replies[:0]
		for _, c := range gh.ReviewComments("acme", "app", pr.Number) {
			if c.Author == "orch" {
				replies = append(replies, c)
			}
		}
		return len(replies) == 2
	}, out)
	second := gitT(t, origin, "rev-parse", pr.Head)
	if got := gitT(t, origin, "rev-list", "--count", first+".."+second); got != "1" {
		t.Fatalf("the review's run put %s commits on the branch, want 1", got)
	}
	if replies[0].InReplyTo != comments[0].ID || !strings.Contains(replies[0].Body, "Addressed in "+second) ||
		replies[1].InReplyTo != comments[1].ID || !strings.Contains(replies[1].Body, "tells which run wrote the line") {
		t.Fatalf("the replies:\n%+v", replies)
	}

	check := gh.AddCheckRun("acme", "app", second, "test", "failure", githubfake.CheckOutput{Title: "1 test failed",
		Summary: "TestLog: want 3 lines"}, "##[group]Run go test ./...\n--- FAIL: TestLog (0.00s)\n    log_test.go:9: want 3 lines, got 2\nFAIL\n##[error]Process completed with exit code 1.\n")
	deliver("check_run", gh.CheckRunPayload("acme", "app", check, "completed"))
	eventually(t, "the fix run's commit", func() bool { return gitT(t, origin, "rev-parse", pr.Head) != second }, out)
	third := gitT(t, origin, "rev-parse", pr.Head)
	if gitT(t, origin, "rev-parse", third+"^") != second {
		t.Fatalf("the fix is not on top of the review's commit")
	}
	eventually(t, "the fix run's end in the pull request", completed(pr.Number, 2), out)
	green := gh.AddCheckRun("acme", "app", third, "test", "success", githubfake.CheckOutput{Title: "all passed"}, "ok\n")
	deliver("check_run", gh.CheckRunPayload("acme", "app", green, "completed"))
	time.Sleep(time.Second)
	if got := gitT(t, origin, "rev-parse", pr.Head); got != third || len(gh.Pulls("acme", "app")) != 1 {
		t.Fatalf("after a green check the branch moved to %s, or another pull request was opened (%d)", got, len(gh.Pulls("acme", "app")))
	}
	reads, writes := 0, 0
	for _, r := range gh.Requests() {
		if r.Method == http.MethodGet {
			reads++
		} else {
			writes++
		}
	}
	t.Logf("GitHub API calls, from the issue's comment to the green check: %d reads, %d writes", reads, writes)
}
