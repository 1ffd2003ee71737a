package bot

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// handleInteraction acks a click at once; the resolution happens after.
func (s *Server) handleInteraction(w http.ResponseWriter, r *http.Request, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
		http.Error(w, "bad payload", http.StatusBadRequest)
		return
	}
	if cb.Type == slack.InteractionTypeViewSubmission {
		s.handleSubmission(w, r, cb) // its errors must be in the response
		return
	}
	if err := s.interaction(cb); err != nil {
		reply(w, err.Error())
		return
	}
	w.WriteHeader(http.StatusOK)
}

// interaction queues the work of a block_actions callback. Other kinds are acknowledged and ignored.
func (s *Server) interaction(cb slack.InteractionCallback) error {
	if cb.Type == slack.InteractionTypeMessageAction && cb.CallbackID == ShortcutDoMessage {
		return s.jobs.submit(func(ctx context.Context) { s.doMessage(ctx, cb) })
	}
	if cb.Type != slack.InteractionTypeBlockActions {
		return nil
	}
	for _, a := range cb.ActionCallback.BlockActions {
		act, err := blocks.DecodeAction(a.ActionID, a.Value)
		if err != nil {
			s.log.Warn("ignoring a click orch did not make", "action_id", a.ActionID, "err", err)
			continue
		}
		user, responseURL := cb.User.ID, cb.ResponseURL
		if act.Kind == blocks.KindAnswer {
			if err := s.answerClick(cb, act, user); err != nil {
				return err
			}
			continue
		}
		if cb.Container.Type == "view" && cb.View.Type == slack.VTHomeTab {
			// A button on someone's Home: no channel, no message, no response_url; the view says where it is, in two
			// places that must agree.
			viewID := cb.Container.ViewID
			if cb.View.ID != viewID {
				viewID = ""
			}
			if err := s.jobs.submit(func(ctx context.Context) { s.homeClick(ctx, act, user, viewID) }); err != nil {
				return err
			}
			continue
		}
		channel, thread, ts := clickedMessage(cb)
		if err := s.jobs.submit(func(ctx context.Context) { s.click(ctx, act, user, channel, thread, ts, responseURL) }); err != nil {
			return err
		}
	}
	return nil
}

// doesNotMatchText answers a click whose button is not the question's, or names a question there is no record of.
const doesNotMatchText = "That button does not match the question on record."

// clickedMessage is where the message a button sits on is: its channel, its thread, its ts.
func clickedMessage(cb slack.InteractionCallback) (channel, thread, ts string) {
	channel, thread, ts = cmp.Or(cb.Channel.ID, cb.Container.ChannelID), cmp.Or(cb.Container.ThreadTs, cb.Message.ThreadTimestamp),
		cb.Container.MessageTs
	return channel, thread, ts
}

// click resolves an escalation from a button. The button's value is only a claim: the run and escalation are
// checked against the store, the option against the stored options, and the same atomic path as the terminal
// decides which answer wins.
func (s *Server) click(ctx context.Context, act blocks.ActionValue, user, channel, thread, ts, responseURL string) {
	if !s.clickAllowed(ctx, act, user, channel, thread, ts, responseURL) {
		return
	}
	if text := s.resolveClick(ctx, act, user); text != "" {
		s.respond(ctx, responseURL, text)
	}
}

// resolveClick resolves an escalation from a button whose place was checked (a thread message, a Home), and returns
// what to tell the person who clicked: "" when the poster's update of the question says it all.
func (s *Server) resolveClick(ctx context.Context, act blocks.ActionValue, user string) string {
	if !s.allowed(user) {
		s.refused(user, "answer", fmt.Sprintf("run %s escalation %s", act.RunID, act.EscalationID))
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
	_, _, err := escalation.Resolve(ctx, s.cfg.Store, s.cfg.Queue, req)
	switch {
	case err == nil:
		// The poster sees the resolution event and updates the message for everyone.
		return ""
	case errors.Is(err, escalation.ErrAlreadyResolved), errors.Is(err, escalation.ErrNoOpenEscalation):
		return "Already answered: " + err.Error()
	case errors.Is(err, escalation.ErrInvalid), errors.Is(err, jobs.ErrRunNotFound):
		s.log.Warn("a click that does not match the stored escalation", "run_id", act.RunID, "escalation", act.EscalationID, "err", err)
		return "That button does not match the question on record: " + err.Error()
	default:
		s.log.Error("resolving from Slack", "run_id", act.RunID, "err", err)
		return unavailableText
	}
}

// clickAllowed checks a click before anything is done for it, and tells the clicker when it is refused. The button must
// sit on the message orch posted for that very question (a value copied onto another message, or forged, does not
// answer anything), and the clicker must be allowed to answer.
func (s *Server) clickAllowed(ctx context.Context, act blocks.ActionValue, user, channel, thread, ts, responseURL string) bool {
	ok, err := s.poster.messageOf(ctx, act.RunID, act.EscalationID, channel, thread, ts)
	if err != nil {
		s.log.Warn("checking a click", "run_id", act.RunID, "err", err)
		s.respond(ctx, responseURL, unavailableText)
		return false
	}
	if !ok {
		s.log.Warn("a click whose message is not the question's", "run_id", act.RunID, "escalation", act.EscalationID)
		s.respond(ctx, responseURL, doesNotMatchText)
		return false
	}
	if !s.allowed(user) {
		s.refused(user, "answer", fmt.Sprintf("run %s escalation %s", act.RunID, act.EscalationID))
		s.respond(ctx, responseURL, notAllowedText)
		return false
	}
	return true
}

// ShortcutDoMessage is the callback id of the message shortcut "Ask orch to do this" (deploy/slack-app-manifest.yaml).
const ShortcutDoMessage = "orch_do_message"

// doMessage starts a run whose task is a message someone chose with the shortcut, as a mention of the bot in it would
// (the thread as context; a follow-up in the thread of a run that ended). Its answers go to the person through the
// shortcut's response_url.
func (s *Server) doMessage(ctx context.Context, cb slack.InteractionCallback) {
	tell := func(ctx context.Context, text string) { s.respond(ctx, cb.ResponseURL, text) }
	msg := cb.Message
	m := message{User: msg.User, Text: s.withoutMention(msg.Text), Channel: cb.Channel.ID, TS: cmp.Or(msg.Timestamp, cb.MessageTs),
		ThreadTS: msg.ThreadTimestamp}
	s.request(ctx, m, cb.User.ID, tell, func(run *jobs.Run) {
		tell(ctx, blocks.StillGoingReply(run.ID))
	})
}
