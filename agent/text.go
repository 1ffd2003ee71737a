package agent

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// boundedText keeps the beginning and the end of a long output and drops the middle: the beginning says what
// the agent set out to do, the end holds its final answer or the error that stopped it.
type boundedText struct {
	head    []byte
	tail    []byte
	dropped int
}

func (t *boundedText) Len() int { return len(t.head) + len(t.tail) }

func (t *boundedText) WriteString(s string) {
	const half = maxKeptText / 2
	if room := half - len(t.head); room > 0 && t.tail == nil {
		n := min(room, len(s))
		t.head = append(t.head, s[:n]...)
		s = s[n:]
	}
	if s == "" {
		return
	}
	if len(s) >= half {
		// What the tail held and all but the last half of s are dropped before anything is copied: a string of
		// megabytes costs what is kept, not its own length.
		t.dropped += len(t.tail) + len(s) - half
		t.tail = append(t.tail[:0], s[len(s)-half:]...)
		return
	}
	t.tail = append(t.tail, s...)
	// Trimming only once the tail holds twice what it keeps makes appends amortised O(1).
	if len(t.tail) > 2*half {
		cut := len(t.tail) - half
		t.dropped += cut
		t.tail = append(t.tail[:0], t.tail[cut:]...)
	}
}

func (t *boundedText) String() string {
	const half = maxKeptText / 2
	tail, dropped := t.tail, t.dropped
	if len(tail) > half {
		dropped += len(tail) - half
		tail = tail[len(tail)-half:]
	}
	if dropped == 0 {
		return string(t.head) + string(tail)
	}
	return fmt.Sprintf("%s\n[… %d bytes of output not kept …]\n%s", trimPartialRune(t.head), dropped, skipPartialRune(tail))
}

// trimPartialRune drops a rune cut in half at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return b
			}
			return b[:i]
		}
	}
	return b
}

// skipPartialRune drops the continuation bytes of a rune cut in half at the start of b.
func skipPartialRune(b []byte) []byte {
	for i := 0; i < len(b) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}

// stderrTail is the end of stderr, where a failing CLI says why it stopped.
func stderrTail(stderr []byte) string {
	s := bytes.TrimSpace(stderr)
	if len(s) > maxStderrKept {
		return "…" + string(skipPartialRune(s[len(s)-maxStderrKept:]))
	}
	return string(s)
}

// withErrors appends to a failed run's text the errors it does not already say, so that whoever reads only
// Text (the brain, a person in Slack) still learns why the run failed.
func withErrors(text string, errs []string) string {
	var add []string
	for _, e := range errs {
		if e != "" && !strings.Contains(text, e) {
			add = append(add, e)
		}
	}
	if len(add) == 0 {
		return text
	}
	if text == "" {
		return strings.Join(add, "\n")
	}
	return strings.TrimRight(text, "\n") + "\n\n" + strings.Join(add, "\n")
}

// clipErrors shortens each error to what a reader (and the brain's similarity check) needs: the CLI may put a
// whole answer into an error field.
func clipErrors(errs []string) []string {
	for i, e := range errs {
		errs[i] = clipError(e)
	}
	return errs
}

func clipError(e string) string {
	if len(e) > maxErrorLen {
		return string(trimPartialRune([]byte(e[:maxErrorLen]))) + "…"
	}
	return e
}

// errorList keeps the distinct errors a CLI reports, in order of first appearance: each clipped, at most
// maxErrorsKept of them, the others counted.
type errorList struct {
	errs []string
	more int // reports not kept
}

// add adds e unless it is there already.
func (l *errorList) add(e string) {
	if e = clipError(e); !slices.Contains(l.errs, e) {
		l.push(e)
	}
}

// push appends e and returns its index; when the list is full it counts e and returns -1.
func (l *errorList) push(e string) int {
	if len(l.errs) >= maxErrorsKept {
		l.more++
		return -1
	}
	l.errs = append(l.errs, e)
	return len(l.errs) - 1
}

// list is the errors kept, and a last one counting those that were not.
func (l *errorList) list() []string {
	errs := append([]string(nil), l.errs...)
	if l.more > 0 {
		errs = append(errs, fmt.Sprintf("%d more error reports not kept", l.more))
	}
	return errs
}

// appendUnique adds e unless it is already there: CLIs repeat the same error on several lines.
func appendUnique(errs []string, e string) []string {
	for _, x := range errs {
		if x == e {
			return errs
		}
	}
	return append(errs, e)
}
