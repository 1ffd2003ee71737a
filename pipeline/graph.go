package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchrun/orch/internal/lazyre"
	"github.com/orchrun/orch/jobs"
)

// Graph is a pipeline: a DOT digraph, or a markdown milestone made linear, so
// that one engine runs both. Nodes and edges carry their attributes as written
// (unquoted, escapes resolved, defaults applied); typed reads go through the
// accessors, which is where the spec's defaults live.
type Graph struct {
	Name      string            // the digraph's name (may be empty); a linear graph's title
	file      string            // where the graph came from, for messages; "" when built in code
	Attrs     map[string]string // graph attributes: goal, label, default_max_retries, retry_target, …
	Nodes     map[string]*Node
	order     []string    // node ids in declaration order (first mention)
	Edges     []*Edge     // in declaration order, chained edges expanded
	subgraphs []*subgraph // in the order they open; flattened already: their nodes and edges are in Nodes and Edges
}

// Node is a pipeline stage.
type Node struct {
	ID    string
	Attrs map[string]string
	line  int // where it is declared (or first named, when only edges name it)

	implicit bool // only ever named by edges, never declared by a node statement
}

// Edge is a transition between two stages.
type Edge struct {
	from, to string
	attrs    map[string]string
	line     int
}

// subgraph records a subgraph's own attributes (its label, say) and the nodes
// named inside it, nested subgraphs included. Its node and edge defaults are
// already applied to those nodes and edges.
type subgraph struct {
	name  string
	attrs map[string]string
	nodes []string
	line  int
}

// Handler types (spec §2.8): what runs a node.
const (
	handlerStart       = "start"
	handlerExit        = "exit"
	handlerCodergen    = "codergen"
	handlerWaitHuman   = "wait.human"
	handlerConditional = "conditional"
	handlerParallel    = "parallel"
	handlerFanIn       = "parallel.fan_in"
	handlerTool        = "tool"
	handlerManagerLoop = "stack.manager_loop"
)

// shapeHandlers is the spec's shape-to-handler table, keyed by lower-cased
// shape because Graphviz reads shape names case-insensitively.
var shapeHandlers = map[string]string{
	"mdiamond":      handlerStart,
	"msquare":       handlerExit,
	"box":           handlerCodergen,
	"hexagon":       handlerWaitHuman,
	"diamond":       handlerConditional,
	"component":     handlerParallel,
	"tripleoctagon": handlerFanIn,
	"parallelogram": handlerTool,
	"house":         handlerManagerLoop,
}

// label is what people see for the node: its label, else its id.
func (n *Node) label() string {
	if l := n.Attrs["label"]; strings.TrimSpace(l) != "" {
		return l
	}
	return n.ID
}

// Handler is the node's handler type. An explicit type attribute wins; then
// the shape. A node named start/Start or exit/Exit/end/End whose shape says
// nothing more than the default box is the start or the exit: the spec finds
// those nodes by name as well as by shape, and "box" is also what a
// node [shape=box] default block gives every node, so it cannot mean "not the
// start". Name a codergen stage "start" with type=codergen if you must.
func (n *Node) Handler() string {
	if t := strings.TrimSpace(n.Attrs["type"]); t != "" {
		return t
	}
	shape := strings.ToLower(strings.TrimSpace(n.Attrs["shape"]))
	if shape == "" || shape == "box" {
		switch n.ID {
		case "start", "Start":
			return handlerStart
		case "exit", "Exit", "end", "End":
			return handlerExit
		}
	}
	if h, ok := shapeHandlers[shape]; ok {
		return h
	}
	return handlerCodergen
}

// attrBool reads a boolean attribute: true only for "true" (any case).
func (n *Node) attrBool(key string) bool { return attrBool(n.Attrs, key) }

// attrDuration reads a duration attribute ("900s", "15m", "250ms", "1d", or
// anything time.ParseDuration takes); ok is false when it is missing or bad.
func (n *Node) attrDuration(key string) (time.Duration, bool) {
	v, present := n.Attrs[key]
	if !present {
		return 0, false
	}
	return parseDuration(v)
}

// label is the edge's label ("" when it has none).
func (e *Edge) label() string { return e.attrs["label"] }

// condition is the edge's guard expression ("" when unconditional).
func (e *Edge) condition() string { return strings.TrimSpace(e.attrs["condition"]) }

// weight is the edge's priority in edge selection (default 0).
func (e *Edge) weight() int { return attrInt(e.attrs, "weight", 0) }

func attrInt(attrs map[string]string, key string, def int) int {
	v, ok := attrs[key]
	if !ok {
		return def
	}
	i, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return def
	}
	return i
}

func attrBool(attrs map[string]string, key string) bool {
	return strings.EqualFold(strings.TrimSpace(attrs[key]), "true")
}

var durationUnits = map[string]time.Duration{
	"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour,
}

var specDuration = lazyre.New(`^([0-9]+)(ms|s|m|h|d)$`)

// parseDuration takes the spec's Integer+unit form (which has days, unlike
// Go) and falls back to time.ParseDuration for forms like "1h30m" or "1.5h".
// Negative and overflowing durations are rejected.
func parseDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if m := specDuration.FindStringSubmatch(s); m != nil {
		n, err := strconv.ParseInt(m[1], 10, 64)
		unit := durationUnits[m[2]]
		if err != nil || n > int64(1<<63-1)/int64(unit) {
			return 0, false
		}
		return time.Duration(n) * unit, true
	}
	d, err := time.ParseDuration(s)
	// ParseDuration takes a bare "0"; a duration here always has a unit.
	if err != nil || d < 0 || strings.TrimLeft(s, "+-") == "0" {
		return 0, false
	}
	return d, true
}

// start is the start node, or nil unless there is exactly one.
func (g *Graph) start() *Node { return g.only(handlerStart) }

// exit is the exit node, or nil unless there is exactly one.
func (g *Graph) exit() *Node { return g.only(handlerExit) }

func (g *Graph) only(handler string) *Node {
	found := g.withHandler(handler)
	if len(found) != 1 {
		return nil
	}
	return found[0]
}

func (g *Graph) withHandler(handler string) []*Node {
	var found []*Node
	for _, id := range g.ids() {
		if n := g.Nodes[id]; n.Handler() == handler {
			found = append(found, n)
		}
	}
	return found
}

// ids is order, plus (sorted) any node a caller put in Nodes without listing
// it in order, so that hand-built graphs are still seen whole.
func (g *Graph) ids() []string {
	ids := make([]string, 0, len(g.Nodes))
	seen := make(map[string]bool, len(g.Nodes))
	for _, id := range g.order {
		if g.Nodes[id] != nil && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) < len(g.Nodes) {
		var rest []string
		for id, n := range g.Nodes {
			if n != nil && !seen[id] {
				rest = append(rest, id)
			}
		}
		slices.Sort(rest)
		ids = append(ids, rest...)
	}
	return ids
}

// out is a node's outgoing edges in declaration order.
func (g *Graph) out(id string) []*Edge {
	var out []*Edge
	for _, e := range g.Edges {
		if e.from == id {
			out = append(out, e)
		}
	}
	return out
}

// Goal is the graph's goal attribute.
func (g *Graph) Goal() string { return g.Attrs["goal"] }

// prompt is what an LLM stage is asked: its prompt, else its label (spec
// §2.6), with $goal expanded.
func (g *Graph) prompt(n *Node) string {
	p := n.Attrs["prompt"]
	if strings.TrimSpace(p) == "" {
		p = n.label()
	}
	return expandGoal(p, g.Goal())
}

// retries is how many times a node may be retried after its first attempt (spec §3.5): its max_retries, else the
// graph's default_max_retries (or its legacy alias default_max_retry), else 0; and whether the node or the graph
// sets one.
func (g *Graph) retries(n *Node) (int, bool) {
	for _, v := range []struct {
		attrs map[string]string
		key   string
	}{{n.Attrs, "max_retries"}, {g.Attrs, "default_max_retries"}, {g.Attrs, "default_max_retry"}} {
		if r := attrInt(v.attrs, v.key, -1); r >= 0 {
			return r, true
		}
	}
	return 0, false
}

// failureTarget is where a failed node goes when no edge takes its failure
// (spec §3.7): its retry_target, else its fallback_retry_target, when that
// names a node; "" when neither does.
func (g *Graph) failureTarget(n *Node) string {
	return g.firstNode(n.Attrs["retry_target"], n.Attrs["fallback_retry_target"])
}

// goalGateTarget is where the run goes when it reaches the exit with this
// goal gate unsatisfied (spec §3.4): the node's retry_target, then its
// fallback_retry_target, then the graph's; "" when none names a node.
func (g *Graph) goalGateTarget(n *Node) string {
	return g.firstNode(n.Attrs["retry_target"], n.Attrs["fallback_retry_target"],
		g.Attrs["retry_target"], g.Attrs["fallback_retry_target"])
}

func (g *Graph) firstNode(ids ...string) string {
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" && g.Nodes[id] != nil {
			return id
		}
	}
	return ""
}

// unsatisfiedGoalGate is the first goal gate (in declaration order) among the
// nodes run so far whose last status is neither success nor partial_success;
// nil when every goal gate run so far is satisfied (spec §3.4). statuses maps
// node id to the node's last outcome status.
func (g *Graph) unsatisfiedGoalGate(statuses map[string]string) *Node {
	for _, id := range g.ids() {
		n := g.Nodes[id]
		s, ran := statuses[id]
		if ran && n.attrBool("goal_gate") && s != StatusSuccess && s != statusPartialSuccess {
			return n
		}
	}
	return nil
}

// expandGoal replaces $goal with the graph's goal. "$goals" or "$goal_x" are
// other variables and are left alone.
func expandGoal(s, goal string) string {
	const v = "$goal"
	if !strings.Contains(s, v) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, v)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(v)
		b.WriteString(s[:i])
		if end < len(s) && isIdentByte(s[end]) {
			b.WriteString(v)
		} else {
			b.WriteString(goal)
		}
		s = s[end:]
	}
}

// Linear makes a milestone a graph: start → one box per task → exit, so that
// milestones and DOT pipelines run through the same engine. Node ids are task
// ids (which DOT could not spell, but a built graph needs no parsing).
func Linear(title string, tasks []Task) *Graph {
	g := &Graph{
		Name:  title,
		Attrs: map[string]string{"goal": title, "label": title},
		Nodes: make(map[string]*Node, len(tasks)+2),
	}
	taken := make(map[string]bool, len(tasks))
	for _, t := range tasks {
		taken[t.ID] = true
	}
	free := func(id string) string {
		for i := 1; taken[id]; i++ {
			id = fmt.Sprintf("%s_%d", strings.TrimRight(id, "_0123456789"), i)
		}
		taken[id] = true
		return id
	}
	prev := ""
	add := func(n *Node) {
		g.Nodes[n.ID] = n
		g.order = append(g.order, n.ID)
		if prev != "" {
			g.Edges = append(g.Edges, &Edge{from: prev, to: n.ID, attrs: map[string]string{}})
		}
		prev = n.ID
	}
	add(&Node{ID: free("start"), Attrs: map[string]string{"shape": "Mdiamond", "label": "Start"}})
	var verify, fix *Node
	for _, t := range tasks {
		n := &Node{ID: t.ID, line: t.Line, Attrs: map[string]string{"shape": "box", "label": t.Title, "prompt": t.Description}}
		if n.Handler() != handlerCodergen {
			n.Attrs["type"] = handlerCodergen // a task called "end" is still a task
		}
		switch t.Kind {
		case jobs.KindFix:
			fix = n // wired below: it is no step of the line
			g.Nodes[n.ID] = n
			g.order = append(g.order, n.ID)
			continue
		case jobs.KindVerify:
			verify = n
		}
		add(n)
	}
	add(&Node{ID: free("exit"), Attrs: map[string]string{"shape": "Msquare", "label": "Exit"}})
	if verify != nil && fix != nil {
		// The end-to-end phase: a failed verification goes to the fix, the fix back to the verification.
		g.Edges = append(g.Edges,
			&Edge{from: verify.ID, to: fix.ID, attrs: map[string]string{"condition": "outcome=fail"}},
			&Edge{from: fix.ID, to: verify.ID, attrs: map[string]string{}})
	}
	return g
}

// severity says whether a diagnostic stops a run.
type severity string

const (
	severityError   severity = "error"   // the pipeline will not run
	severityWarning severity = "warning" // it runs, but probably not as meant
)

// diagnostic is one finding of lint (spec §7.1).
type diagnostic struct {
	rule     string // spec §7.2 rule id, or one of ours (attr_type, shape_known, human_gate, dead_end, implicit_node)
	severity severity
	message  string
	file     string
	line     int    // 0 when there is no one place
	nodeID   string // the node concerned, if any
	from, to string // the edge concerned, if any
}

func (d diagnostic) String() string {
	return fmt.Sprintf("%s: %s: %s (%s)", d.err().where(), d.severity, d.message, d.rule)
}

func (d diagnostic) err() *dotError {
	return &dotError{file: d.file, line: d.line, rule: d.rule, msg: d.message}
}

// validate reports the errors of lint (spec §7: validate_or_raise): nil when
// the pipeline may run. Each error is a *dotError naming the file, line and
// rule; several are joined with errors.Join, one per line.
func (g *Graph) validate() error {
	var errs []error
	for _, d := range g.lint() {
		if d.severity == severityError {
			errs = append(errs, d.err())
		}
	}
	return errors.Join(errs...)
}

// handlerTypes are the handler types the spec defines (§2.8).
var handlerTypes = []string{
	handlerStart, handlerExit, handlerCodergen, handlerWaitHuman, handlerConditional,
	handlerParallel, handlerFanIn, handlerTool, handlerManagerLoop,
}

var fidelityModes = []string{"full", "truncate", "compact", "summary:low", "summary:medium", "summary:high"}

// lint checks the pipeline against the spec's rules (§7.2), errors and
// warnings both, in rule order. Not checked: stylesheet_syntax (orch does not
// apply model stylesheets). Added to the spec's rules: attr_type (error: a
// typed attribute such as max_retries, weight, goal_gate or timeout that
// does not read as its type, which would silently fall back to its default),
// and warnings shape_known, human_gate (a human gate with no edges, or with
// two choices claiming one key), dead_end (a node other than the exit with no
// way out: the run would end there) and implicit_node (a node only ever named
// by an edge, often a typo).
func (g *Graph) lint() []diagnostic {
	l := &linter{g: g, out: make(map[string][]*Edge), in: make(map[string]int)}
	for _, e := range g.Edges {
		l.out[e.from] = append(l.out[e.from], e)
		l.in[e.to]++
	}
	l.ids = g.ids()
	l.terminals("start_node", handlerStart, "start", "shape=Mdiamond")
	l.terminals("terminal_node", handlerExit, "exit", "shape=Msquare")
	l.edgeEnds()
	l.startExitEdges()
	l.reachability()
	l.conditions()
	l.attrTypes()
	l.handlers()
	l.fidelity()
	l.retryTargets()
	l.prompts()
	l.humanGates()
	l.deadEnds()
	return l.diags
}

type linter struct {
	g     *Graph
	ids   []string
	out   map[string][]*Edge
	in    map[string]int
	diags []diagnostic
}

func (l *linter) node(rule string, sev severity, n *Node, format string, args ...any) {
	l.diags = append(l.diags, diagnostic{rule: rule, severity: sev, message: fmt.Sprintf(format, args...),
		file: l.g.file, line: n.line, nodeID: n.ID})
}

func (l *linter) edge(rule string, sev severity, e *Edge, format string, args ...any) {
	l.diags = append(l.diags, diagnostic{rule: rule, severity: sev, message: fmt.Sprintf(format, args...),
		file: l.g.file, line: e.line, from: e.from, to: e.to})
}

func (l *linter) graph(rule string, sev severity, format string, args ...any) {
	l.diags = append(l.diags, diagnostic{rule: rule, severity: sev, message: fmt.Sprintf(format, args...), file: l.g.file})
}

func (l *linter) terminals(rule, handler, name, shape string) {
	found := l.g.withHandler(handler)
	switch len(found) {
	case 1:
	case 0:
		l.graph(rule, severityError, "no %s node: add one with %s (or name it %s)", name, shape, name)
	default:
		var where []string
		for _, n := range found {
			where = append(where, fmt.Sprintf("%s (line %d)", n.ID, n.line))
		}
		l.node(rule, severityError, found[1], "%d %s nodes: %s; a pipeline has exactly one", len(found), name, strings.Join(where, ", "))
	}
}

func (l *linter) edgeEnds() {
	for _, e := range l.g.Edges {
		for _, id := range []string{e.from, e.to} {
			if l.g.Nodes[id] == nil {
				l.edge("edge_target_exists", severityError, e, "edge %s -> %s: no node %q", e.from, e.to, id)
			}
		}
	}
}

func (l *linter) startExitEdges() {
	if s := l.g.start(); s != nil && l.in[s.ID] > 0 {
		l.node("start_no_incoming", severityError, s, "start node %s has incoming edges; nothing may lead back to the start", s.ID)
	}
	if x := l.g.exit(); x != nil && len(l.out[x.ID]) > 0 {
		l.node("exit_no_outgoing", severityError, x, "exit node %s has outgoing edges; the run ends there", x.ID)
	}
}

func (l *linter) reachability() {
	s := l.g.start()
	if s == nil {
		return // start_node already says why
	}
	seen := map[string]bool{s.ID: true}
	queue := []string{s.ID}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, e := range l.out[id] {
			if !seen[e.to] && l.g.Nodes[e.to] != nil {
				seen[e.to] = true
				queue = append(queue, e.to)
			}
		}
	}
	for _, id := range l.ids {
		if !seen[id] {
			n := l.g.Nodes[id]
			what := "node"
			if n.Handler() == handlerExit {
				what = "exit node"
			}
			l.node("reachability", severityError, n, "%s %s cannot be reached from start node %s", what, id, s.ID)
		}
	}
}

func (l *linter) conditions() {
	for _, e := range l.g.Edges {
		if err := checkCondition(e.condition()); err != nil {
			l.edge("condition_syntax", severityError, e, "edge %s -> %s: %v", e.from, e.to, err)
		}
	}
}

// attrKinds are the spec's typed attributes (§2.5–2.7) whose values a
// mistake could make unreadable.
var attrKinds = map[string]string{
	"max_retries": "count", "default_max_retries": "count", "default_max_retry": "count",
	"weight": "integer", "goal_gate": "boolean", "auto_status": "boolean", "allow_partial": "boolean",
	"loop_restart": "boolean", "timeout": "duration", "backoff_policy": "backoff",
}

func attrTypeProblem(key, v string) string {
	v = strings.TrimSpace(v)
	switch attrKinds[key] {
	case "count":
		if i, err := strconv.Atoi(v); err != nil || i < 0 {
			return "a whole number, 0 or more"
		}
	case "integer":
		if _, err := strconv.Atoi(v); err != nil {
			return "an integer"
		}
	case "boolean":
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			return "true or false"
		}
	case "duration":
		if _, ok := parseDuration(v); !ok {
			return "a duration such as 900s, 15m, 2h, 250ms or 1d"
		}
	case "backoff":
		if !knownBackoff(v) {
			return "one of the spec's presets: none, standard, aggressive, linear, patient"
		}
	}
	return ""
}

func (l *linter) attrTypes() {
	for _, k := range sortedKeys(l.g.Attrs) {
		if want := attrTypeProblem(k, l.g.Attrs[k]); want != "" {
			l.graph("attr_type", severityError, "graph attribute %s=%q: want %s", k, l.g.Attrs[k], want)
		}
	}
	for _, id := range l.ids {
		n := l.g.Nodes[id]
		for _, k := range sortedKeys(n.Attrs) {
			if want := attrTypeProblem(k, n.Attrs[k]); want != "" {
				l.node("attr_type", severityError, n, "node %s: %s=%q: want %s", id, k, n.Attrs[k], want)
			}
		}
	}
	for _, e := range l.g.Edges {
		for _, k := range sortedKeys(e.attrs) {
			if want := attrTypeProblem(k, e.attrs[k]); want != "" {
				l.edge("attr_type", severityError, e, "edge %s -> %s: %s=%q: want %s", e.from, e.to, k, e.attrs[k], want)
			}
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (l *linter) handlers() {
	for _, id := range l.ids {
		n := l.g.Nodes[id]
		if t := strings.TrimSpace(n.Attrs["type"]); t != "" && !slices.Contains(handlerTypes, t) {
			l.node("type_known", severityWarning, n, "node %s: unknown type %q (known: %s)", id, t, strings.Join(handlerTypes, ", "))
		}
		if s := strings.TrimSpace(n.Attrs["shape"]); s != "" && shapeHandlers[strings.ToLower(s)] == "" {
			l.node("shape_known", severityWarning, n, "node %s: shape %q maps to no handler; it runs as a codergen (box) stage", id, s)
		}
	}
}

func (l *linter) fidelity() {
	check := func(v string) bool { v = strings.TrimSpace(v); return v == "" || slices.Contains(fidelityModes, v) }
	if v := l.g.Attrs["default_fidelity"]; !check(v) {
		l.graph("fidelity_valid", severityWarning, "default_fidelity %q is not one of %s", v, strings.Join(fidelityModes, ", "))
	}
	for _, id := range l.ids {
		if n := l.g.Nodes[id]; !check(n.Attrs["fidelity"]) {
			l.node("fidelity_valid", severityWarning, n, "node %s: fidelity %q is not one of %s", id, n.Attrs["fidelity"], strings.Join(fidelityModes, ", "))
		}
	}
	for _, e := range l.g.Edges {
		if !check(e.attrs["fidelity"]) {
			l.edge("fidelity_valid", severityWarning, e, "edge %s -> %s: fidelity %q is not one of %s", e.from, e.to, e.attrs["fidelity"], strings.Join(fidelityModes, ", "))
		}
	}
}

func (l *linter) retryTargets() {
	keys := []string{"retry_target", "fallback_retry_target"}
	for _, k := range keys {
		if v := strings.TrimSpace(l.g.Attrs[k]); v != "" && l.g.Nodes[v] == nil {
			l.graph("retry_target_exists", severityWarning, "graph %s %q is not a node", k, v)
		}
	}
	graphTarget := l.g.firstNode(l.g.Attrs["retry_target"], l.g.Attrs["fallback_retry_target"]) != ""
	for _, id := range l.ids {
		n := l.g.Nodes[id]
		for _, k := range keys {
			if v := strings.TrimSpace(n.Attrs[k]); v != "" && l.g.Nodes[v] == nil {
				l.node("retry_target_exists", severityWarning, n, "node %s: %s %q is not a node", id, k, v)
			}
		}
		if n.attrBool("goal_gate") && l.g.failureTarget(n) == "" && !graphTarget {
			l.node("goal_gate_has_retry", severityWarning, n, "goal gate %s has no retry_target: if it has not succeeded when the run reaches the exit, the run fails", id)
		}
	}
}

func (l *linter) prompts() {
	for _, id := range l.ids {
		n := l.g.Nodes[id]
		if n.Handler() == handlerCodergen && strings.TrimSpace(n.Attrs["prompt"]) == "" && strings.TrimSpace(n.Attrs["label"]) == "" {
			l.node("prompt_on_llm_nodes", severityWarning, n, "node %s has no prompt or label: the agent is asked only %q", id, id)
		}
	}
}

func (l *linter) humanGates() {
	for _, id := range l.ids {
		n := l.g.Nodes[id]
		if n.Handler() != handlerWaitHuman {
			continue
		}
		edges := l.out[id]
		if len(edges) == 0 {
			l.node("human_gate", severityWarning, n, "human gate %s has no outgoing edges, so no choices: it will fail", id)
			continue
		}
		claimed := map[string]string{}
		for _, e := range edges {
			k, _, ok := acceleratorPrefix(strings.TrimSpace(e.label()))
			if !ok {
				continue
			}
			if other, dup := claimed[k]; dup {
				l.edge("human_gate", severityWarning, e, "human gate %s: key %s is claimed by the edges to %s and %s; the second gets another key", id, k, other, e.to)
				continue
			}
			claimed[k] = e.to
		}
	}
}

func (l *linter) deadEnds() {
	for _, id := range l.ids {
		n := l.g.Nodes[id]
		if n.implicit {
			l.node("implicit_node", severityWarning, n, "node %s is only named by edges, never declared: a typo?", id)
		}
		if h := n.Handler(); h != handlerExit && len(l.out[id]) == 0 && h != handlerWaitHuman {
			l.node("dead_end", severityWarning, n, "node %s has no outgoing edges: a run that gets there ends without reaching the exit", id)
		}
	}
}
