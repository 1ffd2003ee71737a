package gfm

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDefuse(t *testing.T) {
	for in, want := range map[string]string{
		"ask @ann":                 "ask @\u200bann",
		"@acme/security look":      "@\u200bacme/security look",
		"(@bob)":                   "(@\u200bbob)",
		"mail ann@example.com":     "mail ann@example.com",
		"`@code` stays":            "`@code` stays",
		"@@ann":                    "@@ann",
		"@ alone":                  "@ alone",
		"two @ann and @bob here":   "two @\u200bann and @\u200bbob here",
		"line\n@ann at line start": "line\n@\u200bann at line start",
	} {
		if got := Defuse(in); got != want {
			t.Errorf("Defuse(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCodeAndBlockCannotBeClosedFromInside(t *testing.T) {
	if got := Code("a `b` c"); got != "``a `b` c``" {
		t.Errorf("Code = %q", got)
	}
	if got := Code("`x"); got != "`` `x ``" {
		t.Errorf("Code = %q", got)
	}
	in := "before\n```\n</details>\n````\nafter"
	b := Block(in)
	fence := b[:strings.Index(b, "text")]
	if fence != "`````" || !strings.HasSuffix(b, "\n"+fence) || strings.Count(b, fence) != 2 {
		t.Errorf("Block = %q", b)
	}
}

func TestCutAndBound(t *testing.T) {
	if got := Cut("héllo wörld", 5); got != "héll…" || utf8.RuneCountInString(got) != 5 {
		t.Errorf("Cut = %q", got)
	}
	if got := Cut("short", 5); got != "short" {
		t.Errorf("Cut = %q", got)
	}
	long := strings.Repeat("a line of the body\n", MaxBody/10)
	got := Bound(long, "\n(cut)\n")
	if len(got) > MaxBody || !strings.HasSuffix(got, "a line of the body\n(cut)\n") {
		t.Errorf("Bound: %d bytes, ends %q", len(got), got[len(got)-40:])
	}
	if Bound("small", "note") != "small" {
		t.Error("Bound changed a body within the limit")
	}
}
