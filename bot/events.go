package bot

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/slack-go/slack/slackevents"
)

// handleEvent answers url_verification at once and acks event callbacks, handling them after.
func (s *Server) handleEvent(w http.ResponseWriter, r *http.Request, body []byte) {
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	if ev.Type == slackevents.URLVerification {
		var c slackevents.EventsAPIURLVerificationEvent
		if err := json.Unmarshal(body, &c); err != nil {
			http.Error(w, "bad challenge", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(c.Challenge))
		return
	}
	if err := s.event(ev); err != nil {
		// Slack retries an event that is not acked in time; a busy bot says so with a 503 and gets it again later.
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// event queues the work of an event callback. A delivery Slack retries (same event_id) is processed once.
func (s *Server) event(ev slackevents.EventsAPIEvent) error {
	if ev.Type != slackevents.CallbackEvent {
		return nil
	}
	outer, ok := ev.Data.(*slackevents.EventsAPICallbackEvent)
	if !ok {
		return nil
	}
	var m message
	mentioned := false
	switch in := ev.InnerEvent.Data.(type) {
	case *slackevents.MessageEvent:
		if in.BotID != "" || in.SubType != "" && in.SubType != "thread_broadcast" {
			return nil // the bot's own messages, edits, joins…
		}
		m = message{User: in.User, Text: in.Text, Channel: in.Channel, TS: in.TimeStamp, ThreadTS: in.ThreadTimeStamp}
		// Slack sends a message that mentions the bot twice, as message and as app_mention, in either order: both are
		// handled as the mention, and whichever comes first counts (firstTime).
		mentioned = s.conversations.mentions(in.Text)
	case *slackevents.AppMentionEvent:
		if in.BotID != "" {
			return nil
		}
		m = message{User: in.User, Text: in.Text, Channel: in.Channel, TS: in.TimeStamp, ThreadTS: in.ThreadTimeStamp}
		mentioned = true
	case *slackevents.AppHomeOpenedEvent:
		if in.Tab != "home" {
			return nil // the Messages tab
		}
		return s.jobs.Submit(func(ctx context.Context) { s.homeOpened(ctx, outer.EventID, in.User) })
	default:
		return nil
	}
	if mentioned {
		return s.jobs.Submit(func(ctx context.Context) { s.conversations.mentioned(ctx, outer.EventID, m) })
	}
	if !m.inThread() {
		return nil // only replies in a run's thread mean something to orch
	}
	return s.jobs.Submit(func(ctx context.Context) { s.conversations.reply(ctx, outer.EventID, m) })
}

// homeOpened publishes the Home of someone who just opened it, and keeps it up to date for a while. A retried
// delivery of the same event is handled once.
func (s *Server) homeOpened(ctx context.Context, eventID, user string) {
	if user == "" || user == s.talk.botID {
		return
	}
	if eventID != "" {
		if first, err := s.talk.once(ctx, "event:"+eventID); err != nil || !first {
			return
		}
	}
	if err := s.mirror.HomeOpened(ctx, user); err != nil {
		s.log.Warn("publishing a Home tab", "user", user, "err", err)
	}
}

// message is a human's message in a channel or a thread.
type message struct {
	User, Text, Channel, TS, ThreadTS string
}

// inThread reports whether m is a reply in a thread (not the thread's parent, nor a message outside any thread).
func (m message) inThread() bool { return m.ThreadTS != "" && m.ThreadTS != m.TS }

// unescapeSlack undoes the escaping Slack applies to what people write (docs.slack.dev/messaging/formatting-message-text,
// "Escaping text": &, < and > arrive as &amp;, &lt; and &gt;), so that an agent reads "a < b && c" as it was typed.
// Slack's own markup (<@U123>, <https://…|…>) is left as it is.
func unescapeSlack(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	return slackUnescaper.Replace(s)
}

var slackUnescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")
