package blocks

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// --- Text: escaping and cutting. ---

// textLen is a text's length as Slack's limits count it, conservatively: UTF-16 code units.
func textLen(s string) int {
	n := 0
	for _, r := range s {
		n += max(utf16.RuneLen(r), 1)
	}
	return n
}

// sanitize makes s valid UTF-8 without control characters other than newline and tab.
func sanitize(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

func escapedRune(r rune) string {
	switch r {
	case '&':
		return "&amp;"
	case '<':
		return "&lt;"
	case '>':
		return "&gt;"
	}
	return string(r)
}

// escapeCut escapes untrusted text for mrkdwn (&, <, >: an agent cannot write a mention, a link or a special command
// like <!channel>) and cuts it, on a rune boundary, to at most n characters as sent. A long cut ends with a visible
// "… [cut: N more characters]" line (N counts the characters left out, before escaping) and closes a code fence the cut
// left open; a short one ends with "…".
func escapeCut(raw string, n int, long bool) string {
	return cutText(sanitize(raw), n, long, escapedRune)
}

// cutPlain cuts text for a plain_text object (no escaping) to at most n characters, ending with "…" when cut.
func cutPlain(raw string, n int) string {
	return cutText(sanitize(raw), n, false, func(r rune) string { return string(r) })
}

const fenceClose = "\n```"

func cutNote(rest int) string { return fmt.Sprintf("\n… [cut: %d more characters]", rest) }

func cutText(s string, n int, long bool, conv func(rune) string) string {
	var b strings.Builder
	size := 0
	for _, r := range s {
		c := conv(r)
		size += textLen(c)
		b.WriteString(c)
	}
	if size <= n {
		return b.String()
	}
	total := utf8.RuneCountInString(s)
	reserve := textLen("…")
	if long {
		reserve = textLen(cutNote(total)) + textLen(fenceClose) // the count never has more digits than total
	}
	budget := max(n-reserve, 0)
	b.Reset()
	size, kept := 0, 0
	lineEnd, keptAtLineEnd := -1, 0 // the last line break kept, to end a long cut on a whole line
	for _, r := range s {
		c := conv(r)
		if size+textLen(c) > budget {
			break
		}
		if r == '\n' {
			lineEnd, keptAtLineEnd = b.Len(), kept
		}
		b.WriteString(c)
		size += textLen(c)
		kept++
	}
	out := b.String()
	if !long {
		return strings.TrimRightFunc(out, unicode.IsSpace) + "…"
	}
	if lineEnd >= 0 && lineEnd >= len(out)*9/10 {
		out, kept = out[:lineEnd], keptAtLineEnd
	}
	if strings.Count(out, "```")%2 == 1 {
		out += fenceClose
	}
	return out + cutNote(total-kept)
}

// clampComposed cuts mrkdwn that orch composed (escaped parts, mentions, dates) to at most n characters without
// splitting an entity or a <…> span. The renderers bound each part so this rarely cuts; it keeps the limit a promise.
func clampComposed(s string, n int) string {
	if textLen(s) <= n {
		return s
	}
	budget := n - textLen("…")
	var b strings.Builder
	size := 0
	for _, r := range s {
		if size+textLen(string(r)) > budget {
			break
		}
		b.WriteRune(r)
		size += textLen(string(r))
	}
	out := b.String()
	if i := strings.LastIndexByte(out, '<'); i > strings.LastIndexByte(out, '>') {
		out = out[:i]
	}
	if i := strings.LastIndexByte(out, '&'); i >= 0 && !strings.Contains(out[i:], ";") {
		out = out[:i]
	}
	if strings.Count(out, "```")%2 == 1 && textLen(out)+textLen(fenceClose) <= budget {
		out += fenceClose
	}
	return out + "…"
}

// quoteText is raw text as a mrkdwn quote, escaped and cut to at most n characters of it.
func quoteText(raw string, n int) string {
	return quoteLines(escapeCut(strings.TrimSpace(raw), n, true))
}

// quoteLines quotes text line by line with "> ".
func quoteLines(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}
