package bot

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/orchrun/orch/bot/mirror"
)

// Replays. verify accepts a signature while its timestamp is within five minutes of now, so a request captured on its
// way (a proxy's log, a debugging dump) would verify again for up to ten minutes. Slack never sends one signed request
// twice: slash commands and interactions are not retried, and a retried Events API delivery is signed anew with a
// timestamp of its own (docs.slack.dev/apis/events-api, "Retries": the same body, new X-Slack-Request-Timestamp and
// X-Slack-Signature, and X-Slack-Retry-Num). So a signature seen before is a replay, and the signatures seen are kept
// in the store, where every replica of the bot sees them.
//
// A replayed command or interaction gets 401, as a forged request does, and changes nothing. A replayed event gets 200
// and nothing is done for it: the delivery it repeats was handled (events are handled once by event_id anyway), and a
// non-2xx answer would only make Slack retry an event it had already delivered, were the replay ever Slack's own.
//
// When the store does not answer, a request is let through without the check, and that is logged: refusing would
// make every request fail while Redis is away, even those that need no store (help) and those that tell people to try
// again; and a replay let through then can change little, since starting, answering and aborting runs all need the
// store.
const (
	// replayTTL is how long a signature is remembered: the ten minutes it can verify, and a minute for clocks apart.
	replayTTL = 11 * time.Minute
	// replayCheckTimeout bounds the store's answer: the ack must reach Slack within its 3 seconds, and a store that
	// does not answer (its client dials again and again) must not hold every ack up. A store that answers at all
	// answers in a few milliseconds.
	replayCheckTimeout = 250 * time.Millisecond
)

// replays keeps the signed requests and Socket Mode envelopes seen, across the bot's replicas, so that one received
// before is not handled again (see above).
type replays struct {
	mirror *mirror.Mirror // where the keys seen are kept
	log    *slog.Logger
}

// seenOnce reports whether key (a request's signature, a Socket Mode envelope id) is seen for the first time across
// the bot's replicas, and returns unsee, which forgets it again for a request that was seen but not taken (refused as
// busy) and that its sender will send again as it was. When the store does not answer, the request counts as a first
// (see above).
func (p *replays) seenOnce(ctx context.Context, key string) (first bool, unsee func()) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), replayCheckTimeout)
	defer cancel()
	first, err := p.mirror.Once(ctx, key, replayTTL)
	if err != nil {
		p.log.Warn("the store does not answer; a Slack request is handled without checking whether it was received before",
			"err", err)
		return true, func() {}
	}
	return first, func() {
		ctx, cancel := context.WithTimeout(context.Background(), replayCheckTimeout)
		defer cancel()
		if err := p.mirror.Unsee(ctx, key); err != nil {
			p.log.Warn("forgetting a Slack request that was not taken", "err", err)
		}
	}
}

// replayKey is what marks a signed request as seen: its signature (verify matched it, so it is "v0=" and 64 hex
// digits, never longer).
func replayKey(signature string) string { return "sig:" + signature }

// envelopeKey marks a Socket Mode envelope as seen.
func envelopeKey(envelopeID string) string { return "envelope:" + envelopeID }

// statusRecorder remembers the status a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// notReplayed lets a verified request through to next once. A replay is answered as the package comment says; a
// request next answers with a server error (busy) is forgotten, so that the same request sent again is taken.
func (p *replays) notReplayed(w http.ResponseWriter, r *http.Request, body []byte, next func(http.ResponseWriter, *http.Request, []byte)) {
	first, unsee := p.seenOnce(r.Context(), replayKey(r.Header.Get("X-Slack-Signature")))
	if !first {
		if r.URL.Path == "/slack/events" {
			p.log.Info("a Slack event delivered again with the same signature; acknowledged, nothing done")
			w.WriteHeader(http.StatusOK)
			return
		}
		p.log.Warn("rejected a replayed Slack request", "path", r.URL.Path)
		http.Error(w, "request already received (replayed)", http.StatusUnauthorized)
		return
	}
	rec := &statusRecorder{ResponseWriter: w}
	next(rec, r, body)
	if rec.status >= http.StatusInternalServerError {
		unsee()
	}
}
