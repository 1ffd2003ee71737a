package forge

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchrun/orch/forge/githubfake"
)

// appKey makes an App's key pair and writes its private key where GitHub's download would put it.
func appKey(t *testing.T) (*rsa.PrivateKey, string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "orch.private-key.pem")
	data := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return k, file
}

// As a GitHub App, orch finds its installation on the repository, mints an installation token and acts with it; an
// App that is not installed, or a key that is not the App's, is an error that says what to do.
func TestGitHubApp(t *testing.T) {
	gh := githubfake.New("ghp_unused")
	defer gh.Close()
	gh.AddRepo("acme", "app")
	gh.AddRepo("acme", "other")
	n := gh.AddIssue("acme", "app", "Bug", "", "ann")
	key, file := appKey(t)
	gh.AddApp(123, &key.PublicKey)
	gh.Install(123, "acme", "app")
	ctx := context.Background()

	c, err := NewGitHubApp(ctx, App{ID: 123, KeyFile: file}, gh.URL(), Repo{"acme", "app"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Comment(ctx, Repo{"acme", "app"}, n, "On it."); err != nil {
		t.Fatalf("commenting as the installation: %v", err)
	}
	reqs := gh.Requests()
	last := reqs[len(reqs)-1]
	if !strings.HasPrefix(last.Authorization, "token ghs_") {
		t.Errorf("the comment was not made with an installation token: %q", last.Authorization)
	}
	// The installation reaches its repositories only.
	if _, err := c.ReadIssue(ctx, Repo{"acme", "other"}, 1, 0); !Gone(err) {
		t.Errorf("a repository the App is not installed on: %v", err)
	}

	if _, err := NewGitHubApp(ctx, App{ID: 123, KeyFile: file}, gh.URL(), Repo{"acme", "other"}, nil); err == nil ||
		!strings.Contains(err.Error(), "GitHub App 123 is not installed on acme/other") {
		t.Errorf("an App not installed on the repository: %v", err)
	}
	_, other := appKey(t)
	if _, err := NewGitHubApp(ctx, App{ID: 123, KeyFile: other}, gh.URL(), Repo{"acme", "app"}, nil); err == nil ||
		!strings.Contains(err.Error(), "did not accept the App's signed token") {
		t.Errorf("another key: %v", err)
	}
	if _, err := NewGitHubApp(ctx, App{ID: 123, KeyFile: filepath.Join(t.TempDir(), "none.pem")}, gh.URL(), Repo{"acme", "app"}, nil); err == nil ||
		!strings.Contains(err.Error(), "ORCH_GITHUB_APP_PRIVATE_KEY") {
		t.Errorf("no key file: %v", err)
	}
	if _, err := NewGitHubApp(ctx, App{}, gh.URL(), Repo{"acme", "app"}, nil); err == nil || !strings.Contains(err.Error(), "ORCH_GITHUB_APP_ID") {
		t.Errorf("no App: %v", err)
	}
}
