package pipeline

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// tokKind is the kind of a DOT token.
type tokKind int

const (
	tokEOF        tokKind = iota
	tokWord               // identifier, number, duration or bare value: [A-Za-z0-9_.:-]+
	tokString             // double-quoted; text holds the unescaped value
	tokLBrace             // {
	tokRBrace             // }
	tokLBracket           // [
	tokRBracket           // ]
	tokEquals             // =
	tokSemi               // ;
	tokComma              // ,
	tokArrow              // ->
	tokUndirected         // -- (lexed only to be rejected with a clear message)
)

func (k tokKind) String() string {
	switch k {
	case tokEOF:
		return "end of file"
	case tokWord:
		return "word"
	case tokString:
		return "string"
	case tokLBrace:
		return "'{'"
	case tokRBrace:
		return "'}'"
	case tokLBracket:
		return "'['"
	case tokRBracket:
		return "']'"
	case tokEquals:
		return "'='"
	case tokSemi:
		return "';'"
	case tokComma:
		return "','"
	case tokArrow:
		return "'->'"
	case tokUndirected:
		return "'--'"
	}
	return "token"
}

type token struct {
	kind tokKind
	text string
	line int
}

// describe names a token the way an error message should quote it.
func (t token) describe() string {
	switch t.kind {
	case tokWord:
		return fmt.Sprintf("%q", t.text)
	case tokString:
		return fmt.Sprintf("string %q", t.text)
	}
	return t.kind.String()
}

// lexer splits DOT source into tokens, dropping whitespace and comments.
// Source has CR and CRLF already turned into LF, so lines count as editors show them.
type lexer struct {
	src  string
	pos  int
	line int
}

// lexError is a problem at one line; the parser adds the file name.
type lexError struct {
	line int
	msg  string
}

func (e *lexError) Error() string { return fmt.Sprintf("%d: %s", e.line, e.msg) }

func (lx *lexer) errorf(line int, format string, args ...any) *lexError {
	return &lexError{line: line, msg: fmt.Sprintf(format, args...)}
}

func isWordStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

func isWordChar(c byte) bool { return isWordStart(c) || c == ':' }

// atLineStart reports whether only blanks precede pos on its line: Graphviz
// treats a line starting with '#' as preprocessor output and ignores it.
func (lx *lexer) atLineStart() bool {
	for i := lx.pos - 1; i >= 0; i-- {
		switch lx.src[i] {
		case '\n':
			return true
		case ' ', '\t', '\f', '\v':
		default:
			return false
		}
	}
	return true
}

// skip drops whitespace and comments.
func (lx *lexer) skip() error {
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch {
		case c == '\n':
			lx.line++
			lx.pos++
		case c == ' ' || c == '\t' || c == '\f' || c == '\v':
			lx.pos++
		case c == '#' && lx.atLineStart():
			for lx.pos < len(lx.src) && lx.src[lx.pos] != '\n' {
				lx.pos++
			}
		case strings.HasPrefix(lx.src[lx.pos:], "//"):
			for lx.pos < len(lx.src) && lx.src[lx.pos] != '\n' {
				lx.pos++
			}
		case strings.HasPrefix(lx.src[lx.pos:], "/*"):
			start := lx.line
			end := strings.Index(lx.src[lx.pos+2:], "*/")
			if end < 0 {
				return lx.errorf(start, "unterminated /* comment")
			}
			comment := lx.src[lx.pos : lx.pos+2+end+2]
			lx.line += strings.Count(comment, "\n")
			lx.pos += len(comment)
		default:
			return nil
		}
	}
	return nil
}

// punctuation is the kind of a one-byte token, or tokEOF when c is not one.
func punctuation(c byte) tokKind {
	switch c {
	case '{':
		return tokLBrace
	case '}':
		return tokRBrace
	case '[':
		return tokLBracket
	case ']':
		return tokRBracket
	case '=':
		return tokEquals
	case ';':
		return tokSemi
	case ',':
		return tokComma
	}
	return tokEOF
}

func (lx *lexer) next() (token, error) {
	if err := lx.skip(); err != nil {
		return token{}, err
	}
	if lx.pos >= len(lx.src) {
		return token{kind: tokEOF, line: lx.line}, nil
	}
	line := lx.line
	c := lx.src[lx.pos]
	if k := punctuation(c); k != tokEOF {
		lx.pos++
		return token{kind: k, text: string(c), line: line}, nil
	}
	switch {
	case strings.HasPrefix(lx.src[lx.pos:], "->"):
		lx.pos += 2
		return token{kind: tokArrow, text: "->", line: line}, nil
	case strings.HasPrefix(lx.src[lx.pos:], "--"):
		lx.pos += 2
		return token{kind: tokUndirected, text: "--", line: line}, nil
	case c == '"':
		return lx.quoted()
	case c == '<':
		return token{}, lx.errorf(line, "HTML-like <...> values are not supported; use a quoted string")
	case isWordStart(c):
		start := lx.pos
		for lx.pos < len(lx.src) && isWordChar(lx.src[lx.pos]) {
			// "a->b" and "a--b" end the word before the operator.
			if lx.src[lx.pos] == '-' && lx.pos+1 < len(lx.src) && (lx.src[lx.pos+1] == '>' || lx.src[lx.pos+1] == '-') && lx.pos > start {
				break
			}
			lx.pos++
		}
		return token{kind: tokWord, text: lx.src[start:lx.pos], line: line}, nil
	}
	r, _ := utf8.DecodeRuneInString(lx.src[lx.pos:])
	return token{}, lx.errorf(line, "unexpected character %q (a value with spaces or symbols must be quoted)", r)
}

// quoted reads a double-quoted string. \" \\ \n \t are the spec's escapes;
// Graphviz's \l and \r (left- and right-justified line ends) become newlines
// too, a backslash before a newline joins the lines, and any other backslash
// is kept as written, as Graphviz does (so "\N" stays "\N").
func (lx *lexer) quoted() (token, error) {
	start := lx.line
	lx.pos++ // opening quote
	var b strings.Builder
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch c {
		case '"':
			lx.pos++
			return token{kind: tokString, text: b.String(), line: start}, nil
		case '\n':
			lx.line++
			b.WriteByte(c)
			lx.pos++
		case '\\':
			if lx.pos+1 >= len(lx.src) {
				b.WriteByte(c)
				lx.pos++
				continue
			}
			e := lx.src[lx.pos+1]
			lx.pos += 2
			switch e {
			case '"', '\\':
				b.WriteByte(e)
			case 'n', 'l', 'r':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '\n':
				lx.line++
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
			lx.pos++
		}
	}
	return token{}, lx.errorf(start, "unterminated string")
}
