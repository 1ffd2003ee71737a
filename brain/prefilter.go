package brain

import (
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// prefilter.go skips regular expressions that cannot match. Go's regexp scans a line position by position, and a
// case-insensitive alternation of a hundred phrases costs microseconds a line; the heuristic runs dozens of them
// over every line and sentence of an output. Most of these patterns cannot match without one of a few words
// ("fail", "error", "should"), and looking for those words in a lower-cased line is a hundred times cheaper. The
// words are derived from each pattern's syntax, so a phrase added to a pattern is never filtered out by mistake.

// minLiteral is the shortest word worth looking for: a shorter one is in nearly every line, and the check would
// only add its own cost.
const minLiteral = 2

// guarded is a pattern with the words one of which every match contains.
type guarded struct {
	p    *pattern
	once sync.Once
	lits []string // lower-cased (see fold); nil: every line may match
	// pairs indexes lits by their first two bytes when there are many of them (manyLiterals): a line is then scanned
	// once, each position looked up, instead of once for every word.
	pairs *pairIndex
}

// manyLiterals is how many words a guard holds before a single scan of the line beats one search per word.
const manyLiterals = 12

// pairIndex is a set of words keyed by their first two bytes.
type pairIndex struct {
	seen  [1 << 16 / 64]uint64 // bit k: some word starts with the two bytes k
	words map[uint16][]string
}

func newPairIndex(lits []string) *pairIndex {
	x := &pairIndex{words: map[uint16][]string{}}
	for _, l := range lits {
		k := uint16(l[0])<<8 | uint16(l[1])
		x.seen[k>>6] |= 1 << (k & 63)
		x.words[k] = append(x.words[k], l)
	}
	return x
}

// in reports whether one of the words is in s.
func (x *pairIndex) in(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		k := uint16(s[i])<<8 | uint16(s[i+1])
		if x.seen[k>>6]&(1<<(k&63)) == 0 {
			continue
		}
		for _, w := range x.words[k] {
			if strings.HasPrefix(s[i:], w) {
				return true
			}
		}
	}
	return false
}

// guards lists every guard, so that a test can check each against the patterns' matches.
var guards []*guarded

// guard is p with its words. Declare guards at package level only, beside the patterns they guard.
func guard(p *pattern) *guarded {
	g := &guarded{p: p}
	guards = append(guards, g)
	return g
}

// guardAll guards each of ps: a union runs whole when any one of its words is in a line, its parts only when
// their own are.
func guardAll(ps []*pattern) []*guarded {
	gs := make([]*guarded, len(ps))
	for i, p := range ps {
		gs[i] = guard(p)
	}
	return gs
}

// matchAny reports whether one of gs matches s, whose folded form is low, running only those whose words are in it.
func matchAny(gs []*guarded, s, low string) bool {
	for _, g := range gs {
		if g.match(s, low) {
			return true
		}
	}
	return false
}

// match is p.MatchString(s) for a text whose folded form is low.
func (g *guarded) match(s, low string) bool { return g.may(low) && g.p.MatchString(s) }

// may reports whether the pattern can match a text whose folded form (fold) is low.
func (g *guarded) may(low string) bool {
	g.once.Do(func() {
		if re, err := syntax.Parse(g.p.String(), syntax.Perl); err == nil {
			if lits, ok := requiredLiterals(re.Simplify()); ok {
				g.lits = lits
				if len(lits) >= manyLiterals {
					g.pairs = newPairIndex(lits)
				}
			}
		}
	})
	if g.lits == nil {
		return true
	}
	if g.pairs != nil {
		return g.pairs.in(low)
	}
	for _, l := range g.lits {
		if strings.Contains(low, l) {
			return true
		}
	}
	return false
}

// requiredLiterals returns folded words one of which every match of re contains, and false when there are none
// good enough to filter by (a match may be empty, or one of its parts is too short or unknown).
func requiredLiterals(re *syntax.Regexp) ([]string, bool) {
	if strs, ok := exactStrings(re); ok {
		for _, s := range strs {
			if len(s) < minLiteral {
				return nil, false
			}
		}
		return strs, true
	}
	switch re.Op {
	case syntax.OpLiteral:
		lit, ok := foldLiteral(re.Rune, re.Flags&syntax.FoldCase != 0)
		if !ok || len(lit) < minLiteral {
			return nil, false
		}
		return []string{lit}, true
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiterals(re.Sub[0])
		}
	case syntax.OpConcat:
		return bestOfConcat(re.Sub)
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			lits, ok := requiredLiterals(sub)
			if !ok {
				return nil, false
			}
			all = append(all, lits...)
		}
		return all, true
	}
	return nil, false
}

// bestOfConcat picks, among the parts of a concatenation, the one whose words filter best: the longest shortest
// word. Adjacent parts that match few exact strings are joined first, their strings crossed ("s" then "hould" or
// "hall" is "should" or "shall").
func bestOfConcat(subs []*syntax.Regexp) ([]string, bool) {
	var best []string
	bestScore := -1
	consider := func(lits []string) {
		score := len(lits[0])
		for _, l := range lits {
			score = min(score, len(l))
		}
		if score >= minLiteral && (score > bestScore || score == bestScore && len(lits) < len(best)) {
			best, bestScore = lits, score
		}
	}
	var run []string // the strings the current run of exact parts matches
	flush := func() {
		if run != nil {
			consider(run)
			run = nil
		}
	}
	for _, sub := range subs {
		if strs, ok := exactStrings(sub); ok {
			if run == nil {
				run = strs
				continue
			}
			if crossed, ok := cross(run, strs); ok {
				run = crossed
				continue
			}
			flush()
			run = strs
			continue
		}
		flush()
		if lits, ok := requiredLiterals(sub); ok {
			consider(lits)
		}
	}
	flush()
	return best, best != nil
}

// maxExact bounds the strings of an exact set: beyond it, looking for each costs more than the pattern saves.
const maxExact = 32

// exactStrings is every string re can match, folded, when they are few: literals, alternations and
// concatenations of them, optional parts, small character classes ([sd], [Ff]) and the empty-width assertions.
func exactStrings(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		lit, ok := foldLiteral(re.Rune, re.Flags&syntax.FoldCase != 0)
		return []string{lit}, ok
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return []string{""}, true
	case syntax.OpCapture:
		return exactStrings(re.Sub[0])
	case syntax.OpQuest:
		strs, ok := exactStrings(re.Sub[0])
		if !ok || len(strs) >= maxExact {
			return nil, false
		}
		return append([]string{""}, strs...), true
	case syntax.OpCharClass:
		var strs []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(strs) == 4 {
					return nil, false
				}
				lit, ok := foldLiteral([]rune{r}, true)
				if !ok {
					return nil, false
				}
				if !slices.Contains(strs, lit) {
					strs = append(strs, lit)
				}
			}
		}
		return strs, len(strs) > 0
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			strs, ok := exactStrings(sub)
			if !ok || len(all)+len(strs) > maxExact {
				return nil, false
			}
			all = append(all, strs...)
		}
		return all, true
	case syntax.OpConcat:
		all := []string{""}
		for _, sub := range re.Sub {
			strs, ok := exactStrings(sub)
			if !ok {
				return nil, false
			}
			if all, ok = cross(all, strs); !ok {
				return nil, false
			}
		}
		return all, true
	}
	return nil, false
}

// cross is every string of a followed by one of b, when there are at most maxExact.
func cross(a, b []string) ([]string, bool) {
	if len(a)*len(b) > maxExact {
		return nil, false
	}
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return out, true
}

// foldLiteral is a literal's runes as fold writes them, or false when a match of it might fold differently: a
// non-ASCII letter with case variants under case folding (the Greek sigma has three), which fold does not
// follow.
func foldLiteral(rs []rune, foldCase bool) (string, bool) {
	var b strings.Builder
	for _, r := range rs {
		if r >= utf8.RuneSelf && unicode.SimpleFold(r) != r {
			return "", false
		}
		if foldCase || r < utf8.RuneSelf {
			r = foldRune(r)
		}
		b.WriteRune(r)
	}
	return b.String(), true
}

// fold lower-cases s for guarded.may: ASCII letters, and the two non-ASCII letters that case folding equates with
// ASCII ones (the long s, the Kelvin sign). Other runes stay as they are.
func fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	return strings.Map(foldRune, s)
}

func foldRune(r rune) rune {
	switch {
	case r >= 'A' && r <= 'Z':
		return r + 'a' - 'A'
	case r == '\u017F': // ſ
		return 's'
	case r == '\u212A': // the Kelvin sign
		return 'k'
	}
	return r
}
