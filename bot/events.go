package bot

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
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
	switch in := ev.InnerEvent.Data.(type) {
	case *slackevents.MessageEvent:
		if in.BotID != "" || in.SubType != "" && in.SubType != "thread_broadcast" {
			return nil // the bot's own messages, edits, joins…
		}
		m = message{User: in.User, Text: in.Text, Channel: in.Channel, TS: in.TimeStamp, ThreadTS: in.ThreadTimeStamp}
	case *slackevents.AppMentionEvent:
		m = message{User: in.User, Text: mention.ReplaceAllString(in.Text, ""), Channel: in.Channel, TS: in.TimeStamp,
			ThreadTS: in.ThreadTimeStamp}
	case *slackevents.AppHomeOpenedEvent:
		if in.Tab != "home" {
			return nil // the Messages tab
		}
		return s.jobs.submit(func(ctx context.Context) { s.homeOpened(ctx, outer.EventID, in.User) })
	default:
		return nil
	}
	if m.ThreadTS == "" || m.ThreadTS == m.TS {
		return nil // only replies in a run's thread mean something to orch
	}
	return s.jobs.submit(func(ctx context.Context) { s.reply(ctx, outer.EventID, m) })
}

var mention = regexp.MustCompile(`<@[A-Z0-9]+>\s*`)

// message is a human's message in a thread.
type message struct {
	User, Text, Channel, TS, ThreadTS string
}

// reply handles a message in a run's thread: while a question is open it answers it as free-text guidance.
func (s *Server) reply(ctx context.Context, eventID string, m message) {
	if m.User == "" || m.User == s.botID || !s.firstTime(ctx, eventID, m) {
		return
	}
	runID, err := s.poster.runOfThread(ctx, m.Channel, m.ThreadTS)
	if err != nil || runID == "" {
		return
	}
	text := strings.TrimSpace(m.Text)
	if text == "" {
		return
	}
	if !s.allowed(m.User) {
		s.refused(m.User, "answer", "run "+runID)
		s.ephemeral(ctx, m.Channel, m.User, "You are not allowed to answer here (ORCH_ALLOWED_USERS).")
		return
	}
	run, err := s.cfg.Store.Get(ctx, runID)
	if err != nil {
		return
	}
	e := run.OpenEscalation()
	if e == nil {
		if t := run.Current(); t != nil && t.Kind == jobs.KindChat && run.Status == jobs.RunRunning {
			s.ephemeral(ctx, m.Channel, m.User, "The agent is still working on its reply; answer it once it has replied.")
		}
		return // conversation in the thread, not an answer
	}
	s.answer(ctx, m, escalation.Request{RunID: runID, EscalationID: e.ID, Type: jobs.ResolveAnswer, Text: text,
		By: m.User, Via: "slack"})
}

// firstTime reports whether a message is seen for the first time. The same message can arrive twice: a retried
// delivery (same event_id) and as both message and app_mention (same channel and ts). Either way it counts once.
func (s *Server) firstTime(ctx context.Context, eventID string, m message) bool {
	if first, err := s.poster.once(ctx, "msg:"+m.Channel+":"+m.TS); err != nil || !first {
		return false
	}
	if eventID == "" {
		return true
	}
	first, err := s.poster.once(ctx, "event:"+eventID)
	return err == nil && first
}

// answer resolves a question from a thread reply, telling the person what went wrong when it did not.
func (s *Server) answer(ctx context.Context, m message, req escalation.Request) {
	_, _, err := escalation.Resolve(ctx, s.cfg.Store, s.cfg.Queue, req)
	switch {
	case errors.Is(err, escalation.ErrInvalid):
		s.ephemeral(ctx, m.Channel, m.User, err.Error())
	case err != nil && !errors.Is(err, escalation.ErrAlreadyResolved) && !errors.Is(err, escalation.ErrNoOpenEscalation):
		s.log.Error("answering from a thread reply", "run_id", req.RunID, "err", err)
		s.ephemeral(ctx, m.Channel, m.User, unavailableText)
	}
}

func (s *Server) ephemeral(ctx context.Context, channel, user, text string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := s.api.PostEphemeralContext(ctx, channel, user, slack.MsgOptionText(text, false)); err != nil {
		s.log.Warn("posting an ephemeral message", "err", err)
	}
}
