package forge

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchrun/orch/forge/githubfake"
)

// An installation token serves every request, concurrent ones too, until it nears its expiry; then one new token is
// minted. A key that is not an RSA key in PEM is refused before anything is sent.
func TestInstallationTokenLifetime(t *testing.T) {
	gh := githubfake.New("ghp_unused")
	defer gh.Close()
	gh.AddRepo("acme", "app")
	n := gh.AddIssue("acme", "app", "Bug", "", "ann")
	key, file := appKey(t)
	gh.AddApp(7, &key.PublicKey)
	inst := gh.Install(7, "acme", "app")

	k, err := readAppKey(file)
	if err != nil {
		t.Fatal(err)
	}
	rest, err := restBase(gh.URL())
	if err != nil {
		t.Fatal(err)
	}
	base := http.DefaultTransport
	app := &appTransport{base: base, key: k, id: 7, now: time.Now}
	var mu sync.Mutex
	clock := time.Now()
	itr := newInstallationTransport(base, app, rest, inst)
	itr.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	c, err := newGitHub(gh.URL(), &http.Client{Transport: itr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	read := func() {
		t.Helper()
		if _, err := c.ReadIssue(ctx, Repo{"acme", "app"}, n, 0); err != nil {
			t.Fatalf("reading as the installation: %v", err)
		}
	}
	mints := func() (n int) {
		for _, r := range gh.Requests() {
			if strings.HasSuffix(r.Path, "/access_tokens") {
				n++
			}
		}
		return n
	}

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(read)
	}
	wg.Wait()
	read()
	if got := mints(); got != 1 {
		t.Fatalf("9 requests within the token's hour minted %d tokens, want 1", got)
	}
	// The fake's tokens last an hour: 56 minutes on, the token is within the margin and is replaced. (The fake's new
	// token expires an hour after the fake's own clock, which did not move: only one request is made this late.)
	mu.Lock()
	clock = clock.Add(56 * time.Minute)
	mu.Unlock()
	read()
	if got := mints(); got != 2 {
		t.Errorf("near its expiry the token was minted %d times in all, want 2", got)
	}

	for _, bad := range []string{"not a key", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"} {
		f := t.TempDir() + "/k.pem"
		if err := os.WriteFile(f, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readAppKey(f); err == nil {
			t.Errorf("readAppKey(%q) took it", bad)
		}
	}
}
