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
		{"n", HandlerCodergen},
		{"n [shape=box]", HandlerCodergen},
		{"n [shape=Mdiamond]", HandlerStart},
		{"n [shape=mdiamond]", HandlerStart},
		{"n [shape=Msquare]", HandlerExit},
		{"n [shape=hexagon]", HandlerWaitHuman},
		{"n [shape=diamond]", HandlerConditional},
		{"n [shape=component]", HandlerParallel},
		{"n [shape=tripleoctagon]", HandlerFanIn},
		{"n [shape=parallelogram]", HandlerTool},
		{"n [shape=house]", HandlerManagerLoop},
		{"n [shape=ellipse]", HandlerCodergen},
		{"n [shape=box, type=\"wait.human\"]", HandlerWaitHuman},
		{"n [shape=Mdiamond, type=codergen]", HandlerCodergen},
		{"start", HandlerStart},
		{"Start [shape=box]", HandlerStart},
		{"start [shape=hexagon]", HandlerWaitHuman},
		{"start [type=codergen]", HandlerCodergen},
		{"exit", HandlerExit},
		{"Exit", HandlerExit},
		{"end", HandlerExit},
		{"End [shape=box]", HandlerExit},
		{"START", HandlerCodergen},
	}
	for _, tt := range tests {
		t.Run(tt.decl, func(t *testing.T) {
			g := mustParse(t, "digraph g { "+tt.decl+" }")
			n := g.Nodes[g.Order[0]]
			if got := n.Handler(); got != tt.want {
				t.Errorf("Handler() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStartExitByName(t *testing.T) {
	// A node [shape=box] default block must not hide the start and exit named by id.
	g := mustParse(t, `digraph g { node [shape=box] start -> work -> exit }`)
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if g.Start().ID != "start" || g.Exit().ID != "exit" {
		t.Errorf("start %v exit %v", g.Start(), g.Exit())
	}
}

func TestNodeAccessors(t *testing.T) {
	g := mustParse(t, `digraph g {
		a [label="Alpha", n=7, bad="x", yes=TRUE, no=false, t1=900s, t2="1d", t3="1h30m", t4="250ms", t5=900, t6="-5s", t7=99999999999999999999d]
		b [label=" "]
		a -> b [weight=-2, loop_restart=true, condition=" outcome=success "]
	}`)
	a, b := g.Nodes["a"], g.Nodes["b"]
	if a.Label() != "Alpha" || b.Label() != "b" || a.Shape() != "box" {
		t.Errorf("labels %q %q shape %q", a.Label(), b.Label(), a.Shape())
	}
	if a.Int("n", 0) != 7 || a.Int("bad", -1) != -1 || a.Int("missing", 3) != 3 {
		t.Errorf("Int: %d %d %d", a.Int("n", 0), a.Int("bad", -1), a.Int("missing", 3))
	}
	if !a.Bool("yes") || a.Bool("no") || a.Bool("missing") || a.Bool("n") {
		t.Error("Bool")
	}
	for key, want := range map[string]time.Duration{"t1": 900 * time.Second, "t2": 24 * time.Hour, "t3": 90 * time.Minute, "t4": 250 * time.Millisecond} {
		if d, ok := a.Duration(key); !ok || d != want {
			t.Errorf("Duration(%s) = %v, %v; want %v", key, d, ok, want)
		}
	}
	for _, key := range []string{"t5", "t6", "t7", "missing", "label"} {
		if d, ok := a.Duration(key); ok {
			t.Errorf("Duration(%s) = %v, want not ok", key, d)
		}
	}
	e := g.Edges[0]
	if e.Weight() != -2 || !e.Bool("loop_restart") || e.Condition() != "outcome=success" || e.Label() != "" {
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
	if g.MaxRetries(n("a")) != 0 || g.MaxRetries(n("b")) != 2 || g.MaxRetries(n("d")) != 2 {
		t.Errorf("MaxRetries a %d b %d d %d", g.MaxRetries(n("a")), g.MaxRetries(n("b")), g.MaxRetries(n("d")))
	}
	legacy := mustParse(t, `digraph g { graph [default_max_retry=4] x }`)
	if got := legacy.MaxRetries(legacy.Nodes["x"]); got != 4 {
		t.Errorf("legacy default_max_retry: %d", got)
	}
	if got := (&Graph{}).MaxRetries(&Node{}); got != 0 {
		t.Errorf("built-in default: %d", got)
	}

	if g.FailureTarget(n("a")) != "fix" || g.FailureTarget(n("b")) != "" || g.FailureTarget(n("c")) != "plan" {
		t.Errorf("FailureTarget a %q b %q c %q", g.FailureTarget(n("a")), g.FailureTarget(n("b")), g.FailureTarget(n("c")))
	}
	if g.GoalGateTarget(n("b")) != "fix" || g.GoalGateTarget(n("c")) != "plan" {
		t.Errorf("GoalGateTarget b %q c %q", g.GoalGateTarget(n("b")), g.GoalGateTarget(n("c")))
	}

	tests := []struct {
		statuses map[string]string
		want     string
	}{
		{nil, ""},
		{map[string]string{"a": StatusSuccess, "b": StatusPartialSuccess}, ""},
		{map[string]string{"plan": StatusFail, "a": StatusSuccess}, ""}, // plan is not a goal gate
		{map[string]string{"a": StatusSuccess, "c": StatusFail, "b": StatusRetry}, "b"},
		{map[string]string{"c": StatusSkipped}, "c"},
	}
	for _, tt := range tests {
		got := ""
		if n := g.UnsatisfiedGoalGate(tt.statuses); n != nil {
			got = n.ID
		}
		if got != tt.want {
			t.Errorf("UnsatisfiedGoalGate(%v) = %q, want %q", tt.statuses, got, tt.want)
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
		if got := ExpandGoal(tt.in, "ship it"); got != tt.want {
			t.Errorf("ExpandGoal(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	g := parseFixture(t, "attractorbench-tier3/conditional.dot")
	if got := g.Prompt(g.Nodes["check"]); got != "Check something for: Test conditional routing" {
		t.Errorf("Prompt = %q", got)
	}
	if got := g.Prompt(g.Nodes["done"]); got != "done" {
		t.Errorf("Prompt without prompt or label = %q", got)
	}
}

func lintRules(g *Graph, sev Severity) []string {
	var rules []string
	for _, d := range g.Lint() {
		if d.Severity == sev {
			rules = append(rules, d.Rule+":"+d.NodeID+d.From+">"+d.To)
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
			if got := lintRules(g, SeverityError); !slices.Equal(got, tt.errors) {
				t.Errorf("errors %q, want %q", got, tt.errors)
			}
			if got := lintRules(g, SeverityWarning); !slices.Equal(got, tt.warnings) {
				t.Errorf("warnings %q, want %q", got, tt.warnings)
			}
			err := g.Validate()
			if (err != nil) != (len(tt.errors) > 0) {
				t.Fatalf("Validate() = %v", err)
			}
			if err != nil && strings.Count(err.Error(), "pipeline t.dot") != len(tt.errors) {
				t.Errorf("Validate() = %q: want one line per error", err)
			}
		})
	}
}

func TestValidateMessages(t *testing.T) {
	g := mustParse(t, "digraph g {\n start [shape=Mdiamond]\n exit [shape=Msquare]\n start -> exit\n orphan [label=O]\n}")
	err := g.Validate()
	var de *DOTError
	if !errors.As(err, &de) || de.Rule != "reachability" || de.Line != 5 {
		t.Fatalf("got %#v", err)
	}
	if want := "pipeline t.dot:5: node orphan cannot be reached from start node start"; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	d := g.Lint()[0]
	if want := "pipeline t.dot:5: error: node orphan cannot be reached from start node start (reachability)"; d.String() != want {
		t.Errorf("Diagnostic.String() = %q, want %q", d, want)
	}
}

func TestValidateBuiltGraph(t *testing.T) {
	// Graphs built in code can name nodes that do not exist, and forget Order.
	g := &Graph{
		Nodes: map[string]*Node{
			"s": {ID: "s", Attrs: map[string]string{"shape": "Mdiamond"}},
			"x": {ID: "x", Attrs: map[string]string{"shape": "Msquare"}},
		},
		Edges: []*Edge{{From: "s", To: "x"}, {From: "s", To: "ghost", Line: 3}},
	}
	if got := lintRules(g, SeverityError); !slices.Equal(got, []string{"edge_target_exists:s>ghost"}) {
		t.Errorf("errors %q", got)
	}
	if g.Start().ID != "s" || g.Exit().ID != "x" {
		t.Error("Start/Exit must see nodes missing from Order")
	}
}

func TestLinear(t *testing.T) {
	tasks, err := ParseMilestone(readTestdata(t, "v2-m3-retry-escalate-brain.md"))
	if err != nil {
		t.Fatal(err)
	}
	g := Linear("M3: retry or escalate", tasks)
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if w := lintRules(g, SeverityWarning); len(w) > 0 {
		t.Errorf("warnings %v", w)
	}
	want := []string{"start", "3.1", "3.2", "3.3", "3.4", "exit"}
	if !slices.Equal(g.Order, want) {
		t.Fatalf("order %v, want %v", g.Order, want)
	}
	var path []string
	for id := g.Start().ID; id != ""; {
		path = append(path, id)
		e, err := SelectEdge(g, id, Outcome{Status: StatusSuccess}, nil)
		if err != nil {
			t.Fatal(err)
		}
		id = ""
		if e != nil {
			id = e.To
		}
	}
	if !slices.Equal(path, want) {
		t.Errorf("walk %v, want %v", path, want)
	}
	n := g.Nodes["3.2"]
	if n.Label() != tasks[1].Title || n.Attrs["prompt"] != tasks[1].Description || n.Line != tasks[1].Line || n.Handler() != HandlerCodergen {
		t.Errorf("node 3.2 = %+v", n)
	}
	if g.Goal() != "M3: retry or escalate" || g.Prompt(n) != tasks[1].Description {
		t.Errorf("goal %q", g.Goal())
	}

	empty := Linear("nothing", nil)
	if err := empty.Validate(); err != nil || fmt.Sprint(empty.Order) != "[start exit]" {
		t.Errorf("empty: %v %v", empty.Order, err)
	}

	odd := Linear("odd", []Task{{ID: "start", Title: "S"}, {ID: "end", Title: "E"}, {ID: "exit", Title: "X"}})
	if err := odd.Validate(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(odd.Order) != "[start_1 start end exit exit_1]" || odd.Nodes["end"].Handler() != HandlerCodergen {
		t.Errorf("reserved ids: %v", odd.Order)
	}
}
