package brain

import (
	"strings"
)

// selectbox.go reads the selection an interactive CLI draws when it asks (Claude Code's permission and choice
// prompts): numbered rows, one of them under the cursor, often inside a box drawn with box-drawing characters.
//
//	│ Do you want to proceed?                          │
//	│ ❯ 1. Yes                                         │
//	│   2. Yes, and don't ask again for git commands   │
//	│   3. No, and tell Claude what to do differently (esc) │

var (
	// A row of the selection: an optional frame, an optional cursor, the row's number and its text.
	selectRowRe = lazyRE(`^\s*[│┃|]?\s*([❯›▶→>●]\s*)?(\d{1,2})[.)]\s+(.*?)\s*[│┃|]?\s*$`)
	// A row's description, on the lines under it, indented past the row's number: "     Fastest, no Docker needed".
	rowDetailRe = lazyRE(`^\s*[│┃|]?\s{3,}\S`)
	// The row where Claude Code's question takes a typed answer instead of a choice ("Type something."): a person
	// answers in words anyway, so it is no option.
	freeTextRowRe = lazyRE(`(?i)^type something$`)
	// A key the CLI names after a row ("(esc)", "(shift+tab)"): the UI's hint, not the option.
	keyHintRe = lazyRE(`(?i)\s*\((?:esc|enter|tab|space|shift\+tab|(?:ctrl|alt|cmd|shift)\+\w+|[a-z0-9])\)$`)
)

// selectionOptions returns the rows of a drawn selection, with the offset of the first: rows numbered from 1 in
// order, one of them marked by the cursor, which tells a selection from a numbered list in prose.
func selectionOptions(text string) (int, []choice) {
	var opts []choice
	first, offset, cursor := -1, 0, false
	for _, line := range strings.SplitAfter(text, "\n") {
		m := selectRowRe.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
		switch {
		case m != nil && m[2] == itoa(len(opts)+1):
			if first < 0 {
				first = offset
			}
			cursor = cursor || m[1] != ""
			label := strings.TrimSpace(keyHintRe.ReplaceAllString(m[3], ""))
			if c := cleanOption(label); c.label != "" && !freeTextRowRe.MatchString(c.label) {
				opts = append(opts, c)
			}
		case m == nil && len(opts) > 0 && rowDetailRe.MatchString(line):
			// What the CLI says under a row about it (Claude Code's option descriptions): the selection goes on.
		case len(opts) >= 2:
			// The selection ended; a later one is another prompt.
			if cursor {
				return first, opts
			}
			opts, first, cursor = nil, -1, false
		}
		offset += len(line)
	}
	if !cursor || len(opts) < 2 {
		return 0, nil
	}
	return first, opts
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return string(rune('0'+n/10)) + string(rune('0'+n%10))
}

// cursorRowRe is the row of a drawn selection under its cursor, framed or not: "❯ 1. Yes", "│ › 2. No │". A
// numbered list in prose or quoted with ">" has no such cursor.
var cursorRowRe = lazyRE(`^\s*[│┃]?\s*[❯›▶→●]\s*\d{1,2}[.)]\s+\S`)

// hasCursorRow reports a drawn selection among lines: the choices a CLI offers, whatever the question's form.
func hasCursorRow(lines []string) bool {
	for _, l := range lines {
		if strings.ContainsAny(l, "❯›▶→●") && cursorRowRe.MatchString(l) {
			return true
		}
	}
	return false
}
