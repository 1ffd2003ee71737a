package blocks

import (
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/jobs"
)

// Message is what the bot posts or updates: a fallback text (notifications, screen readers) and blocks.
type Message struct {
	Text   string
	Blocks []slack.Block
}

// Slack's limits on what a message holds. Lengths are counted as Slack's clients count them, in UTF-16 code units of
// the text as sent (an escaped "&" counts five): never less than what Slack counts.
const (
	maxBlocks          = 50
	maxSectionText     = 3000
	maxContextText     = 3000
	maxButtonText      = 75
	maxHeaderText      = 150
	maxContextElements = 10
	maxActionsElements = 25
	maxConfirmTitle    = 100
	maxConfirmText     = 300
	maxConfirmButton   = 30
	// maxFallbackText keeps the notification text short; the blocks carry the rest.
	maxFallbackText = 500
	// maxProgressEvents is how many recent events the progress view shows.
	maxProgressEvents = 10
	// maxTaskSections bounds the task list of the root message.
	maxTaskSections = 5
	maxLine         = 200 // one line of a list
	// maxRequestQuote bounds the quote of a request in words on its run's root message.
	maxRequestQuote = 1500
)

// --- Block Kit helpers: every text passes through here, so every limit holds in one place. ---

func newMessage(text string, blocks []slack.Block) Message {
	if len(blocks) > maxBlocks { // the renderers budget their blocks; this only guards against a mistake
		left := len(blocks) - (maxBlocks - 1)
		blocks = append(blocks[:maxBlocks-1:maxBlocks-1], contextBlock(fmt.Sprintf("_… %s not shown_", jobs.Count(left, "more block"))))
	}
	if strings.TrimSpace(text) == "" {
		text = "orch"
	}
	return Message{Text: clampComposed(text, maxFallbackText), Blocks: blocks}
}

func headerBlock(text string) *slack.HeaderBlock {
	if strings.TrimSpace(text) == "" {
		text = "orch"
	}
	return slack.NewHeaderBlock(plainText(cutPlain(text, maxHeaderText)))
}

// sectionBlock wraps mrkdwn that is already escaped.
func sectionBlock(text string) *slack.SectionBlock {
	return slack.NewSectionBlock(mrkdwnText(clampComposed(text, maxSectionText)), nil, nil)
}

// contextBlock holds mrkdwn elements that are already escaped; beyond Slack's ten, the rest join the tenth.
func contextBlock(elems ...string) *slack.ContextBlock {
	var kept []string
	for _, s := range elems {
		if strings.TrimSpace(s) != "" {
			kept = append(kept, s)
		}
	}
	if len(kept) > maxContextElements {
		kept = append(kept[:maxContextElements-1], strings.Join(kept[maxContextElements-1:], " · "))
	}
	if len(kept) == 0 {
		kept = []string{" "}
	}
	mixed := make([]slack.MixedElement, len(kept))
	for i, s := range kept {
		mixed[i] = mrkdwnText(clampComposed(s, maxContextText))
	}
	return slack.NewContextBlock("", mixed...)
}

// mrkdwnText is verbatim mrkdwn: Slack turns no bare URL, channel name or @mention in it into a link or a ping, so
// only what orch writes as <…> is one.
func mrkdwnText(s string) *slack.TextBlockObject {
	return &slack.TextBlockObject{Type: slack.MarkdownType, Text: s, Verbatim: true}
}

// plainText is plain_text, which Slack never parses for links or mentions.
func plainText(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, true, false)
}

// packLines joins lines into at most maxSections sections of at most maxSectionText each, cutting only between lines;
// the lines that do not fit are counted by more(n) at the end of the last one.
func packLines(lines []string, maxSections int, more func(n int) string) []slack.Block {
	var sections [][]string
	var cur []string
	size := 0
	for _, l := range lines {
		l = clampComposed(l, maxSectionText/2)
		if size+textLen(l)+1 > maxSectionText && len(cur) > 0 {
			sections = append(sections, cur)
			cur, size = nil, 0
		}
		cur = append(cur, l)
		size += textLen(l) + 1
	}
	if len(cur) > 0 {
		sections = append(sections, cur)
	}
	if len(sections) > maxSections {
		left := 0
		for _, sec := range sections[maxSections:] {
			left += len(sec)
		}
		last := sections[maxSections-1]
		size := textLen(strings.Join(last, "\n"))
		for len(last) > 0 && size+1+textLen(more(left)) > maxSectionText {
			size -= textLen(last[len(last)-1]) + 1
			last = last[:len(last)-1]
			left++
		}
		sections = append(sections[:maxSections-1], append(last, more(left)))
	}
	if len(sections) == 0 {
		sections = [][]string{{"_None._"}}
	}
	blocks := make([]slack.Block, len(sections))
	for i, sec := range sections {
		blocks[i] = sectionBlock(strings.Join(sec, "\n"))
	}
	return blocks
}

// inlineCode is s as inline code, escaped, with no backtick to end it early.
func inlineCode(s string, n int) string {
	return "`" + escapeCut(strings.ReplaceAll(singleLine(s), "`", "'"), n, false) + "`"
}

func singleLine(s string) string { return strings.Join(strings.Fields(s), " ") }
