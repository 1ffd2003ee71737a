package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"
	"github.com/spf13/cobra"

	"github.com/orchrun/orch/bot"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs/store"
)

// A service (orch serve, bot, worker, web) takes its HTTP address first and serves it from then on: while it waits
// for what it needs to start (Redis, Slack's auth.test), /healthz answers 503 and says what it waits for, and every
// other path 503 as well (Slack retries a request that got one); once started, the service's own handler.
type front struct {
	srv     *http.Server
	handler atomic.Pointer[http.Handler]
	waiting atomic.Pointer[string]
}

// serveFront starts serving ln: what the service waits for until use gives it its handler.
func serveFront(ln net.Listener) *front {
	f := &front{}
	f.wait("starting")
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 5 * time.Second}
	go f.srv.Serve(ln)
	return f
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := f.handler.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Retry-After", "5")
	http.Error(w, "orch is not serving yet: "+*f.waiting.Load(), http.StatusServiceUnavailable)
}

// wait says what the service waits for.
func (f *front) wait(what string) { f.waiting.Store(&what) }

// use serves h from now on.
func (f *front) use(h http.Handler) { f.handler.Store(&h) }

// shutdown stops serving: requests in flight finish within timeout.
func (f *front) shutdown(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return f.srv.Shutdown(ctx)
}

// errStoppedWaiting ends a service stopped (SIGINT, SIGTERM) while it waited to start: a clean exit.
var errStoppedWaiting = errors.New("stopped while waiting to start")

// waitsForStore names the commands that wait for Redis at start instead of exiting: services, which an orchestrator
// (systemd, Kubernetes, compose) would otherwise restart in a loop while Redis starts or fails over.
var waitsForStore = map[string]bool{"serve": true, "bot": true, "worker": true, "web": true}

// startWait is how long a service waits between its tries to reach Redis or Slack at start: doubling from the first,
// up to the last.
var startWait = [2]time.Duration{time.Second, 30 * time.Second}

// awaitBackend opens the store like backend, and for a service whose Redis does not answer yet, waits for it: a line
// in the log and on the terminal once, again every few minutes, the front's health saying so, until Redis answers or
// the service is stopped.
func (a *app) awaitBackend(cmd *cobra.Command, f *front) (*store.Backend, error) {
	limit, lerr := a.startTimeout()
	if lerr != nil {
		return nil, lerr
	}
	b, err := a.backend(cmd)
	if err == nil || !errors.Is(err, store.ErrRedisUnavailable) || !waitsForStore[cmd.Name()] {
		return b, err
	}
	since, delay, said := time.Now(), startWait[0], time.Time{}
	for errors.Is(err, store.ErrRedisUnavailable) {
		if limit > 0 && time.Since(since)+delay > limit {
			return nil, fmt.Errorf("%w (waited %s, ORCH_START_TIMEOUT)", err, time.Since(since).Round(time.Millisecond))
		}
		what := fmt.Sprintf("waiting for Redis since %s: %s", since.UTC().Format(time.RFC3339), a.secrets.scrub(err.Error()))
		f.wait(what)
		if time.Since(said) >= 5*time.Minute {
			a.log.Warn("Redis does not answer; waiting for it before starting", "err", err, "waited", time.Since(since).Round(time.Second))
			if said.IsZero() {
				fmt.Fprintf(a.stderr, "orch: %v; waiting for it (stop with Ctrl-C)\n", err)
			}
			said = time.Now()
		}
		select {
		case <-cmd.Context().Done():
			fmt.Fprintln(a.stderr, "orch: stopped before Redis answered")
			return nil, errStoppedWaiting
		case <-time.After(delay):
		}
		delay = min(2*delay, startWait[1])
		b, err = a.backend(cmd)
	}
	if err == nil {
		a.log.Info("Redis answers; starting", "waited", time.Since(since).Round(time.Millisecond))
		fmt.Fprintf(a.stderr, "orch: Redis answers after %s; starting\n", time.Since(since).Round(time.Second))
	}
	return b, err
}

// awaitSlack starts the bot, waiting while Slack does not answer (a network down, Slack's own trouble, a rate limit):
// only Slack's refusal of the token (invalid_auth, token_revoked…) or of the app's set-up ends the service.
func (a *app) awaitSlack(ctx context.Context, srv *bot.Server, f *front) error {
	limit, err := a.startTimeout()
	if err != nil {
		return err
	}
	since, delay, said := time.Now(), startWait[0], time.Time{}
	for {
		err := srv.Start(ctx)
		if err == nil {
			if !said.IsZero() {
				a.log.Info("Slack answers; starting", "waited", time.Since(since).Round(time.Millisecond))
			}
			return nil
		}
		if !slackTransient(err) {
			return withCode(exitUsage, err)
		}
		if limit > 0 && time.Since(since)+delay > limit {
			return withCode(exitUsage, fmt.Errorf("%w (waited %s, ORCH_START_TIMEOUT)", err, time.Since(since).Round(time.Millisecond)))
		}
		f.wait(fmt.Sprintf("waiting for Slack since %s: %s", since.UTC().Format(time.RFC3339), a.secrets.scrub(err.Error())))
		if time.Since(said) >= 5*time.Minute {
			a.log.Warn("Slack does not answer auth.test; waiting for it before starting", "err", err,
				"waited", time.Since(since).Round(time.Second))
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			fmt.Fprintln(a.stderr, "orch: stopped before Slack answered")
			return errStoppedWaiting
		case <-time.After(delay):
		}
		delay = min(2*delay, startWait[1])
	}
}

// slackTransient reports whether a failed Slack call may go through later as it is: the network, Slack's servers or
// its rate limit, not what Slack says of the token or the app (https://docs.slack.dev/reference/methods/auth.test,
// "Errors": request_timeout, fatal_error and internal_error are Slack's own; the rest are the caller's).
func slackTransient(err error) bool {
	var rl *slack.RateLimitedError
	var sc slack.StatusCodeError
	var se slack.SlackErrorResponse
	var ne net.Error
	switch {
	case errors.As(err, &rl):
		return true
	case errors.As(err, &sc):
		return sc.Code >= 500 || sc.Code == http.StatusTooManyRequests
	case errors.As(err, &se):
		switch se.Err {
		case "request_timeout", "fatal_error", "internal_error", "service_unavailable", "ratelimited":
			return true
		}
		return false
	case errors.As(err, &ne):
		return true
	}
	return false
}

// startTimeout is how long a service waits for Redis and Slack at start before it gives up (ORCH_START_TIMEOUT; 0, the
// default, waits as long as it takes).
func (a *app) startTimeout() (time.Duration, error) {
	v := strings.TrimSpace(a.env("ORCH_START_TIMEOUT"))
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, usageErr("ORCH_START_TIMEOUT: %q: want a duration, e.g. 2m (0 waits as long as it takes)", safetext.OneLine(v, 40))
	}
	return d, nil
}
