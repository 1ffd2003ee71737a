// Package lazyre holds regular expressions that are compiled on first use, not at program start.
//
// Every orch process pays for the package initialisation of the whole binary, including the sandbox's shim and
// Claude Code's hook, which run once per agent start and once per tool call. A package-level regexp.MustCompile
// compiles there whether or not the process ever matches anything; a lazyre.Regexp costs one small value until
// it is used.
package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is a regular expression compiled by its first use. Its methods are regexp.Regexp's. The expression must
// be valid: an invalid one panics at its first use, as regexp.MustCompile would have at start.
type Regexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

// New returns expr, to be compiled when it is first used.
func New(expr string) *Regexp { return &Regexp{expr: expr} }

// Regexp is the compiled expression.
func (r *Regexp) Regexp() *regexp.Regexp {
	r.once.Do(func() { r.re = regexp.MustCompile(r.expr) })
	return r.re
}

// String is the source text of the expression; it does not compile it.
func (r *Regexp) String() string { return r.expr }

func (r *Regexp) MatchString(s string) bool            { return r.Regexp().MatchString(s) }
func (r *Regexp) FindString(s string) string           { return r.Regexp().FindString(s) }
func (r *Regexp) FindStringIndex(s string) []int       { return r.Regexp().FindStringIndex(s) }
func (r *Regexp) FindStringSubmatch(s string) []string { return r.Regexp().FindStringSubmatch(s) }
func (r *Regexp) FindStringSubmatchIndex(s string) []int {
	return r.Regexp().FindStringSubmatchIndex(s)
}
func (r *Regexp) FindAllString(s string, n int) []string { return r.Regexp().FindAllString(s, n) }
func (r *Regexp) SubexpIndex(name string) int            { return r.Regexp().SubexpIndex(name) }
func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.Regexp().ReplaceAllString(src, repl)
}

func (r *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.Regexp().FindAllStringSubmatch(s, n)
}

func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.Regexp().ReplaceAllStringFunc(src, repl)
}
