package pipeline

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Outcome statuses (spec §5.2), spelled as conditions compare them.
const (
	StatusSuccess        = "success"
	StatusFail           = "fail"
	statusPartialSuccess = "partial_success"
	statusRetry          = "retry"
	statusSkipped        = "skipped"
)

// Outcome is what running a node produced; it drives edge selection.
type Outcome struct {
	Status           string // an outcome status: StatusSuccess, StatusFail, …
	preferredLabel   string // the edge label to prefer, if any
	suggestedNextIDs []string
	ContextUpdates   map[string]string
	Notes            string
	FailureReason    string
}

// selectEdge picks the edge a run follows out of nodeID, exactly as spec §3.3:
//
//  1. edges whose condition holds, best by weight then target id;
//  2. else the first unconditional edge whose label matches o.preferredLabel
//     (lower-cased, trimmed, accelerator prefix removed);
//  3. else the first unconditional edge to o.suggestedNextIDs[0], then [1], …;
//  4. else the unconditional edge of highest weight,
//  5. ties going to the target id first in byte order (then to declaration order).
//
// It returns nil when no edge is eligible (no edges, or only conditional ones
// that do not hold); the engine then ends the run. A condition that does not
// parse is an error (validate reports it before a run starts).
func selectEdge(g *Graph, nodeID string, o Outcome, ctx map[string]string) (*Edge, error) {
	if g.Nodes[nodeID] == nil {
		return nil, &dotError{file: g.file, rule: "edge_target_exists", msg: fmt.Sprintf("no node %q", nodeID)}
	}
	if e, err := conditionEdge(g, nodeID, o, ctx); e != nil || err != nil {
		return e, err
	}
	var unconditional []*Edge
	for _, e := range g.out(nodeID) {
		if e.condition() == "" {
			unconditional = append(unconditional, e)
		}
	}
	if want := normalizeLabel(o.preferredLabel); want != "" {
		for _, e := range unconditional {
			if normalizeLabel(e.label()) == want {
				return e, nil
			}
		}
	}
	for _, id := range o.suggestedNextIDs {
		for _, e := range unconditional {
			if e.to == id {
				return e, nil
			}
		}
	}
	if len(unconditional) > 0 {
		return heaviest(unconditional), nil
	}
	return nil, nil
}

// heaviest is the spec's best_by_weight_then_lexical; among edges to the same
// target with the same weight, the first declared.
func heaviest(edges []*Edge) *Edge {
	best := edges[0]
	for _, e := range edges[1:] {
		if w, bw := e.weight(), best.weight(); w > bw || w == bw && e.to < best.to {
			best = e
		}
	}
	return best
}

// normalizeLabel is how labels compare in edge selection: accelerator prefix
// removed, trimmed, lower-cased.
func normalizeLabel(s string) string {
	s = strings.TrimSpace(s)
	if _, rest, ok := acceleratorPrefix(s); ok {
		s = rest
	}
	return strings.ToLower(strings.TrimSpace(s))
}

// Choice is one answer a human gate offers: the key to type or click, the
// label to show, and the node it leads to.
type Choice struct {
	Key, Label string
	to         string
}

// Choices are a human gate's options, one per outgoing edge in declaration
// order (spec §4.6). The label is the edge's label, or the target id when it
// has none; the key comes from its accelerator ("[A] Approve", "A) Approve",
// "A - Approve") or else is its first letter or digit, upper-cased. Keys are
// unique: explicit keys are honoured first, in order; a choice whose key is
// taken gets the next letter or digit of its label that is free, then the
// first free A–Z or 0–9, then a free number.
func Choices(g *Graph, nodeID string) []Choice {
	return choicesFor(g.out(nodeID))
}

func choicesFor(edges []*Edge) []Choice {
	choices := make([]Choice, len(edges))
	used := make(map[string]bool, len(edges))
	for i, e := range edges {
		label := strings.TrimSpace(e.label())
		if label == "" {
			label = e.to
		}
		key, rest, ok := acceleratorPrefix(label)
		if !ok {
			choices[i] = Choice{Label: label, to: e.to}
			continue
		}
		if rest == "" {
			rest = e.to
		}
		choices[i] = Choice{Label: rest, to: e.to}
		if !used[key] {
			used[key] = true
			choices[i].Key = key
		}
	}
	for i := range choices {
		if choices[i].Key == "" {
			choices[i].Key = freeKey(choices[i].Label, used)
		}
	}
	return choices
}

// MatchChoice finds the choice an answer names: by key (any case), else by
// label (compared as edge selection compares labels, so "[A] Approve" and
// "approve" both name Approve), else by target node id. A human gate uses it
// for the answer it gets and for its human.default_choice attribute.
func MatchChoice(choices []Choice, answer string) (Choice, bool) {
	a := strings.TrimSpace(answer)
	if a == "" {
		return Choice{}, false
	}
	for _, c := range choices {
		if strings.EqualFold(c.Key, a) {
			return c, true
		}
	}
	for _, c := range choices {
		if normalizeLabel(c.Label) == normalizeLabel(a) {
			return c, true
		}
	}
	for _, c := range choices {
		if c.to == a {
			return c, true
		}
	}
	return Choice{}, false
}

func freeKey(label string, used map[string]bool) string {
	take := func(k string) bool {
		if used[k] {
			return false
		}
		used[k] = true
		return true
	}
	for _, r := range label {
		if k := keyOf(r); k != "" && take(k) {
			return k
		}
	}
	for _, r := range "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" {
		if take(string(r)) {
			return string(r)
		}
	}
	for n := len(used) + 1; ; n++ {
		if k := strconv.Itoa(n); take(k) {
			return k
		}
	}
}

// keyOf is the key a rune makes: itself upper-cased when it is a letter or a digit.
func keyOf(r rune) string {
	if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
		return ""
	}
	return string(unicode.ToUpper(r))
}

// acceleratorPrefix recognises the spec's three prefix forms, with a key of
// one letter or digit: "[K] Label", "K) Label" and "K - Label" (an en or em
// dash also counts). The label may be empty only in the bracket form.
func acceleratorPrefix(s string) (key, rest string, ok bool) {
	if strings.HasPrefix(s, "[") {
		r, n := utf8.DecodeRuneInString(s[1:])
		if k := keyOf(r); k != "" && strings.HasPrefix(s[1+n:], "]") {
			return k, strings.TrimSpace(s[2+n:]), true
		}
		return "", "", false
	}
	r, n := utf8.DecodeRuneInString(s)
	k := keyOf(r)
	if k == "" {
		return "", "", false
	}
	after := s[n:]
	if strings.HasPrefix(after, ")") {
		if label := strings.TrimLeft(after[1:], " \t"); len(label) < len(after)-1 && label != "" {
			return k, strings.TrimSpace(label), true
		}
		return "", "", false
	}
	spaced := strings.TrimLeft(after, " \t")
	if len(spaced) == len(after) {
		return "", "", false
	}
	for _, dash := range []string{"-", "–", "—"} {
		if strings.HasPrefix(spaced, dash) {
			label := strings.TrimLeft(spaced[len(dash):], " \t")
			if len(label) < len(spaced)-len(dash) && label != "" {
				return k, strings.TrimSpace(label), true
			}
		}
	}
	return "", "", false
}
