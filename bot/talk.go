package bot

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/bot/mirror"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/internal/workpool"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// talk is how the work after an ack talks back to Slack: answers through a request's response_url, messages only one
// person sees, links to runs' threads, deliveries seen before; and who may be answered at all. The commands, the
// answers and the conversations hold the same one.
type talk struct {
	api     *slack.Client
	http    *http.Client // the Web API's client, which response_url posts use too
	log     *slog.Logger
	store   *store.Store // where refusals are audited
	mirror  *mirror.Mirror
	jobs    *workpool.Pool // refusals are audited after the ack
	allowed mirror.Allowlist
	// botID is the bot's own user id (auth.test), to ignore its messages: set by Server.Start, before anything is
	// served.
	botID string
}

// Texts a person reads when nothing could be done for them.
const (
	// unavailableText is what a person hears when orch cannot reach its store: nothing changed, and trying again later
	// is the thing to do.
	unavailableText = "orch cannot reach its store (Redis) right now, so nothing was changed: try again in a moment."
	notAllowedText  = "You are not allowed to answer here (ORCH_ALLOWED_USERS)."
)

// maxReplyText bounds every answer the bot gives a person (an ack, a response_url answer, an ephemeral message):
// each echo of what they sent is bounded where it is made, and this is the last line should one be missed.
const maxReplyText = 4000

// replyText is an answer's text within maxReplyText.
func replyText(text string) string { return safetext.Bound(text, maxReplyText) }

// reply writes a response Slack shows to the requester only.
func reply(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"response_type": "ephemeral", "text": replyText(text)})
}

// respond sends a delayed ephemeral answer through a request's response_url.
func (t *talk) respond(ctx context.Context, responseURL, text string) {
	if responseURL == "" {
		return
	}
	err := slack.PostWebhookCustomHTTPContext(ctx, responseURL, t.http, &slack.WebhookMessage{Text: replyText(text), ResponseType: "ephemeral"})
	if err != nil {
		// A response_url answers for its command without a token: its path is left out of the log.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		host := ""
		if u, perr := url.Parse(responseURL); perr == nil {
			host = u.Host
		}
		t.log.Warn("answering through response_url", "host", host, "err", err)
	}
}

// respondMessage sends a delayed ephemeral answer with blocks through a request's response_url; the text is what
// notifications show.
func (t *talk) respondMessage(ctx context.Context, responseURL string, m blocks.Message) {
	if responseURL == "" {
		return
	}
	err := slack.PostWebhookContext(ctx, responseURL, &slack.WebhookMessage{Text: replyText(m.Text),
		Blocks: &slack.Blocks{BlockSet: m.Blocks}, ResponseType: "ephemeral"})
	if err != nil {
		t.log.Warn("answering through response_url", "err", err)
	}
}

// responder answers a slash command through its response_url.
func (t *talk) responder(responseURL string) func(context.Context, string) {
	return func(ctx context.Context, text string) { t.respond(ctx, responseURL, text) }
}

// ephemeral shows text to user alone, in the thread threadTS of channel ("" for the channel itself): where they wrote
// what it answers.
func (t *talk) ephemeral(ctx context.Context, channel, threadTS, user, text string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	opts := []slack.MsgOption{slack.MsgOptionText(replyText(text), false)}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	if _, err := t.api.PostEphemeralContext(ctx, channel, user, opts...); err != nil {
		t.log.Warn("posting an ephemeral message", "err", err)
	}
}

// say posts m in the thread threadTS of channel ("" for the channel itself), for everyone there to read.
func (t *talk) say(ctx context.Context, channel, threadTS string, m blocks.Message) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	opts := []slack.MsgOption{slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...)}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	_, _, err := t.api.PostMessageContext(ctx, channel, opts...)
	return err
}

// maxRefusalDetail bounds what of a refused request its audit keeps.
const maxRefusalDetail = 200

// refused audits an attempt by someone not in ORCH_ALLOWED_USERS. The detail (what they typed) is bounded: the audit
// records the attempt, not whatever it carried.
func (t *talk) refused(user, what, detail string) {
	t.log.Warn("refused a Slack user", "user", user, "action", what)
	detail = blocks.Kept(detail, maxRefusalDetail)
	_ = t.jobs.Submit(func(ctx context.Context) {
		err := t.store.AuditOutsideRuns(ctx, jobs.AuditEntry{Action: "refused", Detail: what + ": " + detail, By: user, Via: "slack"})
		if err != nil {
			t.log.Warn("auditing a refusal", "err", err)
		}
	})
}

// onceTTL is how long a delivery of Slack's is remembered as seen: Slack retries for far less.
const onceTTL = 24 * time.Hour

// once reports whether key (a delivery: an event, a message) is seen for the first time (within a day).
func (t *talk) once(ctx context.Context, key string) (bool, error) {
	return t.mirror.Once(ctx, key, onceTTL)
}

// threadLinks are the links to runs' threads, by run id ("" for a run that has none yet).
func (t *talk) threadLinks(ctx context.Context, runs []*jobs.Run) (map[string]string, error) {
	links := make(map[string]string, len(runs))
	for _, r := range runs {
		link, err := t.mirror.RunThread(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		links[r.ID] = link
	}
	return links, nil
}
