package brain

import "maps"

// loop.go finds the two ways retrying goes round in circles: the same failure again and again (a loop), and a
// failure fixed earlier coming back after others (fixing one breaks another). "The same" is read by likeness
// (ErrorSimilarity): by what failed when the failures name it, by their texts when they do not.

// maxLoopWindow bounds how far back the attempts are compared with each other: each pair costs a comparison, and a
// loop or a see-saw shows in the last few attempts.
const maxLoopWindow = 8

// likeness holds which of the last attempts failed alike, pair by pair.
type likeness struct {
	offset int       // how many attempts came before the window
	fails  []failure // the last attempts, oldest first
	alike  [][]bool
}

func newLikeness(all []failure, threshold float64) likeness {
	offset := max(0, len(all)-maxLoopWindow)
	fails := all[offset:]
	l := likeness{offset: offset, fails: fails, alike: make([][]bool, len(fails))}
	for i := range fails {
		l.alike[i] = make([]bool, len(fails))
	}
	for i := range fails {
		l.alike[i][i] = true
		for j := i + 1; j < len(fails); j++ {
			a := fails[i].likeness(fails[j]) >= threshold
			if j == i+1 && !a && fails[j].continues() && compareSubjects(fails[i].subj, fails[j].subj, fails[i].text, fails[j].text) != subjectDifferent {
				a = true
			}
			l.alike[i][j], l.alike[j][i] = a, a
		}
	}
	return l
}

var (
	// The agent saying that the failure did not change: "Same hang", "still failing", "fails again". Its texts may
	// share little with the last (a summary, then a full log), its word is what says they are one failure.
	continuityRe = lazyRE(oneOf(`(?i)`,
		`\bsame (?:error|failure|hang|crash|problem|issue|result|timeout|panic|exception|message)\b`,
		`\bstill (?:fail(?:s|ing)?|hangs?|hanging|times? out|timing out|crash(?:es|ing)?|broken|refused|unreachable|the same|blocked|stuck|denied|missing|erroring|not (?:found|working|passing|reachable))\b`,
		`\b(?:fail(?:s|ed)?|hang(?:s|ed)?|crash(?:es|ed)?|times? out|timed out|broke) again\b`,
		`\bkeeps? (?:failing|hanging|timing out|crashing)\b`,
	))
	// Unless it says in the same breath that something else fails now.
	changedRe = lazyRE(`(?i)\b(?:a different|(?:another|new|other) (?:error|failure|test|exception|problem|crash|panic)|instead|now fails|fails now|but now)\b`)
)

// continues reports a failure its agent calls the previous one again.
func (f failure) continues() bool {
	return continuityRe.MatchString(f.text) && !changedRe.MatchString(f.text)
}

// loopRun is how many of the last attempts failed as one failure: the longest run ending at the latest in which
// every attempt is alike to another of the run. One resource is named differently by different tools (a database by
// its host name in one, by its address in the next), so the attempts of a loop need not each be alike to the one
// before; they must hang together, and no attempt of the run may be a failure of its own.
func (l likeness) loopRun() int {
	n := len(l.fails)
	run := 1
	for i := n - 2; i >= 0 && l.alike[i][i+1]; i-- {
		run++
	}
	for size := n; size > run; size-- {
		if l.connected(n - size) {
			return size
		}
	}
	return run
}

// connected reports whether the attempts from first to the latest are all linked by likeness.
func (l likeness) connected(first int) bool {
	n := len(l.fails)
	seen := map[int]bool{n - 1: true}
	queue := []int{n - 1}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for j := first; j < n; j++ {
			if !seen[j] && l.alike[i][j] {
				seen[j] = true
				queue = append(queue, j)
			}
		}
	}
	return len(seen) == n-first
}

// recurrence is the index (in the history) of an earlier attempt whose failure is back in the latest one, with
// different failures in every attempt between (A-B-A, or A-B-C-A): fixing one failure breaks another. A test that
// fails again after other failures came between is back, however it fails this time. -1 when there is none.
func (l likeness) recurrence() int {
	n := len(l.fails)
	if n < 3 {
		return -1
	}
	last := l.fails[n-1]
	for j := n - 3; j >= 0; j-- {
		alike := l.alike[j][n-1]
		if !alike && !sameTests(l.fails[j].subj, last.subj) {
			continue
		}
		between := true
		for m := j + 1; m < n-1; m++ {
			// A test back however it fails was fixed in between: the attempts between failed other tests.
			fixed := alike || len(l.fails[m].subj[subjTest]) > 0 && disjoint(l.fails[m].subj[subjTest], last.subj[subjTest], sameName)
			if !fixed || l.alike[m][n-1] || l.alike[m][j] {
				between = false
				break
			}
		}
		if between {
			return j + l.offset
		}
		return -1
	}
	return -1
}

// named is ", on X" for the names of what failed in the run starting at first (a history index), or "".
func (l likeness) named(first int) string {
	s := subject{}
	for _, f := range l.fails[max(0, first-l.offset):] {
		for k, vs := range f.subj {
			if s[k] == nil {
				s[k] = map[string]bool{}
			}
			maps.Copy(s[k], vs)
		}
	}
	return s.namedIn()
}

// sameTests reports two failures of the same tests, both naming some.
func sameTests(a, b subject) bool {
	return len(a[subjTest]) > 0 && equalSets(a[subjTest], b[subjTest])
}

// namedIn is " (X)" naming what the subject is about, or "" when it names nothing.
func (s subject) namedIn() string {
	if n := s.names(); n != "" {
		return " (" + n + ")"
	}
	return ""
}
