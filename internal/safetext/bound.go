package safetext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bound cuts s to at most n bytes, keeping its head and tail (whole runes) with a marker in the middle.
func Bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// The marker's count never has more digits than len(s).
	keep := n - len("\n…[ bytes cut]…\n") - len(strconv.Itoa(len(s)))
	if keep < 2 {
		return validPrefix(s[:max(n, 0)])
	}
	head := validPrefix(s[:keep/2])
	tail := validSuffix(s[len(s)-(keep-keep/2):])
	return head + fmt.Sprintf("\n…[%d bytes cut]…\n", len(s)-len(head)-len(tail)) + tail
}

// validPrefix drops a rune cut in two at the end of s (at most 3 bytes), leaving the rest as it was.
func validPrefix(s string) string {
	for i := 0; i < utf8.UTFMax-1 && len(s) > 0; i++ {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// validSuffix drops the continuation bytes of a rune cut in two at the start of s.
func validSuffix(s string) string {
	for i := 0; i < utf8.UTFMax-1 && len(s) > 0 && !utf8.RuneStart(s[0]); i++ {
		s = s[1:]
	}
	return s
}

// Cut is the first n bytes of s at most, without a rune cut in two.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return validPrefix(s[:max(n, 0)])
}

// OneLine is s on one line (every run of white space one space), cut to at most n characters with "…" when cut.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n, 0)]) + "…"
}

// HeadLine is the first line of s that says something, on one line (every run of white space one space); "" when
// no line does.
func HeadLine(s string) string {
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			return l
		}
	}
	return ""
}

// WithoutUserinfo is URL u without the user and password before its host ("https://TOKEN@host/…" is a credential
// too); anything that is no URL stays as it is.
func WithoutUserinfo(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if slash := strings.Index(rest, "/"); slash < 0 || at < slash {
			rest = rest[at+1:]
		}
	}
	return scheme + "://" + rest
}
