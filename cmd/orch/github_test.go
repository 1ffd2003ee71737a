package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/forge/githubfake"
)

const hookSecret = "It's a Secret to Everybody"

// A day on GitHub, through `orch serve`: a maintainer's "@orch …" in an issue starts a run on the repository orch
// serves; the issue gets one status comment, edited as the run goes, that ends with the branch and the draft pull
// request, which closes the issue when merged.
func TestGitHubIssueCommentToPullRequest(t *testing.T) {
	t.Parallel()
	dir, origin := githubWorkspace(t, `tasks:
  "1":
    - output: "Added a line to log.txt. All tests pass."
      sh: 'echo "$ORCH_RUN_ID" >> log.txt'
`)

	gh := githubfake.New("ghp_test")
	t.Cleanup(gh.Close)
	gh.AddGitRepo("acme", "app", origin)
	gh.SetPermission("acme", "app", "ann", "write")
	issue := gh.AddIssue("acme", "app", "Log every call", "We need a line per call in log.txt.", "ann")
	fake := slackfake.New()
	t.Cleanup(fake.Close)
	s := startServeIn(t, dir, fake, "ORCH_REDIS_URL="+isolatedRedis(t), "ORCH_SIM_SCENARIO="+filepath.Join(dir, "words.sim.yaml"),
		"ORCH_GIT_PUSH=origin", "ORCH_GITHUB_TOKEN=ghp_test", "GITHUB_TOKEN=", "ORCH_GITHUB_API_URL="+gh.URL(),
		"ORCH_GITHUB_REPO=acme/app", "ORCH_GITHUB_WEBHOOK_SECRET="+hookSecret, "ORCH_PUBLIC_URL=")
	if !strings.Contains(s.out.String(), "GitHub webhook on") {
		t.Fatalf("orch serve does not say it serves the webhook:\n%s", s.out.String())
	}

	c := gh.Say("acme", "app", issue, "ann", "@orch add a line to the log")
	resp, _, err := gh.Deliver(s.url+"/github/webhook", hookSecret, "issue_comment", gh.IssueCommentPayload("acme", "app", c, "created"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the delivery: %d", resp.StatusCode)
	}
	deadline := time.Now().Add(90 * time.Second)
	var status string
	for {
		var mine []githubfake.Comment
		for _, c := range gh.Comments("acme", "app", issue) {
			if c.Author == "orch" {
				mine = append(mine, c)
			}
		}
		if len(mine) > 0 {
			status = mine[0].Body
		}
		if strings.Contains(status, "Completed") {
			if len(mine) != 1 {
				t.Errorf("orch wrote %d comments, want its one status comment: %+v", len(mine), mine)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not complete on GitHub; the status comment:\n%s\norch:\n%s", status, s.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	pulls := gh.Pulls("acme", "app")
	if len(pulls) != 1 || !pulls[0].Draft || !strings.Contains(pulls[0].Body, "Closes #"+strconv.Itoa(issue)) {
		t.Fatalf("pull requests: %+v", pulls)
	}
	if !strings.Contains(status, "Draft pull request: "+gh.HTMLURL("acme", "app", pulls[0].Number)) ||
		!strings.Contains(status, "1 commit on `main`") {
		t.Errorf("the status comment does not end with the work:\n%s", status)
	}
	id := strings.TrimPrefix(pulls[0].Head, "orch/")
	if got := gitT(t, origin, "show", pulls[0].Head+":log.txt"); got != "base\n"+id {
		t.Errorf("the pushed branch holds %q", got)
	}
	if r := gh.Reactions("acme", "app", c.ID); len(r) != 1 || r[0] != "orch:eyes" {
		t.Errorf("the command's acknowledgement: %q", r)
	}
}

// githubWorkspace is a workspace for a day on GitHub: a repository with log.txt and the sim agent's scenario, and
// origin, a bare clone of it that GitHub holds and orch pushes to.
func githubWorkspace(t *testing.T, scenario string) (dir, origin string) {
	t.Helper()
	dir, origin = t.TempDir(), filepath.Join(t.TempDir(), "origin.git")
	gitT(t, dir, "init", "-q", "-b", "main")
	writeFile(t, dir, "log.txt", "base\n")
	writeFile(t, dir, "words.sim.yaml", scenario)
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "first")
	gitT(t, t.TempDir(), "clone", "-q", "--bare", dir, origin)
	gitT(t, dir, "remote", "add", "origin", origin)
	return dir, origin
}

// Serving GitHub without what it needs is a configuration error that says what to set, before anything is served.
func TestGitHubConfigurationErrors(t *testing.T) {
	t.Parallel()
	fake := slackfake.New()
	t.Cleanup(fake.Close)
	base := []string{"SLACK_BOT_TOKEN=xoxb-test", "SLACK_SIGNING_SECRET=" + testSecret, "SLACK_API_URL=" + fake.APIURL(),
		"ORCH_HTTP_ADDR=127.0.0.1:0", "ORCH_SANDBOX=local", "ORCH_AGENT=sim", "ORCH_GITHUB_WEBHOOK_SECRET=" + hookSecret}
	for name, c := range map[string]struct {
		env  []string
		want string
	}{
		"no token":      {nil, "no GitHub token is: set ORCH_GITHUB_TOKEN"},
		"no repository": {[]string{"ORCH_GITHUB_TOKEN=ghp_x"}, "set ORCH_GITHUB_REPO=owner/name"},
		"a bad name":    {[]string{"ORCH_GITHUB_TOKEN=ghp_x", "ORCH_GITHUB_REPO=acme"}, `ORCH_GITHUB_REPO "acme": want owner/name`},
		"a bad mention": {[]string{"ORCH_GITHUB_TOKEN=ghp_x", "ORCH_GITHUB_REPO=acme/app", "ORCH_GITHUB_MENTION=orch"}, "want @ and a login"},
		"a bad API URL": {[]string{"ORCH_GITHUB_TOKEN=ghp_x", "ORCH_GITHUB_API_URL=ftp://x"}, "ORCH_GITHUB_API_URL: ftp://x is not a URL"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			env := append(append(append([]string(nil), base...), "ORCH_WORKSPACE="+dir, "ORCH_STATE_DIR="+filepath.Join(dir, ".orch")), c.env...)
			must(t, orchEnv(t, dir, env, nil, "serve"), exitUsage, c.want)
		})
	}
}

// orch health checks that the token may write on the repository orch serves, and says whether the webhook can be
// verified.
func TestHealthChecksGitHub(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	gh := githubfake.New("ghp_test")
	t.Cleanup(gh.Close)
	gh.AddRepo("acme", "app")
	env := func(more ...string) []string {
		return append([]string{"ORCH_GITHUB_API_URL=" + gh.URL(), "ORCH_GITHUB_REPO=acme/app"}, more...)
	}
	must(t, orchEnv(t, dir, nil, nil, "health", "--agent", "sim"), 0, "github", "ORCH_GITHUB_TOKEN not set")
	must(t, orchEnv(t, dir, env("ORCH_GITHUB_TOKEN=ghp_test", "ORCH_GITHUB_WEBHOOK_SECRET=s"), nil, "health", "--agent", "sim"), 0,
		"the token may write on acme/app; webhook secret set")
	must(t, orchEnv(t, dir, env("ORCH_GITHUB_WEBHOOK_SECRET=s"), nil, "health", "--agent", "sim"), 1,
		"no token (ORCH_GITHUB_TOKEN)", "unhealthy: github")
	must(t, orchEnv(t, dir, env("ORCH_GITHUB_TOKEN=ghp_wrong"), nil, "health", "--agent", "sim"), 1,
		"did not accept the token", "unhealthy: github")
	// As a GitHub App: its installation on the repository, and a key that is the App's.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemFile := filepath.Join(t.TempDir(), "app.pem")
	writeFile(t, filepath.Dir(pemFile), "app.pem", string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY",
		Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	gh.AddApp(99, &key.PublicKey)
	app := env("ORCH_GITHUB_APP_ID=99", "ORCH_GITHUB_APP_PRIVATE_KEY="+pemFile)
	must(t, orchEnv(t, dir, app, nil, "health", "--agent", "sim"), 1, "GitHub App 99 is not installed on acme/app")
	gh.Install(99, "acme", "app")
	must(t, orchEnv(t, dir, app, nil, "health", "--agent", "sim"), 0, "GitHub App 99 installed on acme/app")
	must(t, orchEnv(t, dir, env("ORCH_GITHUB_APP_ID=99"), nil, "health", "--agent", "sim"), 1,
		"ORCH_GITHUB_APP_PRIVATE_KEY is not")

	gh.ReadOnly("acme", "app")
	must(t, orchEnv(t, dir, env("ORCH_GITHUB_TOKEN=ghp_test"), nil, "health", "--agent", "sim"), 1,
		"may read acme/app but not write on it", "unhealthy: github")
}
