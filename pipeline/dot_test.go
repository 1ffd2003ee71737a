package pipeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func dotFixtures(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "dot", "*", "*.dot"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no DOT fixtures: %v", err)
	}
	return files
}

func parseFixture(t *testing.T, name string) *Graph {
	t.Helper()
	g, err := ParseDOT(name, readTestdata(t, filepath.Join("dot", name)))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// dump prints a graph one fact per line, attributes sorted, for table tests.
func dump(g *Graph) string {
	attrs := func(m map[string]string) string {
		var parts []string
		for _, k := range sortedKeys(m) {
			parts = append(parts, fmt.Sprintf("%s=%q", k, m[k]))
		}
		return strings.Join(parts, " ")
	}
	var b strings.Builder
	if len(g.Attrs) > 0 {
		fmt.Fprintf(&b, "graph %s\n", attrs(g.Attrs))
	}
	for _, id := range g.order {
		fmt.Fprintf(&b, "node %s %s\n", id, attrs(g.Nodes[id].Attrs))
	}
	for _, e := range g.Edges {
		fmt.Fprintf(&b, "edge %s->%s %s\n", e.from, e.to, attrs(e.attrs))
	}
	for _, s := range g.subgraphs {
		fmt.Fprintf(&b, "subgraph %s [%s] %s\n", s.name, strings.Join(s.nodes, " "), attrs(s.attrs))
	}
	return strings.ReplaceAll(b.String(), " \n", "\n")
}

func TestParseDOTFixtures(t *testing.T) {
	// What each invalid fixture is meant to show, by the error it must get.
	invalid := map[string]struct{ rule, msg string }{
		"attractorbench-tier3/missing_start.dot":   {"start_node", "no start node"},
		"attractorbench-tier3/orphan.dot":          {"reachability", "node orphan cannot be reached"},
		"orchestra/test-invalid.dot":               {"start_node", "no start node"},
		"orchestra/test-invalid-no-start-exit.dot": {"terminal_node", "no exit node"},
		"orchestra/test-multiple-graphs.dot":       {"syntax", "a second graph starts here"},
		"orchestra/test-undirected.dot":            {"syntax", "undirected graphs are not supported"},
	}
	seen := 0
	for _, path := range dotFixtures(t) {
		name := filepath.ToSlash(strings.TrimPrefix(path, filepath.Join("testdata", "dot")+string(filepath.Separator)))
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			g, err := ParseDOT(name, string(src))
			if err == nil {
				err = g.validate()
			}
			want, bad := invalid[name]
			if !bad {
				if err != nil {
					t.Fatalf("valid fixture rejected: %v", err)
				}
				if g.start() == nil || g.exit() == nil {
					t.Fatalf("start %v, exit %v", g.start(), g.exit())
				}
				return
			}
			seen++
			var de *dotError
			if !errors.As(err, &de) {
				t.Fatalf("got %v, want a *dotError", err)
			}
			var rules []string
			for _, e := range unjoin(err) {
				if errors.As(e, &de) {
					rules = append(rules, de.rule)
				}
			}
			if !slices.Contains(rules, want.rule) || !strings.Contains(err.Error(), want.msg) {
				t.Fatalf("error %q (rules %v), want rule %s and %q", err, rules, want.rule, want.msg)
			}
			if !strings.HasPrefix(err.Error(), "pipeline "+name) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
	if seen != len(invalid) {
		t.Errorf("checked %d invalid fixtures, want %d", seen, len(invalid))
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestParseDOTFixtureDetails(t *testing.T) {
	t.Run("multi-line attribute", func(t *testing.T) {
		g := parseFixture(t, "attractorbench-tier3/attributes.dot")
		step := g.Nodes["step"]
		if got := step.Attrs["prompt"]; got != "Multi-line\nattribute test" {
			t.Errorf("prompt = %q", got)
		}
		if attrInt(step.Attrs, "max_retries", -1) != 2 || step.line != 4 {
			t.Errorf("max_retries %d, line %d", attrInt(step.Attrs, "max_retries", -1), step.line)
		}
		if g.Attrs["label"] != "Attribute Test" || g.out("start")[0].weight() != 10 {
			t.Errorf("graph label %q, weight %d", g.Attrs["label"], g.out("start")[0].weight())
		}
	})
	t.Run("value types", func(t *testing.T) {
		g := parseFixture(t, "orchestra/test-all-value-types.dot")
		a := g.Nodes["a"]
		d, ok := a.attrDuration("timeout")
		if a.Attrs["prompt"] != "hello\nworld" || attrInt(a.Attrs, "max_retries", 0) != 3 || !attrBool(a.Attrs, "goal_gate") || !ok || d != 900*time.Second {
			t.Errorf("attrs %v", a.Attrs)
		}
		if maxRetries(g, g.Nodes["start"]) != 50 || maxRetries(g, a) != 3 {
			t.Errorf("max retries %d, %d", maxRetries(g, g.Nodes["start"]), maxRetries(g, a))
		}
		for _, e := range g.Edges {
			if e.weight() != 5 {
				t.Errorf("chained edge %s->%s weight %d", e.from, e.to, e.weight())
			}
		}
	})
	t.Run("quoted dotted key", func(t *testing.T) {
		g := parseFixture(t, "orchestra/test-interactive.dot")
		if got := g.Nodes["collaborate"].Attrs["agent.mode"]; got != "interactive" {
			t.Errorf("agent.mode = %q", got)
		}
	})
	t.Run("graph attributes", func(t *testing.T) {
		g := parseFixture(t, "orchestra/test-graph-attributes.dot")
		want := map[string]string{"goal": "build the widget", "label": "My Pipeline", "model_stylesheet": "node { model: gpt-4 }", "rankdir": "LR"}
		if fmt.Sprint(g.Attrs) != fmt.Sprint(want) || g.Name != "test_graph_attrs" {
			t.Errorf("name %q attrs %v", g.Name, g.Attrs)
		}
	})
	t.Run("subgraph defaults", func(t *testing.T) {
		g := parseFixture(t, "orchestra/test-subgraph.dot")
		if g.Nodes["plan"].Attrs["timeout"] != "900s" || g.Nodes["implement"].Attrs["timeout"] != "1800s" {
			t.Errorf("plan %v implement %v", g.Nodes["plan"].Attrs, g.Nodes["implement"].Attrs)
		}
		if _, ok := g.Nodes["start"].Attrs["timeout"]; ok {
			t.Error("subgraph default leaked to the top level")
		}
		if len(g.subgraphs) != 1 || g.subgraphs[0].name != "cluster_loop" || strings.Join(g.subgraphs[0].nodes, ",") != "plan,implement" {
			t.Errorf("subgraphs %+v", g.subgraphs)
		}
	})
	t.Run("stylesheet string", func(t *testing.T) {
		g := parseFixture(t, "spec-examples/stylesheet_pipeline.dot")
		if ss := g.Attrs["model_stylesheet"]; !strings.Contains(ss, "#critical_review { llm_model: gpt-5.2;") || strings.Count(ss, "\n") != 4 {
			t.Errorf("stylesheet %q", ss)
		}
	})
	t.Run("conformance", func(t *testing.T) {
		g := parseFixture(t, "mammoth/conformance_test.dot")
		if len(g.Nodes) != 19 || len(g.Edges) != 31 || g.start().ID != "Start" || g.exit().ID != "Exit" {
			t.Errorf("%d nodes, %d edges, start %v exit %v", len(g.Nodes), len(g.Edges), g.start(), g.exit())
		}
		if g.Attrs["default_max_retry"] != "0" || g.Nodes["GoalGate"].Attrs["retry_target"] != "GoalGateSetup" {
			t.Errorf("attrs %v / %v", g.Attrs, g.Nodes["GoalGate"].Attrs)
		}
	})
	t.Run("implicit nodes", func(t *testing.T) {
		g := parseFixture(t, "spec-examples/human_gate_review.dot")
		if n := g.Nodes["ship_it"]; n == nil || !n.implicit || n.line != 14 || n.Handler() != handlerCodergen {
			t.Errorf("ship_it = %+v", n)
		}
	})
}

func TestParseDOTGrammar(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{
			name: "anonymous digraph, semicolons, one line",
			src:  `digraph { a; b; a -> b; }`,
			want: "node a\nnode b\nedge a->b\n",
		},
		{
			name: "chained edges share attributes",
			src:  `digraph g { a -> b -> c [label="x", weight=2] }`,
			want: "node a\nnode b\nnode c\nedge a->b label=\"x\" weight=\"2\"\nedge b->c label=\"x\" weight=\"2\"\n",
		},
		{
			name: "no blanks around arrows",
			src:  "digraph g { a->b->c }",
			want: "node a\nnode b\nnode c\nedge a->b\nedge b->c\n",
		},
		{
			name: "defaults apply to later statements only",
			src: `digraph g {
				a
				node [shape=box, timeout=900s]
				edge [weight=3]
				b
				c [timeout="1h"]
				a -> b
				edge [weight=1]
				b -> c
			}`,
			want: "node a\nnode b shape=\"box\" timeout=\"900s\"\nnode c shape=\"box\" timeout=\"1h\"\n" +
				"edge a->b weight=\"3\"\nedge b->c weight=\"1\"\n",
		},
		{
			name: "subgraph defaults are scoped and nest",
			src: `digraph g {
				node [shape=box]
				subgraph cluster_a {
					label = "Loop A"
					node [thread_id="loop-a"]
					x
					subgraph inner { node [fidelity=full] y }
					z
				}
				w
			}`,
			want: "node x shape=\"box\" thread_id=\"loop-a\"\nnode y fidelity=\"full\" shape=\"box\" thread_id=\"loop-a\"\n" +
				"node z shape=\"box\" thread_id=\"loop-a\"\nnode w shape=\"box\"\n" +
				"subgraph cluster_a [x y z] label=\"Loop A\"\nsubgraph inner [y]\n",
		},
		{
			name: "anonymous subgraph and subgraph graph block",
			src:  `digraph g { { node [color=red] a } subgraph { graph [label=S] b } c }`,
			want: "node a color=\"red\"\nnode b\nnode c\nsubgraph  [a]\nsubgraph  [b] label=\"S\"\n",
		},
		{
			name: "edge before declaration: the declaration's defaults apply",
			src:  `digraph g { a -> b  subgraph s { node [timeout=5m] b [label=B] } }`,
			want: "node a\nnode b label=\"B\" timeout=\"5m\"\nedge a->b\nsubgraph s [b]\n",
		},
		{
			name: "redeclaring a node merges attributes",
			src:  `digraph g { node [shape=box] a [label=A, prompt=p] node [shape=hexagon] a [prompt=q] }`,
			want: "node a label=\"A\" prompt=\"q\" shape=\"box\"\n",
		},
		{
			name: "comments of all kinds",
			src: `// line
# preprocessor line
digraph g { /* block
  spanning lines */ a [label="// not a comment", prompt="/* nor this */ # nor this"] // trailing
  # another
}`,
			want: "node a label=\"// not a comment\" prompt=\"/* nor this */ # nor this\"\n",
		},
		{
			name: "escapes and multi-line strings",
			src:  "digraph g { a [label=\"say \\\"hi\\\"\\\\ \\n\\l\\r\\t \\N x\", prompt=\"one\ntwo\\\nthree\"] }",
			want: "node a label=\"say \\\"hi\\\"\\\\ \\n\\n\\n\\t \\\\N x\" prompt=\"one\\ntwothree\"\n",
		},
		{
			name: "unquoted values of every type",
			src:  `digraph g { a [max_retries=3, ratio=-0.5, ok=true, t=250ms, human.default_choice=approve, model=gpt-4o, fidelity=summary:high, n=-1] }`,
			want: "node a fidelity=\"summary:high\" human.default_choice=\"approve\" max_retries=\"3\" model=\"gpt-4o\" n=\"-1\" ok=\"true\" ratio=\"-0.5\" t=\"250ms\"\n",
		},
		{
			name: "attribute separators optional, several lists",
			src:  `digraph g { a [x=1 y=2; z=3,] [w=4] }`,
			want: "node a w=\"4\" x=\"1\" y=\"2\" z=\"3\"\n",
		},
		{
			name: "graph attributes three ways",
			src:  `digraph "My Pipe" { graph [goal="g1"] rankdir=LR; "label" = "L"; graph [goal=g2] }`,
			want: "graph goal=\"g2\" label=\"L\" rankdir=\"LR\"\n",
		},
		{
			name: "keywords are case-insensitive, quoted ids allowed",
			src:  `DiGraph g { NODE [shape=box] "a" -> "b" Edge [weight=1] }`,
			want: "node a shape=\"box\"\nnode b shape=\"box\"\nedge a->b\n",
		},
		{
			name: "CRLF and BOM",
			src:  "\ufeffdigraph g {\r\n a [label=\"x\r\ny\"]\r\n}\r\n",
			want: "node a label=\"x\\ny\"\n",
		},
		{
			name: "empty graph and empty attribute list",
			src:  `digraph g { a [] }`,
			want: "node a\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := ParseDOT("t.dot", tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := dump(g); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestParseDOTLines(t *testing.T) {
	src := "digraph g {\n  a [label=\"one\ntwo\"]\n  /* x\n y */ b\n  a -> b\n  b ->\n   c\n}\n"
	g, err := ParseDOT("t.dot", src)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(g.Nodes["a"].line, g.Nodes["b"].line, g.Nodes["c"].line, g.Edges[0].line, g.Edges[1].line)
	if got != "2 5 8 6 7" {
		t.Errorf("lines a b c, edges = %s, want 2 5 8 6 7", got)
	}
}

func TestParseDOTErrors(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		want      string
	}{
		{"empty", "  // nothing\n", 2, "no digraph found"},
		{"undirected graph", "graph g { a -- b }", 1, "undirected graphs are not supported"},
		{"undirected edge", "digraph g {\n a -- b\n}", 2, "undirected edge '--'"},
		{"undirected hop in chain", "digraph g { a -> b -- c }", 1, "undirected edge '--'"},
		{"strict", "strict digraph g { a }", 1, "strict graphs are not supported"},
		{"second graph", "digraph a { x }\n\ndigraph b { y }", 3, "a second graph starts here"},
		{"nested digraph", "digraph a {\n digraph b { } }", 2, "cannot hold another graph"},
		{"trailing junk", "digraph a { x } y", 1, "unexpected \"y\" after the digraph's closing '}'"},
		{"missing brace", "digraph a {\n x -> y\n", 3, "the block opened on line 1 is not closed"},
		{"missing digraph brace", "digraph a x", 1, "expected '{' to open the digraph"},
		{"not digraph", "flowchart { }", 1, "expected \"digraph\""},
		{"unterminated string", "digraph a {\n x [label=\"abc\n]\n}", 2, "unterminated string"},
		{"unterminated comment", "digraph a {\n /* x\n}", 2, "unterminated /* comment"},
		{"HTML label", "digraph a { x [label=<b>bold</b>] }", 1, "HTML-like <...> values are not supported"},
		{"numeric node id", "digraph a {\n 1 -> 2 }", 2, "node id \"1\" is not an identifier"},
		{"node id with port", "digraph a { x:n -> y }", 1, "node id \"x:n\" is not an identifier"},
		{"quoted id with spaces", "digraph a { \"my node\" }", 1, "node id \"my node\" is not an identifier"},
		{"keyword as node", "digraph a { x -> node }", 1, "\"node\" is a DOT keyword"},
		{"quoted keyword as node", "digraph a { \"Edge\" }", 1, "\"Edge\" is a DOT keyword"},
		{"edge to subgraph", "digraph a { x -> { y z } }", 1, "an edge must end at a node"},
		{"edge without target", "digraph a { x -> ; }", 1, "expected a node id after '->'"},
		{"attribute without value", "digraph a { x [shape] }", 1, "attribute \"shape\" needs a value"},
		{"attribute with empty value", "digraph a { x [shape=] }", 1, "missing value for \"shape\""},
		{"bad attribute name", "digraph a { x [\"a b\"=c] }", 1, "\"a b\" is not an attribute name"},
		{"unclosed attribute list", "digraph a {\n x [shape=box\n", 3, "the attribute list opened on line 2 is not closed"},
		{"unquoted value with a slash", "digraph a { x [cmd=go/test] }", 1, "unexpected character '/'"},
		{"non-ASCII outside strings", "digraph a { café }", 1, "unexpected character 'é'"},
		{"node keyword without list", "digraph a { node shape=box }", 1, "expected '[' after \"node\""},
		{"stray bracket", "digraph a { ] }", 1, "unexpected ']'"},
		{"stray hash mid-line", "digraph a { x # y\n}", 1, "unexpected character '#'"},
		{"too deep", "digraph a {" + strings.Repeat("{", maxDOTDepth+1), 1, "nested more than 32 deep"},
		{"too big", "digraph a {" + strings.Repeat(" ", maxDOTSize) + "}", 0, "larger than 1 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := ParseDOT("x.dot", tt.src)
			var de *dotError
			if !errors.As(err, &de) {
				t.Fatalf("got %v, %v; want a *dotError", g, err)
			}
			if de.line != tt.line || de.rule != "syntax" || !strings.Contains(de.msg, tt.want) {
				t.Errorf("got line %d rule %s %q; want line %d %q", de.line, de.rule, de.msg, tt.line, tt.want)
			}
			prefix := "pipeline x.dot"
			if tt.line > 0 {
				prefix = fmt.Sprintf("pipeline x.dot:%d: ", tt.line)
			}
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
		})
	}
}

func TestParseDOTElementLimit(t *testing.T) {
	// Small source, large graph: each edge copies every edge default.
	var b strings.Builder
	b.WriteString("digraph g { edge [")
	for i := range 200 {
		fmt.Fprintf(&b, "a%d=1,", i)
	}
	b.WriteString("]\n")
	for range 1000 {
		b.WriteString("a->a\n")
	}
	b.WriteString("}")
	_, err := ParseDOT("big.dot", b.String())
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("got %v, want a too-large error", err)
	}
}

func TestDOTErrorFormat(t *testing.T) {
	for _, tt := range []struct {
		e    dotError
		want string
	}{
		{dotError{file: "x.dot", line: 12, msg: "m"}, "pipeline x.dot:12: m"},
		{dotError{file: "x.dot", msg: "m"}, "pipeline x.dot: m"},
		{dotError{line: 3, msg: "m"}, "pipeline: line 3: m"},
		{dotError{msg: "m"}, "pipeline: m"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// formatDOT writes a parsed graph back as DOT, every attribute explicit, so
// that a fuzzer can check parse → format → parse gives the same graph.
func formatDOT(g *Graph) string {
	quote := func(s string) string {
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
		return `"` + r.Replace(s) + `"`
	}
	list := func(m map[string]string) string {
		var parts []string
		for _, k := range sortedKeys(m) {
			parts = append(parts, k+"="+quote(m[k]))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	var b strings.Builder
	b.WriteString("digraph " + quote(g.Name) + " {\n")
	b.WriteString("graph " + list(g.Attrs) + "\n")
	for _, id := range g.order {
		b.WriteString(id + " " + list(g.Nodes[id].Attrs) + "\n")
	}
	for _, e := range g.Edges {
		b.WriteString(e.from + " -> " + e.to + " " + list(e.attrs) + "\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func dotSeeds(f *testing.F) {
	for _, path := range dotFixtures(f) {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(src))
	}
	for _, s := range []string{
		`digraph { a -> b -> c [label="[A] x", condition="outcome=success && context.k!=v"] }`,
		"digraph g { subgraph s { node [x=1] { a } } }",
		"digraph g { a [label=\"x\\\ny\\l\"] # c\n}",
		"digraph g {" + strings.Repeat("{", 40),
		"digraph g { a [b=<c>] }",
	} {
		f.Add(s)
	}
}

func FuzzParseDOT(f *testing.F) {
	dotSeeds(f)
	f.Fuzz(func(t *testing.T, src string) {
		start := time.Now()
		g, err := ParseDOT("fuzz.dot", src)
		if err != nil {
			var de *dotError
			if !errors.As(err, &de) || de.rule != "syntax" {
				t.Fatalf("error %v is not a syntax *dotError", err)
			}
			return
		}
		// Exercise everything an engine calls on a parsed graph.
		_ = g.validate()
		g.lint()
		for i, id := range g.order {
			if i == 20 {
				break
			}
			n := g.Nodes[id]
			_ = n.Handler() + n.label() + shapeOf(n) + g.prompt(n)
			Choices(g, id)
			if _, err := selectEdge(g, id, Outcome{Status: StatusSuccess, preferredLabel: "x"}, nil); err != nil {
				var de *dotError
				if !errors.As(err, &de) {
					t.Fatalf("selectEdge error %v is not a *dotError", err)
				}
			}
		}
		// Node ids and keys the parser accepted print and parse back the same.
		again, err := ParseDOT("again.dot", formatDOT(g))
		if err != nil {
			t.Fatalf("re-parsing the formatted graph: %v\n%s", err, formatDOT(g))
		}
		if a, b := dump(g), dump(again); stripSubgraphs(a) != b {
			t.Fatalf("round trip changed the graph:\n%s\nthen:\n%s", a, b)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("took %v", d)
		}
	})
}

func stripSubgraphs(dump string) string {
	var keep []string
	for _, l := range strings.SplitAfter(dump, "\n") {
		if !strings.HasPrefix(l, "subgraph ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}
