package pipeline

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// NodeState is what the drawing shows of one node: "" (not reached), "done", "current", "failed", "waiting" (a human
// is asked).
type NodeState string

// The states SVG knows; any other value is drawn as not reached.
const (
	NodeNotReached NodeState = ""
	NodeDone       NodeState = "done"
	NodeCurrent    NodeState = "current"
	NodeFailed     NodeState = "failed"
	NodeWaiting    NodeState = "waiting"
)

// The drawing's fixed geometry, in SVG user units (pixels at scale 1). Every
// node gets the same box so that the layout is a grid a reader can follow and
// the output depends on nothing but the graph.
const (
	svgNodeW    = 168.0
	svgNodeH    = 44.0
	svgColGap   = 32.0 // between boxes in a layer
	svgRowGap   = 64.0 // between layers: room for an edge label
	svgMargin   = 16.0
	svgArrowLen = 9.0
	svgArrowW   = 4.5 // half the arrowhead's base

	// Text widths are estimated, not measured: the server has no fonts. The
	// estimates are generous so that truncated labels fit their boxes.
	svgNodeFont  = 12
	svgNodeCharW = 7.0
	svgEdgeFont  = 11
	svgEdgeCharW = 6.4
	svgEdgeRunes = 28 // an edge label longer than this is cut
)

// svgPaint is how one state looks. Colours are presentation attributes, never
// a style attribute or element, so the drawing survives a Content-Security-Policy
// without 'unsafe-inline' for styles.
type svgPaint struct {
	class  string // the node group's class, for the page's own CSS and tests
	words  string // the state as a screen reader says it
	fill   string
	stroke string
	width  string // stroke width
}

var svgPalette = map[NodeState]svgPaint{
	NodeNotReached: {"pending", "not reached", "#f6f8fa", "#8c959f", "1.5"},
	NodeDone:       {"done", "done", "#dafbe1", "#1a7f37", "1.5"},
	NodeCurrent:    {"current", "current", "#ddf4ff", "#0969da", "3.5"},
	NodeFailed:     {"failed", "failed", "#ffebe9", "#cf222e", "1.5"},
	NodeWaiting:    {"waiting", "waiting for a human", "#fff8c5", "#9a6700", "1.5"},
}

const (
	svgTextColour = "#1f2328"
	svgEdgeColour = "#57606a"
	svgHalo       = "#ffffff" // behind edge labels, so lines do not run through them
)

func paintOf(s NodeState) svgPaint {
	if p, ok := svgPalette[s]; ok {
		return p
	}
	return svgPalette[NodeNotReached]
}

// SVG draws g as an SVG document (a string starting with "<svg"), nodes in layers from the start node down, edges as
// lines with arrowheads and their labels, each node's shape after its DOT shape (Mdiamond/Msquare start/exit, hexagon
// gate, diamond conditional, box otherwise), coloured by states[nodeID]. The current node is highlighted (thicker
// stroke + distinct fill) and carries class="current".
//
// The shape is read through the node's handler, so a node drawn is what the engine runs: a type attribute, or a box
// named start or exit, is drawn as what it runs as. Each node is a <g> whose class is its state (pending, done,
// current, failed, waiting) and whose data-node is its id; each edge is a <g class="edge"> ("edge back" for one that
// closes a cycle, "edge loop" for one that returns to its own node), labelled with its label, else its condition,
// since that is what tells branches apart. Edges naming a node the graph does not have are not drawn.
//
// The output holds no scripts, styles, fonts, ids or references, so a page under a strict Content-Security-Policy
// can serve it or inline it more than once; and the same graph and states give the same bytes.
func SVG(g *Graph, states map[string]NodeState) string {
	if g == nil {
		g = &Graph{}
	}
	l := layoutGraph(g)
	drawn := l.drawEdges()
	box := l.bounds(drawn)

	summary := svgEscape(graphSummary(g, l.ids, states))
	var b strings.Builder
	b.Grow(400 * (1 + len(l.ids) + len(drawn))) // about what a node or an edge takes: one allocation, not twenty
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="%s %s %s %s" role="img" aria-label="%s" font-family="sans-serif" font-size="%d">`,
		num(box.w()), num(box.h()), num(box.minX), num(box.minY), num(box.w()), num(box.h()),
		summary, svgNodeFont)
	fmt.Fprintf(&b, "\n<title>%s</title>\n", summary)
	for _, d := range drawn {
		d.write(&b)
	}
	for _, id := range l.ids {
		writeNode(&b, g.Nodes[id], l.at[id], states[id])
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// graphSummary is the whole drawing in words, for the root's aria-label:
// screen readers announce it instead of reading every node.
func graphSummary(g *Graph, ids []string, states map[string]NodeState) string {
	name := strings.TrimSpace(g.Name)
	if l := strings.TrimSpace(g.Attrs["label"]); l != "" {
		name = l
	}
	s := "Pipeline"
	if name != "" {
		s += " " + oneLine(name)
	}
	s += fmt.Sprintf(", %d steps", len(ids))
	var at []string
	for _, id := range ids {
		if st := states[id]; st == NodeCurrent || st == NodeWaiting {
			at = append(at, oneLine(g.Nodes[id].label())+" ("+paintOf(st).words+")")
		}
	}
	if len(at) > 0 {
		s += "; at " + strings.Join(at, ", ")
	}
	return s
}

// svgLayout is where everything goes: each node's layer (its longest path
// from a start, cycles broken by ignoring their back edges) and the top-left
// corner of its box.
type svgLayout struct {
	g     *Graph
	ids   []string           // declaration order
	edges []*Edge            // the drawable ones (both ends are nodes), declaration order
	out   map[string][]*Edge // drawable edges by source, declaration order
	back  map[*Edge]bool     // closes a cycle (self-loops included): not used for layering
	layer map[string]int
	at    map[string]svgPoint
}

func layoutGraph(g *Graph) *svgLayout {
	l := &svgLayout{
		g:     g,
		ids:   g.ids(),
		out:   make(map[string][]*Edge),
		back:  make(map[*Edge]bool),
		layer: make(map[string]int),
		at:    make(map[string]svgPoint),
	}
	for _, e := range g.Edges {
		if e != nil && g.Nodes[e.from] != nil && g.Nodes[e.to] != nil {
			l.edges = append(l.edges, e)
			l.out[e.from] = append(l.out[e.from], e)
		}
	}
	order := l.breakCycles()
	l.assignLayers(order)
	l.place()
	return l
}

// roots are where layering starts: the start nodes, else the nodes nothing
// leads to. A graph that is all cycle has neither; breakCycles then starts at
// the first node declared.
func (l *svgLayout) roots() []string {
	var starts, sources []string
	led := make(map[string]bool)
	for _, e := range l.edges {
		if e.from != e.to {
			led[e.to] = true
		}
	}
	for _, id := range l.ids {
		if l.g.Nodes[id].Handler() == handlerStart {
			starts = append(starts, id)
		}
		if !led[id] {
			sources = append(sources, id)
		}
	}
	if len(starts) > 0 {
		return starts
	}
	return sources
}

// breakCycles walks the graph depth first from the roots, then from any node
// not yet seen (unreachable ones still get a place), marking each edge into a
// node still on the walk's stack as a back edge. It returns the nodes in
// reverse postorder, a topological order of the graph without its back edges.
func (l *svgLayout) breakCycles() []string {
	const (
		unseen = iota
		onStack
		finished
	)
	mark := make(map[string]int, len(l.ids))
	post := make([]string, 0, len(l.ids))
	var visit func(id string)
	visit = func(id string) {
		mark[id] = onStack
		for _, e := range l.out[id] {
			switch mark[e.to] {
			case onStack:
				l.back[e] = true
			case unseen:
				visit(e.to)
			}
		}
		mark[id] = finished
		post = append(post, id)
	}
	for _, id := range append(l.roots(), l.ids...) {
		if mark[id] == unseen {
			visit(id)
		}
	}
	slices.Reverse(post)
	return post
}

// assignLayers puts each node one layer below the lowest of its
// predecessors (longest path), so that every drawn forward edge points down.
func (l *svgLayout) assignLayers(topo []string) {
	for _, id := range topo {
		for _, e := range l.out[id] {
			if !l.back[e] {
				l.layer[e.to] = max(l.layer[e.to], l.layer[id]+1)
			}
		}
	}
}

// place lays each layer out left to right in declaration order, centred
// under the widest layer.
func (l *svgLayout) place() {
	var rows [][]string
	for _, id := range l.ids {
		r := l.layer[id]
		for len(rows) <= r {
			rows = append(rows, nil)
		}
		rows[r] = append(rows[r], id)
	}
	widest := 0
	for _, row := range rows {
		widest = max(widest, len(row))
	}
	rowWidth := func(n int) float64 { return float64(n)*svgNodeW + float64(max(n-1, 0))*svgColGap }
	for r, row := range rows {
		x0 := (rowWidth(widest) - rowWidth(len(row))) / 2
		for i, id := range row {
			l.at[id] = svgPoint{x0 + float64(i)*(svgNodeW+svgColGap), float64(r) * (svgNodeH + svgRowGap)}
		}
	}
}

type svgPoint struct{ x, y float64 }

func (p svgPoint) add(q svgPoint) svgPoint  { return svgPoint{p.x + q.x, p.y + q.y} }
func (p svgPoint) sub(q svgPoint) svgPoint  { return svgPoint{p.x - q.x, p.y - q.y} }
func (p svgPoint) scale(f float64) svgPoint { return svgPoint{p.x * f, p.y * f} }
func (p svgPoint) String() string           { return num(p.x) + "," + num(p.y) }
func (p svgPoint) unit() svgPoint           { return p.scale(1 / math.Max(math.Hypot(p.x, p.y), 1e-9)) }
func (p svgPoint) normal() svgPoint         { return svgPoint{-p.y, p.x} }

// cubicMid is the middle (t = ½) of a cubic Bézier curve: where a curved
// edge's label goes.
func cubicMid(p0, p1, p2, p3 svgPoint) svgPoint {
	return p0.add(p1.scale(3)).add(p2.scale(3)).add(p3).scale(1.0 / 8)
}

// svgEdge is one edge ready to write: its path, arrowhead and label.
type svgEdge struct {
	e       *Edge
	kind    string   // "" for a forward edge, "back" or "loop"
	start   svgPoint // where it leaves its source
	path    string
	arrow   [3]svgPoint
	label   string
	labelAt svgPoint
	anchor  string      // the label's text-anchor
	extent  [2]svgPoint // the corners of a box holding the curve and its label
}

// drawEdges routes every drawable edge: a forward edge as a straight line
// from the bottom of its source to the top of its target; a back edge as a
// curve out of the right side of its source and into the right side of its
// target; a self-loop as a curve on the node's left. Where several edges
// leave or enter one side of a node they get separate ports along it,
// ordered by where their other ends are, so that they neither overlap nor
// cross needlessly.
func (l *svgLayout) drawEdges() []svgEdge {
	outAt, inAt := l.forwardPorts()
	sideAt := l.backPorts()
	loops := make(map[string]int)
	drawn := make([]svgEdge, 0, len(l.edges))
	for _, e := range l.edges {
		var d svgEdge
		switch {
		case e.from == e.to:
			k := loops[e.from]
			loops[e.from]++
			d = loopEdge(l.outline(e.from), float64(k))
		case l.back[e]:
			span := math.Abs(l.at[e.from].y-l.at[e.to].y) / (svgNodeH + svgRowGap)
			d = backEdge(sideAt[e][0], sideAt[e][1], span)
		default:
			d = straightEdge(outAt[e], inAt[e])
		}
		d.e = e
		d.label = truncateRunes(oneLine(edgeText(e)), svgEdgeRunes)
		drawn = append(drawn, d)
	}
	return drawn
}

// edgeText is what an edge is labelled with: its label, else its condition.
func edgeText(e *Edge) string {
	if l := strings.TrimSpace(e.label()); l != "" {
		return l
	}
	return e.condition()
}

func (l *svgLayout) outline(id string) svgOutline {
	return svgOutline{shape: svgShapeFor(l.g.Nodes[id]), box: l.at[id]}
}

// forwardPorts spreads the forward edges leaving each node along its bottom
// and those entering along its top.
func (l *svgLayout) forwardPorts() (outAt, inAt map[*Edge]svgPoint) {
	outs := make(map[string][]*Edge)
	ins := make(map[string][]*Edge)
	for _, e := range l.edges {
		if !l.back[e] {
			outs[e.from] = append(outs[e.from], e)
			ins[e.to] = append(ins[e.to], e)
		}
	}
	outAt = make(map[*Edge]svgPoint)
	inAt = make(map[*Edge]svgPoint)
	spread := func(id string, es []*Edge, other func(*Edge) string, bottom bool, into map[*Edge]svgPoint) {
		slices.SortStableFunc(es, func(a, b *Edge) int { return cmp.Compare(l.at[other(a)].x, l.at[other(b)].x) })
		o := l.outline(id)
		for i, e := range es {
			into[e] = o.horizontalPort(i, len(es), bottom)
		}
	}
	for _, id := range l.ids {
		spread(id, outs[id], func(e *Edge) string { return e.to }, true, outAt)
		spread(id, ins[id], func(e *Edge) string { return e.from }, false, inAt)
	}
	return outAt, inAt
}

// backPorts spreads the ends of back edges down each node's right side:
// [0] where the edge leaves its source, [1] where it enters its target.
func (l *svgLayout) backPorts() map[*Edge][2]svgPoint {
	type end struct {
		e    *Edge
		side int
	}
	ends := make(map[string][]end)
	for _, e := range l.edges {
		if l.back[e] && e.from != e.to {
			ends[e.from] = append(ends[e.from], end{e, 0})
			ends[e.to] = append(ends[e.to], end{e, 1})
		}
	}
	at := make(map[*Edge][2]svgPoint)
	for id, es := range ends {
		o := l.outline(id)
		for i, en := range es {
			p := at[en.e]
			p[en.side] = o.side(svgNodeH*(float64(i+1)/float64(len(es)+1)-0.5), true)
			at[en.e] = p
		}
	}
	return at
}

func straightEdge(start, tip svgPoint) svgEdge {
	dir := tip.sub(start).unit()
	end := tip.sub(dir.scale(svgArrowLen))
	mid := start.add(end).scale(0.5)
	return svgEdge{
		start:   start,
		path:    "M" + start.String() + " L" + end.String(),
		arrow:   arrowhead(tip, dir),
		labelAt: svgPoint{mid.x, mid.y + 4},
		anchor:  "middle",
		extent:  [2]svgPoint{start, tip},
	}
}

// backEdge curves out to the right by more the more layers it climbs, so
// that nested retry loops sit inside one another.
func backEdge(start, tip svgPoint, span float64) svgEdge {
	bulge := 40 + 18*span
	cx := math.Max(start.x, tip.x) + bulge
	c1, c2 := svgPoint{cx, start.y}, svgPoint{cx, tip.y}
	dir := tip.sub(c2).unit()
	end := tip.sub(dir.scale(svgArrowLen))
	mid := cubicMid(start, c1, c2, end)
	return svgEdge{
		kind:    "back",
		start:   start,
		path:    "M" + start.String() + " C" + c1.String() + " " + c2.String() + " " + end.String(),
		arrow:   arrowhead(tip, dir),
		labelAt: svgPoint{mid.x + 4, mid.y + 4},
		anchor:  "start",
		extent:  [2]svgPoint{{math.Min(start.x, tip.x), math.Min(start.y, tip.y)}, {cx, math.Max(start.y, tip.y)}},
	}
}

// loopEdge draws a node's k-th self-loop on its left, away from the back
// edges on its right.
func loopEdge(o svgOutline, k float64) svgEdge {
	reach := 40 + 14*k
	start := o.side(-0.2*svgNodeH, false)
	tip := o.side(0.2*svgNodeH, false)
	c1 := svgPoint{start.x - reach, o.box.y - 10}
	c2 := svgPoint{tip.x - reach, o.box.y + svgNodeH + 10}
	dir := tip.sub(c2).unit()
	end := tip.sub(dir.scale(svgArrowLen))
	mid := cubicMid(start, c1, c2, end)
	return svgEdge{
		kind:    "loop",
		start:   start,
		path:    "M" + start.String() + " C" + c1.String() + " " + c2.String() + " " + end.String(),
		arrow:   arrowhead(tip, dir),
		labelAt: svgPoint{mid.x - 4, mid.y + 4},
		anchor:  "end",
		extent:  [2]svgPoint{{math.Min(c1.x, c2.x), c1.y}, {o.box.x + svgNodeW/2, c2.y}},
	}
}

// arrowhead is a filled triangle with its point at tip. It is drawn, not a
// <marker>, because a marker needs an id, and ids collide when a page
// inlines two drawings.
func arrowhead(tip, dir svgPoint) [3]svgPoint {
	base := tip.sub(dir.scale(svgArrowLen))
	side := dir.normal().scale(svgArrowW)
	return [3]svgPoint{tip, base.add(side), base.sub(side)}
}

func (d svgEdge) write(b *strings.Builder) {
	class := "edge"
	if d.kind != "" {
		class += " " + d.kind
	}
	title := d.e.from + " → " + d.e.to
	if t := oneLine(edgeText(d.e)); t != "" {
		title += ": " + t
	}
	dash := ""
	if d.kind != "" {
		dash = ` stroke-dasharray="5 3"` // a retry, not the way forward
	}
	fmt.Fprintf(b, `<g class="%s" data-from="%s" data-to="%s"><title>%s</title>`,
		class, svgEscape(d.e.from), svgEscape(d.e.to), svgEscape(title))
	fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="1.5"%s/>`, d.path, svgEdgeColour, dash)
	fmt.Fprintf(b, `<polygon points="%s %s %s" fill="%s"/>`, d.arrow[0], d.arrow[1], d.arrow[2], svgEdgeColour)
	if d.label != "" {
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="%s" font-size="%d" fill="%s" stroke="%s" stroke-width="3" paint-order="stroke">%s</text>`,
			num(d.labelAt.x), num(d.labelAt.y), d.anchor, svgEdgeFont, svgTextColour, svgHalo, svgEscape(d.label))
	}
	b.WriteString("</g>\n")
}

// labelSpan is the horizontal reach of an edge's label from its anchor point.
func (d svgEdge) labelSpan() (left, right float64) {
	w := float64(utf8.RuneCountInString(d.label)) * svgEdgeCharW
	switch d.anchor {
	case "start":
		return d.labelAt.x, d.labelAt.x + w
	case "end":
		return d.labelAt.x - w, d.labelAt.x
	}
	return d.labelAt.x - w/2, d.labelAt.x + w/2
}

type svgBounds struct{ minX, minY, maxX, maxY float64 }

func (b svgBounds) w() float64 { return b.maxX - b.minX }
func (b svgBounds) h() float64 { return b.maxY - b.minY }

func (b *svgBounds) include(x, y float64) {
	b.minX, b.maxX = math.Min(b.minX, x), math.Max(b.maxX, x)
	b.minY, b.maxY = math.Min(b.minY, y), math.Max(b.maxY, y)
}

// bounds is the box holding every node, curve and label, with a margin: the
// viewBox, which may start left of zero when self-loops stick out there.
func (l *svgLayout) bounds(drawn []svgEdge) svgBounds {
	box := svgBounds{}
	for _, id := range l.ids {
		p := l.at[id]
		box.include(p.x, p.y)
		box.include(p.x+svgNodeW, p.y+svgNodeH)
	}
	for _, d := range drawn {
		box.include(d.extent[0].x, d.extent[0].y)
		box.include(d.extent[1].x, d.extent[1].y)
		if d.label != "" {
			left, right := d.labelSpan()
			box.include(left, d.labelAt.y-svgEdgeFont)
			box.include(right, d.labelAt.y+4)
		}
	}
	box.minX, box.minY = box.minX-svgMargin, box.minY-svgMargin
	box.maxX, box.maxY = box.maxX+svgMargin, box.maxY+svgMargin
	return box
}

// writeNode draws one node: its shape, its label cut to fit, and a <title>
// with its id, whole label and state, which browsers show on hover and
// screen readers read.
func writeNode(b *strings.Builder, n *Node, at svgPoint, state NodeState) {
	p := paintOf(state)
	label := oneLine(n.label())
	title := n.ID + ": " + p.words
	if label != n.ID {
		title = label + " (" + n.ID + "): " + p.words
	}
	shape, fit := svgOutline{svgShapeFor(n), at}.draw()
	fmt.Fprintf(b, `<g class="%s" data-node="%s"><title>%s</title>`, p.class, svgEscape(n.ID), svgEscape(title))
	fmt.Fprintf(b, `<g fill="%s" stroke="%s" stroke-width="%s">%s</g>`, p.fill, p.stroke, p.width, shape)
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" fill="%s">%s</text></g>`+"\n",
		num(at.x+svgNodeW/2), num(at.y+svgNodeH/2+4), svgTextColour, svgEscape(truncateRunes(label, fit)))
}

// svgShape is how a node is outlined. It follows what the node does (its
// handler, which its DOT shape sets unless a type attribute or a start/exit
// name overrides it), so the drawing shows the run as the engine sees it.
type svgShape int

const (
	svgBox     svgShape = iota
	svgStart            // Mdiamond
	svgExit             // Msquare
	svgGate             // hexagon: a human is asked
	svgDiamond          // a conditional
)

// svgHexInset is how far a hexagon's slanted sides reach into its box.
const svgHexInset = 16.0

func svgShapeFor(n *Node) svgShape {
	switch n.Handler() {
	case handlerStart:
		return svgStart
	case handlerExit:
		return svgExit
	case handlerWaitHuman:
		return svgGate
	case handlerConditional:
		return svgDiamond
	}
	return svgBox
}

// svgOutline is a node's shape at its place, for finding where on its edge a
// line should end: a diamond's corner is not its box's.
type svgOutline struct {
	shape svgShape
	box   svgPoint // the top-left corner of its box
}

func (o svgOutline) centre() svgPoint { return svgPoint{o.box.x + svgNodeW/2, o.box.y + svgNodeH/2} }

// halfWidth is how far the outline reaches left and right of the centre at
// dy below it.
func (o svgOutline) halfWidth(dy float64) float64 {
	f := math.Min(math.Abs(dy)/(svgNodeH/2), 1)
	switch o.shape {
	case svgStart, svgDiamond:
		return svgNodeW / 2 * (1 - f)
	case svgGate:
		return svgNodeW/2 - svgHexInset*f
	}
	return svgNodeW / 2
}

// halfHeight is how far the outline reaches above and below the centre at
// dx right of it.
func (o svgOutline) halfHeight(dx float64) float64 {
	dx = math.Min(math.Abs(dx), svgNodeW/2)
	switch o.shape {
	case svgStart, svgDiamond:
		return svgNodeH / 2 * (1 - dx/(svgNodeW/2))
	case svgGate:
		return svgNodeH / 2 * math.Min(1, (svgNodeW/2-dx)/svgHexInset)
	}
	return svgNodeH / 2
}

// horizontalPort is the i-th of n points spread along the outline's bottom
// (or top), kept off a diamond's shallow sides so lines meet it squarely.
func (o svgOutline) horizontalPort(i, n int, bottom bool) svgPoint {
	width := svgNodeW
	switch o.shape {
	case svgStart, svgDiamond:
		width = svgNodeW / 2
	case svgGate:
		width = svgNodeW - 2*svgHexInset
	}
	c := o.centre()
	dx := width * (float64(i+1)/float64(n+1) - 0.5)
	dy := o.halfHeight(dx)
	if !bottom {
		dy = -dy
	}
	return svgPoint{c.x + dx, c.y + dy}
}

// side is the point on the outline's right (or left) side dy below its centre.
func (o svgOutline) side(dy float64, right bool) svgPoint {
	c := o.centre()
	dx := o.halfWidth(dy)
	if !right {
		dx = -dx
	}
	return svgPoint{c.x + dx, c.y + dy}
}

// vertices are the outline's corners, clockwise from the top left.
func (o svgOutline) vertices() []svgPoint {
	x, y, w, h := o.box.x, o.box.y, svgNodeW, svgNodeH
	cx, cy := x+w/2, y+h/2
	switch o.shape {
	case svgStart, svgDiamond:
		return []svgPoint{{cx, y}, {x + w, cy}, {cx, y + h}, {x, cy}}
	case svgGate:
		return []svgPoint{{x + svgHexInset, y}, {x + w - svgHexInset, y}, {x + w, cy}, {x + w - svgHexInset, y + h}, {x + svgHexInset, y + h}, {x, cy}}
	}
	return []svgPoint{{x, y}, {x + w, y}, {x + w, y + h}, {x, y + h}}
}

// draw is the SVG for the outline, and how many label runes fit inside it.
func (o svgOutline) draw() (svg string, fit int) {
	runes := func(width float64) int { return int(width / svgNodeCharW) }
	v := o.vertices()
	switch o.shape {
	case svgStart: // Mdiamond: a diamond with its corners cut off
		return polygon(v) + cornerCuts(v, 12), runes(svgNodeW/2 + 8)
	case svgExit: // Msquare: a square with its corners cut off
		return polygon(v) + cornerCuts(v, 8), runes(svgNodeW - 28)
	case svgGate:
		return polygon(v), runes(svgNodeW - 2*svgHexInset - 8)
	case svgDiamond:
		return polygon(v), runes(svgNodeW/2 + 8)
	}
	return fmt.Sprintf(`<rect x="%s" y="%s" width="%s" height="%s" rx="4"/>`,
		num(o.box.x), num(o.box.y), num(svgNodeW), num(svgNodeH)), runes(svgNodeW - 16)
}

func polygon(pts []svgPoint) string {
	s := make([]string, len(pts))
	for i, p := range pts {
		s[i] = p.String()
	}
	return `<polygon points="` + strings.Join(s, " ") + `"/>`
}

// cornerCuts is Graphviz's mark for start and exit (Mdiamond, Msquare): a
// short line across each corner of the polygon, d from the vertex.
func cornerCuts(pts []svgPoint, d float64) string {
	var path strings.Builder
	for i, v := range pts {
		prev, next := pts[(i+len(pts)-1)%len(pts)], pts[(i+1)%len(pts)]
		a := v.add(prev.sub(v).unit().scale(d))
		c := v.add(next.sub(v).unit().scale(d))
		path.WriteString("M" + a.String() + " L" + c.String() + " ")
	}
	return `<path d="` + strings.TrimSpace(path.String()) + `" fill="none"/>`
}

// oneLine folds a label's line breaks and runs of blanks into single spaces:
// a box has one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// truncateRunes cuts s to at most n runes, the last an ellipsis when it cut.
// Runes, not bytes, so that a cut never splits a character.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// svgEscape makes s safe as XML text or a quoted attribute value. It also
// replaces characters XML cannot carry (most control characters) with U+FFFD,
// so any label gives a well-formed document.
func svgEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

// num prints a coordinate to a tenth of a unit: short, and the same on every
// platform.
func num(f float64) string {
	f = math.Round(f*10) / 10
	if f == 0 {
		f = 0 // never "-0"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
