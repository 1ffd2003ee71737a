package bot

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/bot/blocks"
)

// handleInteraction acks a click at once; the resolution happens after. A form's submission is answered when it is
// resolved: only that answer can show what is wrong in the form.
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

// interaction queues the work of a block_actions callback, and of the message shortcut. Other kinds are acknowledged
// and ignored.
func (s *Server) interaction(cb slack.InteractionCallback) error {
	if cb.Type == slack.InteractionTypeMessageAction && cb.CallbackID == ShortcutDoMessage {
		return s.jobs.Submit(func(ctx context.Context) { s.conversations.doMessage(ctx, cb) })
	}
	if cb.Type != slack.InteractionTypeBlockActions {
		return nil
	}
	for _, a := range cb.ActionCallback.BlockActions {
		if a.ActionID == blocks.ActionPage {
			continue // a link: Slack opened it in the browser, and the click asks nothing of orch
		}
		act, err := blocks.DecodeAction(a.ActionID, a.Value)
		if err != nil {
			s.log.Warn("ignoring a click orch did not make", "action_id", a.ActionID, "err", err)
			continue
		}
		user, responseURL := cb.User.ID, cb.ResponseURL
		var job func(context.Context)
		switch {
		case act.Kind == blocks.KindAnswer:
			// Opening a form has a deadline (its trigger's 3 s): it has workers of its own.
			if err := s.urgent.Submit(s.answers.formOpener(cb, act)); err != nil {
				return err
			}
			continue
		case cb.Container.Type == "view" && cb.View.Type == slack.VTHomeTab:
			// A button on someone's Home: no channel, no message, no response_url.
			viewID := clickedView(cb)
			job = func(ctx context.Context) { s.answers.homeClick(ctx, act, user, viewID) }
		default:
			channel, thread, ts := clickedMessage(cb)
			job = func(ctx context.Context) { s.answers.click(ctx, act, user, channel, thread, ts, responseURL) }
		}
		if err := s.jobs.Submit(job); err != nil {
			return err
		}
	}
	return nil
}

// clickedMessage is where the message a button sits on is: its channel, its thread, its ts.
func clickedMessage(cb slack.InteractionCallback) (channel, thread, ts string) {
	channel, thread, ts = cmp.Or(cb.Channel.ID, cb.Container.ChannelID), cmp.Or(cb.Container.ThreadTs, cb.Message.ThreadTimestamp),
		cb.Container.MessageTs
	return channel, thread, ts
}

// clickedView is the view a button sits on, as a click from a view says in two places that must agree ("" when they
// do not).
func clickedView(cb slack.InteractionCallback) string {
	if cb.View.ID != cb.Container.ViewID {
		return ""
	}
	return cb.Container.ViewID
}
