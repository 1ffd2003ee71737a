package bot

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/safetext"
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
	mentioned := false
	switch in := ev.InnerEvent.Data.(type) {
	case *slackevents.MessageEvent:
		if in.BotID != "" || in.SubType != "" && in.SubType != "thread_broadcast" {
			return nil // the bot's own messages, edits, joins…
		}
		m = message{User: in.User, Text: in.Text, Channel: in.Channel, TS: in.TimeStamp, ThreadTS: in.ThreadTimeStamp}
		// Slack sends a message that mentions the bot twice, as message and as app_mention, in either order: both are
		// handled as the mention, and whichever comes first counts (firstTime).
		mentioned = s.mentions(in.Text)
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
		return s.jobs.submit(func(ctx context.Context) { s.homeOpened(ctx, outer.EventID, in.User) })
	default:
		return nil
	}
	if mentioned {
		return s.jobs.submit(func(ctx context.Context) { s.mentioned(ctx, outer.EventID, m) })
	}
	if !m.inThread() {
		return nil // only replies in a run's thread mean something to orch
	}
	return s.jobs.submit(func(ctx context.Context) { s.reply(ctx, outer.EventID, m) })
}

// mentions reports whether text mentions the bot.
func (s *Server) mentions(text string) bool {
	return s.botID != "" && (strings.Contains(text, "<@"+s.botID+">") || strings.Contains(text, "<@"+s.botID+"|"))
}

// withoutMention is text without its mentions of the bot (<@U…> or <@U…|name>); other people's mentions stay.
func (s *Server) withoutMention(text string) string {
	for _, form := range []string{"<@" + s.botID + ">", "<@" + s.botID + "|"} {
		for {
			i := strings.Index(text, form)
			if i < 0 {
				break
			}
			end := i + len(form)
			if strings.HasSuffix(form, "|") {
				j := strings.IndexByte(text[end:], '>')
				if j < 0 {
					break
				}
				end += j + 1
			}
			text = text[:i] + text[end:]
		}
	}
	return strings.TrimSpace(text)
}

// message is a human's message in a channel or a thread.
type message struct {
	User, Text, Channel, TS, ThreadTS string
}

// inThread reports whether m is a reply in a thread (not the thread's parent, nor a message outside any thread).
func (m message) inThread() bool { return m.ThreadTS != "" && m.ThreadTS != m.TS }

// reply handles a message in a run's thread: while a question is open it answers it as free-text guidance.
func (s *Server) reply(ctx context.Context, eventID string, m message) {
	if m.User == "" || m.User == s.botID || !s.firstTime(ctx, eventID, m) {
		return
	}
	runID, err := s.poster.runOfThread(ctx, m.Channel, m.ThreadTS)
	if err != nil || runID == "" {
		return
	}
	s.threadReply(ctx, m, runID)
}

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

// threadReply handles a person's message in run runID's thread.
func (s *Server) threadReply(ctx context.Context, m message, runID string) {
	text := strings.TrimSpace(unescapeSlack(m.Text))
	if text == "" {
		return
	}
	if !s.allowed(m.User) {
		s.refused(m.User, "answer", "run "+runID)
		s.ephemeral(ctx, m.Channel, m.ThreadTS, m.User, notAllowedText)
		return
	}
	run, err := s.cfg.Store.Get(ctx, runID)
	if err != nil {
		return
	}
	e := run.OpenEscalation()
	if e == nil {
		if t := run.Current(); t != nil && t.Kind == jobs.KindChat && run.Status == jobs.RunRunning {
			s.ephemeral(ctx, m.Channel, m.ThreadTS, m.User, "The agent is still working on its reply; answer it once it has replied.")
		}
		return // conversation in the thread, not an answer
	}
	s.answer(ctx, m, escalation.Request{RunID: runID, EscalationID: e.ID, Type: jobs.ResolveAnswer, Text: text,
		By: m.User, Via: "slack"})
}

// mentioned handles a message that mentions the bot. In the thread of a run that has not ended it is a reply, as any
// other; anywhere else it asks for a run of its own words (see request).
func (s *Server) mentioned(ctx context.Context, eventID string, m message) {
	if m.User == "" || m.User == s.botID || !s.firstTime(ctx, eventID, m) {
		return
	}
	m.Text = s.withoutMention(m.Text)
	tell := func(ctx context.Context, text string) { s.ephemeral(ctx, m.Channel, m.ThreadTS, m.User, text) }
	s.request(ctx, m, m.User, tell, func(run *jobs.Run) { s.threadReply(ctx, m, run.ID) })
}

// request starts a run of a message's words for user: a follow-up on the run's branch in the thread of a run that
// ended, a run with the conversation as context in any other thread, a run of the words alone outside threads. In
// the thread of a run that has not ended, running calls going instead. tell answers the person.
func (s *Server) request(ctx context.Context, m message, user string, tell func(context.Context, string), going func(*jobs.Run)) {
	var parent *jobs.Run
	// A reply, or a message with replies (the shortcut on a thread's parent): the thread is its conversation.
	if m.ThreadTS != "" {
		runID, err := s.poster.runOfThread(ctx, m.Channel, m.ThreadTS)
		if err != nil {
			s.log.Warn("looking up a thread's run", "err", err)
			tell(ctx, unavailableText)
			return
		}
		if runID != "" {
			run, err := s.cfg.Store.Get(ctx, runID)
			switch {
			case errors.Is(err, jobs.ErrRunNotFound):
				// Pruned from history: a new request in this conversation.
			case err != nil:
				s.log.Warn("reading a thread's run", "run_id", runID, "err", err)
				tell(ctx, unavailableText)
				return
			case !run.Status.Terminal():
				going(run)
				return
			default:
				parent = run
			}
		}
	}
	if m.Text == "" {
		tell(ctx, "Tell me what to do, e.g. `@orch fix the flaky retry test in jobs`; `/orch help` lists the rest.")
		return
	}
	if !s.allowed(user) {
		s.refused(user, "do", m.Text)
		tell(ctx, "You are not allowed to start runs here (ORCH_ALLOWED_USERS).")
		return
	}
	refund, err := s.limits.take(user, m.Channel)
	if err != nil {
		tell(ctx, capitalized(err.Error())+".")
		return
	}
	req := StartRequest{Text: unescapeSlack(m.Text), FollowUp: parent,
		Origin: jobs.Origin{Kind: "slack", User: user, Channel: m.Channel, ThreadTS: cmp.Or(m.ThreadTS, m.TS)}}
	if m.ThreadTS != "" {
		if req.Context, err = s.conversation(ctx, m, parent); err != nil {
			s.log.Warn("reading the conversation of a request", "channel", m.Channel, "err", err)
			tell(ctx, fmt.Sprintf("I could not read this thread (%s), so the agent starts from the words alone.",
				safetext.Bound(err.Error(), 200)))
		}
	}
	s.startRun(ctx, req, tell, refund)
}

// capitalized is s with its first letter in upper case: an error's text as a sentence.
func capitalized(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
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
		s.ephemeral(ctx, m.Channel, m.ThreadTS, m.User, err.Error())
	case err != nil && !errors.Is(err, escalation.ErrAlreadyResolved) && !errors.Is(err, escalation.ErrNoOpenEscalation):
		s.log.Error("answering from a thread reply", "run_id", req.RunID, "err", err)
		s.ephemeral(ctx, m.Channel, m.ThreadTS, m.User, unavailableText)
	}
}

// ephemeral shows text to user alone, in the thread threadTS of channel ("" for the channel itself): where they wrote
// what it answers.
func (s *Server) ephemeral(ctx context.Context, channel, threadTS, user, text string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	opts := []slack.MsgOption{slack.MsgOptionText(replyText(text), false)}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	if _, err := s.api.PostEphemeralContext(ctx, channel, user, opts...); err != nil {
		s.log.Warn("posting an ephemeral message", "err", err)
	}
}
