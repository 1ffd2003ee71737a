package pipeline

import (
	"fmt"
	"strings"
)

// Limits that keep a hostile or mistaken file from costing more than a real
// pipeline ever would: real pipelines are a few kilobytes, a few dozen nodes.
const (
	maxDOTSize     = 1 << 20 // bytes
	maxDOTDepth    = 32      // nested subgraphs
	maxDOTElements = 100_000 // nodes + edges + attribute values stored
)

// dotError is a problem with a DOT pipeline: its syntax (rule "syntax") or its
// structure (rule is the spec §7 lint rule). Callers outside the package see
// only its message, which says where the problem is.
type dotError struct {
	file string
	line int // 0 when the problem has no one place
	rule string
	msg  string
}

func (e *dotError) Error() string { return e.where() + ": " + e.msg }

// where is "pipeline FILE:LINE", leaving out what is unknown.
func (e *dotError) where() string {
	switch {
	case e.line > 0 && e.file != "":
		return fmt.Sprintf("pipeline %s:%d", e.file, e.line)
	case e.line > 0:
		return fmt.Sprintf("pipeline: line %d", e.line)
	case e.file != "":
		return "pipeline " + e.file
	}
	return "pipeline"
}

// ParseDOT reads a pipeline written in the spec's DOT subset (§2): one
// digraph, graph/node/edge attribute blocks, node and edge statements (chains
// expand to one edge per hop), subgraphs that scope defaults, comments, quoted
// strings with escapes. As in Graphviz, an edge declares the nodes it names,
// and defaults apply to what is declared after them in the same scope. An
// error says where: name and the line. ParseDOT checks syntax only: Runnable
// checks the structure.
//
// Beyond the spec's grammar, and harmless to any file it accepts: attributes
// may be separated by ';' or blanks as well as ',', keywords are
// case-insensitive as in Graphviz, quoted node ids and keys are accepted when
// their text is a valid id or key, a '#' line is ignored, and \l and \r in
// strings are line breaks.
func ParseDOT(name, src string) (*Graph, error) {
	if len(src) > maxDOTSize {
		return nil, &dotError{file: name, rule: "syntax", msg: fmt.Sprintf("larger than %d MiB", maxDOTSize>>20)}
	}
	src = strings.TrimPrefix(src, "\ufeff")
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	p := &parser{
		lx: lexer{src: src, line: 1},
		g: &Graph{
			file:  name,
			Attrs: map[string]string{},
			Nodes: map[string]*Node{},
		},
	}
	if err := p.parse(); err != nil {
		de, ok := err.(*dotError)
		if !ok {
			de = &dotError{line: p.tok.line, msg: err.Error()}
		}
		de.file, de.rule = name, "syntax"
		return nil, de
	}
	return p.g, nil
}

type parser struct {
	lx       lexer
	tok      token
	g        *Graph
	elements int
}

// scope is what a '{' … '}' block sees: the defaults in force, and the
// subgraph (nil at the top) whose attributes "graph [...]" and "k=v" set.
type scope struct {
	parent       *scope
	depth        int
	nodeDefaults map[string]string
	edgeDefaults map[string]string
	sub          *subgraph
	members      map[string]bool
}

func (p *parser) errorf(line int, format string, args ...any) error {
	return &dotError{line: line, msg: fmt.Sprintf(format, args...)}
}

func (p *parser) advance() error {
	t, err := p.lx.next()
	if err != nil {
		le := err.(*lexError)
		return p.errorf(le.line, "%s", le.msg)
	}
	p.tok = t
	return nil
}

// keyword reports whether the current token is the DOT keyword kw.
func (p *parser) keyword(kw string) bool {
	return p.tok.kind == tokWord && strings.EqualFold(p.tok.text, kw)
}

var dotKeywords = []string{"strict", "graph", "digraph", "subgraph", "node", "edge"}

func isKeyword(s string) bool {
	for _, kw := range dotKeywords {
		if strings.EqualFold(s, kw) {
			return true
		}
	}
	return false
}

func (p *parser) expect(k tokKind, what string) error {
	if p.tok.kind != k {
		return p.errorf(p.tok.line, "expected %s, found %s", what, p.tok.describe())
	}
	return p.advance()
}

func (p *parser) count(n int) error {
	p.elements += n
	if p.elements > maxDOTElements {
		return p.errorf(p.tok.line, "too large: more than %d nodes, edges and attributes", maxDOTElements)
	}
	return nil
}

func (p *parser) parse() error {
	if err := p.advance(); err != nil {
		return err
	}
	switch {
	case p.tok.kind == tokEOF:
		return p.errorf(p.tok.line, "no digraph found (expected \"digraph name { … }\")")
	case p.keyword("strict"):
		return p.errorf(p.tok.line, "strict graphs are not supported: remove \"strict\"")
	case p.keyword("graph"):
		return p.errorf(p.tok.line, "undirected graphs are not supported: write \"digraph\" and use -> for edges")
	case !p.keyword("digraph"):
		return p.errorf(p.tok.line, "expected \"digraph\", found %s", p.tok.describe())
	}
	if err := p.advance(); err != nil {
		return err
	}
	if p.tok.kind == tokWord || p.tok.kind == tokString {
		p.g.Name = p.tok.text
		if err := p.advance(); err != nil {
			return err
		}
	}
	open := p.tok.line
	if err := p.expect(tokLBrace, "'{' to open the digraph"); err != nil {
		return err
	}
	top := &scope{nodeDefaults: map[string]string{}, edgeDefaults: map[string]string{}}
	if err := p.block(top, open); err != nil {
		return err
	}
	switch {
	case p.tok.kind == tokEOF:
		return nil
	case p.keyword("digraph") || p.keyword("graph") || p.keyword("strict"):
		return p.errorf(p.tok.line, "a second graph starts here: a pipeline file holds one digraph")
	}
	return p.errorf(p.tok.line, "unexpected %s after the digraph's closing '}'", p.tok.describe())
}

// block reads statements up to and including the '}' that closes a block
// opened on line open.
func (p *parser) block(sc *scope, open int) error {
	for {
		switch p.tok.kind {
		case tokRBrace:
			return p.advance()
		case tokEOF:
			return p.errorf(p.tok.line, "missing '}': the block opened on line %d is not closed", open)
		case tokSemi:
			if err := p.advance(); err != nil {
				return err
			}
		default:
			if err := p.statement(sc); err != nil {
				return err
			}
		}
	}
}

// statement parses one statement of a graph's body: a subgraph, a default list (graph, node, edge), or a statement
// that starts with an id.
func (p *parser) statement(sc *scope) error {
	t := p.tok
	switch {
	case t.kind == tokLBrace:
		return p.subgraph(sc, "", t.line)
	case p.keyword("subgraph"):
		return p.namedSubgraph(sc, t)
	case p.keyword("graph"), p.keyword("node"), p.keyword("edge"):
		return p.defaults(sc, t)
	case p.keyword("digraph") || p.keyword("strict"):
		return p.errorf(t.line, "a graph cannot hold another graph: a pipeline file holds one digraph")
	case t.kind != tokWord && t.kind != tokString:
		return p.errorf(t.line, "unexpected %s: expected a node, an edge, an attribute or a subgraph", t.describe())
	}
	return p.idStatement(sc, t)
}

// namedSubgraph parses "subgraph [NAME] { … }", the keyword being t.
func (p *parser) namedSubgraph(sc *scope, t token) error {
	if err := p.advance(); err != nil {
		return err
	}
	name := ""
	if p.tok.kind == tokWord || p.tok.kind == tokString {
		name = p.tok.text
		if err := p.advance(); err != nil {
			return err
		}
	}
	if p.tok.kind != tokLBrace {
		return p.errorf(p.tok.line, "expected '{' after \"subgraph\", found %s", p.tok.describe())
	}
	return p.subgraph(sc, name, t.line)
}

// defaults parses "graph [ … ]", "node [ … ]" or "edge [ … ]", the keyword being t.
func (p *parser) defaults(sc *scope, t token) error {
	kw := strings.ToLower(t.text)
	if err := p.advance(); err != nil {
		return err
	}
	if p.tok.kind != tokLBracket {
		return p.errorf(p.tok.line, "expected '[' after %q, found %s", kw, p.tok.describe())
	}
	attrs, err := p.attrLists()
	if err != nil {
		return err
	}
	switch kw {
	case "graph":
		return p.setGraphAttrs(sc, attrs)
	case "node":
		sc.nodeDefaults = merged(sc.nodeDefaults, attrs)
	default:
		sc.edgeDefaults = merged(sc.edgeDefaults, attrs)
	}
	return nil
}

// idStatement parses a statement that starts with the id t: a graph attribute (k = v), an edge chain, or a node.
func (p *parser) idStatement(sc *scope, t token) error {
	if err := p.advance(); err != nil {
		return err
	}
	switch p.tok.kind {
	case tokEquals:
		key, err := p.key(t)
		if err != nil {
			return err
		}
		if err := p.advance(); err != nil {
			return err
		}
		v, err := p.value(key)
		if err != nil {
			return err
		}
		return p.setGraphAttrs(sc, map[string]string{key: v})
	case tokArrow:
		return p.edges(sc, t)
	case tokUndirected:
		return p.errorf(p.tok.line, "undirected edge '--': pipelines are directed, use '->'")
	}
	id, err := p.nodeID(t)
	if err != nil {
		return err
	}
	var attrs map[string]string
	if p.tok.kind == tokLBracket {
		if attrs, err = p.attrLists(); err != nil {
			return err
		}
	}
	return p.declare(sc, id, t.line, attrs)
}

func (p *parser) subgraph(parent *scope, name string, line int) error {
	if parent.depth+1 > maxDOTDepth {
		return p.errorf(line, "subgraphs nested more than %d deep", maxDOTDepth)
	}
	open := p.tok.line
	if err := p.advance(); err != nil { // '{'
		return err
	}
	sub := &subgraph{name: name, attrs: map[string]string{}, line: line}
	p.g.subgraphs = append(p.g.subgraphs, sub)
	sc := &scope{
		parent:       parent,
		depth:        parent.depth + 1,
		nodeDefaults: parent.nodeDefaults, // copied on write by merged
		edgeDefaults: parent.edgeDefaults,
		sub:          sub,
		members:      map[string]bool{},
	}
	return p.block(sc, open)
}

// merged returns a new map: base overridden by over. Defaults maps are shared
// between a scope and its subgraphs until either changes them.
func merged(base, over map[string]string) map[string]string {
	m := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		m[k] = v
	}
	for k, v := range over {
		m[k] = v
	}
	return m
}

func (p *parser) setGraphAttrs(sc *scope, attrs map[string]string) error {
	if err := p.count(len(attrs)); err != nil {
		return err
	}
	dst := p.g.Attrs
	if sc.sub != nil {
		dst = sc.sub.attrs // a subgraph's label is its own, not the pipeline's
	}
	for k, v := range attrs {
		dst[k] = v
	}
	return nil
}

// edges reads "a -> b -> c [attrs]" given its first id; the current token is
// the first '->'.
func (p *parser) edges(sc *scope, first token) error {
	ends, err := p.edgeChain(first)
	if err != nil {
		return err
	}
	ids := make([]string, len(ends))
	for i, t := range ends {
		if ids[i], err = p.nodeID(t); err != nil {
			return err
		}
	}
	var attrs map[string]string
	if p.tok.kind == tokLBracket {
		if attrs, err = p.attrLists(); err != nil {
			return err
		}
	}
	for i, id := range ids {
		if err := p.mention(sc, id, ends[i].line); err != nil {
			return err
		}
	}
	for i := 1; i < len(ids); i++ {
		e := &Edge{from: ids[i-1], to: ids[i], attrs: merged(sc.edgeDefaults, attrs), line: ends[i-1].line}
		if err := p.count(1 + len(e.attrs)); err != nil {
			return err
		}
		p.g.Edges = append(p.g.Edges, e)
	}
	return nil
}

// edgeChain reads the ends of "a -> b -> c" given the first; the current token is the first '->'. An end must be a
// node.
func (p *parser) edgeChain(first token) ([]token, error) {
	ends := []token{first}
	for p.tok.kind == tokArrow || p.tok.kind == tokUndirected {
		if p.tok.kind == tokUndirected {
			return nil, p.errorf(p.tok.line, "undirected edge '--': pipelines are directed, use '->'")
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == tokLBrace || p.keyword("subgraph") {
			return nil, p.errorf(p.tok.line, "an edge must end at a node, not a subgraph: write one edge per node")
		}
		if p.tok.kind != tokWord && p.tok.kind != tokString {
			return nil, p.errorf(p.tok.line, "expected a node id after '->', found %s", p.tok.describe())
		}
		ends = append(ends, p.tok)
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	return ends, nil
}

// mention makes sure a node named by an edge exists: as in Graphviz, an edge
// declares its nodes, with the node defaults in force where it is written.
func (p *parser) mention(sc *scope, id string, line int) error {
	if _, ok := p.g.Nodes[id]; ok {
		p.member(sc, id)
		return nil
	}
	n := &Node{ID: id, Attrs: merged(sc.nodeDefaults, nil), line: line, implicit: true}
	if err := p.count(1 + len(n.Attrs)); err != nil {
		return err
	}
	p.g.Nodes[id] = n
	p.g.order = append(p.g.order, id)
	p.member(sc, id)
	return nil
}

// declare handles a node statement. A node's first declaration applies the
// node defaults in force there, even when an earlier edge already named the
// node: until declared, a node holds nothing but defaults, and the spec's
// defaults apply to "nodes within that subgraph", wherever the edges are.
func (p *parser) declare(sc *scope, id string, line int, attrs map[string]string) error {
	n, ok := p.g.Nodes[id]
	switch {
	case !ok:
		n = &Node{ID: id, Attrs: merged(sc.nodeDefaults, attrs), line: line}
		p.g.Nodes[id] = n
		p.g.order = append(p.g.order, id)
	case n.implicit:
		n.implicit, n.line = false, line
		n.Attrs = merged(merged(n.Attrs, sc.nodeDefaults), attrs)
	default:
		n.Attrs = merged(n.Attrs, attrs)
	}
	p.member(sc, id)
	return p.count(1 + len(n.Attrs))
}

// member records id in the subgraph being read and in those around it.
func (p *parser) member(sc *scope, id string) {
	for ; sc != nil && sc.sub != nil; sc = sc.parent {
		if !sc.members[id] {
			sc.members[id] = true
			sc.sub.nodes = append(sc.sub.nodes, id)
		}
	}
}

// attrLists reads one or more "[k=v, …]" lists; the current token is '['.
func (p *parser) attrLists() (map[string]string, error) {
	attrs := map[string]string{}
	for p.tok.kind == tokLBracket {
		open := p.tok.line
		if err := p.advance(); err != nil {
			return nil, err
		}
		for p.tok.kind != tokRBracket {
			switch p.tok.kind {
			case tokComma, tokSemi:
				if err := p.advance(); err != nil {
					return nil, err
				}
				continue
			case tokEOF:
				return nil, p.errorf(p.tok.line, "missing ']': the attribute list opened on line %d is not closed", open)
			case tokWord, tokString:
			default:
				return nil, p.errorf(p.tok.line, "expected an attribute (key=value), found %s", p.tok.describe())
			}
			kt := p.tok
			key, err := p.key(kt)
			if err != nil {
				return nil, err
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.tok.kind != tokEquals {
				return nil, p.errorf(kt.line, "attribute %q needs a value: write %s=value", key, key)
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
			v, err := p.value(key)
			if err != nil {
				return nil, err
			}
			attrs[key] = v
			if err := p.count(1); err != nil {
				return nil, err
			}
		}
		if err := p.advance(); err != nil { // ']'
			return nil, err
		}
	}
	return attrs, nil
}

// value reads an attribute's value: a quoted string or a bare word (number,
// boolean, duration, identifier with dots, dashes or colons).
func (p *parser) value(key string) (string, error) {
	if p.tok.kind != tokWord && p.tok.kind != tokString {
		return "", p.errorf(p.tok.line, "missing value for %q (found %s)", key, p.tok.describe())
	}
	v := p.tok.text
	return v, p.advance()
}

func (p *parser) key(t token) (string, error) {
	if !isKey(t.text) {
		return "", p.errorf(t.line, "%q is not an attribute name (letters, digits and '_', in parts joined by '.')", t.text)
	}
	return t.text, nil
}

func (p *parser) nodeID(t token) (string, error) {
	switch {
	case isKeyword(t.text):
		return "", p.errorf(t.line, "%q is a DOT keyword and cannot name a node", t.text)
	case !isIdent(t.text):
		return "", p.errorf(t.line, "node id %q is not an identifier ([A-Za-z_][A-Za-z0-9_]*): give the node a plain id and put the text in its label", t.text)
	}
	return t.text, nil
}

func isIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// isIdent matches the spec's Identifier: [A-Za-z_][A-Za-z0-9_]*.
func isIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) {
			return false
		}
	}
	return true
}

// isKey matches the spec's Key: an Identifier or Identifiers joined by dots.
func isKey(s string) bool {
	for _, part := range strings.Split(s, ".") {
		if !isIdent(part) {
			return false
		}
	}
	return true
}
