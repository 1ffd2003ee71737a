package brain

import (
	"regexp"
	"testing"
)

// Every pattern compiles: they are compiled on first use, and a bad one must fail here, not in a run.
func TestPatternsCompile(t *testing.T) {
	if len(patterns) < 100 {
		t.Fatalf("only %d patterns registered", len(patterns))
	}
	for _, p := range patterns {
		if _, err := regexp.Compile(p.src); err != nil {
			t.Errorf("%q: %v", p.src, err)
		}
	}
}
