// Package gfm writes text from a run into GitHub-flavored Markdown without letting it do more than be read: it
// mentions no one (a zero-width space after the @ reads the same and notifies nobody), it stays inside the code span,
// quote or list item it is put in, and it is bounded. The pull request's body and orch's comments on GitHub use it.
package gfm

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// MaxBody is GitHub's limit on the body of an issue, a pull request or a comment, in characters; orch holds it in
// bytes, which is never more.
const MaxBody = 65536

// Code is s as inline code, on one line: its fence is longer than any run of backticks in s.
func Code(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// Block is s as a fenced code block: its fence is longer than any run of backticks in s, so nothing in s ends it.
func Block(s string) string {
	fence := "```"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	return fence + "text\n" + strings.TrimRight(s, "\n") + "\n" + fence
}

// Inline is s on one line, bounded to max characters and defused.
func Inline(s string, max int) string {
	return Text(strings.Join(strings.Fields(s), " "), max)
}

// Text is s bounded to max characters and defused.
func Text(s string, max int) string {
	return Defuse(Cut(strings.TrimSpace(s), max))
}

var mention = regexp.MustCompile(`(^|[^\w@.\x60])@([A-Za-z0-9])`)

// Defuse keeps @user and @org/team in s from notifying anyone: a zero-width space after the @ reads the same and
// mentions no one.
func Defuse(s string) string {
	return mention.ReplaceAllString(s, "$1@\u200b$2")
}

// Indent puts prefix before every line of s, so that it stays inside its list item or quote.
func Indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(prefix+l, " ")
		if strings.TrimSpace(l) == "" && strings.TrimSpace(prefix) == "" {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// Cut bounds s to max characters, ending with "…" when it cuts.
func Cut(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// Bound is body within MaxBody bytes: cut at the last line that fits, with note after it (the note says where the
// rest is).
func Bound(body, note string) string {
	if len(body) <= MaxBody {
		return body
	}
	keep := body[:MaxBody-len(note)]
	if i := strings.LastIndexByte(keep, '\n'); i > 0 {
		keep = keep[:i]
	} else {
		for !utf8.ValidString(keep) {
			keep = keep[:len(keep)-1]
		}
	}
	return keep + note
}
