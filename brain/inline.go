package brain

import (
	"strings"
	"unicode/utf8"
)

// inline.go reads options that an agent writes inside one sentence of prose instead of a list: "Should I X, or
// Y?", "X, Y, or Z?", "Do you want me to X, or wait?", "whether X or Y", and the alternatives counted out before a
// question ("the codebase has two notification systems: X and Y. Which one should I use?"). The labels are the
// alternatives as the agent wrote them, without the words the sentence puts around them all.

var (
	// Where the alternatives of a question start: after an auxiliary and its subject ("should I", "do we",
	// "would you like me to", "should `retry_count`", "do you want `--force` to"), optionally with a verb of
	// choosing after it. Group 1 is the verb of choosing, kept apart because "keep the cache, or drop it" keeps
	// it in the label while "use `date-fns` or `dayjs`" does not.
	inlineLeadRe = lazyRE(`(?i)\b(?:` + anyOf(
		`(?:should|shall|would|will|must) (?:the|this|that|our|your|its)(?:\s+[\w-]+){1,3}\s+be`,
		`(?:would|do|did) you (?:like|want|prefer|need) (?:me |us |[^\s,]+ )?to`,
		`(?:would|do) you (?:like|want|prefer) (?:it|them|this|that|[\x{E000}][0-9]+[\x{E001}])`,
		// "Would you rather I X, Y, or Z?": the one who would act is no part of the first choice.
		`would you (?:prefer|rather)(?: that)? (?:I|we)`,
		`would you (?:prefer|rather|like)`,
		`do you (?:prefer|want)`,
		`(?:should|shall|can|could|must|do|will) (?:I|we|they|it)`,
		`(?:should|shall|would|will|do|does|is|are) (?:[\x{E000}][0-9]+[\x{E001}]|this|that|it|the\s+[\w-]+)`,
	) + `)\s+(?:(?:proceed|go ahead|go) with\s+|(use|keep|pick|choose|opt for|go for|be|prefer|switch to|move to)\s+)?`)
	// A request for the human to act ("Can you share it, or point me to it?") offers no choice for a button.
	humanActionRe = lazyRE(`(?i)\b(?:can|could|will|would) you (?:please )?(\w+)`)
	// A question numbered in a list of questions: a button row answers one question, not one of several.
	listedQuestionRe = lazyRE(`^\s*(?:\d{1,2}[.)]|[-*•])\s`)
	// Words that start an action when an alternative is one: "keep the cache, or drop it", "use X, or wait".
	// Against them an alternative that names a thing ("cents or dollars") is the object of a shared verb.
	actionWordRe = lazyRE(`(?i)^(?:wait|stop|skip|keep|drop|leave|hold|pause|add|remove|delete|revert|ask|continue|proceed|abort|retry|write|rewrite|switch|move|pin|bump|ignore|fix|merge|rebase|ship|go|do|make|create|run|change|update|split|defer|postpone|patch|reset|disable|enable|raise|lower|port|stash|commit|push|apply|cancel|try|use|implement|build|replace|rename|mark|document|file|open|close|release|roll|let)$`)
	// A question clause repeated after "or" starts a second question, not an alternative: "Is X still
	// registered, or can it be removed?" asks two yes/no questions.
	inlineNewClauseRe = lazyRE(`(?i)^(?:should|shall|can|could|would|will|do|does|did|is|are|was|were|must|may|have|has)\s+(?:I|we|you|it|they|this|that|there|he|she|the|these|those|our|your|its|[\x{E000}])`)
	// "or not", "or something else": the question is yes/no or open, with no alternatives named.
	inlineNoAltRe = lazyRE(`(?i)^(?:not|no|nothing|neither|both|either|something else|anything else|otherwise|else|other|so|whatever)\b`)
	// A counted set of existing alternatives: "has two notification systems: X and Y", "there are three
	// formats: X, Y and Z". Only what exists or is offered counts: "I made two changes: X and Y" is work done.
	countedRe = lazyRE(`(?i)\b(?:has|have|there (?:are|were)|there're|offers?|supports?|provides?|ships? with|comes? with|allows?)\s+(two|three|four|both)\b[^:.?!]{0,60}:\s*(.+)$`)
	// Words that start a complement or a predicate shared by all the alternatives: "UTC or local time for the
	// cutoff", "whether 404 or 410 is right".
	sharedComplementRe = lazyRE(`(?i)\s(?:for|of|in|on|at|to|when|during|across|with|from|by|as|is|are|would be|should be|will be|makes sense|works)\s`)
	articleRe          = lazyRE(`^(?:a|an|the)$`)
	participleRe       = lazyRE(`(?i)^[a-z]{3,}(?:ed|ing)$`)
	whetherSubjectRe   = lazyRE(`(?i)^(?:[^,]*?\s)?(?:should|would|could|can|must|will|needs? to|ought to)\s+(?:be\s+|get\s+)?`)
	auxStartRe         = lazyRE(`(?i)^(?:should|shall|can|could|would|will|do|does|did|is|are|was|were|must|may|have|has)\b`)
	// Where an over-long alternative can end and keep its sense: before a clause that goes on about it.
	labelJointRe = lazyRE(`(?i),\s|;\s|\s[—–-]+\s|\s(?:and|so|which|because|since|then|but)\s`)
	parenRe      = lazyRE(`\s*\([^()]*\)`)
	// indirectChoiceRe asks for a choice without a question mark and names its alternatives after a colon or a dash:
	// "Let me know which region to use: …", "Tell me which profile to use — …".
	indirectChoiceRe = lazyRE(`(?i)\b(?:let me know|tell me|confirm|advise|decide)\s+(?:which|whether|what)\b[^:?—–]{0,80}(?::|\s[—–]\s)\s*`)
	// couldRe opens alternatives the agent holds open in a statement: "I could …, or …", "we could … or …".
	couldRe = lazyRE(`(?i)^(?:[^,;:]{0,40}?,\s*)?(?:I|we) could (?:either\s+)?`)
)

// maxInlineWords bounds an alternative written in a sentence; maxInlineLabel is the length past which a label is
// cut at a clause joint, to stay a button's text.
const (
	maxInlineWords = 16
	maxInlineLabel = 60
)

// sentenceOptions reads the alternatives written inside one sentence, or nil.
// Each form needs a word most sentences lack ("or", "and", a colon), looked for first: a long output has
// thousands of sentences.
func sentenceOptions(s string) []choice {
	lower := strings.ToLower(s)
	hasOr := strings.Contains(lower, " or ")
	if hasOr && strings.Contains(lower, "either") {
		if opts := eitherOrChoices(s); opts != nil {
			return opts
		}
	}
	if hasOr {
		if opts := questionAlternatives(s); opts != nil {
			return opts
		}
	}
	if strings.Contains(s, ":") && (hasOr || strings.Contains(lower, " and ")) {
		return countedAlternatives(s)
	}
	return nil
}

// questionAlternatives reads "Should I X, or Y?", "X, Y, or Z?" and "whether X or Y": a question (or an indirect
// one) whose last clause joins its alternatives with "or".
func questionAlternatives(s string) []choice {
	s = strings.TrimSpace(strings.Trim(strings.TrimSpace(stripEmphasis(s)), "*_"))
	if listedQuestionRe.MatchString(s) {
		return nil
	}
	region, whether, toDo := "", false, false
	switch {
	case strings.HasSuffix(s, "?"):
		region = strings.TrimRight(s, "?")
	case indirectChoiceRe.MatchString(s):
		// "Let me know which region to use: `eu-west-1` or `eu-central-1`.": the alternatives after the colon.
		loc := indirectChoiceRe.FindStringIndex(s)
		region, whether = strings.TrimRight(strings.TrimSpace(s[loc[1]:]), ".!"), true
	case couldRe.MatchString(s):
		// "I could update the snapshot, or revert the token to 4px; I haven't done either yet": the alternatives
		// the agent holds open, each an action, up to the end of their clause.
		loc := couldRe.FindStringIndex(s)
		region, whether, toDo = s[loc[1]:], true, true
		if j := strings.IndexAny(region, ";"); j >= 0 {
			region = region[:j]
		}
		region = strings.TrimRight(strings.TrimSpace(region), ".!")
		// Alternatives held open are set apart by a comma ("X, or Y"); "I could reproduce it on Linux or macOS"
		// tells what the agent did, and "could not" what it did not.
		if !strings.Contains(region, ", or ") || strings.HasPrefix(lowerASCII(region), "not ") {
			return nil
		}
	default:
		i := wordIndex(lowerASCII(s), "whether")
		if i < 0 {
			return nil
		}
		region, whether = strings.TrimRight(s[i+len("whether"):], ".!"), true
		// "whether to X or Y", "whether the column should be X or Y": the alternatives follow the verb.
		region = strings.TrimSpace(region)
		if strings.HasPrefix(region, "to ") {
			region, toDo = region[len("to "):], true
			region = strings.Replace(region, " or to ", " or ", 1)
		} else if loc := whetherSubjectRe.FindStringIndex(region); loc != nil && loc[1] < strings.Index(region+" or ", " or ") {
			region = region[loc[1]:]
		}
	}
	// The alternatives are in the last clause: after a colon or a dash that introduces them.
	if i := lastClauseBreak(region); i >= 0 {
		_, size := utf8.DecodeRuneInString(region[i:])
		region = region[i+size:]
	}
	region = strings.TrimSpace(dropAsides(region))
	// The last "or" joins the last alternative.
	orAt, orLen := -1, 0
	for _, sep := range []string{", or ", " or "} {
		if i := strings.LastIndex(region, sep); i > orAt {
			orAt, orLen = i, len(sep)
		}
	}
	if orAt <= 0 {
		return nil
	}
	left, last := strings.TrimSpace(region[:orAt]), strings.TrimSpace(region[orAt+orLen:])
	if last == "" || inlineNoAltRe.MatchString(last) {
		return nil
	}
	if m := humanActionRe.FindStringSubmatch(left); m != nil && !humanChoiceVerb[strings.ToLower(m[1])] {
		return nil
	}
	lead, verb := "", ""
	if i := strings.LastIndex(left, ", "); i >= 0 && questionWordRe.MatchString(left) {
		// "Which should I use for the files, S3 or the local volume?": the question, then its alternatives.
		left, lead = left[i+2:], lowerASCII(left[:i])
	} else if m := inlineLeadRe.get().FindAllStringSubmatchIndex(left, -1); m != nil {
		k := m[len(m)-1]
		lead = lowerASCII(strings.TrimSpace(left[k[0]:k[1]]))
		if k[2] >= 0 {
			verb = left[k[2]:k[3]]
			lead = lowerASCII(strings.TrimSpace(left[k[0]:k[2]]))
		}
		left = left[k[1]:]
		if verb != "" && startsWithVerb(last) {
			left = verb + " " + left // "keep the cache, or drop it": the verb is the choice's
		}
	}
	// A second question after "or" is only an alternative when it repeats the first one's lead-in.
	if m := inlineNewClauseRe.FindStringSubmatch(last); m != nil {
		if lead == "" || !strings.HasPrefix(lowerASCII(last), lead) {
			return nil
		}
		last = strings.TrimSpace(last[len(lead):])
	}
	// Parallel alternatives start with the same word ("per API key or per IP address"), or with an article
	// each ("expire after an hour or a day").
	if w := lowerASCII(firstWord(last)); w != "" {
		at := lastWordIndex(lowerASCII(left), w)
		if articleRe.MatchString(w) {
			for _, a := range []string{"a", "an", "the"} {
				at = max(at, lastWordIndex(lowerASCII(left), a))
			}
		}
		if at > 0 {
			left = left[at:]
		}
	}
	// Without a lead-in the alternatives must be all there is: "UTC or local time?", not a question whose
	// subject ("Should entries expire after an hour …") the rules cannot tell from its first alternative.
	if lead == "" && !whether && (len(strings.Fields(left))+len(strings.Fields(last)) > 8 || auxStartRe.MatchString(left)) {
		return nil
	}
	items := []string{left}
	if parts := strings.Split(left, ", "); len(parts) > 1 && len(parts) <= 5 && allShort(parts, 8) {
		items = parts
	}
	items = append(items, last)
	return alternativeChoices(items, toDo)
}

// lastClauseBreak is the index of the last colon, semicolon or dash of s that ends a clause, or -1: the colon of a
// time or a ratio ("02:00", "3:1") ends none.
func lastClauseBreak(s string) int {
	for i := len(s); i > 0; {
		j := strings.LastIndexAny(s[:i], ":;—")
		if j < 0 {
			return -1
		}
		if s[j] == ':' && j > 0 && j+1 < len(s) && isDigit(s[j-1]) && isDigit(s[j+1]) {
			i = j
			continue
		}
		return j
	}
	return -1
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// countedAlternatives reads alternatives counted out after a colon: "has two notification systems: X and Y".
func countedAlternatives(s string) []choice {
	m := countedRe.FindStringSubmatch(strings.TrimRight(strings.TrimSpace(s), "."))
	if m == nil {
		return nil
	}
	want := map[string]int{"two": 2, "both": 2, "three": 3, "four": 4}[strings.ToLower(m[1])]
	list := strings.TrimSpace(dropAsides(m[2]))
	var items []string
	for _, sep := range []string{", and ", ", or ", " and ", " or "} {
		if i := strings.LastIndex(list, sep); i > 0 {
			items = append(strings.Split(list[:i], ", "), list[i+len(sep):])
			break
		}
	}
	if len(items) != want {
		return nil
	}
	return alternativeChoices(items, false)
}

// alternativeChoices cleans the alternatives of a sentence into labels: parentheticals dropped, a complement
// that the last one shares with the others cut from it ("UTC or local time for the cutoff"), and a long one cut
// at a clause joint. It returns nil unless there are two or more, each of a readable length. actions says the
// sentence put them as things to do ("whether to X or Y"): each one's complement is its own.
// inlineItemKeyRe is a key before an alternative in a sentence: "(1)", "(b)", "2)".
var inlineItemKeyRe = lazyRE(`^(?:\([1-9a-hA-H]\)|[1-9a-h]\))\s+`)

func alternativeChoices(items []string, actions bool) []choice {
	if len(items) < 2 {
		return nil
	}
	infinitives := true
	for i, it := range items {
		// A key the agent put before each alternative ("(1) pin it, or (2) regenerate the stubs") is no part of it.
		items[i] = strings.TrimSpace(inlineItemKeyRe.ReplaceAllString(strings.TrimSpace(dropAsides(it)), ""))
		infinitives = infinitives && strings.HasPrefix(items[i], "to ")
		if n := len(strings.Fields(items[i])); n == 0 || n > maxInlineWords {
			return nil
		}
	}
	// "whether to apply it or to change …": the "to" belongs to the question, not to the alternatives.
	if infinitives {
		for i := range items {
			items[i] = strings.TrimSpace(items[i][len("to "):])
		}
	}
	last := len(items) - 1
	// An alternative that is itself an action ("…, or keep them as they are") owns what follows its verb.
	if shared := sharedComplementRe.FindStringIndex(items[last]); shared != nil && !actions && !infinitives && !startsWithVerb(items[last]) {
		plain := true
		for _, it := range items[:last] {
			// A participle or gerund ("dropped or kept for …") is an action whose complement is its own.
			w := strings.Fields(it)
			if sharedComplementRe.MatchString(" "+it+" ") || len(w) > 3 || startsWithVerb(it) || len(w) > 0 && participleRe.MatchString(w[len(w)-1]) {
				plain = false
			}
		}
		if plain {
			items[last] = items[last][:shared[0]]
		}
	}
	opts := make([]choice, 0, len(items))
	for _, it := range items {
		if len(it) > maxInlineLabel {
			for _, loc := range labelJointRe.FindAllStringIndex(it, -1) {
				if len(strings.Fields(it[:loc[0]])) >= 3 {
					it = it[:loc[0]]
					break
				}
			}
		}
		c := cleanOption(it)
		if c.label == "" {
			return nil
		}
		opts = append(opts, c)
	}
	return opts
}

var questionWordRe = lazyRE(`(?i)^(?:which|what)\b`)

// startsWithVerb says that an alternative opens with an action ("drop it", "wait until …", "publish it in …"), as
// against a thing ("the Helm chart", "90 days", "`dayjs`", "dollars").
func startsWithVerb(s string) bool {
	return actionWordRe.MatchString(firstWord(s)) || verbObjectRe.MatchString(s)
}

// verbObjectRe opens with a word and an object pronoun: whatever the word, it is a verb ("publish it …", "vendor
// them …").
var verbObjectRe = lazyRE(`(?i)^[a-z]+\s+(?:it|them|this|that|these|those|everything|both)\b`)

// humanChoiceVerb: "would you like/prefer/rather …" asks for a choice; "could you share …" asks for an act.
var humanChoiceVerb = map[string]bool{"like": true, "prefer": true, "rather": true, "want": true, "need": true, "be": true}

// maxAsideWords bounds a parenthetical kept in a label: "(pure Rust)" says which, "(needs changes in 14 components
// that use …)" argues for it.
const maxAsideWords = 4

// dropAsides takes out the parentheticals longer than maxAsideWords, and those that only quote code: "Jest
// (`jest.config.js`)" points at where the alternative is configured, the name is before it.
func dropAsides(s string) string {
	return parenRe.ReplaceAllStringFunc(s, func(p string) string {
		if len(strings.Fields(p)) > maxAsideWords || codeOnlyAsideRe.MatchString(p) {
			return ""
		}
		return p
	})
}

// codeOnlyAsideRe is a parenthetical holding nothing but code spans (hidden in the prose as placeholders).
var codeOnlyAsideRe = lazyRE(`^\s*\((?:\s*[\x{E000}][0-9]+[\x{E001}][\s,]*)+\)$`)

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return strings.Trim(f[0], ",.;:")
}

// lastWordIndex is the last index of word w in s at word boundaries, or -1.
func lastWordIndex(s, w string) int {
	at := -1
	for from := 0; from < len(s); {
		i := wordIndex(s[from:], w)
		if i < 0 {
			break
		}
		at = from + i
		from = at + 1
	}
	return at
}

func allShort(parts []string, words int) bool {
	for _, p := range parts {
		if n := len(strings.Fields(p)); n == 0 || n > words {
			return false
		}
	}
	return true
}

// lowerASCII lower-cases ASCII letters only, so that an index into the result is one into s: strings.ToLower
// changes the length of invalid or some non-ASCII text.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
