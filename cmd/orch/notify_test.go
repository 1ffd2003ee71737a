package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchrun/orch/internal/httpdeadline"
	"github.com/orchrun/orch/internal/httpdeadline/deadlinetest"
)

// A terminal run that parks with nobody to answer taps its person on the shoulder: a desktop notification where a
// desktop runs, and the incoming webhook when one is set. --no-notify turns both off; a failing notifier is logged,
// and the run still ends as it would.
func TestNotifyWhenParked(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	bin := t.TempDir()
	sent := filepath.Join(t.TempDir(), "notify-send.args")
	os.WriteFile(filepath.Join(bin, "notify-send"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" >> "+sent+"\n"), 0o755)
	var mu sync.Mutex
	var hooks []string
	status := http.StatusOK
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		mu.Lock()
		hooks = append(hooks, string(data))
		code := status
		mu.Unlock()
		w.WriteHeader(code)
	}))
	defer hook.Close()
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "DISPLAY=:99", "ORCH_NOTIFY_WEBHOOK=" + hook.URL}

	r := orchEnv(t, dir, env, nil, "run", "--agent", "sim", "examples/plans/ambiguous_task.md")
	must(t, r, 3)
	id := runID(t, r)
	args, _ := os.ReadFile(sent)
	if !strings.Contains(string(args), "orch: run "+id+" needs you") || !strings.Contains(string(args), "caching") {
		t.Fatalf("desktop notification: %q", args)
	}
	mu.Lock()
	if len(hooks) != 1 || !strings.Contains(hooks[0], `"text":"orch: run `+id+` needs you`) {
		t.Fatalf("webhook: %q", hooks)
	}
	status = http.StatusInternalServerError
	mu.Unlock()

	os.Remove(sent)
	r = orchEnv(t, dir, env, nil, "run", "--agent", "sim", "--no-notify", "examples/plans/ambiguous_task.md")
	must(t, r, 3)
	if _, err := os.Stat(sent); err == nil {
		t.Fatal("--no-notify still notified the desktop")
	}
	mu.Lock()
	if len(hooks) != 1 {
		t.Fatalf("--no-notify still posted to the webhook: %q", hooks)
	}
	mu.Unlock()

	// The webhook fails: logged, not fatal.
	r = orchEnv(t, dir, env, nil, "run", "--agent", "sim", "examples/plans/ambiguous_task.md")
	must(t, r, 3, "notification webhook", "500")
}

// A webhook that accepts the connection and never answers is an error naming its host, never its URL (the URL is
// the credential), after the client's deadline: a short one here, the default within a minute.
func TestNotifyWebhookThatNeverAnswers(t *testing.T) {
	addr := deadlinetest.Silent(t)
	secret := "/services/T0000/B0000/notify-secret-path"
	n := &notifier{webhook: "http://" + addr + secret, log: slog.New(slog.DiscardHandler), client: httpdeadline.Client(300 * time.Millisecond)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a guard against a hang, not a bound
	defer cancel()
	err := n.post(ctx, "orch: run r-1 needs you")
	if err == nil || !strings.Contains(err.Error(), addr) || strings.Contains(err.Error(), "notify-secret-path") {
		t.Fatalf("error %v, want one naming %s and not the URL's path", err, addr)
	}
	if ctx.Err() != nil {
		t.Fatal("the client's deadline did not end the call")
	}

	a := newApp(nil, io.Discard, io.Discard)
	a.env = func(k string) string {
		if k == "ORCH_NOTIFY_WEBHOOK" {
			return "http://" + addr + secret
		}
		return ""
	}
	if d := a.notifier(&humanFlags{}).client.Timeout; d <= 0 || d > time.Minute {
		t.Errorf("the webhook's default deadline is %v, want within a minute", d)
	}
}
