package brain

import (
	"strings"
)

// recommend.go maps what an agent recommends onto the option it names. Escalation turns the recommendation
// into a default button by exact label or leading key, so "I'd suggest (b); it keeps the audit trail" has to
// become option b's label: agents name their pick by key ("B", "option 2", "#3"), by position ("the first
// one"), by the label itself, or by a paraphrase of it ("I'd suggest merging").

var (
	// A key at the start of the recommended phrase: "B", "(b)", "[2]", "option 2", "#3", "choice C".
	recKeyRe = lazyRE(`^((?i:option|choice|alternative|approach|possibility|path|plan|strategy|variant|route|number)\s+|#\s*)?(?:\(([A-Ha-h1-9])\)|\[([A-Ha-h1-9])\]|([A-Ha-h1-9])(?:\)|\.(?:\s|$))?)`)
	// A position: "the first one", "the second option", "the latter", "the 2nd", "option two".
	recOrdinalRe = lazyRE(`(?i)^(?:the\s+(first|second|third|fourth|fifth|last|former|latter|1st|2nd|3rd|4th|5th)\b|(first|second|third|fourth|fifth|last|1st|2nd|3rd|4th|5th)\s+(?:one|option|approach|choice|alternative|row|path|plan)\b|(?:option|choice|alternative|approach|number)\s+(one|two|three|four|five)\b)`)
	// Words that lead into the thing recommended without being part of it: "going with B", "that we use B".
	recFillerRe = lazyRE(`(?i)^(?:that\s+)?(?:we\s+|you\s+)?(?:(?:go|going|stick|sticking)\s+with|opt(?:ing)?\s+for|us(?:e|ing)|pick(?:ing)?|choos(?:e|ing)|tak(?:e|ing))\s+`)
	// Where the recommended thing ends and the reason for it begins.
	recClauseEndRe = lazyRE(`(?i)\s*[,;:(]|\s[—–-]+\s|[.!?](?:\s|$)|\s(?:because|since|given|as long as|as it|so that|so|which|but|plus|unless|though|although|while|if|when|until)\b`)
	wordRe         = lazyRE(`[\p{L}\p{N}][\p{L}\p{N}._+/-]*[\p{L}\p{N}]|[\p{L}\p{N}]`)
)

var (
	// Recommendations in other words, the pick after the cue: "my vote is option 2", "if it were up to me I'd go
	// X", "Leaning B.", "I'm leaning towards the first", "I'd probably go with …", "I prefer …".
	otherRecommendRe = lazyRE(`(?i)` + anyOf(
		`\bmy (?:vote|pick|preference|choice|recommendation|suggestion)(?: would be| is| goes to|:)`,
		`\bif it were (?:up to )?me,?\s+I(?:'d| would)(?:\s+(?:go with|go for|go|pick|choose|take|use|do))?`,
		`\bif it were (?:my (?:call|decision|choice)|up to me),?\s*`,
		`\bI(?:'d| would) (?:probably|personally|rather|still) (?:go with|go for|pick|choose|take|opt for|use)`,
		`\bI(?:'d| would) vote (?:for )?`,
		`^(?:I'm |I am |I'd be |I would be )?lean(?:ing)?(?: (?:towards?|to))?\b`,
		`\bI(?:'m| am) (?:\w+ )?leaning (?:towards?|to)?`,
		`\bI lean (?:towards?|to)?`,
		`\bI (?:prefer|favou?r)\b`,
	))
	// Recommendations that name the pick first: "I think the first one is better", "IMO the upsert is the safer
	// choice", "Postgres would be my pick". The one group that matched is the pick.
	pickFirstRe = lazyRE(`(?i)` + anyOf(
		`^(?:(?:I think|I believe|IMO|IMHO|in my (?:view|opinion)|personally|honestly|frankly),?\s+)(.{1,80}?)\s+(?:is|would be|seems|looks|sounds)(?: like)?\s+(?:the\s+|a\s+)?(?:better|best|safer|simpler|cleaner|preferable|right|way to go|more sensible|sensible)\b`,
		`^(.{1,80}?)\s+(?:would be|is) my (?:pick|choice|vote|preference|recommendation|suggestion)\b`,
		// The pick named by its position or key, with no "I think" before: "The second seems safer to me", "Option B
		// looks like the better fit".
		`^(?:(?:going|go|sticking) with |picking |choosing |taking )?((?:the\s+)?(?:first|second|third|fourth|fifth|last|former|latter)(?:\s+(?:one|option|approach|choice|path|way))?|(?:option|choice|approach|path)\s+[A-Ha-h1-9]|#\s*[1-9]|[A-Ha-h1-9])\s+(?:is|would be|seems|looks|sounds)(?: like)?\s+(?:the\s+|a\s+)?(?:better|best|safer|safest|simpler|simplest|cleaner|cleanest|easier|easiest|preferable|right|way to go|more sensible|sensible|safe (?:default|choice|bet|option)|least (?:disruptive|risky|work|effort)|lowest[- ]risk|(?:smaller|smallest|simpler|simplest) (?:change|diff))\b`,
		// The pick weighed as the better way, subject first or last: "The view is the gentler path", "The safer bet is
		// the alias".
		`^(.{1,80}?)\s+(?:is|would be|seems)\s+(?:the|a|my)\s+`+betterWayRe+`\b`,
		`^(?:the|a|my)\s+`+betterWayRe+`\s+(?:is|would be|seems to be|here is)\s+(.{1,80}?)(?:[,;:]|\s+and\b|\.(?:\s|$)|$)`,
		// The pick, then what the agent would do: "Switching to the Pages workflow is what I'd do".
		`^(.{1,80}?)\s+(?:is|would be) what I(?:'d| would) (?:do|pick|choose|go with|recommend|suggest)\b`,
	))
)

// betterWayRe is a way weighed as the better one: "safer bet", "gentler path", "least risky option".
const betterWayRe = `(?:least (?:disruptive|risky|work|effort)|lowest[- ]risk|safer|safest|gentler|gentlest|better|best|simpler|simplest|cleaner|cleanest|cheaper|cheapest|easier|easiest|smaller|smallest|lower-risk|less risky|least risky|more conservative|more pragmatic|sensible|pragmatic)\s+(?:bet|path|option|choice|way|route|approach|fix|move|call|pick)`

// positionRe names an option by its position in a sentence.
var positionRe = lazyRE(`(?i)\bthe (?:first|second|third|fourth|fifth|last|former|latter|other)\b`)

// The words without which otherRecommendRe and pickFirstRe cannot match: most sentences have none, and
// checking for them first keeps a long output's reading cheap.
var (
	otherCueWords  = []string{"my ", " me", "lean", "prefer", "favo", "vote", "'d ", "would "}
	pickFirstWords = []string{"my ", "better", "best", "safe", "simple", "clean", "eas", "preferable", "right", "way to go", "sensible", "what i", "gentl", "cheap", "small", "risk", "conservative", "pragmatic", "least", "lowest"}
)

func mayRecommend(lower string, words []string) bool {
	for _, w := range words {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// recommendedPhrase is what sentence s recommends, from just after its cue ("I'd suggest", "Recommendation:")
// to the end of the sentence, markdown emphasis and punctuation trimmed; or, where the cue follows the pick
// ("the first one is better"), the pick. "" when s has no cue.
func recommendedPhrase(s string) string {
	p, _ := recommendedCue(s)
	return p
}

// recommendedCue is recommendedPhrase, and whether its cue is explicit ("Recommendation: A.", "I'd go with B")
// rather than a pick named first and praised ("C is the right long-term fix"): an explicit cue outweighs a praise.
func recommendedCue(s string) (phrase string, explicit bool) {
	// Emphasis first: "__Recommended:__" has no word boundary before its cue.
	s = stripEmphasis(s)
	loc := recommendRe.FindStringIndex(s)
	if loc != nil && strings.Trim(s[loc[1]:], "*_:. \t") == "" {
		loc = nil // the cue ends the sentence: "B is what I'd pick" names the pick before it
	}
	lower := ""
	if loc == nil {
		lower = strings.ToLower(s)
		if mayRecommend(lower, otherCueWords) {
			loc = otherRecommendRe.FindStringIndex(s)
		}
	}
	if loc == nil {
		if !mayRecommend(lower, pickFirstWords) {
			return "", false
		}
		t := strings.TrimSpace(s)
		// "The first is safer, the second is simpler" weighs two options against each other: no pick.
		if m := pickFirstRe.FindStringSubmatch(t); m != nil && len(positionRe.FindAllStringIndex(t, 2)) < 2 {
			return strings.TrimSpace(strings.Trim(strings.Join(m[1:], ""), "*_ ")), false // one group matched
		}
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimLeft(s[loc[1]:], "*_: \t"), ". ")), true
}

// resolveRecommendation returns the label of the option that phrase names, and whether it names one.
func resolveRecommendation(phrase string, labels []string) (string, bool) {
	phrase = strings.TrimSpace(strings.Trim(strings.TrimSpace(phrase), "*_"))
	if phrase == "" || len(labels) == 0 {
		return "", false
	}
	for _, p := range []string{phrase, recFillerRe.ReplaceAllString(phrase, "")} {
		if l, ok := labelInPhrase(p, labels); ok {
			return l, true
		}
		if i, ok := recommendedIndex(p, len(labels)); ok {
			return labels[i], true
		}
	}
	clause := recommendedClause(recFillerRe.ReplaceAllString(phrase, ""))
	if l, ok := phraseInLabel(clause, labels); ok {
		return l, true
	}
	return paraphrasedLabel(clause, labels)
}

// recommendedClause is the recommended thing without the reason given for it: "pgbouncer, since …" →
// "pgbouncer". It is also what a recommendation that names no option is reported as.
func recommendedClause(phrase string) string {
	if loc := recClauseEndRe.FindStringIndex(phrase); loc != nil && loc[0] > 0 {
		phrase = phrase[:loc[0]]
	}
	return strings.TrimSpace(phrase)
}

// labelInPhrase finds the longest label that the phrase starts with, else the longest it contains as whole
// words: "Soft delete — it's the only…", "pnpm workspaces, since…" (and not "npm workspaces" inside it).
func labelInPhrase(phrase string, labels []string) (string, bool) {
	p := strings.ToLower(phrase)
	best, bestAt := -1, -1
	for i, l := range labels {
		ll := strings.ToLower(l)
		at := wordIndex(p, ll)
		if at < 0 {
			continue
		}
		switch {
		case best < 0,
			at == 0 && bestAt != 0,
			(at == 0) == (bestAt == 0) && len(ll) > len(labels[best]):
			best, bestAt = i, at
		}
	}
	if best < 0 {
		return "", false
	}
	return labels[best], true
}

// wordIndex is the first index of sub in s where it starts and ends at word boundaries, or -1.
func wordIndex(s, sub string) int {
	if sub == "" {
		return -1
	}
	for from := 0; from < len(s); {
		i := strings.Index(s[from:], sub)
		if i < 0 {
			return -1
		}
		i += from
		end := i + len(sub)
		if (i == 0 || !isWordByte(s[i-1]) || !isWordByte(sub[0])) && (end == len(s) || !isWordByte(s[end]) || !isWordByte(sub[len(sub)-1])) {
			return i
		}
		from = i + 1
	}
	return -1
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

// recommendedIndex reads a key or a position at the start of the phrase as an option's index. A lower-case
// letter standing alone before a word is the article ("a database-level index"), not option a.
func recommendedIndex(phrase string, n int) (int, bool) {
	if m := recOrdinalRe.FindStringSubmatch(phrase); m != nil {
		return ordinalIndex(m[1]+m[2]+m[3], n)
	}
	m := recKeyRe.FindStringSubmatch(phrase)
	if m == nil {
		return 0, false
	}
	key := m[2] + m[3] + m[4]
	rest := phrase[len(m[0]):]
	if rest != "" && isWordByte(rest[0]) || len(rest) > 1 && (rest[0] == '.' || rest[0] == ',') && isWordByte(rest[1]) {
		return 0, false // "B2", "2024", "ab", "3.8": a word or a number, not a key
	}
	if m[4] != "" && m[1] == "" && key[0] >= 'a' && key[0] <= 'h' && len(m[0]) == 1 && strings.HasPrefix(rest, " ") {
		return 0, false
	}
	i := keyIndex(key[0])
	return i, i < n
}

// ordinals are the positions an option is named by: "the second", "the 2nd", "option two".
var ordinals = map[string]int{
	"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "former": 0, "latter": 0, "last": 0,
	"1st": 0, "2nd": 1, "3rd": 2, "4th": 3, "5th": 4,
	"one": 0, "two": 1, "three": 2, "four": 3, "five": 4,
}

// ordinalIndex is the index of the option that a position word names among n ("the second", "the latter"), and
// whether it names one of them.
func ordinalIndex(word string, n int) (int, bool) {
	w := strings.ToLower(word)
	i, ok := ordinals[w]
	if w == "latter" || w == "last" {
		i = n - 1
	}
	return i, ok && i < n
}

// keyIndex is the option index a key names: 1 or a or A is the first.
func keyIndex(c byte) int {
	switch {
	case c >= '1' && c <= '9':
		return int(c - '1')
	case c >= 'a' && c <= 'h':
		return int(c - 'a')
	}
	return int(c - 'A')
}

// phraseInLabel finds the one label that contains the whole recommended phrase as words: "R2" for
// "Cloudflare R2", "pgbouncer" for "pgbouncer (transaction mode)".
func phraseInLabel(phrase string, labels []string) (string, bool) {
	p := strings.ToLower(phrase)
	if len(p) < 2 {
		return "", false
	}
	return onlyLabel(labels, func(l string) bool { return wordIndex(strings.ToLower(l), p) >= 0 })
}

// onlyLabel is the one label that match accepts, and whether there is exactly one.
func onlyLabel(labels []string, match func(label string) bool) (string, bool) {
	found := -1
	for i, l := range labels {
		if match(l) {
			if found >= 0 {
				return "", false
			}
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return labels[found], true
}

// paraphrasedLabel finds the label sharing the most word stems with the phrase, when one clearly does: at
// least half the phrase's content words, and more than any other label ("dropping 3.8" → "Drop 3.8 and
// bump …", not "Keep 3.8 support …").
func paraphrasedLabel(phrase string, labels []string) (string, bool) {
	want := stems(phrase)
	if len(want) == 0 {
		return "", false
	}
	best, bestScore, tie := -1, 0, false
	for i, l := range labels {
		score := sharedStems(want, stems(l))
		switch {
		case score > bestScore:
			best, bestScore, tie = i, score, false
		case score == bestScore && score > 0:
			tie = true
		}
	}
	if best < 0 || tie || 2*bestScore < len(want) {
		return leadingVerbLabel(phrase, labels)
	}
	return labels[best], true
}

// leadingVerbLabel finds the one label whose first content word is the phrase's: options in a sentence are mostly
// actions ("keep the old column order", "switch it to the new spec"), and a pick names its action first even when it
// says the rest in its own words ("to switch and tell finance").
func leadingVerbLabel(phrase string, labels []string) (string, bool) {
	want := firstStem(phrase)
	if want == "" {
		return "", false
	}
	return onlyLabel(labels, func(l string) bool { return firstStem(l) == want })
}

// firstStem is the stem of s's first content word, or "".
func firstStem(s string) string {
	for _, w := range wordRe.get().FindAllString(strings.ToLower(s), -1) {
		if !stopWords[w] {
			return stem(w)
		}
	}
	return ""
}

// stopWords carry no choice: a paraphrase and its label differ in them freely.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "to": true, "of": true, "and": true, "or": true, "in": true, "on": true,
	"for": true, "with": true, "it": true, "its": true, "we": true, "i": true, "you": true, "this": true,
	"that": true, "them": true, "they": true, "one": true, "option": true, "approach": true, "be": true,
	"is": true, "are": true, "by": true, "at": true, "from": true, "as": true, "all": true, "just": true,
}

// stems is the set of content words of s, each cut to a crude stem so that "merging" meets "merge" and
// "dropping" meets "drop". A compound of code ("audit_archive", "deploy-pages", "actions/checkout") counts with
// each of its parts: "archiving" is about the `audit_archive` table.
func stems(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range wordRe.get().FindAllString(strings.ToLower(s), -1) {
		if stopWords[w] {
			continue
		}
		out[stem(w)] = true
		if parts := strings.FieldsFunc(w, isCompoundJoin); len(parts) > 1 {
			for _, p := range parts {
				if len(p) > 2 && !stopWords[p] {
					out[stem(p)] = true
				}
			}
		}
	}
	return out
}

// isCompoundJoin is what joins the parts of a name in code: snake_case, kebab-case, paths and dotted names.
func isCompoundJoin(r rune) bool { return r == '_' || r == '-' || r == '/' || r == '.' }

func stem(w string) string {
	for _, suf := range []string{"ing", "ed", "es", "s", "e"} {
		if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) {
			w = strings.TrimSuffix(w, suf)
			break
		}
	}
	// "dropp" (from "dropping") → "drop".
	if n := len(w); n > 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiou", rune(w[n-1])) {
		w = w[:n-1]
	}
	return w
}

var (
	// evaluativeRe speaks for something in the first person or as the way to go: "I'd rotate now", "my call",
	// "makes more sense", "the safest bet".
	evaluativeRe = lazyRE(`(?i)\b(?:recommend|prefer|suggest|lean(?:ing)?|pick|go with|go for|choose|favou?r|vote|I'd|I would|my call|makes (?:more )?sense|way to go|safest|best bet)\b`)
	// againstRe turns a sentence against what it names: "I wouldn't pick B", "avoid the second".
	againstRe = lazyRE(`(?i)\b(?:not|never|avoid|against|rather than|instead of|unless)\b|n't\b`)
	// optionKeyRefRe names an option by its key in a sentence: "option 2", "#3", "(b)", "choice C".
	optionKeyRefRe = lazyRE(`(?i)\b(?:option|choice|approach|path|plan|variant|alternative|number)\s+([A-Ha-h1-9])\b|#\s*([1-9])\b|\(([A-Ha-h1-9])\)`)
	// optionOrdinalRefRe names an option by its position in a sentence.
	optionOrdinalRefRe = lazyRE(`(?i)\bthe (first|second|third|fourth|fifth|former|latter|last)\b`)
)

// evaluativePick is the one option that a sentence outside the options' block speaks for (evaluativeRe), naming it
// by its key, its position or its words ("I'd rotate the token now; …" names "Rotate the token now"), the last such
// sentence first. A sentence that names two options weighs them, and one against what it names picks nothing.
func evaluativePick(sentences []sentence, labels []string, block listBlock) (string, bool) {
	if len(labels) < 2 {
		return "", false
	}
	for k := len(sentences) - 1; k >= 0; k-- {
		s := sentences[k]
		// The options' own lines, a question, and a tool's drawn box ("│ ● 1. Yes" rows) speak for nothing.
		if block.end > block.start && s.line >= block.start && s.line < block.end ||
			strings.HasSuffix(s.text, "?") || strings.ContainsAny(s.text, "│┃╭╰❯●") {
			continue
		}
		clauses := clauseSplitRe.Split(s.text, -1)
		whole := -1 // how many options the whole sentence names, read once when a later clause needs it
		for k, clause := range clauses {
			if !evaluativeRe.MatchString(clause) || againstRe.MatchString(clause) || handsOverRe.MatchString(clause) {
				continue
			}
			refs := optionRefs(clause, labels)
			if len(refs) == 1 {
				for i := range refs {
					return labels[i], true
				}
			}
			// "I'd hold off.": the action the agent would take, as the one option it starts.
			if lead := firstPersonLeadRe.FindStringIndex(clause); len(refs) == 0 && lead != nil {
				if l, ok := leadingVerbLabel(clause[lead[1]:], labels); ok {
					return l, true
				}
			}
			// "Regenerating touches 41 files, but it's the one I'd go with": a later clause speaks for what the
			// sentence opened with, named by its action; "The first is quicker, so that's my pick": by its position
			// or its words, when the clause points back at it.
			if whole < 0 && k > 0 {
				whole = len(optionRefs(s.text, labels))
			}
			if k > 0 && whole <= 1 {
				if l, ok := leadingVerbLabel(clauses[0], labels); ok {
					return l, true
				}
			}
			if k > 0 && whole == 1 && pointsBackClauseRe.MatchString(clause) {
				for i := range optionRefs(s.text, labels) {
					return labels[i], true
				}
			}
		}
	}
	return "", false
}

var (
	// handsOverRe gives the choice to the person: "I'd rather you decide", "I'd rather the maintainers decide this one".
	handsOverRe = lazyRE(`(?i)\b(?:I|we)(?:'d| would) (?:rather|like|prefer)(?: for)? (?:you|someone|somebody|a person|a human|(?:the|their|our|your) [\w-]+(?: [\w-]+)?)(?: to)? (?:decide|choose|pick|make|weigh|settle|call|review|sign)\b`)
	// pointsBackClauseRe opens a clause that speaks for what the sentence named before it: "so that's my pick",
	// "which is what I'd do", "and it's the one I'd choose".
	pointsBackClauseRe = lazyRE(`(?i)^(?:and\s+|so\s+)?(?:that|this|it|which)(?:'s|\s+is|\s+would be)\b`)
)

// firstPersonLeadRe opens a clause with what the agent would do: "I'd", "I would", "I'd rather", "we'd".
var firstPersonLeadRe = lazyRE(`(?i)^\s*(?:I|we)(?:'d| would)(?:\s+(?:rather|probably|just|still))?\s+`)

// clauseSplitRe cuts a sentence into the clauses a pick and its reason are told in: "I'd rotate now; a leaked token
// isn't worth the wait" speaks for rotating now, whatever the reason's "isn't".
var clauseSplitRe = lazyRE(`\s*(?:;|\s[—–]\s|,\s+(?:but|since|because|as|so)\s)\s*`)

// optionRefs are the options sentence s names: by key, by position, or by most of its content words (two at least).
func optionRefs(s string, labels []string) map[int]bool {
	refs := map[int]bool{}
	for _, m := range optionKeyRefRe.FindAllStringSubmatch(s, -1) {
		if i := keyIndex((m[1] + m[2] + m[3])[0]); i < len(labels) {
			refs[i] = true
		}
	}
	for _, m := range optionOrdinalRefRe.FindAllStringSubmatch(s, -1) {
		if i, ok := ordinalIndex(m[1], len(labels)); ok {
			refs[i] = true
		}
	}
	have := stems(s)
	for i, l := range labels {
		want := stems(l)
		if shared := sharedStems(want, have); shared >= 2 && 2*shared >= len(want) {
			refs[i] = true
		}
	}
	return refs
}

// sharedStems counts the stems of want that have holds too.
func sharedStems(want, have map[string]bool) int {
	n := 0
	for w := range want {
		if have[w] {
			n++
		}
	}
	return n
}
