package brain

import (
	"regexp"
	"strings"
	"sync"
)

// pattern is a regular expression compiled on its first use. The heuristic brain has more than a hundred; compiled
// when the package loads, they cost every orch process about 10 ms before main runs — every command, and the sandbox
// shim that orch starts in front of each local agent.
type pattern struct {
	src  string
	once sync.Once
	re   *regexp.Regexp
}

// patterns lists every pattern, so that a test compiles them all.
var patterns []*pattern

// lazyRE is regexp.MustCompile on first use. Declare patterns at package level only: a pattern that does not compile
// fails TestPatternsCompile.
func lazyRE(src string) *pattern {
	p := &pattern{src: src}
	patterns = append(patterns, p)
	return p
}

func (p *pattern) get() *regexp.Regexp {
	p.once.Do(func() { p.re = regexp.MustCompile(p.src) })
	return p.re
}

func (p *pattern) String() string                       { return p.src }
func (p *pattern) MatchString(s string) bool            { return p.get().MatchString(s) }
func (p *pattern) FindStringIndex(s string) []int       { return p.get().FindStringIndex(s) }
func (p *pattern) FindStringSubmatch(s string) []string { return p.get().FindStringSubmatch(s) }
func (p *pattern) FindAllStringIndex(s string, n int) [][]int {
	return p.get().FindAllStringIndex(s, n)
}
func (p *pattern) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return p.get().FindAllStringSubmatchIndex(s, n)
}
func (p *pattern) FindStringSubmatchIndex(s string) []int { return p.get().FindStringSubmatchIndex(s) }
func (p *pattern) FindAllStringSubmatch(s string, n int) [][]string {
	return p.get().FindAllStringSubmatch(s, n)
}
func (p *pattern) ReplaceAllString(src, repl string) string {
	return p.get().ReplaceAllString(src, repl)
}
func (p *pattern) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return p.get().ReplaceAllStringFunc(src, repl)
}
func (p *pattern) Split(s string, n int) []string { return p.get().Split(s, n) }

// oneOf is a pattern's source from its alternatives, written one phrase per line where the pattern is declared: the
// flags (such as "(?i)"), then the alternatives joined by "|". The source is what one long line would have been, so
// a phrase changed is one line of a diff.
func oneOf(flags string, alts ...string) string { return flags + strings.Join(alts, "|") }

// anyOf is a non-capturing group of alternatives, "(?:a|b|c)", written one phrase per line as oneOf's are.
func anyOf(alts ...string) string { return "(?:" + strings.Join(alts, "|") + ")" }
