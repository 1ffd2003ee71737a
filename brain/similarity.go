package brain

// This file ports Python's difflib.SequenceMatcher(None, a, b).ratio() so that the similarity numbers the
// loop detector reports ("Error similarity: 87%") are the ones the original Python orchestrator printed, and
// thresholds tuned there carry over unchanged.

// Similarity is difflib.SequenceMatcher(None, a, b).ratio(): 2*M/T where M is the number of matched runes and
// T the total rune count; 1 for two empty strings. It keeps difflib's autojunk heuristic (for b of 200 runes
// or more, a rune occurring in more than 1% of b, plus one, is not used to seed matches), which is why long
// texts can score lower than an intuitive diff would.
func Similarity(a, b string) float64 {
	ra, rb := []rune(a), []rune(b)
	total := len(ra) + len(rb)
	if total == 0 {
		return 1.0
	}
	m := newMatcher(ra, rb)
	return 2.0 * float64(m.matches()) / float64(total)
}

// MeanSimilarity is the average of ErrorSimilarity over consecutive pairs; 0 for fewer than two errors.
func MeanSimilarity(errors []string) float64 {
	if len(errors) < 2 {
		return 0
	}
	sum := 0.0
	for i := 1; i < len(errors); i++ {
		sum += ErrorSimilarity(errors[i-1], errors[i])
	}
	return sum / float64(len(errors)-1)
}

// Oscillating reports the A-B-A pattern in the last three errors: the latest is like the one two attempts
// back (similarity above threshold) while the one between differs from both (below threshold) — "fix A
// breaks B, fix B breaks A". false for fewer than 3 errors. A threshold of 0 or less means the default 0.8.
func Oscillating(errors []string, threshold float64) bool {
	if threshold <= 0 {
		threshold = defaultSimilarityThreshold
	}
	n := len(errors)
	if n < 3 {
		return false
	}
	return oscillating(failureOf(errors[n-3]), failureOf(errors[n-2]), failureOf(errors[n-1]), threshold)
}

// oscillating is the A-B-A test on the last three failures.
func oscillating(a1, b, a2 failure, threshold float64) bool {
	return a1.likeness(a2) >= threshold && a1.likeness(b) < threshold && b.likeness(a2) < threshold
}

// matcher holds difflib's b2j index of the second sequence. Junk (isjunk) is always None here, so the only
// elements left out of the index are autojunk's popular ones; they still extend a match, as in difflib.
type matcher struct {
	a, b []rune
	b2j  map[rune][]int
	// j2len and next are difflib's j2len dicts as dense slices indexed by j+1, kept zeroed between calls.
	j2len, next []int
}

func newMatcher(a, b []rune) *matcher {
	b2j := make(map[rune][]int)
	for j, r := range b {
		b2j[r] = append(b2j[r], j)
	}
	if n := len(b); n >= 200 {
		ntest := n/100 + 1
		for r, idx := range b2j {
			if len(idx) > ntest {
				delete(b2j, r)
			}
		}
	}
	return &matcher{
		a:     a,
		b:     b,
		b2j:   b2j,
		j2len: make([]int, len(b)+1),
		next:  make([]int, len(b)+1),
	}
}

// matches is the sum of the sizes of get_matching_blocks(); the order in which difflib pops its queue does
// not change the set of blocks, so a stack gives the same total.
func (m *matcher) matches() int {
	type span struct{ alo, ahi, blo, bhi int }
	stack := []span{{0, len(m.a), 0, len(m.b)}}
	total := 0
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		i, j, k := m.longestMatch(s.alo, s.ahi, s.blo, s.bhi)
		if k == 0 {
			continue
		}
		total += k
		if s.alo < i && s.blo < j {
			stack = append(stack, span{s.alo, i, s.blo, j})
		}
		if i+k < s.ahi && j+k < s.bhi {
			stack = append(stack, span{i + k, s.ahi, j + k, s.bhi})
		}
	}
	return total
}

// longestMatch is find_longest_match: the longest block a[i:i+k] == b[j:j+k] inside the ranges, earliest in
// a and then in b among equals, seeded from indexed runes and then extended over popular ones.
func (m *matcher) longestMatch(alo, ahi, blo, bhi int) (besti, bestj, bestsize int) {
	a, b := m.a, m.b
	besti, bestj = alo, blo
	var touched, nextTouched []int
	for i := alo; i < ahi; i++ {
		nextTouched = nextTouched[:0]
		for _, j := range m.b2j[a[i]] {
			if j < blo {
				continue
			}
			if j >= bhi {
				break
			}
			k := m.j2len[j] + 1 // j2len[j-1] in difflib's indexing
			m.next[j+1] = k
			nextTouched = append(nextTouched, j+1)
			if k > bestsize {
				besti, bestj, bestsize = i-k+1, j-k+1, k
			}
		}
		for _, t := range touched {
			m.j2len[t] = 0
		}
		m.j2len, m.next = m.next, m.j2len
		touched, nextTouched = nextTouched, touched
	}
	for _, t := range touched {
		m.j2len[t] = 0
	}

	// With no isjunk every element is "not junk", so difflib's two junk-absorbing loops never run and only
	// these two extensions matter; they are what lets popular runes join a match.
	for besti > alo && bestj > blo && a[besti-1] == b[bestj-1] {
		besti, bestj, bestsize = besti-1, bestj-1, bestsize+1
	}
	for besti+bestsize < ahi && bestj+bestsize < bhi && a[besti+bestsize] == b[bestj+bestsize] {
		bestsize++
	}
	return besti, bestj, bestsize
}
