package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, src string) *Graph {
	t.Helper()
	g, err := ParseDOT("t.dot", src)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestHandler(t *testing.T) {
	tests := []struct {
		decl, want string
	}{
		{"n", handlerCodergen},
		{"n [shape=box]", handlerCodergen},
		{"n [shape=Mdiamond]", handlerStart},
		{"n [shape=mdiamond]", handlerStart},
		{"n [shape=Msquare]", handlerExit},
		{"n [shape=hexagon]", handlerWaitHuman},
		{"n [shape=diamond]", handlerConditional},
		{"n [shape=component]", handlerParallel},
		{"n [shape=tripleoctagon]", handlerFanIn},
		{"n [shape=parallelogram]", handlerTool},
		{"n [shape=house]", handlerManagerLoop},
		{"n [shape=ellipse]", handlerCodergen},
		{"n [shape=box, type=\"wait.human\"]", handlerWaitHuman},
		{"n [shape=Mdiamond, type=codergen]", handlerCodergen},
		{"start", handlerStart},
		{"Start [shape=box]", handlerStart},
		{"start [shape=hexagon]", handlerWaitHuman},
		{"start [type=codergen]", handlerCodergen},
		{"exit", handlerExit},
		{"Exit", handlerExit},
		{"end", handlerExit},
		{"End [shape=box]", handlerExit},
		{"START", handlerCodergen},
	}
	for _, tt := range tests {
		t.Run(tt.decl, func(t *testing.T) {
			g := mustParse(t, "digraph g { "+tt.decl+" }")
			n := g.Nodes[g.order[0]]
			if got := n.Handler(); got != tt.want {
				t.Errorf("Handler() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStartExitByName(t *testing.T) {
	// A node [shape=box] default block must not hide the start and exit named by id.
	g := mustParse(t, `digraph g { node [shape=box] start -> work -> exit }`)
	if err := g.validate(); err != nil {
		t.Fatal(err)
	}
	if g.start().ID != "start" || g.exit().ID != "exit" {
		t.Errorf("start %v exit %v", g.start(), g.exit())
	}
}

func TestNodeAccessors(t *testing.T) {
	g := mustParse(t, `digraph g {
		a [label="Alpha", n=7, bad="x", yes=TRUE, no=false, t1=900s, t2="1d", t3="1h30m", t4="250ms", t5=900, t6="-5s", t7=99999999999999999999d]
		b [label=" "]
		a -> b [weight=-2, loop_restart=true, condition=" outcome=success "]
	}`)
	a, b := g.Nodes["a"], g.Nodes["b"]
	if a.label() != "Alpha" || b.label() != "b" || shapeOf(a) != "box" {
		t.Errorf("labels %q %q shape %q", a.label(), b.label(), shapeOf(a))
	}
	if attrInt(a.Attrs, "n", 0) != 7 || attrInt(a.Attrs, "bad", -1) != -1 || attrInt(a.Attrs, "missing", 3) != 3 {
		t.Errorf("Int: %d %d %d", attrInt(a.Attrs, "n", 0), attrInt(a.Attrs, "bad", -1), attrInt(a.Attrs, "missing", 3))
	}
	if !attrBool(a.Attrs, "yes") || attrBool(a.Attrs, "no") || attrBool(a.Attrs, "missing") || attrBool(a.Attrs, "n") {
		t.Error("Bool")
	}
	for key, want := range map[string]time.Duration{"t1": 900 * time.Second, "t2": 24 * time.Hour, "t3": 90 * time.Minute, "t4": 250 * time.Millisecond} {
		if d, ok := a.attrDuration(key); !ok || d != want {
			t.Errorf("Duration(%s) = %v, %v; want %v", key, d, ok, want)
		}
	}
	for _, key := range []string{"t5", "t6", "t7", "missing", "label"} {
		if d, ok := a.attrDuration(key); ok {
			t.Errorf("Duration(%s) = %v, want not ok", key, d)
		}
	}
	e := g.Edges[0]
	if e.weight() != -2 || !attrBool(e.attrs, "loop_restart") || e.condition() != "outcome=success" || e.label() != "" {
		t.Errorf("edge %+v", e)
	}
}

func TestGraphRetryAndGoalGates(t *testing.T) {
	g := mustParse(t, `digraph g {
		graph [default_max_retries=2, default_max_retry=9, retry_target=fix, fallback_retry_target=plan]
		start [shape=Mdiamond] exit [shape=Msquare]
		plan fix
		a [max_retries=0, goal_gate=true, retry_target=nowhere, fallback_retry_target=fix]
		b [goal_gate=true]
		c [goal_gate=true, retry_target=plan]
		d [max_retries=x]
		start -> plan -> fix -> a -> b -> c -> d -> exit
	}`)
	n := func(id string) *Node { return g.Nodes[id] }
	if maxRetries(g, n("a")) != 0 || maxRetries(g, n("b")) != 2 || maxRetries(g, n("d")) != 2 {
		t.Errorf("maxRetries a %d b %d d %d", maxRetries(g, n("a")), maxRetries(g, n("b")), maxRetries(g, n("d")))
	}
	legacy := mustParse(t, `digraph g { graph [default_max_retry=4] x }`)
	if got := maxRetries(legacy, legacy.Nodes["x"]); got != 4 {
		t.Errorf("legacy default_max_retry: %d", got)
	}
	if got := maxRetries(&Graph{}, &Node{}); got != 0 {
		t.Errorf("built-in default: %d", got)
	}

	if g.failureTarget(n("a")) != "fix" || g.failureTarget(n("b")) != "" || g.failureTarget(n("c")) != "plan" {
		t.Errorf("failureTarget a %q b %q c %q", g.failureTarget(n("a")), g.failureTarget(n("b")), g.failureTarget(n("c")))
	}
	if g.goalGateTarget(n("b")) != "fix" || g.goalGateTarget(n("c")) != "plan" {
		t.Errorf("goalGateTarget b %q c %q", g.goalGateTarget(n("b")), g.goalGateTarget(n("c")))
	}

	tests := []struct {
		statuses map[string]string
		want     string
	}{
		{nil, ""},
		{map[string]string{"a": StatusSuccess, "b": statusPartialSuccess}, ""},
		{map[string]string{"plan": StatusFail, "a": StatusSuccess}, ""}, // plan is not a goal gate
		{map[string]string{"a": StatusSuccess, "c": StatusFail, "b": statusRetry}, "b"},
		{map[string]string{"c": statusSkipped}, "c"},
	}
	for _, tt := range tests {
		got := ""
		if n := g.unsatisfiedGoalGate(tt.statuses); n != nil {
			got = n.ID
		}
		if got != tt.want {
			t.Errorf("unsatisfiedGoalGate(%v) = %q, want %q", tt.statuses, got, tt.want)
		}
	}
}

func TestExpandGoal(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Plan for: $goal", "Plan for: ship it"},
		{"$goal$goal", "ship itship it"},
		{"$goal.", "ship it."},
		{"$goals and $goal_x stay", "$goals and $goal_x stay"},
		{"no variable", "no variable"},
		{"$GOAL is not $goal", "$GOAL is not ship it"},
	}
	for _, tt := range tests {
		if got := expandGoal(tt.in, "ship it"); got != tt.want {
			t.Errorf("expandGoal(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	g := parseFixture(t, "attractorbench-tier3/conditional.dot")
	if got := g.prompt(g.Nodes["check"]); got != "Check something for: Test conditional routing" {
		t.Errorf("prompt = %q", got)
	}
	if got := g.prompt(g.Nodes["done"]); got != "done" {
		t.Errorf("prompt without prompt or label = %q", got)
	}
}

func lintRules(g *Graph, sev severity) []string {
	var rules []string
	for _, d := range g.lint() {
		if d.severity == sev {
			rules = append(rules, d.rule+":"+d.nodeID+d.from+">"+d.to)
		}
	}
	return rules
}

func TestLint(t *testing.T) {
	const ok = `start [shape=Mdiamond] exit [shape=Msquare]`
	tests := []struct {
		name, body string
		errors     []string
		warnings   []string
	}{
		{name: "clean", body: ok + ` w [prompt=p] start -> w -> exit`},
		{name: "no start, no exit", body: `a [label=A] b [label=B] a -> b`,
			errors: []string{"start_node:>", "terminal_node:>"}, warnings: []string{"dead_end:b>"}},
		{name: "two starts", body: ok + ` begin [shape=Mdiamond] start -> exit begin -> exit`,
			errors: []string{"start_node:begin>"}},
		{name: "start by name and by shape", body: `start go [shape=Mdiamond] exit [shape=Msquare] start -> exit go -> exit`,
			errors: []string{"start_node:go>"}},
		{name: "two exits", body: ok + ` end start -> exit start -> end`,
			errors: []string{"terminal_node:end>"}},
		{name: "edges into start and out of exit", body: ok + ` w [label=W] start -> w -> exit exit -> w w -> start`,
			errors: []string{"start_no_incoming:start>", "exit_no_outgoing:exit>"}},
		{name: "unreachable node and exit", body: ok + ` w [label=W] o [label=O] start -> w w -> start2 o -> exit`,
			errors:   []string{"reachability:exit>", "reachability:o>"},
			warnings: []string{"prompt_on_llm_nodes:start2>", "implicit_node:start2>", "dead_end:start2>"}},
		{name: "bad conditions", body: ok + ` start -> exit [condition="outcome=failure"] start -> exit [condition="outcome=success || x=y"] start -> exit [condition="outcome=success"]`,
			errors: []string{"condition_syntax:start>exit", "condition_syntax:start>exit"}},
		{name: "typed attributes", body: ok + ` graph [default_max_retries=-1] w [label=W, max_retries=two, goal_gate=yes, timeout=soon, retry_target=exit] start -> w w -> exit [weight=heavy, loop_restart=1]`,
			errors: []string{"attr_type:>", "attr_type:w>", "attr_type:w>", "attr_type:w>", "attr_type:w>exit", "attr_type:w>exit"}},
		// A mistyped backoff policy would silently be the standard one.
		{name: "unknown backoff policy", body: ok + ` w [label=W, backoff_policy=exponential] v [label=V, backoff_policy=" Patient "] start -> w -> v -> exit`,
			errors: []string{"attr_type:w>"}},
		{name: "unknown type, shape, fidelity", body: ok + ` graph [default_fidelity=most] w [label=W, type=robot, shape=ellipse, fidelity=huge] start -> w w -> exit [fidelity=all]`,
			warnings: []string{"type_known:w>", "shape_known:w>", "fidelity_valid:>", "fidelity_valid:w>", "fidelity_valid:w>exit"}},
		{name: "retry targets", body: ok + ` graph [retry_target=nope] w [label=W, retry_target=gone, goal_gate=true] start -> w -> exit`,
			warnings: []string{"retry_target_exists:>", "retry_target_exists:w>", "goal_gate_has_retry:w>"}},
		{name: "goal gate covered by the graph's retry target", body: ok + ` graph [retry_target=w] w [label=W, goal_gate=true] start -> w -> exit`},
		{name: "human gates", body: ok + ` h [shape=hexagon, label=H] lone [shape=hexagon] start -> h h -> exit [label="[A] Approve"] h -> lone [label="[A] Abort"] lone -> exit lone2 [shape=hexagon] start -> lone2`,
			warnings: []string{"human_gate:h>lone", "human_gate:lone2>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mustParse(t, "digraph g {\n"+tt.body+"\n}")
			if got := lintRules(g, severityError); !slices.Equal(got, tt.errors) {
				t.Errorf("errors %q, want %q", got, tt.errors)
			}
			if got := lintRules(g, severityWarning); !slices.Equal(got, tt.warnings) {
				t.Errorf("warnings %q, want %q", got, tt.warnings)
			}
			err := g.validate()
			if (err != nil) != (len(tt.errors) > 0) {
				t.Fatalf("validate() = %v", err)
			}
			if err != nil && strings.Count(err.Error(), "pipeline t.dot") != len(tt.errors) {
				t.Errorf("validate() = %q: want one line per error", err)
			}
		})
	}
}

func TestValidateMessages(t *testing.T) {
	g := mustParse(t, "digraph g {\n start [shape=Mdiamond]\n exit [shape=Msquare]\n start -> exit\n orphan [label=O]\n}")
	err := g.validate()
	var de *dotError
	if !errors.As(err, &de) || de.rule != "reachability" || de.line != 5 {
		t.Fatalf("got %#v", err)
	}
	if want := "pipeline t.dot:5: node orphan cannot be reached from start node start"; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	d := g.lint()[0]
	if want := "pipeline t.dot:5: error: node orphan cannot be reached from start node start (reachability)"; d.String() != want {
		t.Errorf("diagnostic.String() = %q, want %q", d, want)
	}
}

func TestValidateBuiltGraph(t *testing.T) {
	// Graphs built in code can name nodes that do not exist, and forget Order.
	g := &Graph{
		Nodes: map[string]*Node{
			"s": {ID: "s", Attrs: map[string]string{"shape": "Mdiamond"}},
			"x": {ID: "x", Attrs: map[string]string{"shape": "Msquare"}},
		},
		Edges: []*Edge{{from: "s", to: "x"}, {from: "s", to: "ghost", line: 3}},
	}
	if got := lintRules(g, severityError); !slices.Equal(got, []string{"edge_target_exists:s>ghost"}) {
		t.Errorf("errors %q", got)
	}
	if g.start().ID != "s" || g.exit().ID != "x" {
		t.Error("Start/Exit must see nodes missing from Order")
	}
}

func TestLinear(t *testing.T) {
	tasks, err := ParseMilestone(readTestdata(t, "v2-m3-retry-escalate-brain.md"))
	if err != nil {
		t.Fatal(err)
	}
	g := Linear("M3: retry or escalate", tasks)
	if err := g.validate(); err != nil {
		t.Fatal(err)
	}
	if w := lintRules(g, severityWarning); len(w) > 0 {
		t.Errorf("warnings %v", w)
	}
	want := []string{"start", "3.1", "3.2", "3.3", "3.4", "exit"}
	if !slices.Equal(g.order, want) {
		t.Fatalf("order %v, want %v", g.order, want)
	}
	var path []string
	for id := g.start().ID; id != ""; {
		path = append(path, id)
		e, err := selectEdge(g, id, Outcome{Status: StatusSuccess}, nil)
		if err != nil {
			t.Fatal(err)
		}
		id = ""
		if e != nil {
			id = e.to
		}
	}
	if !slices.Equal(path, want) {
		t.Errorf("walk %v, want %v", path, want)
	}
	n := g.Nodes["3.2"]
	if n.label() != tasks[1].Title || n.Attrs["prompt"] != tasks[1].Description || n.line != tasks[1].Line || n.Handler() != handlerCodergen {
		t.Errorf("node 3.2 = %+v", n)
	}
	if g.Goal() != "M3: retry or escalate" || g.prompt(n) != tasks[1].Description {
		t.Errorf("goal %q", g.Goal())
	}

	empty := Linear("nothing", nil)
	if err := empty.validate(); err != nil || fmt.Sprint(empty.order) != "[start exit]" {
		t.Errorf("empty: %v %v", empty.order, err)
	}

	odd := Linear("odd", []Task{{ID: "start", Title: "S"}, {ID: "end", Title: "E"}, {ID: "exit", Title: "X"}})
	if err := odd.validate(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(odd.order) != "[start_1 start end exit exit_1]" || odd.Nodes["end"].Handler() != handlerCodergen {
		t.Errorf("reserved ids: %v", odd.order)
	}
}

// maxRetries is the node's retry count as the engine reads it.
func maxRetries(g *Graph, n *Node) int {
	r, _ := g.retries(n)
	return r
}

// shapeOf is the node's Graphviz shape; "box" when it has none.
func shapeOf(n *Node) string {
	if s := strings.TrimSpace(n.Attrs["shape"]); s != "" {
		return s
	}
	return "box"
}
