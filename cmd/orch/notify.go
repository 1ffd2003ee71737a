package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"time"

	"github.com/orchrun/orch/internal/httpdeadline"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// notifier tells the person who started a terminal run that it needs them, or is over, when they may not be
// watching: a desktop notification (notify-send on a Linux desktop, osascript on macOS) and, for headless runs, a
// Slack incoming webhook (ORCH_NOTIFY_WEBHOOK). Failing to notify is logged, never fatal.
type notifier struct {
	desktop bool
	webhook string
	log     *slog.Logger
	client  *http.Client
}

// webhookTimeout bounds one post to the webhook: a notification is worth a few seconds, not a stuck run.
const webhookTimeout = 5 * time.Second

// notifyAfter is how long a question waits at the prompt before orch taps the person on the shoulder.
const notifyAfter = 30 * time.Second

// longRun is how long a run must have lasted for its end to be worth a notification.
const longRun = time.Minute

func (a *app) notifier(h *humanFlags) *notifier {
	if h.noNotify {
		return nil
	}
	n := &notifier{webhook: a.env("ORCH_NOTIFY_WEBHOOK"), log: a.log, client: httpdeadline.Client(webhookTimeout)}
	switch runtime.GOOS {
	case "darwin":
		n.desktop = true
	case "linux":
		// A desktop session is there to show it; a server, a container or CI has none.
		n.desktop = a.env("DISPLAY") != "" || a.env("WAYLAND_DISPLAY") != ""
	}
	if !n.desktop && n.webhook == "" {
		return nil
	}
	return n
}

// notify sends title and body everywhere it is configured to.
func (n *notifier) notify(ctx context.Context, title, body string) {
	if n == nil {
		return
	}
	if n.desktop {
		if err := n.desktopNotify(ctx, title, body); err != nil {
			n.log.Warn("desktop notification", "err", err)
		}
	}
	if n.webhook != "" {
		if err := n.post(ctx, title+": "+body); err != nil {
			n.log.Warn("notification webhook", "err", err)
		}
	}
}

func (n *notifier) desktopNotify(ctx context.Context, title, body string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	if runtime.GOOS == "darwin" {
		script := fmt.Sprintf("display notification %q with title %q", body, title)
		cmd = exec.CommandContext(ctx, "osascript", "-e", script)
	} else {
		path, err := exec.LookPath("notify-send")
		if err != nil {
			return nil // no notifier installed: nothing to do, nothing to report
		}
		cmd = exec.CommandContext(ctx, path, "--app-name=orch", title, body)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// post sends a Slack incoming-webhook message.
func (n *notifier) post(ctx context.Context, text string) error {
	data, _ := json.Marshal(map[string]string{"text": text})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.webhook, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.client.Do(req)
	if err != nil {
		// The webhook's URL is its credential: the error names its host only.
		var ue *url.Error
		if errors.As(err, &ue) {
			if ue.Timeout() {
				return fmt.Errorf("the webhook at %s did not answer in time: %w", req.URL.Host, ue.Err)
			}
			return fmt.Errorf("the webhook at %s could not be reached: %w", req.URL.Host, ue.Err)
		}
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the webhook answered %s", resp.Status)
	}
	return nil
}

// ended tells of a run that stopped in this process: parked for a human, paused, or over after a long time.
func (n *notifier) ended(ctx context.Context, run *jobs.Run) {
	if n == nil || run == nil {
		return
	}
	switch {
	case run.Status == jobs.RunParked:
		q := "a human is needed"
		if e := run.OpenEscalation(); e != nil {
			q = safetext.OneLine(safetext.HeadLine(e.Question), 300)
		}
		n.notify(ctx, "orch: run "+run.ID+" needs you", q+" — answer with: orch resume "+run.ID)
	case run.Status == jobs.RunPaused:
		n.notify(ctx, "orch: run "+run.ID+" paused", run.Reason)
	case run.Status.Terminal() && run.Duration(time.Now()) >= longRun:
		n.notify(ctx, "orch: run "+run.ID+" "+string(run.Status), run.PlanTitle)
	}
}
