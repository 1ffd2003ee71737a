package brain

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// text.go prepares agent output for reading: what orch itself injected is dropped, and a "prose" view
// without code and quotations is kept apart, so that a `should I` inside a code sample or a quoted prompt
// string is not mistaken for the agent asking something.

// maxErrorLen bounds Interpretation.Error: enough for a traceback's tail, small enough for a Slack section.
const maxErrorLen = 2000

var (
	guidanceLineRe = regexp.MustCompile(`^\s*GUIDANCE:`)
	fenceRe        = regexp.MustCompile("^\\s*(```|~~~)")
	inlineCodeRe   = regexp.MustCompile("`[^`\n]*`")
	// Only quotations short enough to be a string literal or a quoted phrase, and on one line.
	quotedRe   = regexp.MustCompile(`"[^"\n]{1,200}"`)
	blankRunRe = regexp.MustCompile(`\n{3,}`)
	// A line that starts a new unit of prose rather than continuing a wrapped sentence.
	unitStartRe = regexp.MustCompile(`^\s*(?:[-*•+]\s|\d{1,2}[.)]\s|\[?[A-Ha-h][).\]]\s|\([A-Ha-h1-9]\)\s|#|>|\**[A-Z_]{3,}\**:|\**[Oo]ption\s+\w)`)
)

// doc is one agent output, read three ways.
type doc struct {
	// text is the output with orch's GUIDANCE echo lines removed and quotes and newlines normalised.
	text string
	// lines are text's lines.
	lines []string
	// proseLines are the lines with fenced blocks blanked and inline code and short quotations removed; they
	// line up one to one with lines.
	proseLines []string
}

var quoteReplacer = strings.NewReplacer(
	"\r\n", "\n", "\r", "\n",
	"\u2018", "'", "\u2019", "'", "\u201c", `"`, "\u201d", `"`,
)

func newDoc(output string) *doc {
	if !utf8.ValidString(output) {
		output = strings.ToValidUTF8(output, "\uFFFD")
	}
	raw := strings.Split(quoteReplacer.Replace(output), "\n")
	lines := raw[:0]
	for _, l := range raw {
		// The simulated agent echoes the guidance orch gave it; that is orch's voice, not the agent's.
		if guidanceLineRe.MatchString(l) {
			continue
		}
		lines = append(lines, l)
	}
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
		l = inlineCodeRe.ReplaceAllString(l, "")
		d.proseLines[i] = quotedRe.ReplaceAllString(l, `""`)
	}
	return d
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
	lastLine := 0
	flush := func() {
		if buf.Len() > 0 {
			out = append(out, splitSentences(buf.String(), lastLine, unit)...)
			buf.Reset()
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
		buf.WriteString(t)
		lastLine = i
		prevEndsColon = strings.HasSuffix(t, ":")
	}
	flush()
	return out
}

// splitSentences cuts after '.', '!' or '?' followed by a space, except after common abbreviations.
func splitSentences(s string, line, unit int) []sentence {
	var out []sentence
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '.' && c != '!' && c != '?' {
			continue
		}
		if i+1 < len(s) && s[i+1] != ' ' {
			continue
		}
		if c == '.' && isAbbrev(s[start:i+1]) {
			continue
		}
		if t := strings.TrimSpace(s[start : i+1]); t != "" {
			out = append(out, sentence{t, line, unit})
		}
		start = i + 1
	}
	if t := strings.TrimSpace(s[start:]); t != "" {
		out = append(out, sentence{t, line, unit})
	}
	return out
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
