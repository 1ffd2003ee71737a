package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
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
