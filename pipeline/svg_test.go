package pipeline

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// svgDoc is what a test reads back from a drawing, through a real XML parser
// so that a drawing a browser would reject fails here too.
type svgDoc struct {
	root   map[string]string              // the <svg> element's attributes
	nodes  map[string][]map[string]string // data-node → attributes of each group drawn for it
	titles map[string]string              // data-node → its <title>
	texts  map[string]string              // data-node → its label text
	edges  []map[string]string            // attributes of each edge group
	labels []string                       // edge label texts, in order
	about  []string                       // edge titles, in order
}

func parseSVG(t *testing.T, s string) svgDoc {
	t.Helper()
	if !strings.HasPrefix(s, "<svg") {
		t.Fatalf("does not start with <svg: %.40q", s)
	}
	doc := svgDoc{nodes: map[string][]map[string]string{}, titles: map[string]string{}, texts: map[string]string{}}
	dec := xml.NewDecoder(strings.NewReader(s))
	var stack []string // element names
	var owner []string // the node or "edge" each open element belongs to
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, s)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			attrs := map[string]string{}
			for _, a := range tok.Attr {
				attrs[a.Name.Local] = a.Value
			}
			who := ""
			if len(owner) > 0 {
				who = owner[len(owner)-1]
			}
			switch {
			case len(stack) == 0:
				if tok.Name.Local != "svg" || tok.Name.Space != "http://www.w3.org/2000/svg" {
					t.Fatalf("root is %v, not an SVG element", tok.Name)
				}
				doc.root = attrs
			case tok.Name.Local == "g" && attrs["data-node"] != "":
				who = "node:" + attrs["data-node"]
				doc.nodes[attrs["data-node"]] = append(doc.nodes[attrs["data-node"]], attrs)
			case tok.Name.Local == "g" && strings.HasPrefix(attrs["class"], "edge"):
				who = "edge"
				doc.edges = append(doc.edges, attrs)
			}
			stack = append(stack, tok.Name.Local)
			owner = append(owner, who)
		case xml.EndElement:
			stack, owner = stack[:len(stack)-1], owner[:len(owner)-1]
		case xml.CharData:
			if len(stack) == 0 {
				continue
			}
			el, who := stack[len(stack)-1], owner[len(owner)-1]
			switch {
			case strings.HasPrefix(who, "node:") && el == "title":
				doc.titles[strings.TrimPrefix(who, "node:")] += string(tok)
			case strings.HasPrefix(who, "node:") && el == "text":
				doc.texts[strings.TrimPrefix(who, "node:")] += string(tok)
			case who == "edge" && el == "text":
				doc.labels = append(doc.labels, string(tok))
			case who == "edge" && el == "title":
				doc.about = append(doc.about, string(tok))
			}
		}
	}
	return doc
}

// checkSafe fails if a drawing holds anything a strict Content-Security-Policy
// would block or that would reach outside the document.
func checkSafe(t *testing.T, s string) {
	t.Helper()
	for _, bad := range []string{"<script", "<style", "style=", "foreignObject", "href", "url(", "@import", "<image", " id="} {
		if strings.Contains(s, bad) {
			t.Errorf("drawing contains %q", bad)
		}
	}
	if m := eventAttr.FindString(s); m != "" {
		t.Errorf("drawing has an event handler: %q", m)
	}
}

var eventAttr = regexp.MustCompile(`\son[a-z]+=`)

func TestSVGFixtures(t *testing.T) {
	for _, path := range dotFixtures(t) {
		name := filepath.ToSlash(strings.TrimPrefix(path, filepath.Join("testdata", "dot")+string(filepath.Separator)))
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			g, err := ParseDOT(name, string(src))
			if err != nil {
				t.Skipf("not a graph: %v", err) // the syntax-error fixtures
			}
			ids := g.ids()
			states := map[string]NodeState{}
			for i, id := range ids {
				switch {
				case i == len(ids)/2:
					states[id] = NodeCurrent
				case i < len(ids)/2:
					states[id] = NodeDone
				}
			}
			out := SVG(g, states)
			checkSafe(t, out)
			doc := parseSVG(t, out)
			if doc.root["role"] != "img" || doc.root["aria-label"] == "" {
				t.Errorf("root role=%q aria-label=%q", doc.root["role"], doc.root["aria-label"])
			}
			if len(doc.nodes) != len(ids) {
				t.Errorf("%d nodes drawn, graph has %d", len(doc.nodes), len(ids))
			}
			for _, id := range ids {
				if n := len(doc.nodes[id]); n != 1 {
					t.Errorf("node %s drawn %d times", id, n)
				}
				title := doc.titles[id]
				if !strings.Contains(title, id) || !strings.Contains(title, paintOf(states[id]).words) {
					t.Errorf("node %s: title %q lacks its id or state", id, title)
				}
				if l := oneLine(g.Nodes[id].label()); !strings.Contains(title, l) {
					t.Errorf("node %s: title %q lacks its label %q", id, title, l)
				}
			}
			if len(doc.edges) != len(g.Edges) {
				t.Errorf("%d edges drawn, graph has %d", len(doc.edges), len(g.Edges))
			}
			current := ids[len(ids)/2]
			if c := doc.nodes[current][0]["class"]; c != "current" {
				t.Errorf("current node %s has class %q", current, c)
			}
			if n := strings.Count(out, `class="current"`); n != 1 {
				t.Errorf(`class="current" appears %d times, want 1`, n)
			}
		})
	}
}

func TestSVGStates(t *testing.T) {
	g := parseFixture(t, "spec-examples/human_gate_review.dot")
	out := SVG(g, map[string]NodeState{"start": NodeDone, "review_gate": NodeWaiting, "fixes": NodeFailed, "ship_it": "bogus"})
	doc := parseSVG(t, out)
	for id, class := range map[string]string{"start": "done", "review_gate": "waiting", "fixes": "failed", "ship_it": "pending", "exit": "pending"} {
		if got := doc.nodes[id][0]["class"]; got != class {
			t.Errorf("%s: class %q, want %q", id, got, class)
		}
	}
	if strings.Contains(out, "current") {
		t.Error("no node is current, yet the drawing says current")
	}
	if al := doc.root["aria-label"]; !strings.Contains(al, "Review Changes (waiting for a human)") {
		t.Errorf("aria-label %q does not say who is waiting", al)
	}
	// The current node stands out from every other state.
	cur := SVG(g, map[string]NodeState{"review_gate": NodeCurrent})
	p := paintOf(NodeCurrent)
	want := fmt.Sprintf(`fill="%s" stroke="%s" stroke-width="%s"`, p.fill, p.stroke, p.width)
	if strings.Count(cur, want) != 1 {
		t.Errorf("the current node is not drawn with %s once", want)
	}
	for s, other := range svgPalette {
		if s != NodeCurrent && (other.fill == p.fill || other.width == p.width) {
			t.Errorf("state %q shares the current node's fill or stroke width", s)
		}
	}
}

func TestSVGEdgeLabels(t *testing.T) {
	g := parseFixture(t, "spec-examples/human_gate_review.dot")
	doc := parseSVG(t, SVG(g, nil))
	for _, want := range []string{"[A] Approve", "[F] Fix"} {
		if !containsString(doc.labels, want) {
			t.Errorf("edge labels %q lack %q", doc.labels, want)
		}
	}
	// An edge with only a condition is labelled with it.
	g = parseFixture(t, "attractorbench-tier3/conditional.dot")
	doc = parseSVG(t, SVG(g, nil))
	if !containsString(doc.labels, "outcome=success") || !containsString(doc.labels, "outcome=fail") {
		t.Errorf("edge labels %q lack the conditions", doc.labels)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestSVGEscapes(t *testing.T) {
	nasty := `<script>alert(1)</script> & "x"`
	src := fmt.Sprintf(`digraph G {
		label=%q
		start [shape=Mdiamond]
		a [label=%q]
		exit [shape=Msquare]
		start -> a [label=%q]
		a -> exit [condition="outcome=success && context.k!=v"]
	}`, nasty, nasty, nasty)
	g, err := ParseDOT("nasty.dot", src)
	if err != nil {
		t.Fatal(err)
	}
	// A hand-built node may have an id no DOT file could, and control characters XML cannot carry.
	g.Nodes[`q"<&>`] = &Node{ID: `q"<&>`, Attrs: map[string]string{"label": "bell\x07 nul\x00 ok"}}
	out := SVG(g, map[string]NodeState{"a": NodeCurrent, `q"<&>`: NodeDone})
	checkSafe(t, out)
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#34;x&#34;", `data-node="q&#34;&lt;&amp;&gt;"`} {
		if !strings.Contains(out, want) {
			t.Errorf("drawing lacks %s", want)
		}
	}
	doc := parseSVG(t, out)
	if got := doc.titles["a"]; !strings.Contains(got, nasty) {
		t.Errorf("title %q does not read back as the label", got)
	}
	if want := "start → a: " + nasty; !containsString(doc.about, want) {
		t.Errorf("edge titles %q lack %q", doc.about, want)
	}
	if want := truncateRunes(nasty, svgEdgeRunes); !containsString(doc.labels, want) {
		t.Errorf("edge labels %q lack %q", doc.labels, want)
	}
	if !strings.Contains(doc.root["aria-label"], nasty) {
		t.Errorf("aria-label %q does not read back the graph label", doc.root["aria-label"])
	}
	if got := doc.texts[`q"<&>`]; got != "bell\uFFFD nul\uFFFD ok" {
		t.Errorf("control characters came out as %q", got)
	}
}

func TestSVGTruncatesLabels(t *testing.T) {
	long := strings.Repeat("é", 60) + strings.Repeat("字", 60)
	g := &Graph{Nodes: map[string]*Node{}}
	for _, shape := range []string{"box", "Mdiamond", "Msquare", "hexagon", "diamond"} {
		g.Nodes[shape] = &Node{ID: shape, Attrs: map[string]string{"shape": shape, "label": long}}
		g.order = append(g.order, shape)
	}
	g.Edges = []*Edge{{from: "box", to: "diamond", attrs: map[string]string{"label": long}}}
	doc := parseSVG(t, SVG(g, nil))
	for _, id := range g.order {
		text := doc.texts[id]
		if !utf8.ValidString(text) || !strings.HasSuffix(text, "…") {
			t.Errorf("%s: label %q is not cut with an ellipsis", id, text)
		}
		if width := float64(utf8.RuneCountInString(text)) * svgNodeCharW; width > svgNodeW-8 {
			t.Errorf("%s: label %q is about %.0f wide, the box %.0f", id, text, width, svgNodeW)
		}
		if !strings.Contains(doc.titles[id], long) {
			t.Errorf("%s: the title does not keep the whole label", id)
		}
	}
	if l := doc.labels[0]; utf8.RuneCountInString(l) != svgEdgeRunes || !strings.HasSuffix(l, "…") {
		t.Errorf("edge label %q is not cut to %d runes", l, svgEdgeRunes)
	}
	if got := truncateRunes("short", 5); got != "short" {
		t.Errorf("truncateRunes cut %q", got)
	}
	// Line breaks (\n in DOT) fold into one line.
	if got := oneLine("Plan\nthe  work\t"); got != "Plan the work" {
		t.Errorf("oneLine = %q", got)
	}
}

// nodeY reads each node's layer position back from the layout.
func checkLayering(t *testing.T, g *Graph) *svgLayout {
	t.Helper()
	l := layoutGraph(g)
	if len(l.at) != len(g.Nodes) {
		t.Fatalf("%d nodes placed, graph has %d", len(l.at), len(g.Nodes))
	}
	for _, e := range l.edges {
		if !l.back[e] && l.at[e.to].y <= l.at[e.from].y {
			t.Errorf("forward edge %s -> %s does not point down", e.from, e.to)
		}
		if l.back[e] && e.from != e.to && l.at[e.to].y >= l.at[e.from].y {
			t.Errorf("back edge %s -> %s does not point up", e.from, e.to)
		}
	}
	seen := map[svgPoint]string{}
	for id, p := range l.at {
		if other, dup := seen[p]; dup {
			t.Errorf("%s and %s share a place", id, other)
		}
		seen[p] = id
	}
	return l
}

func TestSVGCycles(t *testing.T) {
	for _, tc := range []struct {
		name, src  string
		back, loop int
		top        string // a node expected in the first layer
	}{
		{"retry loop", `digraph { start [shape=Mdiamond] exit [shape=Msquare]
			start -> plan -> build -> test -> exit; test -> build [label="retry"]; test -> plan }`, 2, 0, "start"},
		{"self-loop", `digraph { start [shape=Mdiamond] start -> work -> work -> exit }`, 0, 1, "start"},
		{"all cycle, no start", `digraph { a -> b -> c -> a }`, 1, 0, "a"},
		{"unreachable", `digraph { start [shape=Mdiamond] start -> a; b -> c -> b; island }`, 1, 0, "island"},
		{"start with no shape", `digraph { x -> y; start -> x; y -> x }`, 1, 0, "start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ParseDOT(tc.name, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			l := checkLayering(t, g)
			if l.at[tc.top].y != 0 {
				t.Errorf("%s is not in the first layer", tc.top)
			}
			doc := parseSVG(t, SVG(g, nil))
			var back, loop int
			for _, e := range doc.edges {
				switch e["class"] {
				case "edge back":
					back++
				case "edge loop":
					loop++
				}
			}
			if back != tc.back || loop != tc.loop {
				t.Errorf("%d back edges and %d loops drawn, want %d and %d", back, loop, tc.back, tc.loop)
			}
			if len(doc.edges) != len(g.Edges) {
				t.Errorf("%d edges drawn, graph has %d", len(doc.edges), len(g.Edges))
			}
		})
	}
}

// An edge leaves its source and enters its target on their outlines, not on
// the boxes around them: a diamond's corner is not its box's.
func TestSVGEdgesMeetOutlines(t *testing.T) {
	g, err := ParseDOT("shapes.dot", `digraph { start [shape=Mdiamond] exit [shape=Msquare]
		gate [shape=hexagon] cond [shape=diamond] a b c d
		start -> gate -> cond -> a -> exit; gate -> b; gate -> c; gate -> d -> exit
		cond -> b -> exit; cond -> c -> cond; c -> gate; a -> start; cond -> cond; gate -> gate [label=x]
		b -> exit; c -> exit }`)
	if err != nil {
		t.Fatal(err)
	}
	l := layoutGraph(g)
	// on says whether p lies on one of the sides of the outline as drawn.
	on := func(id string, p svgPoint) bool {
		v := l.outline(id).vertices()
		for i := range v {
			a, b := v[i], v[(i+1)%len(v)]
			ab, ap := b.sub(a), p.sub(a)
			t := (ab.x*ap.x + ab.y*ap.y) / (ab.x*ab.x + ab.y*ab.y)
			if t < -1e-9 || t > 1+1e-9 {
				continue
			}
			if off := ap.sub(ab.scale(t)); math.Hypot(off.x, off.y) < 1e-6 {
				return true
			}
		}
		return false
	}
	for _, d := range l.drawEdges() {
		if !on(d.e.from, d.start) {
			t.Errorf("%s -> %s leaves %s at %v, off its outline", d.e.from, d.e.to, d.e.from, d.start)
		}
		if !on(d.e.to, d.arrow[0]) {
			t.Errorf("%s -> %s enters %s at %v, off its outline", d.e.from, d.e.to, d.e.to, d.arrow[0])
		}
	}
}

func TestSVGOddGraphs(t *testing.T) {
	for name, g := range map[string]*Graph{
		"nil":   nil,
		"empty": {},
		"edge to nowhere": {Nodes: map[string]*Node{"a": {ID: "a"}}, order: []string{"a", "a", "ghost"},
			Edges: []*Edge{{from: "a", to: "ghost"}, nil, {from: "ghost", to: "a"}}},
	} {
		t.Run(name, func(t *testing.T) {
			doc := parseSVG(t, SVG(g, nil))
			want := 0
			if g != nil {
				want = len(g.Nodes)
			}
			if len(doc.nodes) != want || len(doc.edges) != 0 {
				t.Errorf("%d nodes and %d edges drawn, want %d and 0", len(doc.nodes), len(doc.edges), want)
			}
		})
	}
}

func TestSVGDeterministic(t *testing.T) {
	src := bigDOT(60)
	states := map[string]NodeState{"s3_1": NodeCurrent, "s2_0": NodeFailed, "s1_2": NodeDone}
	var first string
	for i := range 5 {
		g, err := ParseDOT("big.dot", src) // fresh maps each time: their order must not matter
		if err != nil {
			t.Fatal(err)
		}
		out := SVG(g, states)
		if i == 0 {
			first = out
		} else if out != first {
			t.Fatal("two drawings of the same graph differ")
		}
	}
}

// bigDOT is a pipeline of about n nodes in layers four wide, each node fed by
// every node of the layer above, with a retry loop every fifth layer and a
// self-loop every seventh: the shape of a large real pipeline, and many more
// edges than nodes.
func bigDOT(n int) string {
	var b strings.Builder
	b.WriteString("digraph big {\n start [shape=Mdiamond]\n exit [shape=Msquare]\n")
	const width = 4
	layers := (n - 2) / width
	name := func(layer, i int) string { return fmt.Sprintf("s%d_%d", layer, i) }
	for k := range layers {
		for i := range width {
			shape := []string{"box", "diamond", "hexagon", "box"}[i]
			fmt.Fprintf(&b, " %s [shape=%s, label=\"Stage %d, part %d of the long pipeline\"]\n", name(k, i), shape, k, i)
			if k == 0 {
				fmt.Fprintf(&b, " start -> %s\n", name(k, i))
				continue
			}
			for j := range width {
				fmt.Fprintf(&b, " %s -> %s [label=\"go %d\"]\n", name(k-1, j), name(k, i), j)
			}
		}
		if k%5 == 4 {
			fmt.Fprintf(&b, " %s -> %s [label=\"retry\", condition=\"outcome=fail\"]\n", name(k, 0), name(k-3, 1))
		}
		if k%7 == 6 {
			fmt.Fprintf(&b, " %s -> %s [label=\"again\"]\n", name(k, 2), name(k, 2))
		}
	}
	for i := range width {
		fmt.Fprintf(&b, " %s -> exit\n", name(layers-1, i))
	}
	b.WriteString("}\n")
	return b.String()
}

func TestSVG200Nodes(t *testing.T) {
	g, err := ParseDOT("big.dot", bigDOT(200))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(g.Nodes); n < 195 || n > 202 {
		t.Fatalf("generated %d nodes, want about 200", n)
	}
	checkLayering(t, g)
	start := time.Now()
	out := SVG(g, map[string]NodeState{"s20_1": NodeCurrent})
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("drawing 200 nodes took %v", d)
	}
	doc := parseSVG(t, out)
	if len(doc.nodes) != len(g.Nodes) || len(doc.edges) != len(g.Edges) {
		t.Errorf("drew %d nodes and %d edges, graph has %d and %d", len(doc.nodes), len(doc.edges), len(g.Nodes), len(g.Edges))
	}
}

func BenchmarkSVG200Nodes(b *testing.B) {
	g, err := ParseDOT("big.dot", bigDOT(200))
	if err != nil {
		b.Fatal(err)
	}
	states := map[string]NodeState{"s20_1": NodeCurrent}
	b.ReportAllocs()
	for b.Loop() {
		SVG(g, states)
	}
}
