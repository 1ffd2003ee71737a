package brain

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ParseOptions parses an options block into the options' texts, keys stripped (callers label them A, B, …).
// It reads lettered options "A) x  B) y" (also on one line, also "A. x", "[A] x", "(A) x", "Option A: x" or
// "Approach A — x" with an aside such as "(recommended)" after the key, as a heading "### Option A: x"), numbered
// ones "1. x" / "1) x" / "First possibility: x", bullets "- x" / "* x",
// the rows of a markdown table, and the selection a CLI draws ("❯ 1. Yes"). Lettered and
// numbered keys must run in order from A or 1, which keeps "plan B. Then…" inside an option from splitting
// it. When several styles occur, the one starting first wins, so a bulleted list of "A) …" items reads as the
// lettered options.
//
// The texts are button labels: markdown emphasis, a trailing period and a "(Recommended)" marker are dropped,
// an item written "**Name**: explanation" or "**Name** — explanation" is labelled by its name, and what is said
// under an option (its pros and cons as sub-bullets, a paragraph after it) is not part of its label. It returns nil when the text has no
// recognisable options.
func ParseOptions(text string) []string {
	return optionLabels(parseOptions(text))
}

// choice is one option offered to the human: its label, and whether the agent marked it as the one it
// recommends ("(Recommended)"), which the label no longer shows.
type choice struct {
	label       string
	recommended bool
}

func optionLabels(opts []choice) []string {
	if len(opts) == 0 {
		return nil
	}
	labels := make([]string, len(opts))
	for i, o := range opts {
		labels[i] = o.label
	}
	return labels
}

func parseOptions(text string) []choice {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	type parsed struct {
		start int
		opts  []choice
	}
	var best *parsed
	try := func(start int, opts []choice) {
		if len(opts) == 0 {
			return
		}
		// Two or more options beat a single one whatever its position: a lone "A)" is rarely the list.
		if best == nil ||
			(len(opts) >= 2 && len(best.opts) < 2) ||
			((len(opts) >= 2) == (len(best.opts) >= 2) && start < best.start) {
			best = &parsed{start, opts}
		}
	}
	// A selection drawn by a CLI is the options as the agent's tool put them; its numbered rows would otherwise
	// read as a numbered list with the frame glued to each.
	if _, opts := selectionOptions(text); len(opts) >= 2 {
		return opts
	}
	try(sequenceOptions(text, letterKeys))
	try(sequenceOptions(text, numberKeys))
	try(bulletOptions(text))
	try(tableOptions(text))
	if best == nil {
		return nil
	}
	return best.opts
}

type keyKind int

const (
	letterKeys keyKind = iota
	numberKeys
)

// keyAsideRe is a short parenthetical between an option's key and its name: "Option 1 (recommended): …".
const keyAsideRe = `(?:\s*\([^()\n]{1,24}\))?`

// optionWordRe is the word that names an option by its key: "Option A:", "Approach 1 —", "Alternative B)",
// "Choice 2.", "Possibility 3:".
const optionWordRe = `(?:[Oo]ption|[Aa]pproach|[Aa]lternative|[Cc]hoice|[Pp]ossibility|[Pp]ath|[Pp]lan|[Ss]trategy|[Vv]ariant|[Rr]oute)`

var (
	// Each key must follow the start of the text or whitespace, so "e.g." and "v1.2" are not keys.
	// Markdown bold around the key ("**A)**") is allowed because LLM output uses it constantly.
	// A capital and a colon at the start of a line ("A: Keep the element …") is a key too; within a line it is not
	// ("Plan B: …" has its option word, and "note A: …" is no list).
	letterKeyRe = lazyRE(`(?:^|\s)\**(?:` + optionWordRe + `\s+([A-Ha-h])` + keyAsideRe + `\s*[:.)\-–—]|\[([A-Ha-h])\]|\(([A-Ha-h])\)|([A-Ha-h])[).])\**(?:\s+|$)|(?:^|\n)[ \t]*\**([A-H]):\**[ \t]+`)
	numberKeyRe = lazyRE(`(?:^|\s)\**(?:` + optionWordRe + `\s+([1-9])` + keyAsideRe + `\s*[:.)\-–—]|\[([1-9])\]|\(([1-9])\)|([1-9])[).])\**(?:\s+|$)`)
	bulletRe    = lazyRE(`^\s*[-*•]\s+(.*)$`)
	leadKeyRe   = lazyRE(`^\**(?:` + optionWordRe + `\s+\w\s*[:.)\-–—]|\[\w\]|\(\w\)|\w[).])\**\s+`)
	spaceRunRe  = lazyRE(`\s+`)
	// A sentence end: punctuation, space, then a capital (or "I" starting the next sentence).
	sentenceEndRe = lazyRE(`[.!?]\s+[A-Z]`)
)

// sequenceOptions finds keys A, B, C… (or 1, 2, 3…) in order and returns the text between them, with the
// offset of the first key. Letters are accepted in either case but not mixed within a list.
func sequenceOptions(text string, kind keyKind) (int, []choice) {
	re := letterKeyRe
	if kind == numberKeys {
		re = numberKeyRe
	}
	var keys []optionKey
	for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
		for g := 1; 2*g+1 < len(m); g++ {
			if m[2*g] >= 0 {
				start := m[0]
				for start < len(text) && isSpace(text[start]) {
					start++
				}
				lead := text[strings.LastIndexByte(text[:start], '\n')+1 : start]
				lineStart := headingLeadRe.MatchString(lead)
				keys = append(keys, optionKey{text[m[2*g]], start, m[1], lineStart, lineStart && titleLine(lead, text[start:])})
				break
			}
		}
	}
	if kind == numberKeys {
		keys = append(keys, ordinalKeys(text)...)
		sort.SliceStable(keys, func(i, j int) bool { return keys[i].start < keys[j].start })
	}
	// Keys that start lines win when they make a list: then "plan B." inside option A is text.
	chosen := pickSequence(keys, kind, true)
	if len(chosen) < 2 {
		chosen = pickSequence(keys, kind, false)
	}
	if len(chosen) == 0 {
		return 0, nil
	}
	// Options written inline ("go to A) stdout  B) a file  C) syslog. I'd pick A…") end with their line's
	// sentence; options on lines of their own run on to the end of the block, as wrapped options do.
	inline := !strings.Contains(text[chosen[0].start:chosen[len(chosen)-1].start], "\n")
	opts := make([]choice, 0, len(chosen))
	for i, k := range chosen {
		end := len(text)
		if i+1 < len(chosen) {
			end = chosen[i+1].start
		} else if inline && len(chosen) > 1 {
			end = k.end + inlineEnd(text[k.end:])
		}
		if k.end > end {
			continue
		}
		if !inline {
			end = k.end + ownLines(text[k.end:end], k.ownLine)
		}
		if o := cleanOption(text[k.end:end]); o.label != "" {
			// A marker in the key's aside: "Option 2 (Recommended): …".
			o.recommended = o.recommended || recommendedOptRe.MatchString(text[k.start:k.end])
			opts = append(opts, o)
		}
	}
	return chosen[0].start, opts
}

var (
	// What may stand before a key that starts a line: indentation, or a markdown heading's or quote's marks
	// ("### Option A: …").
	headingLeadRe = lazyRE(`^[\s#>]*$`)
	// Options written as paragraphs that open with their position: "First possibility: …", "Second option — …".
	ordinalKeyRe = lazyRE(`(?im)^[\s#>]*\**(first|second|third|fourth|fifth)\s+(?:option|possibility|approach|alternative|choice|way)\s*[:.\-–—]\**\s+`)
)

// ordinalKeys finds the keys of options opened by their position ("First possibility: …") as the numbers 1, 2, ….
func ordinalKeys(text string) []optionKey {
	var keys []optionKey
	for _, m := range ordinalKeyRe.FindAllStringSubmatchIndex(text, -1) {
		start := m[0] + len(text[m[0]:m[2]]) - len(strings.TrimLeft(text[m[0]:m[2]], " \t\n#>*"))
		keys = append(keys, optionKey{byte('1' + ordinals[strings.ToLower(text[m[2]:m[3]])]), start, m[1], true, strings.Contains(text[m[0]:start], "#")})
	}
	return keys
}

type optionKey struct {
	r          byte
	start, end int // start of the key, end of the key and the spaces after it
	lineStart  bool
	// ownLine: the key's line is the option's title, a heading or a line in bold, and what follows it is said about
	// the option.
	ownLine bool
}

// titleLine reports an option's key line that is a title: a markdown heading ("### Option A: …"), or bold to its
// end ("**Option 1: Name**", "**A) Name**"). The lines under it describe the option; they are not its name.
func titleLine(lead, rest string) bool {
	if strings.Contains(lead, "#") {
		return true
	}
	line := rest
	if i := strings.IndexByte(rest, '\n'); i >= 0 {
		line = rest[:i]
	}
	line = strings.TrimSpace(line)
	return (strings.HasPrefix(line, "**") && strings.HasSuffix(line, "**") || strings.HasPrefix(line, "__") && strings.HasSuffix(line, "__")) && len(line) > 4
}

// pickSequence takes the keys A, B, C… (or 1, 2, 3…) in order, skipping others.
func pickSequence(keys []optionKey, kind keyKind, lineStartOnly bool) []optionKey {
	var chosen []optionKey
	var want byte
	for _, k := range keys {
		if lineStartOnly && !k.lineStart {
			continue
		}
		if len(chosen) == 0 {
			switch {
			case kind == letterKeys && (k.r == 'A' || k.r == 'a'):
			case kind == numberKeys && k.r == '1':
			default:
				continue
			}
			want = k.r
		}
		if k.r != want {
			continue
		}
		chosen = append(chosen, k)
		want++
	}
	return chosen
}

// bulletOptions reads "- x" / "* x" lines; indented lines that are not bullets continue the previous item. Bullets
// indented deeper than the first are the points made about an option (its pros and cons), not options, and are
// no part of its label.
func bulletOptions(text string) (int, []choice) {
	var opts []string
	first := -1
	offset := 0
	inItem := false
	indent := -1
	for _, line := range strings.SplitAfter(text, "\n") {
		l := strings.TrimRight(line, "\r\n")
		if m := bulletRe.FindStringSubmatch(l); m != nil {
			depth := len(l) - len(strings.TrimLeft(l, " \t"))
			if indent < 0 {
				indent = depth
			}
			switch {
			case depth > indent:
				inItem = false // a sub-point: the item's label is already whole
			default:
				if first < 0 {
					first = offset
				}
				opts = append(opts, m[1])
				inItem = true
			}
		} else if inItem && strings.TrimSpace(line) != "" && (line[0] == ' ' || line[0] == '\t') {
			opts[len(opts)-1] += " " + strings.TrimSpace(line)
		} else if strings.TrimSpace(line) == "" || line[0] != ' ' && line[0] != '\t' {
			inItem = false
		}
		offset += len(line)
	}
	if first < 0 {
		return 0, nil
	}
	keyed := len(opts) > 1
	for _, o := range opts {
		if !leadKeyRe.MatchString(o) {
			keyed = false
		}
	}
	var out []choice
	for _, o := range opts {
		if keyed {
			o = leadKeyRe.ReplaceAllString(o, "")
		}
		if c := cleanOption(o); c.label != "" {
			out = append(out, c)
		}
	}
	return first, out
}

// ownLines is how much of an option written on lines of its own is its label: its key's line and the lines that
// wrap it, up to a blank line or a sub-list (the option's pros and cons, or steps: what is said about it, not its
// name); the key's line alone when it is a title (a heading or a bold line).
func ownLines(s string, title bool) int {
	if i := strings.IndexByte(s, '\n'); title && i >= 0 {
		return i
	}
	at := 0
	lines := strings.SplitAfter(s, "\n")
	for i, line := range lines {
		if i > 0 && (strings.TrimSpace(line) == "" || subPointRe.MatchString(line) || describes(lines[i-1], line)) {
			return at
		}
		at += len(line)
	}
	return len(s)
}

// describes reports line, under an option's line prev, as what is said about the option rather than the rest of
// its wrapped name: indented, it opens a sentence of its own ("Option A: Set min instances to 2" over "    Removes
// most cold starts; about $38/month"), where a wrapped name goes on in lower case or after a word that joins.
func describes(prev, line string) bool {
	if line == "" || (line[0] != ' ' && line[0] != '\t') {
		return false
	}
	t := strings.TrimSpace(line)
	r, _ := utf8.DecodeRuneInString(t)
	if !unicode.IsUpper(r) || strings.HasPrefix(t, "I ") || strings.HasPrefix(t, "I'") {
		return false
	}
	p := strings.TrimSpace(prev)
	return p != "" && !strings.ContainsAny(p[len(p)-1:], ",;:(-–—/&+") && !joinWordEndRe.MatchString(p)
}

// joinWordEndRe ends a line in the middle of a phrase: "… and", "… to the".
var joinWordEndRe = lazyRE(`(?i)\b(?:and|or|but|to|of|the|a|an|with|for|in|on|at|by|from|into|via|than|as|that|which|its|their|our|your)$`)

// cleanOption turns an option's text into its button label: wrapped lines joined, a recommendation marker
// taken off (and remembered), "**Name**: explanation" cut to the name, markdown emphasis dropped, and the
// punctuation and conjunction that tie an option to the next one in a sentence ("…, or") trimmed.
func cleanOption(s string) choice {
	s = spaceRunRe.ReplaceAllString(strings.TrimSpace(s), " ")
	var o choice
	if loc := recommendedOptRe.FindStringIndex(s); loc != nil {
		o.recommended = true
		s = strings.TrimSpace(s[:loc[0]] + " " + s[loc[1]:])
	}
	// The bold name is the label; what follows its colon explains it. Only bold marks a name: in a plain
	// "Squash: one commit per PR" the agent wrote the whole item as the choice.
	if m := boldNameRe.FindStringSubmatch(s); m != nil {
		s = m[1] + m[2] + m[3] + m[4]
	} else if m := headingNameRe.FindStringSubmatch(s); m != nil {
		s = m[1] // "**Option 1: Name** — …" with its key taken off: the bold that opened before the key closes the name
	}
	s = stripEmphasis(s)
	for {
		t := strings.TrimSpace(strings.Trim(s, "*_"))
		t = trailingJoinRe.ReplaceAllString(t, "")
		t = strings.TrimRight(t, ",;.?!")
		t = strings.TrimSpace(t)
		if t == s {
			break
		}
		s = t
	}
	o.label = s
	return o
}

var (
	// "**Name**: …" or "**Name:** …", in either bold style; also "**Name** — …", a name and what is said of it.
	boldNameRe = lazyRE(`^(?:\*\*([^*]+?)\*\*|__([^_]+?)__)\s*(?::|\s[—–-]\s)|^(?:\*\*([^*]+?):\*\*|__([^_]+?):__)`)
	// An option heading's name left when its key was taken from inside the bold: "Name** — explanation".
	// Or "Name.** explanation": the bold sentence is the name.
	headingNameRe = lazyRE(`^([^*]+?)(?:\*\*(?:\s*(?:[:—–-]\s|$)|\s*$)|[.:]\*\*\s)`)
	// A line that starts a sub-list under an option: a bullet, or a numbered or lettered item, indented or not.
	subPointRe = lazyRE(`^\s*(?:[-*•+]\s|\d{1,2}[.)]\s|\[?[a-hA-H][.)\]]\s)`)
	// ", or" / "or" ending an option written inside a sentence: "(a) stream it, or (b) buffer it".
	trailingJoinRe = lazyRE(`(?:,\s*|\s+)(?:or|and)$`)
	emphasisRe     = lazyRE(`\*\*|__`)
)

// stripEmphasis drops bold markers outside code spans: `__init__` is code, **this** is decoration.
func stripEmphasis(s string) string {
	if !strings.Contains(s, "**") && !strings.Contains(s, "__") {
		return s
	}
	parts := strings.Split(s, "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = emphasisRe.ReplaceAllString(parts[i], "")
	}
	return strings.TrimSpace(strings.Join(parts, "`"))
}

// inlineEnd is where the last inline option ends: at the end of its line or sentence.
func inlineEnd(s string) int {
	end := len(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		end = i
	}
	if loc := sentenceEndRe.FindStringIndex(s[:end]); loc != nil {
		end = loc[0] + 1
	}
	return end
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

var (
	// "either X or Y": the alternatives end where the sentence, or a clause about them, goes on; a parenthetical
	// inside the last one ("`rustls` (pure Rust)") is part of it.
	eitherOrRe = lazyRE(`(?i)\beither\s+(.+?),?\s+or\s+((?:[^()]|\([^()]*\))+?)(?:\s*(?:[,;:!?)]|\.(?:\s|$))|\s[—–-]+\s|\s+(?:as|before|after|because|since|so that|until|unless|when|while|once|then)\b|$)`)
	// A reason given inside an alternative, after a comma.
	eitherReasonRe = lazyRE(`(?i),\s+(?:since|because|as|so that|which|given)\b`)
	// "either way", "either of them", "either one": no alternatives follow.
	eitherNotChoiceRe = lazyRE(`(?i)^(?:way|of|one|side|case|option|approach)\b`)
)

// maxEitherWords bounds each alternative of an "either … or …": a longer stretch is a sentence that happens
// to hold both words, not two things to choose from.
const maxEitherWords = 12

// eitherOrOptions reads the options an agent offers inside one sentence of prose (see inline.go): "either X or
// Y", "Should I X, or Y?", "X, Y, or Z?", "whether X or Y", "has two N: X and Y".
func eitherOrOptions(s string) []choice { return sentenceOptions(s) }

// eitherOrChoices reads the two alternatives of "either X or Y" in a sentence of prose, as written.
func eitherOrChoices(s string) []choice {
	m := eitherOrRe.FindStringSubmatch(s)
	if m == nil || eitherNotChoiceRe.MatchString(m[1]) {
		return nil
	}
	var opts []choice
	for _, alt := range m[1:3] {
		// "either pin `pyarrow` to 15.x, since pandas 2.2 still supports it, or port …": the reason is not the choice.
		if loc := eitherReasonRe.FindStringIndex(alt); loc != nil && loc[0] > 0 {
			alt = alt[:loc[0]]
		}
		if len(strings.Fields(alt)) > maxEitherWords {
			return nil
		}
		c := cleanOption(alt)
		if c.label == "" {
			return nil
		}
		opts = append(opts, c)
	}
	return opts
}

// markedOption is the label of the option the agent marked as recommended, or "".
func markedOption(opts []choice) string {
	for _, o := range opts {
		if o.recommended {
			return o.label
		}
	}
	return ""
}
