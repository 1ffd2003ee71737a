package brain

import (
	"strings"
)

// ParseOptions parses an options block into the options' texts, keys stripped (callers label them A, B, …).
// It reads lettered options "A) x  B) y" (also on one line, also "A. x", "[A] x", "(A) x", "Option A: x"),
// numbered ones "1. x" / "1) x", and bullets "- x" / "* x". Lettered and numbered keys must run in order
// from A or 1, which keeps "plan B. Then…" inside an option from splitting it. When several styles occur,
// the one starting first wins, so a bulleted list of "A) …" items reads as the lettered options.
// It returns nil when the text has no recognisable options.
func ParseOptions(text string) []string {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	type parsed struct {
		start int
		opts  []string
	}
	var best *parsed
	try := func(start int, opts []string) {
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
	try(sequenceOptions(text, letterKeys))
	try(sequenceOptions(text, numberKeys))
	try(bulletOptions(text))
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

var (
	// Each key must follow the start of the text or whitespace, so "e.g." and "v1.2" are not keys.
	// Markdown bold around the key ("**A)**") is allowed because LLM output uses it constantly.
	letterKeyRe = lazyRE(`(?:^|\s)\**(?:[Oo]ption\s+([A-Ha-h])\s*[:.)\-–]|\[([A-Ha-h])\]|\(([A-Ha-h])\)|([A-Ha-h])[).])\**(?:\s+|$)`)
	numberKeyRe = lazyRE(`(?:^|\s)\**(?:[Oo]ption\s+([1-9])\s*[:.)\-–]|\[([1-9])\]|\(([1-9])\)|([1-9])[).])\**(?:\s+|$)`)
	bulletRe    = lazyRE(`^\s*[-*•]\s+(.*)$`)
	leadKeyRe   = lazyRE(`^\**(?:[Oo]ption\s+\w\s*[:.)\-–]|\[\w\]|\(\w\)|\w[).])\**\s+`)
	spaceRunRe  = lazyRE(`\s+`)
	// A sentence end: punctuation, space, then a capital (or "I" starting the next sentence).
	sentenceEndRe = lazyRE(`[.!?]\s+[A-Z]`)
)

// sequenceOptions finds keys A, B, C… (or 1, 2, 3…) in order and returns the text between them, with the
// offset of the first key. Letters are accepted in either case but not mixed within a list.
func sequenceOptions(text string, kind keyKind) (int, []string) {
	re := letterKeyRe
	if kind == numberKeys {
		re = numberKeyRe
	}
	var keys []optionKey
	for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
		for g := 1; g <= 4; g++ {
			if m[2*g] >= 0 {
				start := m[0]
				for start < len(text) && isSpace(text[start]) {
					start++
				}
				lineStart := strings.LastIndexByte(text[:start], '\n')+1 == start || start == 0
				keys = append(keys, optionKey{text[m[2*g]], start, m[1], lineStart})
				break
			}
		}
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
	opts := make([]string, 0, len(chosen))
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
		if o := cleanOption(text[k.end:end]); o != "" {
			opts = append(opts, o)
		}
	}
	return chosen[0].start, opts
}

type optionKey struct {
	r          byte
	start, end int // start of the key, end of the key and the spaces after it
	lineStart  bool
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

// bulletOptions reads "- x" / "* x" lines; indented lines that are not bullets continue the previous item.
func bulletOptions(text string) (int, []string) {
	var opts []string
	first := -1
	offset := 0
	inItem := false
	for _, line := range strings.SplitAfter(text, "\n") {
		if m := bulletRe.FindStringSubmatch(strings.TrimRight(line, "\r\n")); m != nil {
			if first < 0 {
				first = offset
			}
			opts = append(opts, m[1])
			inItem = true
		} else if inItem && strings.TrimSpace(line) != "" && (line[0] == ' ' || line[0] == '\t') {
			opts[len(opts)-1] += " " + strings.TrimSpace(line)
		} else {
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
	out := opts[:0]
	for _, o := range opts {
		if keyed {
			o = leadKeyRe.ReplaceAllString(o, "")
		}
		if o = cleanOption(o); o != "" {
			out = append(out, o)
		}
	}
	return first, out
}

// cleanOption joins a wrapped option onto one line and drops the markdown emphasis and list punctuation
// that would otherwise end up on a button.
func cleanOption(s string) string {
	s = spaceRunRe.ReplaceAllString(strings.TrimSpace(s), " ")
	s = strings.TrimSpace(strings.Trim(s, "*_"))
	s = strings.TrimRight(s, ",;.")
	return strings.TrimSpace(s)
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
