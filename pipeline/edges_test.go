package pipeline

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseAccelerator(t *testing.T) {
	tests := []struct{ label, key, rest string }{
		{"[A] Approve", "A", "Approve"},
		{"[a]Approve", "A", "Approve"},
		{"  [R] Reject  ", "R", "Reject"},
		{"Y) Yes, deploy", "Y", "Yes, deploy"},
		{"Y - Yes, deploy", "Y", "Yes, deploy"},
		{"y – yes", "Y", "yes"},
		{"2) Second", "2", "Second"},
		{"Fix issues", "F", "Fix issues"},
		{"fix issues", "F", "fix issues"},
		{"Yes, deploy", "Y", "Yes, deploy"},
		{"(beta) Ship", "B", "(beta) Ship"},
		{"[OK] Ship", "O", "[OK] Ship"}, // brackets hold one key only
		{"A)B", "A", "A)B"},             // the ')' form needs a blank
		{"A-B testing", "A", "A-B testing"},
		{"A -B", "A", "A -B"},
		{"Y)", "Y", "Y)"},
		{"[A]", "A", ""},
		{"équipe", "É", "équipe"},
		{"→ ...", "", "→ ..."},
		{"", "", ""},
	}
	for _, tt := range tests {
		key, rest := parseAccelerator(tt.label)
		if key != tt.key || rest != tt.rest {
			t.Errorf("parseAccelerator(%q) = %q, %q; want %q, %q", tt.label, key, rest, tt.key, tt.rest)
		}
	}
}

func choicesOf(t *testing.T, src, node string) string {
	t.Helper()
	var s string
	for _, c := range Choices(mustParse(t, src), node) {
		s += fmt.Sprintf("%s:%s>%s ", c.Key, c.Label, c.to)
	}
	return s
}

func TestChoices(t *testing.T) {
	tests := []struct {
		name, edges, want string
	}{
		{"fixture forms", `g -> a [label="[A] Approve"] g -> b [label="Y) Yes, deploy"] g -> c [label="K - Keep"] g -> d [label="Fix issues"]`,
			"A:Approve>a Y:Yes, deploy>b K:Keep>c F:Fix issues>d "},
		{"no label: the target id", `g -> retry_it g -> b [label="  "]`, "R:retry_it>retry_it B:b>b "},
		{"same first letter: next free letter of the label", `g -> a [label=Continue] g -> b [label=Cancel] g -> c [label=Close]`,
			"C:Continue>a A:Cancel>b L:Close>c "},
		{"explicit keys are honoured before implicit ones", `g -> a [label=Apply] g -> b [label="[A] Approve"]`,
			"P:Apply>a A:Approve>b "},
		{"duplicate explicit keys", `g -> a [label="[A] Approve"] g -> b [label="[A] Abort"]`,
			"A:Approve>a B:Abort>b "},
		{"letters run out: first free A-Z", `g -> a [label=aa] g -> b [label=a] g -> c [label="..."]`,
			"A:aa>a B:a>b C:...>c "},
		{"empty bracket label: the target id", `g -> a [label="[X]"]`, "X:a>a "},
		{"no edges", ``, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := choicesOf(t, "digraph x { g "+tt.edges+" }", "g"); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}

	// More choices than letters and digits still get unique keys, deterministically.
	src := "digraph x {"
	for i := range 40 {
		src += fmt.Sprintf(" g -> n%d [label=\"[A] x\"]", i)
	}
	g := mustParse(t, src+" }")
	first, seen := Choices(g, "g"), map[string]bool{}
	for i, c := range first {
		if seen[c.Key] || c.Key == "" {
			t.Fatalf("choice %d: key %q repeated or empty", i, c.Key)
		}
		seen[c.Key] = true
	}
	if again := Choices(g, "g"); fmt.Sprint(again) != fmt.Sprint(first) {
		t.Error("Choices is not deterministic")
	}
	if first[39].Key != "40" {
		t.Errorf("last key %q", first[39].Key)
	}
}

func TestMatchChoice(t *testing.T) {
	g := mustParse(t, `digraph x { g -> apply [label="[A] Approve"] g -> a [label="Y) Yes"] g -> revise [label="Revise"] }`)
	choices := Choices(g, "g")
	tests := []struct{ answer, want string }{
		{"A", "apply"},
		{"a", "apply"}, // the key wins over node id "a"
		{"y", "a"},
		{"approve", "apply"},
		{"[A] Approve", "apply"},
		{" Revise ", "revise"},
		{"revise", "revise"},
		{"R", "revise"},
		{"apply", "apply"},
		{"ship", ""},
		{"", ""},
	}
	for _, tt := range tests {
		c, ok := MatchChoice(choices, tt.answer)
		if got := c.to; got != tt.want || ok != (tt.want != "") {
			t.Errorf("MatchChoice(%q) = %q, %v; want %q", tt.answer, got, ok, tt.want)
		}
	}
}

func TestChoicesFixtures(t *testing.T) {
	tests := []struct{ fixture, node, want string }{
		{"orchestra/test-human-gate.dot", "review_gate", "A:Approve>apply R:Reject>revise "},
		{"orchestra/test-multiple-gates.dot", "gate2", "C:Continue>finish S:Stop>exit "},
		{"spec-examples/human_gate_review.dot", "review_gate", "A:Approve>ship_it F:Fix>fixes "},
	}
	for _, tt := range tests {
		g := parseFixture(t, tt.fixture)
		var got string
		for _, c := range Choices(g, tt.node) {
			got += fmt.Sprintf("%s:%s>%s ", c.Key, c.Label, c.to)
		}
		if got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.fixture, got, tt.want)
		}
		if h := g.Nodes[tt.node].Handler(); h != handlerWaitHuman {
			t.Errorf("%s: handler %q", tt.fixture, h)
		}
	}
}

func TestSelectEdge(t *testing.T) {
	tests := []struct {
		name  string
		edges string
		o     Outcome
		ctx   map[string]string
		want  string // target id, "" for no edge
	}{
		// Step 1: conditions.
		{"condition matches", `n -> a [condition="outcome=fail"] n -> b [condition="outcome=success"] n -> c`,
			Outcome{Status: StatusSuccess}, nil, "b"},
		{"conditions beat label, suggestion and weight", `n -> a [condition="outcome=success"] n -> b [label=Fix, weight=9]`,
			Outcome{Status: StatusSuccess, preferredLabel: "Fix", suggestedNextIDs: []string{"b"}}, nil, "a"},
		{"several conditions: weight first", `n -> a [condition="outcome=success", weight=1] n -> b [condition="outcome=success", weight=10]`,
			Outcome{Status: StatusSuccess}, nil, "b"},
		{"several conditions, same weight: target id", `n -> zed [condition="outcome=success"] n -> alpha [condition="outcome!=fail"]`,
			Outcome{Status: StatusSuccess}, nil, "alpha"},
		{"context condition", `n -> a [condition="context.verdict=insufficient"] n -> b [condition="context.verdict=sufficient"]`,
			Outcome{Status: StatusSuccess}, map[string]string{"verdict": "sufficient"}, "b"},
		{"preferred_label condition", `n -> a [condition="preferred_label=Fix"] n -> b`,
			Outcome{Status: StatusSuccess, preferredLabel: "Fix"}, nil, "a"},
		{"no condition holds: fall through to unconditional", `n -> a [condition="outcome=fail"] n -> b`,
			Outcome{Status: StatusSuccess}, nil, "b"},
		{"no condition holds, nothing unconditional", `n -> a [condition="outcome=fail"]`,
			Outcome{Status: StatusSuccess}, nil, ""},

		// Step 2: preferred label, normalised, first unconditional match in declaration order.
		{"preferred label", `n -> a [label=Approve] n -> b [label=Reject, weight=5]`,
			Outcome{Status: StatusSuccess, preferredLabel: "Approve"}, nil, "a"},
		{"preferred label normalised", `n -> a [label="[A] Approve"] n -> b [label="R) Reject"]`,
			Outcome{Status: StatusSuccess, preferredLabel: "  reject "}, nil, "b"},
		{"preferred label with its own prefix", `n -> a [label="Approve"] n -> b [label="Reject"]`,
			Outcome{Status: StatusSuccess, preferredLabel: "[R] Reject"}, nil, "b"},
		{"preferred label: first of equals", `n -> b [label=Go] n -> a [label=go]`,
			Outcome{Status: StatusSuccess, preferredLabel: "GO"}, nil, "b"},
		{"preferred label ignores conditional edges", `n -> a [label=Fix, condition="outcome=fail"] n -> b [label=Other] n -> c [label=Fix]`,
			Outcome{Status: StatusSuccess, preferredLabel: "Fix"}, nil, "c"},
		{"preferred label beats suggestion", `n -> a [label=Fix] n -> b`,
			Outcome{Status: StatusSuccess, preferredLabel: "Fix", suggestedNextIDs: []string{"b"}}, nil, "a"},
		{"unmatched preferred label falls through", `n -> a [label=Fix] n -> b [weight=1]`,
			Outcome{Status: StatusSuccess, preferredLabel: "Ship"}, nil, "b"},

		// Step 3: suggested next ids, in the outcome's order.
		{"suggested id", `n -> a [weight=9] n -> b`,
			Outcome{Status: StatusSuccess, suggestedNextIDs: []string{"b"}}, nil, "b"},
		{"suggested ids in order", `n -> a n -> b n -> c`,
			Outcome{Status: StatusSuccess, suggestedNextIDs: []string{"x", "c", "a"}}, nil, "c"},
		{"suggestion ignores conditional edges", `n -> a [condition="outcome=fail"] n -> b`,
			Outcome{Status: StatusSuccess, suggestedNextIDs: []string{"a"}}, nil, "b"},
		{"suggestion beats weight", `n -> a [weight=100] n -> b`,
			Outcome{Status: StatusSuccess, suggestedNextIDs: []string{"b"}}, nil, "b"},

		// Steps 4 and 5: weight, then target id.
		{"highest weight", `n -> a [weight=1] n -> b [weight=3] n -> c [weight=2]`,
			Outcome{Status: StatusSuccess}, nil, "b"},
		{"negative weights", `n -> a [weight=-1] n -> b [weight=-2]`,
			Outcome{Status: StatusSuccess}, nil, "a"},
		{"equal weights: lexical target", `n -> charlie n -> bravo n -> delta`,
			Outcome{Status: StatusSuccess}, nil, "bravo"},
		{"lexical is byte order", `n -> b n -> B`,
			Outcome{Status: StatusSuccess}, nil, "B"},
		{"edge defaults count", `edge [weight=2] n -> b edge [weight=0] n -> a`,
			Outcome{Status: StatusSuccess}, nil, "b"},
		{"failure with only a success edge still takes it", `n -> a`,
			Outcome{Status: StatusFail}, nil, "a"},
		{"no edges", ``, Outcome{Status: StatusSuccess}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mustParse(t, "digraph x { n "+tt.edges+" }")
			e, err := selectEdge(g, "n", tt.o, tt.ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if e != nil {
				got = e.to
			}
			if got != tt.want {
				t.Errorf("selected %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSelectEdgeSameTargetTie(t *testing.T) {
	g := mustParse(t, `digraph x { n -> a [label=first] n -> a [label=second] }`)
	e, err := selectEdge(g, "n", Outcome{Status: StatusSuccess}, nil)
	if err != nil || e.label() != "first" {
		t.Fatalf("got %v, %v; want the first declared", e, err)
	}
}

func TestSelectEdgeErrors(t *testing.T) {
	g := mustParse(t, "digraph x {\n n -> a [condition=\"outcome=success\"]\n n -> b [condition=\"outcome=sucess\"]\n}")
	_, err := selectEdge(g, "n", Outcome{Status: StatusSuccess}, nil)
	var de *dotError
	if !errors.As(err, &de) || de.line != 3 || de.rule != "condition_syntax" {
		t.Fatalf("got %v", err)
	}
	if _, err := selectEdge(g, "nope", Outcome{}, nil); err == nil {
		t.Error("unknown node: want an error")
	}
}

func TestSelectEdgeFixtures(t *testing.T) {
	tests := []struct {
		fixture, node string
		o             Outcome
		ctx           map[string]string
		want          string
	}{
		{"spec-examples/branch.dot", "gate", Outcome{Status: StatusSuccess}, nil, "exit"},
		{"spec-examples/branch.dot", "gate", Outcome{Status: StatusFail}, nil, "implement"},
		{"orchestra/test-branching.dot", "gate", Outcome{Status: statusPartialSuccess}, nil, "failure"},
		{"mammoth/conformance_test.dot", "ContextCheck", Outcome{Status: StatusSuccess}, nil, "WeightedB"},
		{"mammoth/conformance_test.dot", "GoalGate", Outcome{Status: statusRetry}, nil, "GoalGateSetup"},
		{"orchestra/pr-review-adversarial.dot", "gate", Outcome{Status: StatusSuccess}, map[string]string{"critic_verdict": "insufficient"}, "fan_out"},
		{"orchestra/pr-review-adversarial.dot", "gate", Outcome{Status: StatusSuccess, ContextUpdates: map[string]string{"context.critic_verdict": "sufficient"}}, nil, "synthesize"},
		{"orchestra/pr-review-adversarial.dot", "gate", Outcome{Status: StatusSuccess}, nil, ""},
		// A human gate's answer comes back as a suggested next id (spec §4.6).
		{"orchestra/test-human-gate.dot", "review_gate", Outcome{Status: StatusSuccess, suggestedNextIDs: []string{"revise"}}, nil, "revise"},
		{"orchestra/test-human-gate.dot", "review_gate", Outcome{Status: StatusSuccess, preferredLabel: "Approve"}, nil, "apply"},
	}
	for _, tt := range tests {
		g := parseFixture(t, tt.fixture)
		e, err := selectEdge(g, tt.node, tt.o, tt.ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if e != nil {
			got = e.to
		}
		if got != tt.want {
			t.Errorf("%s %s %+v: selected %q, want %q", tt.fixture, tt.node, tt.o, got, tt.want)
		}
	}
}

// parseAccelerator is the accelerator rule of a single edge label, built from what Choices uses: it splits an edge label into its accelerator key and the
// label to show: "[A] Approve" → A, "Approve"; "Y) Yes, deploy" → Y,
// "Yes, deploy"; "Y - Yes, deploy" → Y, "Yes, deploy"; otherwise the first
// letter or digit, upper-cased, and the whole label ("Fix issues" → F). A
// label with no letter or digit has no key.
func parseAccelerator(label string) (key, rest string) {
	label = strings.TrimSpace(label)
	if k, r, ok := acceleratorPrefix(label); ok {
		return k, r
	}
	for _, r := range label {
		if k := keyOf(r); k != "" {
			return k, label
		}
	}
	return "", label
}
