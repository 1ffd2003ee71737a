package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/bot/mirror"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// answers answers questions from Slack: a click on a question's button (in its thread or on someone's Home), the
// answer form (opened from Answer…, and submitted), and a reply in the run's thread. Each checks what the click, form
// or reply claims against the store and the mirror's record of the question's message, and escalation.Resolve decides,
// atomically, which answer wins.
type answers struct {
	talk   *talk
	store  *store.Store
	queue  escalation.Enqueuer
	mirror *mirror.Mirror
	api    *slack.Client // the answer form opens with views.open
	log    *slog.Logger
}

// doesNotMatchText answers a click whose button is not the question's, or names a question there is no record of.
const doesNotMatchText = "That button does not match the question on record."

// click resolves an escalation from a button. The button's value is only a claim: the run and escalation are
// checked against the store, the option against the stored options, and the same atomic path as the terminal
// decides which answer wins.
func (a *answers) click(ctx context.Context, act blocks.ActionValue, user, channel, thread, ts, responseURL string) {
	if !a.clickAllowed(ctx, act, user, channel, thread, ts, responseURL) {
		return
	}
	if text := a.resolveClick(ctx, act, user); text != "" {
		a.talk.respond(ctx, responseURL, text)
	}
}

// resolveClick resolves an escalation from a button whose place was checked (a thread message, a Home), and returns
// what to tell the person who clicked: "" when the poster's update of the question says it all.
func (a *answers) resolveClick(ctx context.Context, act blocks.ActionValue, user string) string {
	if !a.talk.allowed.Allows(user) {
		a.talk.refused(user, "answer", fmt.Sprintf("run %s escalation %s", act.RunID, act.EscalationID))
		return notAllowedText
	}
	req := escalation.Request{RunID: act.RunID, EscalationID: act.EscalationID, By: user, Via: "slack"}
	switch act.Kind {
	case blocks.KindChoose:
		req.Type, req.Key = jobs.ResolveChoose, act.Key
	case blocks.KindRetry:
		req.Type = jobs.ResolveRetry
	case blocks.KindAbort:
		req.Type, req.Reason = jobs.ResolveAbort, "aborted from Slack"
	default:
		return ""
	}
	_, _, err := escalation.Resolve(ctx, a.store, a.queue, req)
	switch {
	case err == nil:
		// The poster sees the resolution event and updates the message for everyone.
		return ""
	case errors.Is(err, escalation.ErrAlreadyResolved), errors.Is(err, escalation.ErrNoOpenEscalation):
		return "Already answered: " + err.Error()
	case errors.Is(err, escalation.ErrInvalid), errors.Is(err, jobs.ErrRunNotFound):
		a.log.Warn("a click that does not match the stored escalation", "run_id", act.RunID, "escalation", act.EscalationID, "err", err)
		return "That button does not match the question on record: " + err.Error()
	default:
		a.log.Error("resolving from Slack", "run_id", act.RunID, "err", err)
		return unavailableText
	}
}

// clickAllowed checks a click before anything is done for it, and tells the clicker when it is refused. The button must
// sit on the message orch posted for that very question (a value copied onto another message, or forged, does not
// answer anything), and the clicker must be allowed to answer.
func (a *answers) clickAllowed(ctx context.Context, act blocks.ActionValue, user, channel, thread, ts, responseURL string) bool {
	ok, err := a.mirror.IsQuestionMessage(ctx, act.RunID, act.EscalationID, channel, thread, ts)
	if err != nil {
		a.log.Warn("checking a click", "run_id", act.RunID, "err", err)
		a.talk.respond(ctx, responseURL, unavailableText)
		return false
	}
	if !ok {
		a.log.Warn("a click whose message is not the question's", "run_id", act.RunID, "escalation", act.EscalationID)
		a.talk.respond(ctx, responseURL, doesNotMatchText)
		return false
	}
	if !a.talk.allowed.Allows(user) {
		a.talk.refused(user, "answer", fmt.Sprintf("run %s escalation %s", act.RunID, act.EscalationID))
		a.talk.respond(ctx, responseURL, notAllowedText)
		return false
	}
	return true
}

// threadReply handles a person's message in run runID's thread.
func (a *answers) threadReply(ctx context.Context, m message, runID string) {
	text := strings.TrimSpace(unescapeSlack(m.Text))
	if text == "" {
		return
	}
	if !a.talk.allowed.Allows(m.User) {
		a.talk.refused(m.User, "answer", "run "+runID)
		a.talk.ephemeral(ctx, m.Channel, m.ThreadTS, m.User, notAllowedText)
		return
	}
	run, err := a.store.Get(ctx, runID)
	if err != nil {
		return
	}
	e := run.OpenEscalation()
	if e == nil {
		if t := run.Current(); t != nil && t.Kind == jobs.KindChat && run.Status == jobs.RunRunning {
			a.talk.ephemeral(ctx, m.Channel, m.ThreadTS, m.User, "The agent is still working on its reply; answer it once it has replied.")
		}
		return // conversation in the thread, not an answer
	}
	a.answer(ctx, m, escalation.Request{RunID: runID, EscalationID: e.ID, Type: jobs.ResolveAnswer, Text: text,
		By: m.User, Via: "slack"})
}

// answer resolves a question from a thread reply, telling the person what went wrong when it did not.
func (a *answers) answer(ctx context.Context, m message, req escalation.Request) {
	_, _, err := escalation.Resolve(ctx, a.store, a.queue, req)
	switch {
	case errors.Is(err, escalation.ErrInvalid):
		a.talk.ephemeral(ctx, m.Channel, m.ThreadTS, m.User, err.Error())
	case err != nil && !errors.Is(err, escalation.ErrAlreadyResolved) && !errors.Is(err, escalation.ErrNoOpenEscalation):
		a.log.Error("answering from a thread reply", "run_id", req.RunID, "err", err)
		a.talk.ephemeral(ctx, m.Channel, m.ThreadTS, m.User, unavailableText)
	}
}
