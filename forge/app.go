package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v92/github"

	"github.com/orchrun/orch/internal/httpdeadline"
)

// App is a GitHub App orch acts as: its id, and the path of its private key (PEM), as GitHub gives them when the App
// is registered.
type App struct {
	ID      int64
	KeyFile string
}

// NewGitHubApp is a client that acts as app's installation on repo, the way teams deploy orch across an
// organisation: no person's token, permissions the App's manifest names, tokens that expire within the hour. It finds
// the installation as the App (a JWT signed with its key), then mints installation tokens and refreshes them before
// they expire (appauth.go).
// apiURL and base are as for NewGitHub (base nil: bounded timeouts).
func NewGitHubApp(ctx context.Context, app App, apiURL string, repo Repo, base http.RoundTripper) (*GitHub, error) {
	if app.ID <= 0 || app.KeyFile == "" {
		return nil, errors.New("a GitHub App needs its id (ORCH_GITHUB_APP_ID) and its private key's path (ORCH_GITHUB_APP_PRIVATE_KEY)")
	}
	rest, err := restBase(apiURL)
	if err != nil {
		return nil, err
	}
	if base == nil {
		base = httpdeadline.Client(defaultTimeout).Transport
	}
	key, err := readAppKey(app.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("the GitHub App's private key (ORCH_GITHUB_APP_PRIVATE_KEY): %w", err)
	}
	atr := &appTransport{base: base, key: key, id: app.ID, now: time.Now}
	asApp, err := newGitHub(apiURL, &http.Client{Transport: atr, Timeout: defaultTimeout}, nil)
	if err != nil {
		return nil, err
	}
	inst, _, err := asApp.client.Apps.GetRepositoryInstallation(ctx, repo.Owner, repo.Name)
	if err != nil {
		return nil, asApp.explainWith(fmt.Sprintf("finding GitHub App %d's installation on %s", app.ID, repo),
			appRefusal(app, repo), err)
	}
	itr := newInstallationTransport(base, atr, rest, inst.GetID())
	return newGitHub(apiURL, &http.Client{Transport: itr, Timeout: defaultTimeout}, nil)
}

// restBase is the REST API's root: scheme, host and, for GitHub Enterprise, /api/v3.
func restBase(apiURL string) (string, error) {
	if apiURL == "" || apiURL == DefaultAPIURL {
		return strings.TrimSuffix(DefaultAPIURL, "/"), nil
	}
	u, err := checkAPIURL(apiURL)
	if err != nil {
		return "", err
	}
	root := strings.TrimSuffix(u.String(), "/")
	if !strings.HasSuffix(root, "/api/v3") {
		root += "/api/v3"
	}
	return root, nil
}

// appRefusal says why GitHub refused the App, and what to do.
func appRefusal(app App, repo Repo) func(*github.ErrorResponse) string {
	return func(er *github.ErrorResponse) string {
		said := fmt.Sprintf("%d %s", er.Response.StatusCode, oneLine(er.Message))
		switch er.Response.StatusCode {
		case http.StatusUnauthorized:
			return fmt.Sprintf("GitHub did not accept the App's signed token (%s): check ORCH_GITHUB_APP_ID (%d) and that "+
				"ORCH_GITHUB_APP_PRIVATE_KEY is that App's key, and this machine's clock", said, app.ID)
		case http.StatusNotFound:
			return fmt.Sprintf("GitHub App %d is not installed on %s (%s): install it on the repository", app.ID, repo, said)
		}
		return "GitHub answered " + said
	}
}
