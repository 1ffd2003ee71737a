package brain

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

const (
	pyLong1 = "Traceback (most recent call last):\n  File \"orchestrator/cli.py\", line 12, in <module>\n    import pandas as pd\nModuleNotFoundError: No module named 'pandas'\n\nThe task could not be completed because the dependency pandas is not installed in the sandbox image."
	pyLong2 = "Traceback (most recent call last):\n  File \"orchestrator/cli.py\", line 14, in <module>\n    import numpy as np\nModuleNotFoundError: No module named 'numpy'\n\nThe task could not be completed because the dependency numpy is not installed in the sandbox image either."
	goLong1 = "--- FAIL: TestParsePlan (0.00s)\n    plan_test.go:41: got 3 tasks, want 4\n--- FAIL: TestParsePlanFenced (0.00s)\n    plan_test.go:77: got 5 tasks, want 4\nFAIL\nexit status 1\nFAIL\tgithub.com/orchrun/orch/plan\t0.012s\nI was not able to find the cause before running out of turns."
	goLong2 = "--- FAIL: TestParsePlanFenced (0.00s)\n    plan_test.go:77: got 5 tasks, want 4\nFAIL\nexit status 1\nFAIL\tgithub.com/orchrun/orch/plan\t0.011s\nThe fenced-block handling still counts headings inside code blocks; I ran out of turns while fixing it."
)

// words builds Python's " ".join("word%d" % (i % mod) for i in range(n)).
func words(n, mod int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("word%d", i%mod)
	}
	return strings.Join(w, " ")
}

func TestSimilarityMatchesDifflib(t *testing.T) {
	// Expected values come from CPython 3.11.7's difflib: SequenceMatcher(None, a, b).ratio() with the
	// default autojunk=True. noJunk is the autojunk=False ratio where it differs: those cases show that the
	// popular-element heuristic (b of 200+ elements) is ported, not just the matching.
	tests := []struct {
		name   string
		a, b   string
		want   float64
		noJunk float64
	}{
		{name: "both empty", a: "", b: "", want: 1.0},
		{name: "one empty", a: "abc", b: "", want: 0.0},
		{name: "shifted", a: "abcd", b: "bcde", want: 0.75},
		{name: "identical", a: "Failed: ImportError - no module named pandas", b: "Failed: ImportError - no module named pandas", want: 1.0},
		{name: "different errors", a: "Failed: ImportError - no module named pandas", b: "Failed: TypeError - expected str, got int", want: 0.5176470588235295},
		{name: "accents are runes", a: "naïve café — ünïcode", b: "naive cafe - unicode", want: 0.75},
		{name: "cjk and emoji", a: "日本語のエラー: ファイルが見つかりません 🚫", b: "日本語のエラー: ディレクトリが見つかりません 🚫", want: 0.7916666666666666},
		{name: "contradictions", a: "Failed: file must have exactly 100 lines and exactly 50 lines; contradictory requirements", b: "Failed: cannot satisfy both 100 lines and 50 lines at once", want: 0.5306122448979592},
		{name: "popular only, found by extension", a: strings.Repeat("x", 300), b: strings.Repeat("x", 300), want: 1.0},
		{name: "autojunk: popular ab", a: strings.Repeat("ab", 150) + "c", b: "c" + strings.Repeat("ab", 150), want: 0.0033222591362126247, noJunk: 0.9966777408637874},
		{name: "autojunk: tracebacks", a: pyLong1, b: pyLong2, want: 0.8957528957528957, noJunk: 0.9266409266409267},
		{name: "autojunk: go test logs", a: goLong1, b: goLong2, want: 0.5475728155339806, noJunk: 0.6446601941747573},
		{name: "autojunk: repeated words", a: words(80, 7), b: words(90, 5), want: 0.06679764243614932, noJunk: 0.7445972495088409},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Similarity(tt.a, tt.b)
			if math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("Similarity = %.17g, want %.17g (difflib)", got, tt.want)
			}
			if tt.noJunk != 0 && math.Abs(got-tt.noJunk) < 1e-9 {
				t.Errorf("Similarity = %.17g, the autojunk=False value: autojunk not applied", got)
			}
		})
	}
}

func TestMeanSimilarity(t *testing.T) {
	tests := []struct {
		name   string
		errors []string
		want   float64
	}{
		{"none", nil, 0},
		{"one", []string{"boom"}, 0},
		{"two identical", []string{"boom", "boom"}, 1},
		{"three", []string{"abcd", "bcde", "bcde"}, (0.75 + 1) / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MeanSimilarity(tt.errors); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("MeanSimilarity = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOscillating(t *testing.T) {
	a := "--- FAIL: TestParse (0.00s) parse_test.go:22: got 3 tokens, want 4"
	a2 := "--- FAIL: TestParse (0.01s) parse_test.go:23: got 3 tokens, want 4"
	a3 := "--- FAIL: TestParse (0.00s) parse_test.go:22: got 3 tokens, want 5"
	b := "panic: runtime error: index out of range [5] with length 5 in lexer.go:88"
	tests := []struct {
		name      string
		errors    []string
		threshold float64
		want      bool
	}{
		{"fewer than three", []string{a, b}, 0.8, false},
		{"A-B-A", []string{a, b, a}, 0.8, true},
		{"A-B-A' with small drift", []string{a, b, a2}, 0.8, true},
		{"only the last three count", []string{b, b, a, b, a}, 0.8, true},
		{"A-A-A is a loop, not an oscillation", []string{a, a, a}, 0.8, false},
		{"A-B-C", []string{a, b, "ModuleNotFoundError: No module named 'yaml'"}, 0.8, false},
		{"zero threshold means default", []string{a, b, a}, 0, true},
		{"threshold above the A-A'' similarity", []string{a, b, a3}, 0.999, false},
		{"a moved line and another duration are no drift", []string{a, b, a2}, 0.999, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Oscillating(tt.errors, tt.threshold); got != tt.want {
				t.Errorf("Oscillating = %v, want %v", got, tt.want)
			}
		})
	}
}

func BenchmarkSimilarityLong(b *testing.B) {
	x := strings.Repeat(goLong1+"\n", 8)
	y := strings.Repeat(goLong2+"\n", 8)
	for b.Loop() {
		Similarity(x, y)
	}
}
