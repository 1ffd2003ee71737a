package brain

import (
	"strings"
)

// errors.go picks the lines of an output that say what went wrong, for Interpretation.Error and for quoting
// the latest error in retry guidance. Toolchains differ, so the patterns cover Go, Python, Rust, Node and
// TypeScript, JVM and shell formats; a line naming the failure (exception, compiler message, failing test)
// is worth more than a generic one ("FAIL", "exit status 1").

var (
	// Lines that say precisely what failed.
	specificErrorRes = []*pattern{
		// Python, JS and JVM exceptions: "ModuleNotFoundError: …", "java.lang.IllegalStateException: …".
		lazyRE(`^\s*(?:[A-Za-z_][\w$]*\.)*(?:[A-Z]\w*)?(?:Error|Exception)(?::\s*\S.*|\s*$)`),
		// "error: …", "error[E0425]: …", "fatal: …", "panic: …", "ERROR: …", "Error …: …" (jest, eslint).
		lazyRE(`(?i)^\s*(?:error|fatal|panic)(?:\[\w+\])?:\s*\S`),
		// A capitalised word or two naming where the error came from: "API Error: 529 …", "PHP Fatal error: …".
		lazyRE(`^\s*(?:[A-Z][\w-]*\s+){1,2}(?:[Ff]atal\s+)?(?:[Ee]rror|ERROR):\s*\S`),
		// Compiler and test locations with a message: "./main.go:14:2: undefined: X", "plan_test.go:41: got…".
		lazyRE(`^\s*\S+\.` + sourceExts + `:\d+(?::\d+)?:?\s+\S`),
		// Any tool's "where: ERROR: …": "psql:db/seed.sql:14: ERROR:  duplicate key …".
		lazyRE(`^\s*\S*:\d+(?::\d+)?:\s*(?:ERROR|FATAL|[Ee]rror|[Ff]atal)\b:?`),
		// TypeScript: "src/a.ts(3,5): error TS2304: …" and "src/a.ts:3:5 - error TS2304: …".
		lazyRE(`\berror TS\d+:`),
		// Failing tests: go test, unittest, pytest, jest, mocha, cargo. Jest's "  ● name" is indented under its
		// file's FAIL line; a "●" at the start of a line is Claude Code's mark of a tool call or a message ("● Bash(…)",
		// "● Annotated …"), and one before a number is a drawn selection's cursor row ("● 1. Yes, allow once", as
		// Gemini CLI marks the choice under it).
		lazyRE(`^\s*(?:--- FAIL:|FAIL:|FAILED\s+\S|✕|✗|×)|^\s+●\s+(?:\D|\d+[^\d.)])`),
		// A cross mark of its own opening the line (the AWS CDK's "❌  Stack failed: …").
		lazyRE(`^\s*(?:❌|✘)`),
		lazyRE(`^\s*E\s{2,}\S`),
		lazyRE(`^\s*test \S+ \.\.\. FAILED`),
		// npm ("npm ERR! code E404", since npm 10 "npm error code ETARGET") and pnpm (" ERR_PNPM_NO_MATCHING_VERSION  No
		// matching version found for …"), each opening its error line with its code.
		lazyRE(`^npm (?:ERR!|error) (?:code|errno|\w+ )|^\s*ERR_PNPM_[A-Z0-9_]+\s`),
		// JVM: "Exception in thread "main" java.lang.X: …", "Caused by: …".
		lazyRE(`^\s*(?:Exception in thread|Caused by:)`),
		// A tool prefixing its own error: "migrate: error: …", "gcc: fatal error: …", "ld: error: …".
		lazyRE(`(?i)^\s*[\w.-]+(?:\[\d+\])?: (?:fatal )?(?:error|fatal)\b`),
		// A program's log record at an error level (logRecord): "[2025-03-04 11:02:17,902] ERROR …", "2025-02-11T08:14:03Z
		// pid=7 tid=2a8 FATAL: …", "[2024-06-14T10:51:33+00:00] FATAL: …", and logfmt's "level=error".
		lazyRE(`^\s*` + logCollector + logStamp + `\s+(?:[\w=.:-]+\s+){0,4}\[?(?:FATAL|ERROR|CRITICAL|PANIC|SEVERE)(?:\]|:|\s)|(?i:\blevel=(?:error|fatal|panic|crit(?:ical)?)\b)`),
		// A summary's count of failures, a key of its own line: "  failed:    640", "Errors: 3".
		lazyRE(`(?i)^\s*(?:failed|failures|errors|failed (?:items|records|rows|jobs))\s*:\s+[1-9][\d,]*\s*$`),
		// logrus's text format, its level cut to four letters before the seconds since start: "FATA[0301] timed out …".
		lazyRE(`^\s*` + logCollector + `(?:FATA|ERRO|PANI)\[\d+\]`),
	}
	// Phrases that name an error when they occur in a log line, but that prose describing finished work also
	// uses ("returns 403 Forbidden"): good for picking lines, not for deciding that the run failed.
	keywordErrorRe = lazyRE(`(?i)\b` + anyOf(
		`no module named`,
		`cannot find module`,
		`cannot find package`,
		`no required module provides`,
		`undefined:`,
		`unresolved import`,
		`cannot find (?:value|function|type|symbol|name|crate)`,
		`permission denied`,
		`no such file or directory`,
		`command not found`,
		`cannot connect`,
		`could not connect`,
		`couldn't connect`,
		`connection refused`,
		`reached maximum`,
		`timed out`,
		`segmentation fault`,
		`nil pointer dereference`,
		`access denied`,
		`unauthorized`,
		`forbidden`,
	))
	// Lines that only say that something failed.
	genericErrorRes = []*pattern{
		lazyRE(`^\s*FAIL\b`),
		lazyRE(`(?i)\bexit(?:ed)?(?: with)? (?:status|code):? ?[1-9]`),
		lazyRE(`(?i)^\s*make(?:\[\d+\])?: \*\*\*`),
		lazyRE(`(?i)\btest result: FAILED|\btests?:\s+\d+ failed|\b[1-9]\d* (?:failed|failing)\b`),
		lazyRE(`(?i)\b(?:build|compilation) failed\b|\bcould not compile\b`),
	}
	// The agent admitting failure in its own words.
	admissionRe = lazyRE(`(?i)^(?:Couldn't|Could not|Can't|Cannot|Unable to|Wasn't able to|Failed to|Did not manage to|Didn't manage to) (?:finish|complete|get|make|do|fix|apply|land|merge|build|resolve)\b|(?i)\b(?:(?:I|we)\s+(?:was|were|am|are)\s+(?:not\s+|un)able to|(?:I|we)\s+(?:wasn't|weren't)\s+able to|(?:I|we)\s+(?:have not|haven't)\s+(?:yet\s+)?(?:been able to|managed to|found|figured out|fixed|resolved|solved)|(?:I|we)\s+(?:could not|couldn't|cannot|can't|did not manage to|didn't manage to|failed to|gave up)|(?:could not|couldn't|cannot|can't)\s+be\s+(?:completed|finished|done|fixed|resolved)|unable to (?:complete|finish|fix|resolve|build|compile|get|make|run|install|find|reproduce|pass)|(?:still|continues to)\s+(?:fails?|failing|does not|doesn't|cannot|can't|errors?|crash(?:es)?|is broken|broken|dies|die|hangs|times out|goes over|exceeds|runs out of|OOMs|gets killed|is killed)|(?:did not|didn't) (?:succeed|manage|complete|finish|run to completion)|(?:does not|doesn't|did not|didn't) (?:compile|build)|gave up|giving up|ran out of (?:turns|time|context|budget)|running out of turns` +
		// Work the agent itself calls unfinished: "Status: partial", "I only implemented …", "2 of the 5 are
		// migrated", "… is not implemented yet", "the rest still …".
		`|\bstatus\W{0,4}(?:partial|incomplete|blocked|failed)\b|\bonly (?:implemented|did|converted|migrated|handled|fixed|covered|finished|got through)\b|\b\d+ of (?:the )?\d+\b[^.\n]{0,40}?\b(?:done|migrated|converted|implemented|fixed|ported)\b|\b(?:is|are|was|were) (?:still )?not (?:yet )?(?:implemented|wired(?: up)?|persisted|handled|finished|done)\b|\bnot (?:implemented|wired up|persisted|handled|done|finished) yet\b|\b(?:is|are|remains?) (?:still )?(?:incomplete|unfinished|partial)\b|\bthe rest (?:still|remain)\b|\bnothing \w+ it yet\b)`)
	// Work the agent says is left, read apart from admissionRe (which reads every sentence its words let through, and
	// whose cost grows with each alternative): "Those still have to be fixed", "two findings remain to be addressed",
	// "the change is not verified and shouldn't be merged as is".
	workLeftRe = lazyRE(`(?i)\bstill (?:need|needs|have|has) to be (?:fixed|addressed|resolved|done|finished|implemented|cleaned up)\b|\b(?:remains?|are yet|is yet) to be (?:fixed|addressed|resolved)\b|\b(?:is|was|are|were|remains?) (?:still )?(?:not |un)verified\b|\b(?:should not|shouldn't|must not|mustn't) be merged\b`)
	// "  --> src/main.rs:3:5", `  File "x.py", line 3, in f`: where the preceding or following error is.
	rustLocRe   = lazyRE(`^\s*-->\s*\S+:\d+`)
	pyFileRe    = lazyRE(`^\s*File "[^"]+", line \d+`)
	npmNoiseRe  = lazyRE(`(?i)npm ERR! (?:A complete log|\s*$|Please include)`)
	failCountRe = lazyRE(`(?i)\b0 (?:failed|failing|failures?|errors?)\b`)
)

// A program's log record opens with what a log collector puts first, then its timestamp: compose's "api-1  | ",
// journald's "Mar 04 11:02:17 host unit[2211]: ", then "[2025-03-04 11:02:17,902]", "2025-02-11T08:14:03.221Z",
// "11:02:17.331".
const (
	logCollector = `(?:[\w.-]+\s+\|\s+)?(?:[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \S+ [\w.@-]+(?:\[\d+\])?:\s+)?`
	logStamp     = `\[?(?:\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}[\d:.,]*(?:Z|[+-]\d{2}:?\d{2})?|\d{2}:\d{2}:\d{2}[.,]\d+)\]?`
	logLevel     = `(?:FATAL|ERROR|WARN|WARNING|INFO|DEBUG|TRACE|CRITICAL|PANIC|SEVERE)`
)

// sourceExts are the source files a compiler's or a test's location names.
const sourceExts = `(?:go|py|rs|ts|tsx|js|jsx|mjs|cjs|java|kt|c|cc|cpp|h|hpp|rb|cs|swift|php|scala|ex|exs)`

// warningAtRe is a warning or a note at a location, which is no error: "transformer.py:306: UserWarning: …",
// "main.c:5:3: warning: unused variable", "lib.rs:3:1: note: …".
var warningAtRe = lazyRE(`^\s*\S+\.` + sourceExts + `:\d+(?::\d+)?:?\s+(?:\w*Warning|warning|note|info)\b`)

// frameRe is the box drawing some tools put before their messages (terraform's "│ Error: …").
var frameRe = lazyRE(`^[\s│┃║╷╵╎┆]+`)

// undecorated is a line without the frame some tools draw in front of it, so that start-anchored error
// patterns see the message.
func undecorated(l string) string {
	return frameRe.ReplaceAllString(l, "")
}

// errorLine is one line of output judged as evidence of failure.
type errorLine struct {
	text     string
	index    int
	specific bool
}

// errorLines lists the failure lines of the output in order. Lines in fenced blocks count: tool output is
// usually quoted that way.
func errorLines(lines []string) []errorLine {
	var out []errorLine
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || npmNoiseRe.MatchString(t) {
			continue
		}
		switch {
		case (specificErrorAny.MatchString(undecorated(l)) || keywordErrorRe.MatchString(l)) && !failCountRe.MatchString(t):
			out = append(out, errorLine{t, i, true})
		case genericErrorAny.MatchString(undecorated(l)):
			out = append(out, errorLine{t, i, false})
		case pyFileRe.MatchString(l) || rustLocRe.MatchString(l):
			out = append(out, errorLine{t, i, false})
		}
	}
	return out
}

// union joins patterns into one alternation: the lists read better one pattern a line, and one pass over a
// line is faster than one per pattern on long logs. Flags like (?i) stay scoped to their own (?:…) group.
func union(res []*pattern) *pattern {
	parts := make([]string, len(res))
	for i, re := range res {
		parts[i] = "(?:" + re.String() + ")"
	}
	return lazyRE(strings.Join(parts, "|"))
}

var (
	specificErrorAny = union(specificErrorRes)
	genericErrorAny  = union(genericErrorRes)
)

// extractError returns the most informative error lines, bounded to maxErrorLen: the specific lines with
// the source location next to them, else the generic ones and the agent's own account of the failure.
func extractError(d *doc) string {
	found := errorLines(d.lines)
	specific := specificErrors(d, found)
	picked := specific
	if len(picked) == 0 {
		for _, e := range found {
			if !pyFileRe.MatchString(e.text) && !rustLocRe.MatchString(e.text) {
				picked = append(picked, e)
			}
		}
	}
	// The agent's own account of what it could not do says which check failed; it goes after the error itself.
	for _, s := range d.sentences() {
		if (admissionRe.MatchString(s.text) || workLeftRe.MatchString(s.text)) && (len(specific) == 0 || mentionsFailure(s.text)) {
			picked = append(picked, errorLine{text: d.restore(s.text)})
		}
	}
	return joinErrors(picked)
}

// specificErrors are the specific error lines of found, each with the location that belongs to it (a traceback's last
// frame before the exception, rustc's "-->" after its message), and the errors the agent quotes inside a sentence
// ("test_x still fails with `AssertionError: expected 100…`").
func specificErrors(d *doc, found []errorLine) []errorLine {
	var specific []errorLine
	for k, e := range found {
		if !e.specific {
			continue
		}
		if k > 0 && pyFileRe.MatchString(found[k-1].text) && found[k-1].index >= e.index-2 {
			specific = append(specific, found[k-1])
		}
		specific = append(specific, e)
		if k+1 < len(found) && rustLocRe.MatchString(found[k+1].text) && found[k+1].index == e.index+1 {
			specific = append(specific, found[k+1])
		}
	}
	for _, span := range d.spans {
		code := strings.Trim(span, "`")
		if specificErrorAny.MatchString(code) || keywordErrorRe.MatchString(code) {
			specific = append(specific, errorLine{text: strings.TrimSpace(code), specific: true})
		}
	}
	return specific
}

// joinErrors is the error lines picked, each once, at most eight, bounded to maxErrorLen.
func joinErrors(picked []errorLine) string {
	const maxLines = 8
	var b strings.Builder
	seen := map[string]bool{}
	n := 0
	for _, e := range picked {
		if seen[e.text] || n == maxLines {
			continue
		}
		seen[e.text] = true
		n++
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(truncate(e.text, 500))
	}
	return truncate(b.String(), maxErrorLen)
}

// mentionsFailure reports an account of the failure that quotes what failed (a test's name, a command), not only
// that the task was not done.
func mentionsFailure(s string) bool {
	return strings.ContainsRune(s, spanOpen)
}

// FailureOf is what an agent's output says went wrong, for an attempt the process reports failed while the text
// reads like success: its error lines, else its last lines. The text is the agent's, so the attempt history keeps
// what it said rather than only an exit code.
func FailureOf(output string) string {
	d := newDoc(output)
	if e := extractError(d); e != "" {
		return e
	}
	var last []string
	for i := len(d.lines) - 1; i >= 0 && len(last) < 3; i-- {
		if t := strings.TrimSpace(d.lines[i]); t != "" && t != "```" {
			last = append([]string{t}, last...)
		}
	}
	return truncate(strings.Join(last, "\n"), maxErrorLen)
}

// briefError is the one line of an error worth quoting back to the agent.
func briefError(s string) string {
	s = historyPrefixRe.ReplaceAllString(s, "")
	d := newDoc(s)
	for _, e := range errorLines(d.lines) {
		if e.specific {
			return truncate(agentPartsRe.ReplaceAllString(e.text, ""), 200)
		}
	}
	for _, l := range d.lines {
		if t := strings.TrimSpace(l); t != "" {
			return truncate(t, 200)
		}
	}
	return ""
}
