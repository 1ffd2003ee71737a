package brain

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// text.go prepares agent output for reading: what orch itself injected is dropped, and a "prose" view
// without code and quotations is kept apart, so that a `should I` inside a code sample or a quoted prompt
// string is not mistaken for the agent asking something.

// maxErrorLen bounds Interpretation.Error: enough for a traceback's tail, small enough for a Slack section.
const maxErrorLen = 2000

var (
	guidanceLineRe = lazyRE(`^\s*GUIDANCE:`)
	fenceRe        = lazyRE("^\\s*(```|~~~)")
	inlineCodeRe   = lazyRE("`[^`\n]*`")
	// Only quotations short enough to be a string literal or a quoted phrase, and on one line.
	quotedRe   = lazyRE(`"[^"\n]{1,200}"`)
	blankRunRe = lazyRE(`\n{3,}`)
	// A line that starts a new unit of prose rather than continuing a wrapped sentence.
	unitStartRe = lazyRE(`^\s*(?:[-*•+]\s|\d{1,2}[.)]\s|\[?[A-Ha-h][).\]]\s|\([A-Ha-h1-9]\)\s|#|>|\**[A-Z_]{3,}\**:|\**[Oo]ption\s+\w)`)
)

// Code spans and quotations are replaced in the prose by a placeholder (private-use runes around the
// span's index) rather than deleted, so that a question quoted back to the human keeps its `identifiers`.
const (
	spanOpen  = '\uE000'
	spanClose = '\uE001'
)

var spanRe = lazyRE("\uE000(\\d+)\uE001")

// doc is one agent output, read three ways.
type doc struct {
	// text is the output with orch's GUIDANCE echo lines and form lines removed and quotes and newlines
	// normalised.
	text string
	// lines are text's lines.
	lines []string
	// proseLines are the lines with fenced blocks blanked and inline code and short quotations removed; they
	// line up one to one with lines.
	proseLines []string
	// spans are the code spans and quotations taken out of the prose, by placeholder index.
	spans []string
	// toolLines caches toolOutput's reading of each line: 0 not read yet, 1 not a tool's, 2 a tool's. A long line
	// holds many sentences, and each asks about it.
	toolLines []uint8
}

var quoteReplacer = strings.NewReplacer(
	"\r\n", "\n", "\r", "\n",
	"\u2018", "'", "\u2019", "'", "\u201c", `"`, "\u201d", `"`,
)

// The heuristic reads at most scanHead+scanTail bytes of an output: it costs a few µs a byte (dozens of
// regular expressions a line), and the verdict is in the tail, where agents sum up; the head keeps the
// task's opening context. Megabyte transcripts would otherwise take seconds.
const (
	scanHead = 8 << 10
	scanTail = 56 << 10
)

// clip keeps the head and tail of a long output, cut at line boundaries.
func clip(s string) string {
	if len(s) <= scanHead+scanTail {
		return s
	}
	head := s[:scanHead]
	if i := strings.LastIndexByte(head, '\n'); i > 0 {
		head = head[:i]
	}
	tail := s[len(s)-scanTail:]
	if i := strings.IndexByte(tail, '\n'); i >= 0 {
		tail = tail[i+1:]
	}
	return head + "\n…\n" + tail
}

func newDoc(output string) *doc {
	// Colour and cursor codes sit inside the words read below; they are taken out before anything else, so
	// that neither the judgement nor the summary and error shown to a person sees them.
	output = withoutLogPrefixes(clip(stripANSI(output)))
	if !utf8.ValidString(output) {
		output = strings.ToValidUTF8(output, "\uFFFD")
	}
	// An agent may echo the prompt's closing form ("QUESTION: <your question>"), and the simulated agent echoes
	// the guidance orch gave it: that is orch's voice, not the agent's.
	raw := dropForms(strings.Split(quoteReplacer.Replace(output), "\n"))
	lines := raw[:0]
	for _, l := range raw {
		if guidanceLineRe.MatchString(l) {
			continue
		}
		lines = append(lines, l)
	}
	outdentMessages(lines)
	d := &doc{lines: lines, text: strings.Join(lines, "\n")}
	d.proseLines = make([]string, len(lines))
	inFence := false
	for i, l := range lines {
		if fenceRe.MatchString(l) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		l = inlineCodeRe.ReplaceAllStringFunc(l, d.hide)
		d.proseLines[i] = quotedRe.ReplaceAllStringFunc(l, d.hide)
	}
	return d
}

// ghLogPrefixRe is what GitHub's CLI puts before each line of a run's log (gh run view --log, --log-failed): the job,
// the step and the time, tab-separated ("test\tRun cargo test\t2025-03-04T10:12:40.1234567Z ").
var ghLogPrefixRe = lazyRE(`(?m)^[^\t\n]+\t[^\t\n]*\t\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z ?`)

// withoutLogPrefixes is s with the prefix a CI log puts before each line taken off (ghLogPrefixRe): what is left is
// the line as the program printed it, read as any other.
func withoutLogPrefixes(s string) string {
	// The time after the second tab is what marks such a log: a year, then a dash.
	if !strings.Contains(s, "\t19") && !strings.Contains(s, "\t20") {
		return s
	}
	return ghLogPrefixRe.ReplaceAllString(s, "")
}

// Agents' terminal transcripts mark each message of the agent at the margin and indent the message's other lines by
// two spaces: Claude Code with "●", Codex with "•", Gemini CLI with "✦". A message is markdown: its lists, bold names
// and headings read as they would at the margin once the two spaces are gone. A tool call ("● Bash(…)", "• Ran …")
// shows what the tool printed under it, its first line behind "⎿" (Claude Code) or "└" (Codex) and the others
// indented as far: taken back to the margin, that output reads as the tool printed it ("ok  pkg 0.02s" is go test's
// pass of a package, at a line's start).
var (
	messageMarkRe = lazyRE(`^[●•✦] `)
	toolCallRe    = lazyRE(`^[●•] (?:[\w.-]+\(|(?:Ran|Running|Edited|Explored|Read|Searched|Listed|Called|Updated|Added|Deleted|Proposed)\b)`)
	toolOutputRe  = lazyRE(`^(\s*[⎿└]\s?\s?)`)
	// codexLineRe is a line only Codex's transcript has: a command it ran or a file it edited under "•", a tool's
	// output under "└", the time it worked. "•" is a bullet's glyph in any other text, and marks a message only here.
	codexLineRe = lazyRE(`^(?:• (?:Ran|Edited|Explored|Searched|Listed|Called|Proposed)\b|\s+└ |─ Worked for )`)
)

func outdentMessages(lines []string) {
	codex := false
	for _, l := range lines {
		if (strings.HasPrefix(l, "•") || strings.Contains(l, "└") || strings.HasPrefix(l, "─")) && codexLineRe.MatchString(l) {
			codex = true
			break
		}
	}
	in, tool := false, false
	width := 0 // how far a tool's output is indented
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "•") && !codex:
			in, tool = false, false
		case messageMarkRe.MatchString(l):
			tool = toolCallRe.MatchString(l)
			in, width = !tool, 0
			if in && strings.HasPrefix(l, "•") {
				// Codex's mark is a bullet's glyph: left on the message's first line, it would make that line the first
				// item of any list the message holds.
				lines[i] = strings.TrimPrefix(l, "• ")
			}
		case strings.HasPrefix(l, "●") || strings.HasPrefix(l, "✦"):
			in, tool = false, false
		case strings.TrimSpace(l) == "":
		case tool:
			if loc := toolOutputRe.FindStringIndex(l); loc != nil && width == 0 {
				m := l[:loc[1]]
				width = utf8.RuneCountInString(m)
				lines[i] = l[len(m):]
			} else if width > 0 && strings.HasPrefix(l, strings.Repeat(" ", width)) {
				lines[i] = l[width:]
			} else if !strings.HasPrefix(l, " ") {
				tool = false // back at the margin: the output ended
			}
		case !in:
		case strings.HasPrefix(l, "  "):
			lines[i] = l[2:]
		default:
			in = false // back at the margin: the message ended
		}
	}
}

func (d *doc) hide(span string) string {
	d.spans = append(d.spans, span)
	return string(spanOpen) + strconv.Itoa(len(d.spans)-1) + string(spanClose)
}

// restore puts the hidden spans back into text taken from the prose.
func (d *doc) restore(s string) string {
	return spanRe.ReplaceAllStringFunc(s, func(m string) string {
		n, err := strconv.Atoi(m[len(string(spanOpen)) : len(m)-len(string(spanClose))])
		if err != nil || n >= len(d.spans) {
			return m
		}
		return d.spans[n]
	})
}

// sentence is one sentence of prose with the index of the line it ends on.
type sentence struct {
	text string
	line int
	unit int // index of the unit (paragraph or list item) it belongs to
}

// sentences splits the prose into units (paragraphs and list items, with wrapped lines joined) and the units
// into sentences.
func (d *doc) sentences() []sentence {
	var out []sentence
	var buf strings.Builder
	unit := 0
	// Where each line of the paragraph starts in buf, and its index: a sentence's line is the line it ends on.
	var starts, lines []int
	flush := func() {
		if buf.Len() > 0 {
			out = append(out, splitSentences(buf.String(), starts, lines, unit)...)
			buf.Reset()
			starts, lines = starts[:0], lines[:0]
			unit++
		}
	}
	prevEndsColon := false
	for i, l := range d.proseLines {
		t := strings.TrimSpace(l)
		if t == "" {
			flush()
			prevEndsColon = false
			continue
		}
		if unitStartRe.MatchString(l) || prevEndsColon {
			flush()
		}
		if buf.Len() > 0 {
			buf.WriteByte(' ')
		}
		starts, lines = append(starts, buf.Len()), append(lines, i)
		buf.WriteString(t)
		// A line ending in a colon introduces what follows; a markdown heading is a title, never the start of the
		// paragraph under it.
		prevEndsColon = strings.HasSuffix(t, ":") || strings.HasPrefix(t, "#")
	}
	flush()
	return out
}

// splitSentences cuts after '.', '!' or '?' followed by a space, except after common abbreviations. s is a
// paragraph's lines joined by spaces, line k starting at starts[k] and being the document's line lines[k]; each
// sentence is given the line it ends on.
func splitSentences(s string, starts, lines []int, unit int) []sentence {
	var out []sentence
	start := 0
	// lineAt is the document's line holding the byte at offset i of s.
	k := 0
	lineAt := func(i int) int {
		for k+1 < len(starts) && starts[k+1] <= i {
			k++
		}
		return lines[k]
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '.' && c != '!' && c != '?' {
			continue
		}
		if i+1 < len(s) && s[i+1] != ' ' {
			continue
		}
		if c == '.' && (isAbbrev(s[start:i+1]) || isListKey(s[start:i])) {
			continue
		}
		if t := strings.TrimSpace(s[start : i+1]); t != "" {
			out = append(out, sentence{t, lineAt(i), unit})
		}
		start = i + 1
	}
	if t := strings.TrimSpace(s[start:]); t != "" {
		out = append(out, sentence{t, lineAt(len(s) - 1), unit})
	}
	return out
}

// isListKey reports a list key ("1", "B") before a '.': "1. Offset/limit" is one sentence, not two.
func isListKey(s string) bool {
	t := strings.TrimSpace(s)
	if t == "" || len(t) > 2 {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; !(c >= '0' && c <= '9') && !(len(t) == 1 && (c >= 'A' && c <= 'H' || c >= 'a' && c <= 'h')) {
			return false
		}
	}
	return true
}

func isAbbrev(s string) bool {
	lower := strings.ToLower(s)
	for _, a := range []string{"e.g.", "i.e.", "etc.", "vs.", "approx.", "cf.", "no."} {
		if strings.HasSuffix(lower, " "+a) || lower == a {
			return true
		}
	}
	return false
}

// truncate cuts s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// collapse joins s onto one line.
func collapse(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// summarize is a short account of the output for the event log: all of it when short, else the last
// paragraph, where agents put their wrap-up.
func summarize(d *doc) string {
	const limit = 300
	all := collapse(d.text)
	if utf8.RuneCountInString(all) <= limit {
		return all
	}
	paras := strings.Split(blankRunRe.ReplaceAllString(strings.TrimSpace(d.text), "\n\n"), "\n\n")
	for i := len(paras) - 1; i >= 0; i-- {
		p := collapse(paras[i])
		if p == "" || courtesyRe.MatchString(p) && len(p) < 200 {
			continue
		}
		return truncate(p, limit)
	}
	return truncate(all, limit)
}
