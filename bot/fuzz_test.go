package bot

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/jobs/store"
)

// Every Slack endpoint, given any body — correctly signed, so that the parsers behind the signature check see it —
// answers with a status and never panics or hangs: a slash command's form, an interaction's payload and an event's
// JSON are all parsed from bytes an attacker with the secret, or a Slack bug, could send.
func FuzzSlackEndpoints(f *testing.F) {
	f.Add("/slack/commands", "command=%2Forch&text=run+plan.md&user_id=U1&channel_id=C1&response_url=http%3A%2F%2Fx")
	f.Add("/slack/commands", "text=abort+r-aaaaaaaaaa+because&user_id=U1")
	f.Add("/slack/interactions", `payload={"type":"block_actions","user":{"id":"U1"},"actions":[{"action_id":"orch_choose:A","value":"r-a|e1|choose|A"}]}`)
	f.Add("/slack/interactions", "payload=%7B%22type%22%3A%22view_submission%22%7D")
	f.Add("/slack/events", `{"type":"url_verification","challenge":"abc"}`)
	f.Add("/slack/events", `{"type":"event_callback","event_id":"Ev1","event":{"type":"message","channel":"C1","thread_ts":"1.2","user":"U1","text":"hi"}}`)
	f.Add("/slack/events", `{"type":"event_callback","event":{"type":"app_mention","text":"<!channel>"}}`)

	m := miniredis.RunT(f)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	f.Cleanup(func() { rdb.Close() })
	fake := slackfake.New()
	f.Cleanup(fake.Close)
	store := store.New(rdb, nil)
	srv, err := New(Config{SigningSecret: testSecret, BotToken: "xoxb-test", APIURL: fake.APIURL(), Workspace: f.TempDir(),
		Store: store, Queue: queue.New(rdb), Starter: nopStarter{}, MaxBody: 64 << 10,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		f.Fatal(err)
	}
	web := httptest.NewServer(srv.Handler())
	f.Cleanup(web.Close)
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	client := &http.Client{Timeout: 10 * time.Second}

	f.Fuzz(func(t *testing.T, path, body string) {
		switch path {
		case "/slack/commands", "/slack/interactions", "/slack/events":
		default:
			return
		}
		contentType := formType
		if path == "/slack/events" {
			contentType = jsonType
		}
		resp, err := client.Do(slackfake.Request(web.URL, path, testSecret, []byte(body), contentType))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 && !strings.Contains(string(data), "busy") {
			t.Fatalf("%s answered %d to %q: %s", path, resp.StatusCode, body, data)
		}
	})
}
