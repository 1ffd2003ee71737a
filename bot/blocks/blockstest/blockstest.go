// Package blockstest checks Block Kit against Slack's limits and orch's markup rules, for the tests of package blocks
// and of the packages that post what it renders.
package blockstest

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// Slack's limits on a message (docs.slack.dev, reference/block-kit), and orch's own on its fallback text.
const (
	maxFallbackText    = 500 // orch keeps the notification text short; the blocks carry the rest
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
	maxActionID        = 255
	maxButtonValue     = 2000
	maxButtonURL       = 3000
	maxBlockID         = 255
)

// TextLen is a text's length as Slack's limits count it, conservatively: UTF-16 code units.
func TextLen(s string) int {
	n := 0
	for _, r := range s {
		n += max(utf16.RuneLen(r), 1)
	}
	return n
}

// allowedSpan is what orch itself writes in <…>: a user mention, a date (a time, or a day and a time) and a link (to a
// pull request, to a thread).
var allowedSpan = regexp.MustCompile(`<@[UW][A-Z0-9]+>|<!date\^\d+\^\{time_secs\}\|[0-9:]+ UTC>|` +
	`<!date\^\d+\^\{date_short_pretty\} at \{time\}\|[0-9-]+ [0-9:]+ UTC>|<https?://[^|<>\s]+\|[A-Za-z ]+>`)

// CheckMarkup fails when mrkdwn holds a <…> span orch did not write or a bare &.
func CheckMarkup(t testing.TB, where, s string) {
	t.Helper()
	rest := allowedSpan.ReplaceAllString(s, "")
	if strings.ContainsAny(rest, "<>") {
		t.Errorf("%s: unescaped < or > in %q", where, s)
	}
	rest = strings.NewReplacer("&amp;", "", "&lt;", "", "&gt;", "").Replace(rest)
	if strings.Contains(rest, "&") {
		t.Errorf("%s: unescaped & in %q", where, s)
	}
}

// Check fails when a message (its fallback text and its blocks) breaks one of Slack's limits or could not be posted.
// Whether its buttons' clicks read back is the caller's to check (blocks.DecodeAction).
func Check(t testing.TB, fallback string, blocks []slack.Block) {
	t.Helper()
	checkFallback(t, fallback)
	if len(blocks) == 0 || len(blocks) > maxBlocks {
		t.Errorf("%d blocks (Slack allows 1 to %d)", len(blocks), maxBlocks)
	}
	actionIDs, blockIDs := map[string]bool{}, map[string]bool{}
	for i, b := range blocks {
		where := fmt.Sprintf("block %d (%s)", i, b.BlockType())
		if id := b.ID(); id != "" {
			if blockIDs[id] || len(id) > maxBlockID {
				t.Errorf("%s: block_id %q repeats or is too long", where, id)
			}
			blockIDs[id] = true
		}
		switch b := b.(type) {
		case *slack.HeaderBlock:
			checkText(t, where, b.Text, maxHeaderText)
			if b.Text != nil && b.Text.Type != slack.PlainTextType {
				t.Errorf("%s: a header must be plain_text", where)
			}
		case *slack.SectionBlock:
			checkText(t, where, b.Text, maxSectionText)
		case *slack.ContextBlock:
			checkContext(t, where, b)
		case *slack.ActionBlock:
			checkActions(t, where, b, actionIDs)
		default:
			t.Errorf("%s: unexpected block %T", where, b)
		}
	}
}

// checkFallback fails when a message's fallback text (what notifications show) is empty, too long, not UTF-8 or
// holds markup orch did not write.
func checkFallback(t testing.TB, fallback string) {
	t.Helper()
	if fallback == "" || TextLen(fallback) > maxFallbackText || !utf8.ValidString(fallback) {
		t.Errorf("fallback text is empty, too long or not UTF-8: %q", fallback)
	}
	CheckMarkup(t, "fallback text", fallback)
}

// checkText fails when a text object is missing, invalid, longer than limit or, in mrkdwn, not verbatim or holding
// markup orch did not write.
func checkText(t testing.TB, where string, o *slack.TextBlockObject, limit int) {
	t.Helper()
	switch {
	case o == nil:
		t.Errorf("%s: no text", where)
		return
	case o.Validate() != nil:
		t.Errorf("%s: %v", where, o.Validate())
	case TextLen(o.Text) > limit:
		t.Errorf("%s: %d characters (at most %d)", where, TextLen(o.Text), limit)
	case !utf8.ValidString(o.Text):
		t.Errorf("%s: not UTF-8", where)
	}
	if o.Type == slack.MarkdownType {
		if !o.Verbatim {
			t.Errorf("%s: mrkdwn is not verbatim: Slack would turn bare names into links and pings", where)
		}
		CheckMarkup(t, where, o.Text)
	}
}

func checkContext(t testing.TB, where string, b *slack.ContextBlock) {
	t.Helper()
	els := b.ContextElements.Elements
	if len(els) == 0 || len(els) > maxContextElements {
		t.Errorf("%s: %d elements (Slack allows 1 to %d)", where, len(els), maxContextElements)
	}
	for _, el := range els {
		o, ok := el.(*slack.TextBlockObject)
		if !ok {
			t.Errorf("%s: element %T", where, el)
			continue
		}
		checkText(t, where, o, maxContextText)
	}
}

// checkActions checks an actions block's buttons; actionIDs are those of the message's buttons so far.
func checkActions(t testing.TB, where string, b *slack.ActionBlock, actionIDs map[string]bool) {
	t.Helper()
	els := b.Elements.ElementSet
	if len(els) == 0 || len(els) > maxActionsElements {
		t.Errorf("%s: %d elements (Slack allows 1 to %d)", where, len(els), maxActionsElements)
	}
	for _, el := range els {
		btn, ok := el.(*slack.ButtonBlockElement)
		if !ok {
			t.Errorf("%s: element %T", where, el)
			continue
		}
		checkText(t, where+" button", btn.Text, maxButtonText)
		if len(btn.ActionID) > maxActionID || actionIDs[btn.ActionID] {
			t.Errorf("%s: action_id %q repeats or is too long", where, btn.ActionID)
		}
		actionIDs[btn.ActionID] = true
		if TextLen(btn.Value) > maxButtonValue {
			t.Errorf("%s: value of %d characters", where, TextLen(btn.Value))
		}
		if u := btn.URL; u != "" && (len(u) > maxButtonURL || !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://")) {
			t.Errorf("%s: url %q is no link Slack opens (http or https, at most %d characters)", where, u, maxButtonURL)
		}
		if c := btn.Confirm; c != nil {
			checkText(t, where+" confirm title", c.Title, maxConfirmTitle)
			checkText(t, where+" confirm text", c.Text, maxConfirmText)
			checkText(t, where+" confirm button", c.Confirm, maxConfirmButton)
			checkText(t, where+" deny button", c.Deny, maxConfirmButton)
		}
	}
}

// Buttons is every button of a message's blocks, in order.
func Buttons(blocks []slack.Block) []*slack.ButtonBlockElement {
	var out []*slack.ButtonBlockElement
	for _, b := range blocks {
		if a, ok := b.(*slack.ActionBlock); ok {
			for _, el := range a.Elements.ElementSet {
				if btn, ok := el.(*slack.ButtonBlockElement); ok {
					out = append(out, btn)
				}
			}
		}
	}
	return out
}

// Inputs is a form's input blocks, by block id.
func Inputs(blocks []slack.Block) map[string]*slack.InputBlock {
	out := map[string]*slack.InputBlock{}
	for _, b := range blocks {
		if in, ok := b.(*slack.InputBlock); ok {
			out[in.BlockID] = in
		}
	}
	return out
}

// Options is the options of a form's option input (radio buttons or a menu), its kind, and the option chosen already.
func Options(t testing.TB, in *slack.InputBlock) (kind string, opts []*slack.OptionBlockObject, initial *slack.OptionBlockObject) {
	t.Helper()
	switch el := in.Element.(type) {
	case *slack.RadioButtonsBlockElement:
		return "radio_buttons", el.Options, el.InitialOption
	case *slack.SelectBlockElement:
		return el.Type, el.Options, el.InitialOption
	}
	t.Fatalf("option input holds a %T", in.Element)
	return "", nil, nil
}
