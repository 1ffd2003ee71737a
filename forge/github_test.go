package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/forge/githubfake"
	"github.com/orchrun/orch/internal/httpdeadline"
	"github.com/orchrun/orch/internal/httpdeadline/deadlinetest"
)

const token = "ghp_test0123456789secret"

// newFake is a fake GitHub with the repository acme/app: main, and the run's branch one commit ahead.
func newFake(t *testing.T) *githubfake.GitHub {
	t.Helper()
	gh := githubfake.New(token)
	t.Cleanup(gh.Close)
	gh.AddRepo("acme", "app")
	gh.Push("acme", "app", "main", "1111111111111111111111111111111111111111")
	gh.Push("acme", "app", "orch/r-1", "2222222222222222222222222222222222222222")
	return gh
}

func newClient(t *testing.T, gh *githubfake.GitHub, tok string) *GitHub {
	t.Helper()
	g, err := NewGitHub(tok, gh.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

var draft = PullRequest{Owner: "acme", Repo: "app", Head: "orch/r-1", Base: "main", Title: "orch: Add login", Body: "Run `r-1`."}

func TestOpenDraftCreatesADraft(t *testing.T) {
	gh := newFake(t)
	u, err := newClient(t, gh, token).OpenDraft(context.Background(), draft)
	if err != nil {
		t.Fatal(err)
	}
	if want := gh.HTMLURL("acme", "app", 1); u != want {
		t.Errorf("url = %q, want %q", u, want)
	}
	pulls := gh.Pulls("acme", "app")
	want := githubfake.PullRequest{Number: 1, Title: draft.Title, Body: draft.Body, Head: "orch/r-1", Base: "main", State: "open", Draft: true}
	if len(pulls) != 1 || pulls[0] != want {
		t.Fatalf("pulls = %+v, want [%+v]", pulls, want)
	}

	reqs := gh.Requests()
	if len(reqs) != 2 || reqs[0].Method != "GET" || reqs[1].Method != "POST" {
		t.Fatalf("requests = %+v, want a lookup then a creation", reqs)
	}
	for _, r := range reqs {
		if r.Authorization != "Bearer "+token {
			t.Errorf("%s %s: Authorization = %q", r.Method, r.Path, r.Authorization)
		}
		if !strings.HasPrefix(r.Path, "/api/v3/repos/acme/app/pulls") {
			t.Errorf("%s %s: not under the enterprise base URL", r.Method, r.Path)
		}
		if r.APIVersion == "" {
			t.Errorf("%s %s: no X-GitHub-Api-Version", r.Method, r.Path)
		}
	}
	if q := reqs[0].Query; q.Get("head") != "acme:orch/r-1" || q.Get("base") != "main" || q.Get("state") != "open" {
		t.Errorf("lookup query = %v", q)
	}
	var sent map[string]any
	if err := json.Unmarshal(reqs[1].Body, &sent); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"head": "orch/r-1", "base": "main", "title": draft.Title, "body": draft.Body, "draft": true} {
		if sent[k] != v {
			t.Errorf("sent %s = %v, want %v", k, sent[k], v)
		}
	}
}

func TestOpenDraftAgainUpdates(t *testing.T) {
	gh := newFake(t)
	g := newClient(t, gh, token)
	first, err := g.OpenDraft(context.Background(), draft)
	if err != nil {
		t.Fatal(err)
	}
	again := draft
	again.Title, again.Body = "orch: Add login (resumed)", "Run `r-1`, with more done."
	second, err := g.OpenDraft(context.Background(), again)
	if err != nil {
		t.Fatal(err)
	}
	if second != first {
		t.Errorf("second url = %q, want the first, %q", second, first)
	}
	pulls := gh.Pulls("acme", "app")
	if len(pulls) != 1 || pulls[0].Title != again.Title || pulls[0].Body != again.Body || !pulls[0].Draft {
		t.Fatalf("pulls = %+v, want one draft with the new title and body", pulls)
	}
	reqs := gh.Requests()
	if last := reqs[len(reqs)-1]; last.Method != "PATCH" || last.Path != "/api/v3/repos/acme/app/pulls/1" {
		t.Errorf("last request = %s %s, want PATCH of #1", last.Method, last.Path)
	}
	var sent map[string]any
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &sent); err != nil {
		t.Fatal(err)
	}
	if _, ok := sent["base"]; ok || sent["title"] != again.Title || sent["body"] != again.Body {
		t.Errorf("PATCH sent %v, want title and body only", sent)
	}
}

func TestOpenDraftLeavesOtherPullRequestsAlone(t *testing.T) {
	gh := newFake(t)
	gh.Push("acme", "app", "release", "3333333333333333333333333333333333333333")
	g := newClient(t, gh, token)
	// The same head into another base, and a closed one from the same head into the same base: neither is the run's
	// open pull request.
	other := draft
	other.Base, other.Title = "release", "into release"
	if _, err := g.OpenDraft(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	closed := draft
	closed.Title = "closed"
	if _, err := g.OpenDraft(context.Background(), closed); err != nil {
		t.Fatal(err)
	}
	gh.ClosePull("acme", "app", 2)

	u, err := g.OpenDraft(context.Background(), draft)
	if err != nil {
		t.Fatal(err)
	}
	if want := gh.HTMLURL("acme", "app", 3); u != want {
		t.Errorf("url = %q, want a new pull request, %q", u, want)
	}
	pulls := gh.Pulls("acme", "app")
	if len(pulls) != 3 || pulls[0].Title != "into release" || pulls[1].Title != "closed" || pulls[1].State != "closed" ||
		pulls[2].Title != draft.Title || !pulls[2].Draft {
		t.Errorf("pulls = %+v", pulls)
	}
}

// openedMeanwhile opens the same pull request just before the client's own creation reaches GitHub, as another
// delivery of the same job would.
type openedMeanwhile struct {
	inner http.RoundTripper
	done  bool
}

func (o *openedMeanwhile) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == "POST" && !o.done {
		o.done = true
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		dup := r.Clone(r.Context())
		dup.Body = io.NopCloser(bytes.NewReader(body))
		resp, err := o.inner.RoundTrip(dup)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
	}
	return o.inner.RoundTrip(r)
}

func TestOpenDraftOpenedMeanwhile(t *testing.T) {
	gh := newFake(t)
	g, err := NewGitHub(token, gh.URL(), &http.Client{Transport: &openedMeanwhile{inner: http.DefaultTransport}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := g.OpenDraft(context.Background(), draft)
	if err != nil {
		t.Fatal(err)
	}
	if pulls := gh.Pulls("acme", "app"); len(pulls) != 1 || u != gh.HTMLURL("acme", "app", 1) {
		t.Errorf("pulls = %+v, url %q: want the one opened meanwhile", pulls, u)
	}
}

func TestOpenDraftErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(gh *githubfake.GitHub, pr *PullRequest, tok *string)
		want  []string
	}{
		{"bad token", func(gh *githubfake.GitHub, pr *PullRequest, tok *string) { *tok = "ghp_wrong0123456789" },
			[]string{"did not accept the token", "401 Bad credentials", `"Pull requests: write"`, `"Contents: read"`}},
		{"no repository", func(gh *githubfake.GitHub, pr *PullRequest, tok *string) { pr.Repo = "nope" },
			[]string{"no repository acme/nope that this token can see", "404 Not Found", "given access"}},
		{"read-only token", func(gh *githubfake.GitHub, pr *PullRequest, tok *string) { gh.ReadOnly("acme", "app") },
			[]string{"opening a draft pull request", "403 Resource not accessible by personal access token",
				"may not open pull requests on acme/app", `"Pull requests: write"`, `"Contents: read"`}},
		{"branch not pushed", func(gh *githubfake.GitHub, pr *PullRequest, tok *string) { pr.Head = "orch/r-2" },
			[]string{"422 Validation Failed", "head invalid", "the branch orch/r-2 is not on GitHub: push it first"}},
		{"no such base", func(gh *githubfake.GitHub, pr *PullRequest, tok *string) { pr.Base = "develop" },
			[]string{"422 Validation Failed", "acme/app has no branch develop"}},
		{"nothing to merge", func(gh *githubfake.GitHub, pr *PullRequest, tok *string) {
			gh.Push("acme", "app", "orch/r-1", "1111111111111111111111111111111111111111")
		}, []string{"422 Validation Failed", "No commits between main and orch/r-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := newFake(t)
			pr, tok := draft, token
			tc.setup(gh, &pr, &tok)
			_, err := newClient(t, gh, tok).OpenDraft(context.Background(), pr)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), tok) || strings.Contains(err.Error(), token) {
				t.Errorf("error %q holds the token", err)
			}
			var rl *RateLimitError
			if errors.As(err, &rl) {
				t.Errorf("error %q is a rate limit", err)
			}
			if n := len(gh.Pulls("acme", "app")); n != 0 {
				t.Errorf("%d pull requests opened", n)
			}
		})
	}
}

func TestOpenDraftRateLimits(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	t.Run("primary", func(t *testing.T) {
		gh := newFake(t)
		reset := now.Add(20 * time.Minute)
		gh.RateLimit(reset)
		g := newClient(t, gh, token)
		g.now = func() time.Time { return now }
		start := time.Now()
		_, err := g.OpenDraft(context.Background(), draft)
		var rl *RateLimitError
		if !errors.As(err, &rl) {
			t.Fatalf("error %v, want a *RateLimitError", err)
		}
		if !rl.RetryAt.Equal(reset) || rl.Secondary {
			t.Errorf("RetryAt %v secondary %v, want %v primary", rl.RetryAt, rl.Secondary, reset)
		}
		if !strings.Contains(err.Error(), "retry after 2026-03-01T12:20:00Z") || strings.Contains(err.Error(), token) {
			t.Errorf("error %q", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("OpenDraft waited %v for the rate limit", d)
		}
	})

	t.Run("secondary", func(t *testing.T) {
		gh := newFake(t)
		gh.SecondaryRateLimit(90)
		g := newClient(t, gh, token)
		g.now = func() time.Time { return now }
		_, err := g.OpenDraft(context.Background(), draft)
		var rl *RateLimitError
		if !errors.As(err, &rl) {
			t.Fatalf("error %v, want a *RateLimitError", err)
		}
		if want := now.Add(90 * time.Second); !rl.RetryAt.Equal(want) || !rl.Secondary {
			t.Errorf("RetryAt %v secondary %v, want %v secondary", rl.RetryAt, rl.Secondary, want)
		}
		if !strings.Contains(err.Error(), "secondary rate limit") || !strings.Contains(err.Error(), "retry after 2026-03-01T12:01:30Z") {
			t.Errorf("error %q", err)
		}
	})
}

func TestOpenDraftBoundsWhatItSends(t *testing.T) {
	gh := newFake(t)
	pr := draft
	pr.Title = strings.Repeat("long title ", 50)
	pr.Body = strings.Repeat("é", MaxBody) // twice MaxBody in bytes
	if _, err := newClient(t, gh, token).OpenDraft(context.Background(), pr); err != nil {
		t.Fatal(err)
	}
	p := gh.Pulls("acme", "app")[0]
	if len(p.Body) > MaxBody || !strings.Contains(p.Body, "The rest is cut") {
		t.Errorf("body of %d bytes, ending %q", len(p.Body), p.Body[max(0, len(p.Body)-100):])
	}
	if n := len([]rune(p.Title)); n > MaxTitle {
		t.Errorf("title of %d characters", n)
	}
}

func TestOpenDraftNeedsItsFields(t *testing.T) {
	gh := newFake(t)
	g := newClient(t, gh, token)
	for _, pr := range []PullRequest{
		{Repo: "app", Head: "h", Base: "b", Title: "t"},
		{Owner: "acme", Head: "h", Base: "b", Title: "t"},
		{Owner: "acme", Repo: "app", Base: "b", Title: "t"},
		{Owner: "acme", Repo: "app", Head: "h", Title: "t"},
		{Owner: "acme", Repo: "app", Head: "h", Base: "b", Title: " \n"},
	} {
		if _, err := g.OpenDraft(context.Background(), pr); err == nil {
			t.Errorf("OpenDraft(%+v): no error", pr)
		}
	}
	if n := len(gh.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestNewGitHub(t *testing.T) {
	for _, tc := range []struct {
		token, apiURL, base string // base "": an error
	}{
		{token, "", "https://api.github.com/"},
		{token, "https://api.github.com/", "https://api.github.com/"},
		{token, "https://ghe.example.com", "https://ghe.example.com/api/v3/"},
		{token, "https://ghe.example.com/api/v3", "https://ghe.example.com/api/v3/"},
		{"", "", ""},
		{"  ", "", ""},
		{token, "ghe.example.com", ""},
		{token, "ftp://ghe.example.com", ""},
		{token, "https://someone:" + token + "@ghe.example.com", ""},
	} {
		g, err := NewGitHub(tc.token, tc.apiURL, nil)
		switch {
		case tc.base == "" && err == nil:
			t.Errorf("NewGitHub(%q, %q): no error", tc.token, tc.apiURL)
		case tc.base == "" && strings.Contains(err.Error(), token):
			t.Errorf("NewGitHub(%q, %q): error %q holds the token", tc.token, tc.apiURL, err)
		case tc.base != "" && err != nil:
			t.Errorf("NewGitHub(%q, %q): %v", tc.token, tc.apiURL, err)
		case tc.base != "" && g.client.BaseURL() != tc.base:
			t.Errorf("NewGitHub(%q, %q): base URL %q, want %q", tc.token, tc.apiURL, g.client.BaseURL(), tc.base)
		}
	}
}

func TestOpenDraftUnreachable(t *testing.T) {
	gh := newFake(t)
	g := newClient(t, gh, token)
	gh.Close()
	_, err := g.OpenDraft(context.Background(), draft)
	if err == nil || !strings.Contains(err.Error(), "GitHub could not be reached") || strings.Contains(err.Error(), token) {
		t.Errorf("error %v", err)
	}
}

func TestOpenDraftHonoursContext(t *testing.T) {
	gh := newFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newClient(t, gh, token).OpenDraft(ctx, draft)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if n := len(gh.Pulls("acme", "app")); n != 0 {
		t.Errorf("%d pull requests opened", n)
	}
}

// A GitHub that accepts the connection and never answers is an error naming it, after the client's deadline: the
// one given here (short, for the test), or the default, which is within a minute.
func TestOpenDraftSilentGitHub(t *testing.T) {
	addr := deadlinetest.Silent(t)
	g, err := NewGitHub(token, "http://"+addr, httpdeadline.Client(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a guard against a hang, not a bound
	defer cancel()
	_, err = g.OpenDraft(ctx, draft)
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "GitHub") || strings.Contains(err.Error(), token) {
		t.Fatalf("error %v, want one naming GitHub at %s, without the token", err, addr)
	}
	if ctx.Err() != nil {
		t.Fatal("the client's deadline did not end the call")
	}

	g, err = NewGitHub(token, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := g.client.Client().Timeout; d <= 0 || d > time.Minute {
		t.Errorf("the default client's timeout is %v, want within a minute", d)
	}
}
