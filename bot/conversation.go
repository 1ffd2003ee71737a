package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/bot/mirror"
	"github.com/orchrun/orch/internal/backoff"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// conversations handles what people write to orch in words: a mention of the bot or the message shortcut asks for a
// run (of the words, with the thread they were written in as context; a follow-up in the thread of a run that
// ended), and a reply in a run's thread goes to the run (as the answers take it).
type conversations struct {
	talk    *talk
	answers *answers // replies in a run's thread
	runs    *newRuns
	api     *slack.Client // the threads' messages
	store   *store.Store
	mirror  *mirror.Mirror
	log     *slog.Logger
}

// mentions reports whether text mentions the bot.
func (c *conversations) mentions(text string) bool {
	return c.talk.botID != "" && (strings.Contains(text, "<@"+c.talk.botID+">") || strings.Contains(text, "<@"+c.talk.botID+"|"))
}

// withoutMention is text without its mentions of the bot (<@U…> or <@U…|name>); other people's mentions stay.
func (c *conversations) withoutMention(text string) string {
	for _, form := range []string{"<@" + c.talk.botID + ">", "<@" + c.talk.botID + "|"} {
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

// reply handles a message in a run's thread: while a question is open it answers it as free-text guidance.
func (c *conversations) reply(ctx context.Context, eventID string, m message) {
	if m.User == "" || m.User == c.talk.botID || !c.firstTime(ctx, eventID, m) {
		return
	}
	runID, err := c.mirror.RunOfThread(ctx, m.Channel, m.ThreadTS)
	if err != nil || runID == "" {
		return
	}
	c.answers.threadReply(ctx, m, runID)
}

// mentioned handles a message that mentions the bot. In the thread of a run that has not ended it is a reply, as any
// other; anywhere else it asks for a run of its own words (see request).
func (c *conversations) mentioned(ctx context.Context, eventID string, m message) {
	if m.User == "" || m.User == c.talk.botID || !c.firstTime(ctx, eventID, m) {
		return
	}
	m.Text = c.withoutMention(m.Text)
	tell := func(ctx context.Context, text string) { c.talk.ephemeral(ctx, m.Channel, m.ThreadTS, m.User, text) }
	c.request(ctx, m, m.User, tell, c.notStartedHere(m), func(run *jobs.Run) { c.answers.threadReply(ctx, m, run.ID) })
}

// notStartedHere says why the run a mention asked for did not start where it was asked, for the channel to read: in the
// mention's thread (the thread the mention starts, outside one), as the run's own messages would have been. Said to
// the person alone it would leave everyone else looking at a request that nothing came of. When the channel takes no
// message from the bot, the person is told alone.
func (c *conversations) notStartedHere(m message) func(context.Context, string) {
	return func(ctx context.Context, text string) {
		err := c.talk.say(ctx, m.Channel, cmp.Or(m.ThreadTS, m.TS), blocks.NotStartedMessage(m.User, text))
		if err != nil {
			c.log.Warn("saying in the channel that a run did not start", "channel", m.Channel, "err", err)
			c.talk.ephemeral(ctx, m.Channel, m.ThreadTS, m.User, text)
		}
	}
}

// request starts a run of a message's words for user: a follow-up on the run's branch in the thread of a run that
// ended, a run with the conversation as context in any other thread, a run of the words alone outside threads. In
// the thread of a run that has not ended, running calls going instead. tell answers the person; notStarted says why a
// run that was asked for did not start.
func (c *conversations) request(ctx context.Context, m message, user string, tell, notStarted func(context.Context, string),
	going func(*jobs.Run)) {
	var parent *jobs.Run
	// A reply, or a message with replies (the shortcut on a thread's parent): the thread is its conversation.
	if m.ThreadTS != "" {
		runID, err := c.mirror.RunOfThread(ctx, m.Channel, m.ThreadTS)
		if err != nil {
			c.log.Warn("looking up a thread's run", "err", err)
			tell(ctx, unavailableText)
			return
		}
		if runID != "" {
			run, err := c.store.Get(ctx, runID)
			switch {
			case errors.Is(err, jobs.ErrRunNotFound):
				// Pruned from history: a new request in this conversation.
			case err != nil:
				c.log.Warn("reading a thread's run", "run_id", runID, "err", err)
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
	if !c.talk.allowed.Allows(user) {
		c.talk.refused(user, "do", m.Text)
		tell(ctx, "You are not allowed to start runs here (ORCH_ALLOWED_USERS).")
		return
	}
	refund, err := c.runs.take(user, m.Channel)
	if err != nil {
		tell(ctx, capitalized(err.Error())+".")
		return
	}
	req := StartRequest{Text: unescapeSlack(m.Text), FollowUp: parent,
		Origin: jobs.Origin{Kind: "slack", User: user, Channel: m.Channel, ThreadTS: cmp.Or(m.ThreadTS, m.TS)}}
	if m.ThreadTS != "" {
		if req.Context, err = c.conversation(ctx, m, parent); err != nil {
			c.log.Warn("reading the conversation of a request", "channel", m.Channel, "err", err)
			tell(ctx, fmt.Sprintf("I could not read this thread (%s), so the agent starts from the words alone.",
				safetext.Bound(err.Error(), 200)))
		}
	}
	c.runs.start(ctx, req, notStarted, refund)
}

// firstTime reports whether a message is seen for the first time. The same message can arrive twice: a retried
// delivery (same event_id) and as both message and app_mention (same channel and ts). Either way it counts once.
func (c *conversations) firstTime(ctx context.Context, eventID string, m message) bool {
	if first, err := c.talk.once(ctx, "msg:"+m.Channel+":"+m.TS); err != nil || !first {
		return false
	}
	if eventID == "" {
		return true
	}
	first, err := c.talk.once(ctx, "event:"+eventID)
	return err == nil && first
}

// ShortcutDoMessage is the callback id of the message shortcut "Ask orch to do this" (deploy/slack-app-manifest.yaml).
const ShortcutDoMessage = "orch_do_message"

// doMessage starts a run whose task is a message someone chose with the shortcut, as a mention of the bot in it would
// (the thread as context; a follow-up in the thread of a run that ended). Its answers go to the person through the
// shortcut's response_url.
func (c *conversations) doMessage(ctx context.Context, cb slack.InteractionCallback) {
	tell := func(ctx context.Context, text string) { c.talk.respond(ctx, cb.ResponseURL, text) }
	msg := cb.Message
	m := message{User: msg.User, Text: c.withoutMention(msg.Text), Channel: cb.Channel.ID, TS: cmp.Or(msg.Timestamp, cb.MessageTs),
		ThreadTS: msg.ThreadTimestamp}
	c.request(ctx, m, cb.User.ID, tell, tell, func(run *jobs.Run) {
		tell(ctx, blocks.StillGoingReply(run.ID))
	})
}

// Bounds of the conversation a request in words takes as context: the last messages of the thread, as many as fit.
const (
	maxContextBytes    = 12 << 10
	maxContextMessage  = 2000 // bytes of one message
	maxConversationPgs = 10   // pages of conversations.replies (200 messages each); the last messages are kept
)

// conversation is the context of a request made in a thread: for a follow-up, what the run it follows did and where
// its work is; then the thread's messages, oldest first, without the request itself, as many of the last ones as fit.
// The run redacts it. An error says why the thread could not be read; what was known without it is returned with it.
func (c *conversations) conversation(ctx context.Context, m message, parent *jobs.Run) (string, error) {
	var b strings.Builder
	if parent != nil {
		fmt.Fprintf(&b, "This request follows up run %s (%s), which %s.", parent.ID, blocks.PlanTitle(parent), parent.Status)
		if g := parent.Git; g != nil && g.Commits > 0 {
			fmt.Fprintf(&b, " Its work is on branch %s (%d commits), and this run's branch starts from it.", g.Branch, g.Commits)
		}
		if parent.Request != "" {
			fmt.Fprintf(&b, "\nIt was asked:\n%s", quoteLines(parent.Request))
		}
		b.WriteString("\n\n")
	}
	msgs, err := c.threadMessages(ctx, m.Channel, m.ThreadTS)
	if err != nil {
		return strings.TrimSpace(b.String()), err
	}
	var lines []string
	size := 0
	for _, msg := range slices.Backward(msgs) {
		if msg.Timestamp == m.TS || strings.TrimSpace(msg.Text) == "" {
			continue
		}
		who := "<@" + msg.User + ">"
		if msg.BotID != "" || msg.User == c.talk.botID {
			who = "orch"
		}
		line := who + ": " + strings.TrimSpace(safetext.Bound(unescapeSlack(msg.Text), maxContextMessage))
		if size+len(line) > maxContextBytes {
			break
		}
		size += len(line) + 1
		lines = append(lines, line)
	}
	if len(lines) > 0 {
		slices.Reverse(lines)
		b.WriteString("The conversation in Slack where this was asked, oldest first:\n")
		b.WriteString(strings.Join(lines, "\n"))
	}
	return strings.TrimSpace(b.String()), nil
}

// threadMessages reads a thread's messages, parent first, with conversations.replies (a page of 200 at a time, the
// size Slack recommends), up to maxConversationPgs pages.
func (c *conversations) threadMessages(ctx context.Context, channel, threadTS string) ([]slack.Message, error) {
	var all []slack.Message
	cursor := ""
	for range maxConversationPgs {
		var page []slack.Message
		var more bool
		var next string
		// Slack's 429s are waited out (Retry-After), as the poster's are; other errors are the caller's.
		err := backoff.Retry{Tries: slackTries}.Do(ctx, func(ctx context.Context) error {
			var err error
			page, more, next, err = c.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
				ChannelID: channel, Timestamp: threadTS, Limit: 200, Cursor: cursor})
			var rl *slack.RateLimitedError
			if errors.As(err, &rl) {
				return backoff.After(err, rl.RetryAfter)
			}
			return backoff.Permanent(err)
		})
		if err != nil {
			return all, fmt.Errorf("conversations.replies: %w", err)
		}
		all = append(all, page...)
		if !more || next == "" {
			break
		}
		cursor = next
	}
	return all, nil
}

// quoteLines quotes text line by line with "> ".
func quoteLines(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}

// capitalized is s with its first letter in upper case: an error's text as a sentence.
func capitalized(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// slackTries bounds the calls of a Web API method that Slack keeps answering with 429, as the mirror's are: the first
// and five more.
const slackTries = 6
