package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/internal/backoff"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// Bounds of the conversation a request in words takes as context: the last messages of the thread, as many as fit.
const (
	maxContextBytes    = 12 << 10
	maxContextMessage  = 2000 // bytes of one message
	maxConversationPgs = 10   // pages of conversations.replies (200 messages each); the last messages are kept
)

// conversation is the context of a request made in a thread: for a follow-up, what the run it follows did and where
// its work is; then the thread's messages, oldest first, without the request itself, as many of the last ones as fit.
// The run redacts it. An error says why the thread could not be read; what was known without it is returned with it.
func (s *Server) conversation(ctx context.Context, m message, parent *jobs.Run) (string, error) {
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
	msgs, err := s.threadMessages(ctx, m.Channel, m.ThreadTS)
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
		if msg.BotID != "" || msg.User == s.botID {
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
func (s *Server) threadMessages(ctx context.Context, channel, threadTS string) ([]slack.Message, error) {
	var all []slack.Message
	cursor := ""
	for range maxConversationPgs {
		var page []slack.Message
		var more bool
		var next string
		// Slack's 429s are waited out (Retry-After), as the poster's are; other errors are the caller's.
		err := backoff.Retry{Tries: slackTries}.Do(ctx, func(ctx context.Context) error {
			var err error
			page, more, next, err = s.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
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
