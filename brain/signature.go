package brain

import (
	"slices"
	"strings"
)

// signature.go tells whether two attempts failed the same way. Comparing the raw texts does not: the same failing
// check comes back with another line number, duration, temp directory, address or goroutine, in a full traceback
// one time and a summary line the next, wrapped in different closing words ("Still failing.", "The task could not
// be completed."). So an attempt's failure is reduced to its signature: the lines that say what failed (compiler
// messages, exceptions, failing tests, assertions), with what varies from run to run normalised away, plus what
// identifies the failure (the failing tests, the kinds of error). Two failures are the same when their signatures
// are, whatever the words around them.

// signature is what identifies one attempt's failure.
type signature struct {
	lines []string        // the failure's key lines, normalised, sorted, each once
	tests map[string]bool // the failing tests it names
	kinds map[string]bool // the kinds of error it names (exception types, compiler error codes, "panic")
	prose string          // the whole failure, for failures told in prose only (normalised when compared)
}

// noise is what changes between runs of the same failure, and what it is replaced with. Plain numbers stay: in an
// assertion ("got 3, want 4") they are the failure.
var noise = []struct {
	re   *pattern
	with string
}{
	// Source locations: file.go:12:5, file.ts(12,5), "line 12", rustc's "12 |" gutter.
	{lazyRE(`(\.[A-Za-z]{1,5}):\d+(?::\d+)?`), "$1:#"},
	{lazyRE(`(\.[A-Za-z]{1,5})\(\d+,\s*\d+\)`), "$1:#"},
	{lazyRE(`(?i)\b(line|col|column|row|offset)\s+\d+`), "$1 #"},
	{lazyRE(`(?m)^\s*\d+\s+\|`), "#|"},
	{lazyRE(`\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?`), "<time>"},
	{lazyRE(`\b\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?\s*(?:[ap]\.?m\.?\b)?`), "<time>"},
	{lazyRE(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "<id>"},
	{lazyRE(`\b0x[0-9a-fA-F]+\b`), "<addr>"},
	// Temporary files and directories: /tmp/…, macOS's /var/folders/…, tmpXXXX and pytest-N names.
	{lazyRE(`(?:/tmp|/var/folders|/private/var/folders|/var/tmp)(?:/[^\s'"():,]*)?`), "<tmp>"},
	{lazyRE(`\b(?:tmp|temp)[\w-]*\d[\w-]*|\bpytest-(?:of-\w+/pytest-)?\d+`), "<tmp>"},
	// Durations and sizes of a run: (0.03s), 1.204 s, 12ms, 3 minutes.
	{lazyRE(`(?i)\b\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?)\b`), "<dur>"},
	// Ids of processes, threads, goroutines, ports, seeds and attempts.
	{lazyRE(`(?i)\b(goroutine|thread|pid|process|port|seed|attempt|worker|job|run|build|request)([\s#=:]+)\d+`), "$1$2#"},
	{lazyRE(`\b((?:\d{1,3}\.){3}\d{1,3}|localhost|\[::1?\]):\d+`), "$1:#"},
}

// normalizeFailure removes from s what varies between runs of one failure, and the spacing.
func normalizeFailure(s string) string {
	for _, n := range noise {
		s = n.re.ReplaceAllString(s, n.with)
	}
	// Hex ids (commits, request and session ids): seven or more hex digits, with a digit and a letter among them.
	s = hexIDRe.ReplaceAllStringFunc(s, func(h string) string {
		if strings.ContainsAny(h, "0123456789") && strings.ContainsAny(h, "abcdef") {
			return "<hex>"
		}
		return h
	})
	return strings.Join(strings.Fields(s), " ")
}

var hexIDRe = lazyRE(`\b[0-9a-f]{7,}\b`)

var (
	// orch's own prefix on each history entry, and the lines orch adds about the agent process.
	historyPrefixRe = lazyRE(`^\s*Failed:\s*`)
	orchLineRe      = lazyRE(`(?i)^\s*(?:the agent exited with code \d+|killed by \w+|the agent did not report success|stderr:.*|exit status \d+)\s*$`)
	// Lines that say what an assertion compared: "Expected: 90", "Received: 81", "got 3, want 4", "left: 1".
	assertionLineRe = lazyRE(oneOf(`(?i)`,
		`^\s*(?:expected|received|actual|got|want|wanted|left|right|but was|difference)\b\s*(?:[:=]|\s\S)`,
		`\bexpected\b.{1,80}\b(?:but (?:got|was|found|received)|got|found|received)\b`,
		`\bgot\b.{1,80}\bwant(?:ed)?\b`,
		`\bassert(?:ion)?\b.{0,40}(?:==|!=|\bis not\b|\bin\b)`,
		// Rust's assert!: "assertion failed: Range::parse(\"^0.2.3\").is_ok()", the expression that did not hold.
		`^\s*assertion failed: \S`,
	))
	// A linter's finding under its file's name (eslint, stylelint, rubocop): "  23:6  warning  message  rule".
	lintLineRe   = lazyRE(`^\s*\d+:\d+\s+(?:error|warning|warn|[EWCF])\s+\S`)
	fileHeaderRe = lazyRE(`^\s*[\w./@-]+\.[A-Za-z]{1,5}\s*$`)
	// Stack frames say where, not what: they differ with every edit and are left out of the key lines.
	stackFrameRe = lazyRE(`^\s*(?:at\s+\S+\s*\(|at\s+[\w$.<>]+\(|File "|\S+\.go:\d+\s+\+0x|-->\s)`)
	// What names a failing test: go test, pytest, unittest, jest, cargo, gradle and rspec forms.
	failingTestRes = []*pattern{
		lazyRE(`--- FAIL:\s+(\S+)`),
		lazyRE(`\bthread '([^']+)' panicked`),
		lazyRE(`(?m)^\s*FAILED\s+(\S+?)(?:\s+-\s|\s*$)`),
		lazyRE(`(?m)^\s*(?:FAIL|ERROR):\s+(\w+\s+\([\w.]+\))`),
		lazyRE(`(?m)^\s*●\s+(.+?)\s*$`),
		lazyRE(`(?m)^\s*test\s+(\S+)\s+\.\.\.\s+FAILED`),
		// cargo-nextest: "FAIL [   0.003s] crate-name module::tests::name", the binary's name before the test's.
		lazyRE(`(?m)^\s*(?:FAIL|SIGSEGV|SIGABRT|TIMEOUT) \[\s*[\d.]+s\] (?:\S+ )?(\S+)\s*$`),
		lazyRE(`(?m)^\s*(\S+\s+>\s+.+?)\s+FAILED\s*$`),
		lazyRE(`(?m)^\s*rspec\s+(\S+)`),
		// Playwright and Cypress name a failing test by its spec file and line ("checkout.spec.ts:42 › pays with saved
		// card", "checkout.spec.ts:42: locator.click: Timeout …"); the line stays while the test's words differ.
		lazyRE(`\b([\w./-]+\.(?:spec|test|cy)\.[cm]?[jt]sx?:\d+)(?::\d+)?(?:\s*›|:\s)`),
	}
	// Where an error starts inside a line of prose, and a file named before it (which is part of the error).
	errorStartRe = lazyRE(`\b(?:[A-Z][\w.$]*(?:Error|Exception)|[Ee]rror|ERROR|panic|[Ff]atal|FAIL(?:ED)?)\b`)
	fileRefRe    = lazyRE(`\.[A-Za-z]{1,5}\b`)
	// What orch appends to the agent's error about the process ("; exit status 1; the agent exited with code 1").
	agentPartsRe = lazyRE(`(?:;\s*(?:error_[a-z_]+|exit status \d+|the agent exited with code \d+|killed by \w+|the agent did not report success|stderr: .*))+\s*$`)
	// An error after the test or place it happened in.
	errorAfterPlaceRe = lazyRE(`^\s*(?:FAILED\s+\S+\s+-\s+|\S+:\d+(?::\d+)?:\s+)((?:[A-Z][\w.$]*)?(?:Error|Exception)\b.*)$`)
	// A line that names a failing test and nothing else.
	testHeaderRe = lazyRE(`^(?:(?:--- )?FAIL: \S+(?: \(<dur>\))?|FAIL: \w+ \([\w.]+\)|● .*|test \S+ \.\.\. FAILED|_{3,} \S+ _{3,})$`)
	// What names a kind of error: exception types, compiler error codes, a panic.
	errorKindRes = []*pattern{
		lazyRE(`\b((?:[A-Z][\w$]*)?(?:Error|Exception|Panic))\b`),
		lazyRE(`\berror\[(E\d{4})\]|\berror (TS\d+)\b|\b(SA\d{4}|E\d{3}|W\d{3}|F\d{3})\b`),
		lazyRE(`\b(panic): `),
		lazyRE(`\[([a-z]+(?:-[a-z]+)+)\]\s*$`),
	}
)

// maxKeyLines bounds the key lines kept of one failure: comparing two signatures costs a similarity per pair of
// lines, and a failure worth comparing says what failed in its first few dozen.
const maxKeyLines = 24

// signatureOf reads the signature of one attempt's failure, as orch records it in the attempt history.
func signatureOf(failure string) signature {
	failure = historyPrefixRe.ReplaceAllString(failure, "")
	d := newDoc(failure)
	sig := signature{tests: map[string]bool{}, kinds: map[string]bool{}}
	keys := keyLines{seen: map[string]bool{}}
	specific := map[int]bool{}
	for _, e := range errorLines(d.lines) {
		if e.specific {
			specific[e.index] = true
		}
	}
	var prose []string
	file := "" // the file a linter's findings are listed under
	for i, l := range d.lines {
		if orchLineRe.MatchString(l) || strings.TrimSpace(l) == "" {
			continue
		}
		prose = append(prose, l)
		switch {
		case stackFrameRe.MatchString(l):
		case fileHeaderRe.MatchString(l):
			file = strings.TrimSpace(l)
		case lintLineRe.MatchString(l):
			keys.add(strings.TrimSpace(file + " " + strings.TrimSpace(l)))
		case specific[i] || assertionLineRe.MatchString(l):
			keys.add(l)
		}
	}
	for _, re := range failingTestRes {
		for _, m := range re.FindAllStringSubmatch(d.text, -1) {
			sig.tests[normalizeFailure(m[1])] = true
		}
	}
	sig.lines = keys.lines
	// A line that only names the failing test ("--- FAIL: TestX (0.01s)") is in tests; among the key lines it
	// would make any two failures of one test look alike.
	if msgs := slices.DeleteFunc(slices.Clone(sig.lines), testHeaderRe.MatchString); len(msgs) > 0 {
		sig.lines = msgs
	}
	for _, l := range sig.lines {
		addErrorKinds(sig.kinds, l)
	}
	slices.Sort(sig.lines)
	sig.prose = strings.Join(prose, "\n")
	return sig
}

// keyLines are the lines of a failure that say what failed, normalised, each once, at most maxKeyLines.
type keyLines struct {
	lines []string
	seen  map[string]bool
}

func (k *keyLines) add(l string) {
	if len(k.lines) >= maxKeyLines {
		return
	}
	// "I tried again: ModuleNotFoundError: …" is the error; the words before it are the agent's.
	if loc := errorStartRe.FindStringIndex(l); loc != nil && loc[0] > 0 && !strings.ContainsAny(l[:loc[0]], "/\\()[]") &&
		!fileRefRe.MatchString(l[:loc[0]]) {
		l = l[loc[0]:]
	}
	l = agentPartsRe.ReplaceAllString(l, "")
	// "FAILED tests/x.py::test_y - AssertionError: …", "tests/x.py:17: AssertionError: …": the test and the
	// place are kept apart (tests, and the location moves with every edit); the line is the error.
	if m := errorAfterPlaceRe.FindStringSubmatchIndex(l); m != nil {
		l = l[m[2]:]
	}
	if n := normalizeFailure(l); n != "" && !k.seen[n] {
		k.seen[n] = true
		k.lines = append(k.lines, n)
	}
}

// addErrorKinds adds the kinds of error line l names (exception types, compiler error codes, a panic) to kinds.
func addErrorKinds(kinds map[string]bool, l string) {
	for _, re := range errorKindRes {
		for _, m := range re.FindAllStringSubmatch(l, -1) {
			for _, g := range m[1:] {
				if g != "" {
					kinds[g] = true
				}
			}
		}
	}
}

// ErrorSimilarity is how alike two attempts' failures are, from 0 to 1, by their signatures: 1 for the same
// failing check told with different numbers, paths, timings or words around it. Failures that name different
// failing tests, or errors of different kinds, are different failures however alike their texts look. When
// neither failure has a line that says what failed (an agent's prose only), their normalised texts are compared.
//
// What failed decides before the words do (subject.go): the same resource, test or package named by different
// tools is the same failure (1), and a different one of the same kind is a different failure (at most
// differentSubjectCap), whatever the texts share.
func ErrorSimilarity(a, b string) float64 {
	return failureOf(a).likeness(failureOf(b))
}

// failure is one attempt's failure read once: its signature, its subject and its text.
type failure struct {
	sig  signature
	subj subject
	text string
}

func failureOf(s string) failure {
	s = withoutLogPrefixes(s)
	text := historyPrefixRe.ReplaceAllString(s, "")
	sig := signatureOf(s)
	return failure{sig: sig, subj: subjectIn(text, strings.ToLower(text), sig.tests), text: text}
}

// differentSubjectCap is the most two failures about different things can score: below any threshold that
// would call them a loop.
const differentSubjectCap = 0.5

// likeness is ErrorSimilarity of two failures read once.
func (fa failure) likeness(fb failure) float64 {
	sim := fa.sig.similarity(fb.sig)
	switch compareSubjects(fa.subj, fb.subj, fa.text, fb.text) {
	case subjectSame:
		return 1
	case subjectDifferent:
		return min(sim, differentSubjectCap)
	}
	return sim
}

// similarity is ErrorSimilarity of two signatures read once.
func (sa signature) similarity(sb signature) float64 {
	if len(sa.lines) == 0 || len(sb.lines) == 0 {
		return Similarity(normalizeFailure(sa.prose), normalizeFailure(sb.prose))
	}
	linesA, linesB := strings.Join(sa.lines, "\n"), strings.Join(sb.lines, "\n")
	sim := max(Similarity(linesA, linesB), containment(sa.lines, sb.lines))
	if len(sa.tests) > 0 && len(sb.tests) > 0 {
		sim *= jaccard(sa.tests, sb.tests)
	}
	if len(sa.kinds) > 0 && len(sb.kinds) > 0 && jaccard(sa.kinds, sb.kinds) == 0 {
		sim *= 0.5
	}
	return sim
}

// containment is how much of the shorter list of key lines the longer one says too: the mean, over the shorter
// list's lines, of each one's best similarity to a line of the other. A failure told in full one time and by its
// summary line the next is the same failure.
func containment(a, b []string) float64 {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(a) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range a {
		best := 0.0
		for _, y := range b {
			best = max(best, Similarity(x, y))
			if best == 1 {
				break
			}
		}
		sum += best
	}
	return sum / float64(len(a))
}

func jaccard(a, b map[string]bool) float64 {
	inter, union := 0, len(b)
	for k := range a {
		if b[k] {
			inter++
		} else {
			union++
		}
	}
	if union == 0 {
		return 1
	}
	return float64(inter) / float64(union)
}
