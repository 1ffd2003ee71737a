package pipeline

import "strings"

// mdLine is one line of a markdown document as its block structure sees it.
// Only what task splitting needs is recognised: ATX headings, fenced code and
// HTML comment blocks. Setext headings are deliberately ignored: plans do not
// use them, and every "---" separator under a paragraph would become one.
type mdLine struct {
	text    string // without its line ending
	hidden  bool   // inside (or delimiting) a fence or an HTML comment, so never a heading
	level   int    // ATX heading level 1–6; 0 when the line is not a heading
	heading string // heading content, trimmed, closing #s removed
}

// splitLines accepts CRLF, lone CR and a BOM, so that plans written on any
// editor number their lines the way that editor shows them.
func splitLines(content string) []string {
	content = strings.TrimPrefix(content, "\ufeff")
	content = strings.ReplaceAll(content, "\r\n", "\n")
	content = strings.ReplaceAll(content, "\r", "\n")
	return strings.Split(content, "\n")
}

func scanMarkdown(content string) []mdLine {
	raw := splitLines(content)
	lines := make([]mdLine, len(raw))
	var (
		fenceChar byte
		fenceLen  int // > 0 while inside a fence
		inComment bool
	)
	for i, text := range raw {
		l := &lines[i]
		l.text = text
		switch {
		case fenceLen > 0:
			l.hidden = true
			if closesFence(text, fenceChar, fenceLen) {
				fenceLen = 0
			}
		case inComment:
			l.hidden = true
			inComment = !strings.Contains(text, "-->")
		default:
			if c, n, ok := opensFence(text); ok {
				fenceChar, fenceLen = c, n
				l.hidden = true
				continue
			}
			if open, closed := opensComment(text); open {
				l.hidden = true
				inComment = !closed
				continue
			}
			l.level, l.heading = atxHeading(text)
		}
	}
	return lines
}

// indent returns the column of the first non-blank byte (tabs stop every 4
// columns, as in CommonMark) and the rest of the line from there.
func indent(s string) (int, string) {
	col := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			col++
		case '\t':
			col += 4 - col%4
		default:
			return col, s[i:]
		}
	}
	return col, ""
}

func atxHeading(line string) (int, string) {
	col, s := indent(line)
	if col > 3 {
		return 0, ""
	}
	n := 0
	for n < len(s) && s[n] == '#' {
		n++
	}
	if n == 0 || n > 6 {
		return 0, ""
	}
	rest := s[n:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return 0, "" // "#hashtag" is text
	}
	rest = strings.Trim(rest, " \t")
	// A closing sequence counts only after a blank, so "C#" keeps its #.
	if t := strings.TrimRight(rest, "#"); t == "" {
		rest = ""
	} else if len(t) < len(rest) && (t[len(t)-1] == ' ' || t[len(t)-1] == '\t') {
		rest = strings.TrimRight(t, " \t")
	}
	return n, rest
}

func opensFence(line string) (byte, int, bool) {
	col, s := indent(line)
	if col > 3 || s == "" || (s[0] != '`' && s[0] != '~') {
		return 0, 0, false
	}
	c := s[0]
	n := run(s, c)
	if n < 3 {
		return 0, 0, false
	}
	// ```foo``` on one line is inline code, not a fence.
	if c == '`' && strings.Contains(s[n:], "`") {
		return 0, 0, false
	}
	return c, n, true
}

func closesFence(line string, c byte, n int) bool {
	col, s := indent(line)
	if col > 3 {
		return false
	}
	m := run(s, c)
	return m >= n && strings.Trim(s[m:], " \t") == ""
}

func run(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// opensComment follows CommonMark's HTML block rule: a comment hides lines
// only when it starts a line; "<!--" in running text is left alone so that a
// task describing HTML does not swallow the rest of the plan.
func opensComment(line string) (open, closed bool) {
	col, s := indent(line)
	if col > 3 || !strings.HasPrefix(s, "<!--") {
		return false, false
	}
	// From offset 2 so that the empty comments "<!-->" and "<!--->" close themselves.
	return true, strings.Contains(s[2:], "-->")
}

func isBlank(s string) bool { return strings.Trim(s, " \t") == "" }

// isThematicBreak reports a "---"/"***"/"___" line: plans use them to separate
// tasks, so they belong to no task's description.
func isThematicBreak(line string) bool {
	col, s := indent(line)
	if col > 3 || s == "" || (s[0] != '-' && s[0] != '*' && s[0] != '_') {
		return false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case s[0]:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}

// unwrapEmphasis removes emphasis around a whole heading ("**Task 1.1: Foo**")
// but not inside it, where underscores are often part of a name.
func unwrapEmphasis(s string) string {
	for {
		s = strings.TrimSpace(s)
		unwrapped := false
		for _, m := range []string{"**", "__", "*", "_"} {
			if len(s) > 2*len(m) && strings.HasPrefix(s, m) && strings.HasSuffix(s, m) {
				s = s[len(m) : len(s)-len(m)]
				unwrapped = true
				break
			}
		}
		if !unwrapped {
			return s
		}
	}
}
