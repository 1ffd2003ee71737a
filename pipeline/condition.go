package pipeline

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// condClause is one "key op literal" of an edge condition (spec §10).
type condClause struct {
	key   string // outcome, preferred_label or context.<path>
	neq   bool   // != rather than =
	value string
}

// checkCondition checks an edge condition against the spec's grammar (§10.2):
// clauses "key=literal" or "key!=literal" joined by &&, where key is outcome,
// preferred_label or context.<path>, and literal is a bare word or a quoted
// string. It is stricter than the spec's evaluation pseudocode on purpose: a
// bare key, an empty clause, an unknown key or an outcome that is not a status
// ("outcome=failure", "outcome=SUCCESS") is an error here, because at run time
// each would quietly never match and send the run down the wrong edge.
func checkCondition(expr string) error {
	_, err := parseCondition(expr)
	return err
}

// evalCondition evaluates an edge condition (spec §10): every clause must
// hold. An empty condition holds. outcome is o's status, preferred_label o's
// preferred label; context.x is looked up as "context.x" and then as "x",
// first in o's context updates (the engine applies them before it selects an
// edge) and then in ctx; a missing key is the empty string. Comparison is
// exact. A condition that does not parse is an error, never false.
func evalCondition(expr string, o Outcome, ctx map[string]string) (bool, error) {
	clauses, err := parseCondition(expr)
	if err != nil {
		return false, err
	}
	for _, c := range clauses {
		if (resolveKey(c.key, o, ctx) == c.value) == c.neq {
			return false, nil
		}
	}
	return true, nil
}

func resolveKey(key string, o Outcome, ctx map[string]string) string {
	switch key {
	case "outcome":
		return strings.ToLower(o.Status)
	case "preferred_label":
		return o.preferredLabel
	}
	lookup := func(k string) (string, bool) {
		if v, ok := o.ContextUpdates[k]; ok {
			return v, true
		}
		v, ok := ctx[k]
		return v, ok
	}
	if v, ok := lookup(key); ok {
		return v
	}
	v, _ := lookup(strings.TrimPrefix(key, "context."))
	return v
}

// statuses are the values an outcome can have (spec §5.2), as conditions spell them.
var statuses = []string{StatusSuccess, StatusFail, statusPartialSuccess, statusRetry, statusSkipped}

func parseCondition(expr string) ([]condClause, error) {
	cp := condParser{src: expr}
	clauses, err := cp.parse()
	if err != nil {
		return nil, fmt.Errorf("condition %q: %w", expr, err)
	}
	return clauses, nil
}

type condParser struct {
	src string
	pos int
}

// condBlanks separate the parts of a condition.
const condBlanks = " \t\n\r\v\f"

func (cp *condParser) blanks() {
	for cp.pos < len(cp.src) && strings.IndexByte(condBlanks, cp.src[cp.pos]) >= 0 {
		cp.pos++
	}
}

func (cp *condParser) rest() string {
	r := cp.src[cp.pos:]
	if len(r) > 20 {
		n := 20
		for n > 0 && !utf8.RuneStart(r[n]) {
			n--
		}
		r = r[:n] + "…"
	}
	return r
}

func (cp *condParser) parse() ([]condClause, error) {
	if strings.TrimSpace(cp.src) == "" {
		return nil, nil // no condition: always eligible
	}
	cp.blanks()
	var clauses []condClause
	for {
		c, err := cp.clause()
		if err != nil {
			return nil, err
		}
		clauses = append(clauses, c)
		cp.blanks()
		switch {
		case cp.pos == len(cp.src):
			return clauses, nil
		case strings.HasPrefix(cp.src[cp.pos:], "&&"):
			cp.pos += 2
			cp.blanks()
			if cp.pos == len(cp.src) {
				return nil, fmt.Errorf("nothing after &&")
			}
		case strings.HasPrefix(cp.src[cp.pos:], "||"):
			return nil, fmt.Errorf("'||' is not supported: clauses can only be joined with &&")
		default:
			return nil, fmt.Errorf("unexpected %q after a clause (only && may follow; quote values with spaces)", cp.rest())
		}
	}
}

func (cp *condParser) clause() (condClause, error) {
	var c condClause
	var err error
	if c.key, err = cp.key(); err != nil {
		return c, err
	}
	cp.blanks()
	if c.neq, err = cp.operator(c.key); err != nil {
		return c, err
	}
	cp.blanks()
	if c.value, err = cp.literal(); err != nil {
		return c, err
	}
	if c.key == "outcome" && !slices.Contains(statuses, c.value) {
		return c, fmt.Errorf("outcome is never %q: it is one of %s", c.value, strings.Join(statuses, ", "))
	}
	return c, nil
}

// key reads a clause's key: outcome, preferred_label or context.<name>.
func (cp *condParser) key() (string, error) {
	start := cp.pos
	for cp.pos < len(cp.src) && (isIdentByte(cp.src[cp.pos]) || cp.src[cp.pos] == '.') {
		cp.pos++
	}
	key := cp.src[start:cp.pos]
	switch {
	case key == "":
		if strings.HasPrefix(cp.src[cp.pos:], "&&") {
			return key, fmt.Errorf("empty clause before &&")
		}
		return key, fmt.Errorf("expected a key (outcome, preferred_label or context.<name>), found %q", cp.rest())
	case key == "outcome" || key == "preferred_label":
	case strings.HasPrefix(key, "context.") && isKey(strings.TrimPrefix(key, "context.")):
	case strings.HasPrefix(key, "context."):
		return key, fmt.Errorf("%q is not a context key (context.<name>, names joined by '.')", key)
	default:
		return key, fmt.Errorf("unknown key %q: use outcome, preferred_label or context.%s", key, key)
	}
	return key, nil
}

// operator reads the operator after key: = or != (neq).
func (cp *condParser) operator(key string) (neq bool, err error) {
	switch {
	case strings.HasPrefix(cp.src[cp.pos:], "!="):
		cp.pos += 2
		return true, nil
	case strings.HasPrefix(cp.src[cp.pos:], "=="):
		return false, fmt.Errorf("'==' is not an operator: write %s=value", key)
	case strings.HasPrefix(cp.src[cp.pos:], "="):
		cp.pos++
		return false, nil
	case cp.pos == len(cp.src) || strings.HasPrefix(cp.src[cp.pos:], "&&"):
		return false, fmt.Errorf("%s has no operator: write %s=value or %s!=value", key, key, key)
	}
	return false, fmt.Errorf("expected = or != after %s, found %q", key, cp.rest())
}

// literal reads a quoted string (escapes \" \\ \n \t) or a bare value: a run
// of characters that are not blanks, quotes or operator characters.
func (cp *condParser) literal() (string, error) {
	if cp.pos < len(cp.src) && cp.src[cp.pos] == '"' {
		var b strings.Builder
		for i := cp.pos + 1; i < len(cp.src); i++ {
			switch ch := cp.src[i]; ch {
			case '"':
				cp.pos = i + 1
				return b.String(), nil
			case '\\':
				if i+1 < len(cp.src) {
					i++
					switch e := cp.src[i]; e {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case '"', '\\':
						b.WriteByte(e)
					default:
						b.WriteByte('\\')
						b.WriteByte(e)
					}
					continue
				}
				b.WriteByte(ch)
			default:
				b.WriteByte(ch)
			}
		}
		return "", fmt.Errorf("unterminated quoted value")
	}
	start := cp.pos
	for cp.pos < len(cp.src) && strings.IndexByte(condBlanks+"\"=!&|<>()", cp.src[cp.pos]) < 0 {
		cp.pos++
	}
	if cp.pos == start {
		if cp.pos == len(cp.src) || strings.HasPrefix(cp.src[cp.pos:], "&&") {
			return "", fmt.Errorf("missing value (write \"\" for the empty string)")
		}
		return "", fmt.Errorf("expected a value, found %q", cp.rest())
	}
	return cp.src[start:cp.pos], nil
}
