package brain

import (
	"strings"
)

// echo.go keeps orch's own words out of the agent's. An agent may send back what orch sent it: a CLI that echoes
// its input, a model that quotes its instructions before answering. The prompt's closing form ("QUESTION: <your
// question>") is then a question in the marker form, and the brain would put orch's template to a person as the
// agent's question, attempt after attempt. Two rules remove it: text that copies what orch sent for the attempt
// (WithoutEcho, for callers that know it), and the form's blanks wherever they appear (formLine, for every reader).

// minEchoLines and minEchoBytes make a copy: two lines of the prompt in a row could be chance ("Done." then a
// blank line), a run this long is not.
const (
	minEchoLines = 2
	minEchoBytes = 48
)

// maxEchoCandidates bounds the places in the sent text a line is tried at, so that a line repeated all over both
// texts ("}") costs a bounded amount.
const maxEchoCandidates = 16

// WithoutEcho returns output without the copies it holds of the texts orch sent the agent (its prompt), and whether
// it removed any. A copy is a run of at least two lines that stand in a row in one of sent; lines are compared
// without their indentation, line endings and quote marks ("> "), so an echo that re-indents, quotes or converts
// line endings is still one. Blank lines do not break a run and go with it; fence lines stay, so that the code
// blocks of what is left still pair up. When nothing but blank and fence lines is left, the result is "": the
// output was all copy.
func WithoutEcho(output string, sent ...string) (string, bool) {
	texts, index := echoIndex(sent)
	lines := strings.Split(output, "\n")
	var keys []string // the output's non-blank lines, normalised
	var at []int      // where each of keys is in lines
	for i, l := range lines {
		if n := echoKey(l); n != "" {
			keys = append(keys, n)
			at = append(at, i)
		}
	}
	drop := make([]bool, len(lines))
	removed := false
	for i := 0; i < len(keys); {
		best, bestBytes := longestCopy(keys[i:], texts, index)
		if best < minEchoLines || bestBytes < minEchoBytes {
			i++
			continue
		}
		// The copy's lines and the blank lines between them.
		for k := at[i]; k <= at[i+best-1]; k++ {
			if !fenceRe.MatchString(lines[k]) {
				drop[k] = true
			}
		}
		removed = true
		i += best
	}
	if !removed {
		return output, false
	}
	kept := lines[:0:0]
	said := false
	for i, l := range lines {
		if !drop[i] {
			kept = append(kept, l)
			said = said || echoKey(l) != "" && !fenceRe.MatchString(l)
		}
	}
	if !said {
		return "", true
	}
	return strings.Join(kept, "\n"), true
}

// echoPos is where a line is in what was sent: which text, which of its non-blank lines.
type echoPos struct{ text, line int }

// echoIndex is each sent text's non-blank lines, normalised, and where each line is found (at most
// maxEchoCandidates places a line).
func echoIndex(sent []string) ([][]string, map[string][]echoPos) {
	var texts [][]string
	index := map[string][]echoPos{}
	for _, s := range sent {
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			if n := echoKey(l); n != "" {
				if ps := index[n]; len(ps) < maxEchoCandidates {
					index[n] = append(ps, echoPos{len(texts), len(lines)})
				}
				lines = append(lines, n)
			}
		}
		texts = append(texts, lines)
	}
	return texts, index
}

// longestCopy is the longest run of keys, from the first, that stands in a row in one of the sent texts: its lines,
// and its bytes.
func longestCopy(keys []string, texts [][]string, index map[string][]echoPos) (best, bestBytes int) {
	for _, p := range index[keys[0]] {
		t, n, size := texts[p.text], 0, 0
		for n < len(keys) && p.line+n < len(t) && keys[n] == t[p.line+n] {
			size += len(keys[n])
			n++
		}
		if n > best {
			best, bestBytes = n, size
		}
	}
	return best, bestBytes
}

// echoKey is how a line is compared for WithoutEcho: without line endings, indentation and quote marks; "" for a
// line with nothing else.
func echoKey(l string) string {
	return strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "> \t"))
}

// Echoed is the interpretation of an output that held nothing but what orch sent the agent. The agent did not do
// the task and asked nothing: by the interpret judgement's definitions that is no completion (no summary, no
// passing tests) and no question, so it is a failure, as an agent that says nothing is one, and the decide judgement
// and the attempt cap take it from there. Its error names the likely cause so that the person who sees it at the cap
// knows where to look.
func Echoed() Interpretation {
	return Interpretation{
		Status:  StatusFailed,
		Summary: "The agent only echoed the prompt orch sent it.",
		Error: "the agent's output was only the prompt orch sent it, echoed back: it did no work and asked no " +
			"question (check that the agent command runs an agent)",
		Via: viaHeuristic,
	}
}

var (
	// A form's blank: words in angle brackets, two or more of them ("<your question>", "<the option you
	// recommend>"). One word in brackets is more likely a tag or a type ("<div>", "<T>").
	blankRe = lazyRE(`<[A-Za-z][A-Za-z'-]*(?:\s+[A-Za-z][A-Za-z'-]*)+>`)
	// What may stand beside blanks on a line of a form: marker keys, option keys, markdown decoration.
	formRestRe = lazyRE(`(?:STATUS|NEEDS_HUMAN|QUESTION|OPTIONS|RECOMMENDATION|ERROR|SUMMARY):|\[[A-Ha-h]\]|\([A-Ha-h]\)|\b[A-Ha-h][).]|[\s>*_#|-]+`)
)

// formLine reports whether l is a line of a form to fill in rather than filled in: it has a blank, and nothing
// beside its blanks but the keys and decoration of orch's marker protocol ("QUESTION: <your question>", "A) <first
// option>  B) <second option>"). Such a line is orch's instruction read back, never the agent's answer.
func formLine(l string) bool {
	if !strings.Contains(l, "<") || !blankRe.MatchString(l) {
		return false
	}
	rest := blankRe.ReplaceAllString(l, "")
	return formRestRe.ReplaceAllString(rest, "") == ""
}

// withoutForms drops the lines of a form from output (see dropForms), for a reader that sees the output whole: the
// LLM brain.
func withoutForms(output string) string {
	if !strings.Contains(output, "<") {
		return output
	}
	return strings.Join(dropForms(strings.Split(output, "\n")), "\n")
}

// dropForms returns lines without those of a form (formLine), and without a marker key standing bare on the line
// before one ("OPTIONS:" above "A) <first option>  B) <second option>"): its value was the blank, and left alone it
// would take the next paragraph for its value.
func dropForms(lines []string) []string {
	kept := make([]string, 0, len(lines))
	for _, l := range lines {
		if !formLine(l) {
			kept = append(kept, l)
			continue
		}
		if n := len(kept); n > 0 {
			if m := markerLineRe.FindStringSubmatch(kept[n-1]); m != nil && strings.TrimSpace(m[3]) == "" {
				kept = kept[:n-1]
			}
		}
	}
	return kept
}
