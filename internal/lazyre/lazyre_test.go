package lazyre

import (
	"regexp"
	"testing"
)

func TestLazy(t *testing.T) {
	r := New(`(?P<n>\d+)-(\w+)`)
	if r.re != nil {
		t.Fatal("compiled before use")
	}
	if r.String() != `(?P<n>\d+)-(\w+)` || r.re != nil {
		t.Fatal("String compiled it or changed it")
	}
	want := regexp.MustCompile(r.String())
	s := "a 12-ab c 3-x"
	if got := r.FindStringSubmatch(s); len(got) != 3 || got[1] != "12" {
		t.Fatalf("FindStringSubmatch = %q", got)
	}
	if first := r.re; r.Regexp() != first {
		t.Fatal("compiled twice")
	}
	if r.SubexpIndex("n") != want.SubexpIndex("n") || !r.MatchString(s) || r.FindString(s) != want.FindString(s) ||
		r.ReplaceAllString(s, "<$n>") != want.ReplaceAllString(s, "<$n>") || len(r.FindAllString(s, -1)) != 2 ||
		len(r.FindAllStringSubmatch(s, -1)) != 2 || r.FindStringIndex(s)[0] != 2 || r.FindStringSubmatchIndex(s)[2] != 2 ||
		r.ReplaceAllStringFunc(s, func(string) string { return "x" }) != "a x c x" {
		t.Fatal("a method differs from regexp's")
	}
}

func TestInvalidPanicsAtUse(t *testing.T) {
	r := New(`(`)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	r.MatchString("")
}
