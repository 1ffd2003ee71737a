package brain

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRequiredLiterals(t *testing.T) {
	tests := []struct {
		src  string
		want []string // nil: no filter
	}{
		{`(?i)\bshould (?:I|we)\b`, []string{"should i", "should we"}},
		{`\bFAIL(?:ED)?\b`, []string{"fail", "failed"}},
		{`(?i)\b(?:tests?|build)\s+(?:fails?|failed|breaks)\b`, []string{"test", "tests", "build"}},
		{`(?:should|shall) I`, []string{"should i", "shall i"}},
		{`(?i)not found|missing`, []string{"not found", "missing"}},
		{`(?i)\bis_error\b|x`, nil}, // one alternative too short to look for
		{`[A-Z]\w+Error`, []string{"error"}},
		{`(?:abc)?`, nil}, // may match nothing
		{`σ+ error`, []string{" error"}},
		{`^\s*\d+ passed`, []string{" passed"}},
	}
	for _, tt := range tests {
		g := &guarded{p: &pattern{src: tt.src}}
		g.may("")
		if strings.Join(g.lits, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%s: words %q, want %q", tt.src, g.lits, tt.want)
		}
	}
}

func TestFold(t *testing.T) {
	for in, want := range map[string]string{
		"FAILED (failures=1)": "failed (failures=1)",
		"✓ Tests PASS":        "✓ tests pass",
		"ſhould":              "should",
		"\u212Aeep":           "keep",
	} {
		if got := fold(in); got != want {
			t.Errorf("fold(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestGuardsNeverHideAMatch runs every guarded pattern over every line and sentence of the labelled outputs:
// wherever a pattern matches, its guard must let it through.
func TestGuardsNeverHideAMatch(t *testing.T) {
	files, _ := filepath.Glob("testdata/*/*.jsonl")
	var texts []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			var c struct {
				Output string `json:"output"`
			}
			if json.Unmarshal([]byte(line), &c) != nil || c.Output == "" {
				continue
			}
			d := newDoc(c.Output)
			texts = append(texts, d.lines...)
			for _, s := range d.sentences() {
				texts = append(texts, s.text)
			}
		}
	}
	texts = append(texts, "ſhould I", "SHOULD WE", "\u212Aeep going?", "Σ error")
	if len(texts) < 1000 {
		t.Fatalf("only %d texts to check with", len(texts))
	}
	for _, g := range guards {
		p := g.p
		for _, s := range texts {
			if p.MatchString(s) && !g.may(fold(s)) {
				t.Errorf("guard of %.80s… hides its match in %q (words %q)", p.String(), s, g.lits)
				break
			}
		}
	}
}

// A pair index finds each of its words wherever it is in a line, the first two bytes or the last included, and
// nothing else.
func TestPairIndex(t *testing.T) {
	x := newPairIndex([]string{"ab", "abc", "not sure", "zz"})
	for s, want := range map[string]bool{"ab": true, "xxab": true, "I'm not sure.": true, "a": false, "": false,
		"not  sure": false, "bazz": true, "a b": false, "nots sure": false} {
		if got := x.in(s); got != want {
			t.Errorf("in(%q) = %v, want %v", s, got, want)
		}
	}
}
