package hub

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/forge"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
	"github.com/orchrun/orch/jobs/store"
	"gopkg.in/yaml.v3"
)

const secret = "It's a Secret to Everybody"

type noQueue struct{}

func (noQueue) Resume(context.Context, string, string) error { return nil }

// noStarter fails the test if a run is started.
type noStarter struct{ t *testing.T }

func (s noStarter) Start(context.Context, StartRequest) (*jobs.Run, error) {
	s.t.Error("a run was started")
	return nil, fmt.Errorf("no runs here")
}

// webhook is a server whose GitHub is a closed loopback port: a delivery that made orch call GitHub would fail there,
// and none of these should.
func webhook(t *testing.T) map[string]*httptest.Server {
	out := map[string]*httptest.Server{}
	for name, c := range jobstest.Clients(t) {
		gh, err := forge.NewGitHub("t0ken", fmt.Sprintf("http://127.0.0.1:%d/", jobstest.FreePort(t)), nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{Secret: secret, Store: store.New(c, nil), Queue: noQueue{}, GitHub: gh, Starter: noStarter{t}})
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(func() {
			srv.Close()
			s.Shutdown(context.Background())
		})
		out[name] = srv
	}
	return out
}

func deliver(t *testing.T, url, event, signature string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/github/webhook", bytes.NewReader(body))
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	req.Header.Set("Content-Type", "application/json")
	if signature != "" {
		req.Header.Set(SignatureHeader, signature)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func signed(body []byte) string { return "sha256=" + hex.EncodeToString(Sign(secret, body)) }

// A delivery is verified before anything else: a forged one is 401, whatever it is; a signed ping is answered; a
// delivery seen before changes nothing; an event orch does not handle, or a comment that is no command, is taken and
// does nothing; a payload that does not parse is 400.
func TestWebhookVerifiesThenRoutes(t *testing.T) {
	for name, srv := range webhook(t) {
		t.Run(name, func(t *testing.T) {
			ping := []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`)
			if code, _ := deliver(t, srv.URL, "ping", "", ping); code != http.StatusUnauthorized {
				t.Errorf("unsigned ping: %d", code)
			}
			if code, _ := deliver(t, srv.URL, "ping", "sha256="+strings.Repeat("0", 64), ping); code != http.StatusUnauthorized {
				t.Errorf("forged ping: %d", code)
			}
			if code, body := deliver(t, srv.URL, "ping", signed(ping), ping); code != http.StatusOK || !strings.Contains(body, "pong") {
				t.Errorf("ping: %d %q", code, body)
			}
			// Each test's deliveries are its own (GitHub's ids are unique): a store shared with another test has not
			// seen them.
			nonce := time.Now().UnixNano()
			comment := []byte(`{"action":"created","issue":{"number":3},"comment":{"id":` + fmt.Sprint(nonce) + `,"body":"looks good to me",` +
				`"user":{"login":"ann","type":"User"}},"repository":{"name":"api","owner":{"login":"acme"}},` +
				`"sender":{"login":"ann","type":"User"}}`)
			if code, body := deliver(t, srv.URL, "issue_comment", signed(comment), comment); code != http.StatusAccepted || !strings.Contains(body, "nothing") {
				t.Errorf("a comment that is no command: %d %q", code, body)
			}
			if code, body := deliver(t, srv.URL, "issue_comment", signed(comment), comment); code != http.StatusOK || !strings.Contains(body, "already") {
				t.Errorf("the same delivery again: %d %q", code, body)
			}
			bot := bytes.Replace(comment, []byte(`"looks good to me","user":{"login":"ann","type":"User"}`),
				[]byte(`"@orch abort","user":{"login":"ci[bot]","type":"Bot"}`), 1)
			if code, body := deliver(t, srv.URL, "issue_comment", signed(bot), bot); code != http.StatusAccepted || !strings.Contains(body, "nothing") {
				t.Errorf("a bot's command: %d %q", code, body)
			}
			star := []byte(`{"action":"created","starred_at":"2026-11-28T10:00:00Z","nonce":` + fmt.Sprint(nonce) + `}`)
			if code, _ := deliver(t, srv.URL, "star", signed(star), star); code != http.StatusAccepted {
				t.Errorf("an event orch does not handle: %d", code)
			}
			bad := []byte(`{"action": 7, "nonce": ` + fmt.Sprint(nonce) + `}`)
			if code, _ := deliver(t, srv.URL, "issue_comment", signed(bad), bad); code != http.StatusBadRequest {
				t.Errorf("a payload that does not parse: %d", code)
			}
		})
	}
}

func TestNewRefusesNoSecret(t *testing.T) {
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "ORCH_GITHUB_WEBHOOK_SECRET") {
		t.Fatalf("New without a secret: %v", err)
	}
}

// The App's manifest subscribes to the events orch acts on, no fewer and no more.
func TestManifestSubscribesToWhatOrchHandles(t *testing.T) {
	data, err := os.ReadFile("../deploy/github-app-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Events      []string          `yaml:"default_events"`
		Permissions map[string]string `yaml:"default_permissions"`
	}
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	got, want := slices.Sorted(slices.Values(m.Events)), slices.Sorted(slices.Values(Events))
	if !slices.Equal(got, want) {
		t.Errorf("the manifest subscribes to %v; orch handles %v", got, want)
	}
	if m.Permissions["issues"] != "write" || m.Permissions["pull_requests"] != "write" || m.Permissions["contents"] != "read" ||
		m.Permissions["checks"] != "read" || m.Permissions["actions"] != "read" {
		t.Errorf("permissions %v", m.Permissions)
	}
}
