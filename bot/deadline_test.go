package bot

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/internal/httpdeadline/deadlinetest"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/jobs/store"
)

// A Slack that accepts the connection and never answers is an error naming it, after the configured deadline (short
// here), not a bot that waits forever at start; the default deadline is within a minute.
func TestSilentSlack(t *testing.T) {
	addr := deadlinetest.Silent(t)
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	var logs syncBuffer
	cfg := Config{SigningSecret: testSecret, BotToken: "xoxb-test", APIURL: "http://" + addr + "/api/", Workspace: t.TempDir(),
		Store: store.New(rdb, nil), Queue: queue.New(rdb), Starter: nopStarter{}, HTTPTimeout: 300 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(&logs, nil))}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a guard against a hang, not a bound
	defer cancel()
	err = srv.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), addr) || strings.Contains(err.Error(), "xoxb-test") {
		t.Fatalf("Start: %v, want an error naming %s", err, addr)
	}
	if ctx.Err() != nil {
		t.Fatal("the client's deadline did not end the call")
	}

	// A command's response_url is posted to with the same deadline; the log names its host, not its path.
	srv.talk.respond(ctx, "http://"+addr+"/commands/T0001/1234/response-secret", "done")
	if ctx.Err() != nil {
		t.Fatal("the client's deadline did not end the response_url post")
	}
	if l := logs.String(); !strings.Contains(l, "answering through response_url") || !strings.Contains(l, addr) || strings.Contains(l, "response-secret") {
		t.Errorf("log:\n%s\nwant the failed post, naming %s and not the URL's path", l, addr)
	}

	cfg.HTTPTimeout = 0
	if srv, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	if d := srv.cfg.HTTPTimeout; d <= 0 || d > time.Minute {
		t.Errorf("the default Web API deadline is %v, want within a minute", d)
	}
}
