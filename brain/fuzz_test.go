package brain

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzInterpret(f *testing.F) {
	for _, seed := range []string{
		"",
		"Done. All tests pass.",
		"STATUS: needs_human\nQUESTION: Which?\nOPTIONS:\nA) x  B) y\nRECOMMENDATION: A",
		"Traceback (most recent call last):\n  File \"a.py\", line 1\nValueError: bad",
		"```\nshould I?\n```\n`x`\"q?\"",
		"A) B) C)\n- \n* \n1. \n[A]",
		"\uE0000\uE001 \uE00099\uE001?",
		"STATUS:\nNEEDS_HUMAN:\nOPTIONS:\n\n\nRECOMMENDATION:",
		"\xff\xfe invalid utf-8 ?",
		"QUESTION: Which? OPTIONS: A) x B) y RECOMMENDATION: the first one",
		"Which?\n\n| # | Option |\n|---|---|\n| 1 | **x** (Recommended) |\n| 2 | y |",
		`{"questions":[{"question":"Q?","options":[{"label":"a (Recommended)"},{"label":""}]}]}`,
		"Should I use either x or y? I'd suggest (b).",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, output string) {
		var h Heuristic
		got, err := h.Interpret(context.Background(), output)
		if err != nil {
			t.Fatal(err)
		}
		switch got.Status {
		case StatusCompleted, StatusFailed, StatusNeedsHelp:
		default:
			t.Fatalf("invalid status %q", got.Status)
		}
		if got.Status == StatusFailed && got.Error == "" {
			t.Fatal("failed without an error")
		}
		if got.Status == StatusNeedsHelp && got.Question == "" {
			t.Fatal("needs_help without a question")
		}
		if utf8.RuneCountInString(got.Error) > maxErrorLen {
			t.Fatalf("error of %d runes", utf8.RuneCountInString(got.Error))
		}
	})
}

func FuzzParseOptions(f *testing.F) {
	for _, seed := range []string{
		"A) Redis  B) In-memory  C) File-based",
		"1. Yes\n2. No",
		"- a\n  b\n- c",
		"[A] x [B] y",
		"**Option A:** x\n**Option B:** y",
		"A)\nB)",
		"a) b) c) d)",
		"| a | b |\n|---|---|\n| **x**: y | z |",
		"- **(Recommended)**\n- __x__: y",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, o := range ParseOptions(text) {
			if strings.TrimSpace(o) == "" {
				t.Fatalf("empty option from %q", text)
			}
		}
	})
}

func FuzzSimilarity(f *testing.F) {
	f.Add("abc", "abd")
	f.Add(strings.Repeat("ab", 120), "ba")
	f.Fuzz(func(t *testing.T, a, b string) {
		s := Similarity(a, b)
		if s < 0 || s > 1 {
			t.Fatalf("Similarity(%q, %q) = %v", a, b, s)
		}
		if Similarity(a, a) != 1 {
			t.Fatalf("Similarity(a, a) != 1 for %q", a)
		}
	})
}
