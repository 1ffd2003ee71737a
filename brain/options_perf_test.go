package brain

import (
	"fmt"
	"strings"
	"testing"
)

// question40KB is a long output that ends in a question with no options, the worst case for option reading: every
// sentence before the question is read for alternatives, and the prose is full of "or", "whether" and lists.
func question40KB() string {
	var b strings.Builder
	for i := 0; b.Len() < 38<<10; i++ {
		fmt.Fprintf(&b, "I checked whether handler %d should retry on a timeout or fail fast, and it retries (see `h%d.go`). ", i, i)
		fmt.Fprintf(&b, "The store has two modes: sync and async. Should it log at debug or info? It logs at info.\n\n")
		if i%5 == 0 {
			fmt.Fprintf(&b, "- read h%d.go\n  - 40 lines\n- read h%d_test.go\n\n| file | lines |\n|---|---|\n| h%d.go | 40 |\n\n", i, i, i)
		}
	}
	b.WriteString("I've stopped before changing the public API. Shall I go ahead?")
	return b.String()
}

func BenchmarkInterpretQuestion40KB(b *testing.B) {
	out := question40KB()
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		interpret(out)
	}
}

// TestQuestion40KBIsAQuestion checks the benchmark's output is what it means to time: a question (its time is the
// benchmark's, never a bound in a test, which a busy machine breaks).
func TestQuestion40KBIsAQuestion(t *testing.T) {
	if in := interpret(question40KB()); in.Status != StatusNeedsHelp {
		t.Fatalf("status %s, want needs_help", in.Status)
	}
}

// BenchmarkOptionReading40KB is the option and recommendation reading alone, at its worst: every sentence of a 40 KB
// output read for alternatives and for a recommendation, and the whole text read as one options block.
func BenchmarkOptionReading40KB(b *testing.B) {
	d := newDoc(question40KB())
	ss := d.sentences()
	text := strings.Join(d.proseLines, "\n")
	for b.Loop() {
		for _, s := range ss {
			sentenceOptions(s.text)
			recommendedPhrase(s.text)
		}
		parseOptions(text)
	}
}
