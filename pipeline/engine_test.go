package pipeline

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/jobs"
)

// engineGraph parses an inline pipeline for the engine tests.
func engineGraph(t *testing.T, src string) *Graph {
	t.Helper()
	g, err := ParseDOT("test.dot", src)
	if err != nil {
		t.Fatalf("ParseDOT: %v\n%s", err, src)
	}
	return g
}

// beginAt starts a run of g and fails the test unless it stops at node want.
func beginAt(t *testing.T, g *Graph, want string) (*jobs.Checkpoint, Stop) {
	t.Helper()
	cp := &jobs.Checkpoint{}
	stop, err := Begin(g, cp)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if stop.Ended() || stop.Node.ID != want {
		t.Fatalf("Begin stopped at %s, want %s", stopName(stop), want)
	}
	return cp, stop
}

// advance completes the checkpoint's current node with o and fails the test on an error.
func advance(t *testing.T, g *Graph, cp *jobs.Checkpoint, o Outcome) Stop {
	t.Helper()
	stop, err := Advance(g, cp, o)
	if err != nil {
		t.Fatalf("Advance(%s, %s): %v", cp.Current, o.Status, err)
	}
	return stop
}

// advanceTo is advance, then checks that the run stopped at node want.
func advanceTo(t *testing.T, g *Graph, cp *jobs.Checkpoint, o Outcome, want string) Stop {
	t.Helper()
	from := cp.Current
	stop := advance(t, g, cp, o)
	if stop.Ended() || stop.Node.ID != want {
		t.Fatalf("Advance(%s, %s) stopped at %s, want %s", from, o.Status, stopName(stop), want)
	}
	return stop
}

func stopName(s Stop) string {
	if s.Ended() {
		return fmt.Sprintf("the end (%s: %s)", s.Status, s.Reason)
	}
	if s.Loop {
		return s.Node.ID + " (loop)"
	}
	return s.Node.ID
}

// hopsString prints hops as "node(handler) status -route-> next", one per line.
func hopsString(hops []Hop) string {
	var b strings.Builder
	for _, h := range hops {
		fmt.Fprintf(&b, "%s(%s) %s -%s-> %s\n", h.Node, h.Handler, h.Status, h.Route, h.Next)
	}
	return b.String()
}

func checkHops(t *testing.T, got []Hop, want string) {
	t.Helper()
	if g := hopsString(got); g != want {
		t.Errorf("hops:\n%s\nwant:\n%s", g, want)
	}
}

const linearDOT = `digraph linear {
	graph [goal="Ship the cache", label="Linear test", default_max_retries=1]
	start [shape=Mdiamond]
	exit  [shape=Msquare]
	plan  [shape=box, prompt="Plan: $goal"]
	build [shape=box]
	start -> plan -> build -> exit
}`

func TestBeginLinear(t *testing.T) {
	g := engineGraph(t, linearDOT)
	// Begin starts afresh, whatever the checkpoint held.
	cp := &jobs.Checkpoint{Current: "build", Last: "build", Completed: []string{"old"},
		Outcomes: map[string]string{"build": StatusFail}, Visits: map[string]int{"plan": 9},
		Context: map[string]string{"stale": "x"}}
	stop, err := Begin(g, cp)
	if err != nil {
		t.Fatal(err)
	}
	if stop.Ended() || stop.Node.ID != "plan" || stop.Loop {
		t.Fatalf("Begin stopped at %s, want plan", stopName(stop))
	}
	checkHops(t, stop.Hops, "start(start) success -edge-> plan\n")
	if cp.Current != "plan" || cp.Context["current_node"] != "plan" {
		t.Errorf("Current %q, current_node %q; want plan", cp.Current, cp.Context["current_node"])
	}
	wantCtx := map[string]string{
		"graph.goal": "Ship the cache", "graph.label": "Linear test", "graph.default_max_retries": "1",
		"current_node": "plan", "outcome": StatusSuccess,
	}
	if !reflect.DeepEqual(cp.Context, wantCtx) {
		t.Errorf("context %v\nwant    %v", cp.Context, wantCtx)
	}
	if !reflect.DeepEqual(cp.Visits, map[string]int{"plan": 1}) {
		t.Errorf("visits %v, want plan:1", cp.Visits)
	}
	if !reflect.DeepEqual(cp.Completed, []string{"start"}) || cp.Last != "start" {
		t.Errorf("completed %v last %q, want [start] start", cp.Completed, cp.Last)
	}
	if !reflect.DeepEqual(cp.Outcomes, map[string]string{"start": StatusSuccess}) {
		t.Errorf("outcomes %v", cp.Outcomes)
	}
}

func TestBeginEndsWithoutWork(t *testing.T) {
	g := engineGraph(t, `digraph g {
		start [shape=Mdiamond]; exit [shape=Msquare]
		d [shape=diamond]
		start -> d -> exit
	}`)
	var cp jobs.Checkpoint
	stop, err := Begin(g, &cp)
	if err != nil {
		t.Fatal(err)
	}
	if !stop.Ended() || stop.Status != StatusSuccess {
		t.Fatalf("stopped at %s, want a successful end", stopName(stop))
	}
	checkHops(t, stop.Hops, "start(start) success -edge-> d\nd(conditional) success -edge-> exit\nexit(exit) success --> \n")
	if want := []string{"start", "d", "exit"}; !reflect.DeepEqual(cp.Completed, want) {
		t.Errorf("completed %v, want %v", cp.Completed, want)
	}
}

func TestBeginErrors(t *testing.T) {
	for name, src := range map[string]string{
		"no start":   `digraph g { a; exit [shape=Msquare]; a -> exit }`,
		"two starts": `digraph g { s1 [shape=Mdiamond]; s2 [shape=Mdiamond]; a; s1 -> a; s2 -> a }`,
	} {
		t.Run(name, func(t *testing.T) {
			var cp jobs.Checkpoint
			_, err := Begin(engineGraph(t, src), &cp)
			var de *dotError
			if !errors.As(err, &de) || de.rule != "start_node" {
				t.Errorf("err %v, want a start_node dotError", err)
			}
		})
	}
	t.Run("an edge to no node", func(t *testing.T) {
		g := &Graph{Nodes: map[string]*Node{"start": {ID: "start", Attrs: map[string]string{"shape": "Mdiamond"}}},
			Edges: []*Edge{{from: "start", to: "ghost", attrs: map[string]string{}}}}
		var cp jobs.Checkpoint
		if _, err := Begin(g, &cp); err == nil || !strings.Contains(err.Error(), "ghost") {
			t.Errorf("err %v, want one naming ghost", err)
		}
	})
}

func TestAdvanceLinear(t *testing.T) {
	g := engineGraph(t, linearDOT)
	cp, _ := beginAt(t, g, "plan")

	stop := advanceTo(t, g, cp, Outcome{Status: StatusSuccess, preferredLabel: "Anything",
		ContextUpdates: map[string]string{"plan.file": "PLAN.md"}, Notes: "planned"}, "build")
	checkHops(t, stop.Hops, "plan(codergen) success -edge-> build\n")
	if stop.Hops[0].Note != "planned" {
		t.Errorf("hop note %q, want the outcome's notes", stop.Hops[0].Note)
	}
	for k, want := range map[string]string{"outcome": StatusSuccess, "preferred_label": "Anything",
		"plan.file": "PLAN.md", "current_node": "build", "graph.goal": "Ship the cache"} {
		if got := cp.Context[k]; got != want {
			t.Errorf("context %s = %q, want %q", k, got, want)
		}
	}
	if cp.Current != "build" || cp.Last != "plan" || cp.Visits["build"] != 1 {
		t.Errorf("current %q last %q visits %v", cp.Current, cp.Last, cp.Visits)
	}

	stop = advance(t, g, cp, Outcome{Status: statusPartialSuccess})
	if !stop.Ended() || stop.Status != StatusSuccess || stop.Reason != "Pipeline completed" || stop.Loop {
		t.Fatalf("stopped at %s, want a successful end", stopName(stop))
	}
	checkHops(t, stop.Hops, "build(codergen) partial_success -edge-> exit\nexit(exit) success --> \n")
	if _, ok := cp.Context["preferred_label"]; ok {
		t.Errorf("preferred_label %q survived an outcome without one", cp.Context["preferred_label"])
	}
	if want := []string{"start", "plan", "build", "exit"}; !reflect.DeepEqual(cp.Completed, want) {
		t.Errorf("completed %v, want %v", cp.Completed, want)
	}
	wantOutcomes := map[string]string{"start": StatusSuccess, "plan": StatusSuccess, "build": statusPartialSuccess, "exit": StatusSuccess}
	if !reflect.DeepEqual(cp.Outcomes, wantOutcomes) {
		t.Errorf("outcomes %v, want %v", cp.Outcomes, wantOutcomes)
	}
	if cp.Current != "exit" || cp.Last != "exit" || cp.Context["outcome"] != StatusSuccess {
		t.Errorf("current %q last %q outcome %q", cp.Current, cp.Last, cp.Context["outcome"])
	}
}

func TestAdvanceContextOutcome(t *testing.T) {
	g := engineGraph(t, linearDOT)
	cp, _ := beginAt(t, g, "plan")
	advanceTo(t, g, cp, Outcome{Status: statusPartialSuccess}, "build")
	if cp.Context["outcome"] != statusPartialSuccess || cp.Outcomes["plan"] != statusPartialSuccess {
		t.Errorf("outcome %q, plan's outcome %q; want partial_success", cp.Context["outcome"], cp.Outcomes["plan"])
	}
}

func TestAdvanceSkippedRecordsNoOutcome(t *testing.T) {
	g := engineGraph(t, linearDOT)
	cp, _ := beginAt(t, g, "plan")
	advanceTo(t, g, cp, Outcome{Status: statusSkipped}, "build")
	if s, ok := cp.Outcomes["plan"]; ok {
		t.Errorf("a skipped node has outcome %q", s)
	}
	if cp.Completed[len(cp.Completed)-1] != "plan" {
		t.Errorf("completed %v: a skipped node is still completed", cp.Completed)
	}
}

func TestAdvanceUnknownCurrent(t *testing.T) {
	g := engineGraph(t, linearDOT)
	cp := &jobs.Checkpoint{Current: "nosuch"}
	if _, err := Advance(g, cp, Outcome{Status: StatusSuccess}); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("err %v, want one naming the node", err)
	}
}

func TestAdvanceBoundsCompleted(t *testing.T) {
	g := engineGraph(t, linearDOT)
	cp, _ := beginAt(t, g, "plan")
	cp.Completed = make([]string, jobs.MaxCompleted)
	for i := range cp.Completed {
		cp.Completed[i] = fmt.Sprint(i)
	}
	advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "build")
	if len(cp.Completed) != jobs.MaxCompleted || cp.Completed[0] != "1" || cp.Completed[len(cp.Completed)-1] != "plan" {
		t.Errorf("completed has %d entries, %q … %q", len(cp.Completed), cp.Completed[0], cp.Completed[len(cp.Completed)-1])
	}
}

// branchDOT is the spec's branch pattern: validate's outcome flows into a diamond that routes on it.
const branchDOT = `digraph branch {
	graph [goal="Implement and validate"]
	node [shape=box]
	start     [shape=Mdiamond]
	exit      [shape=Msquare]
	plan; implement; validate
	gate      [shape=diamond, label="Tests passing?"]
	start -> plan -> implement -> validate -> gate
	gate -> exit      [label="Yes", condition="outcome=success"]
	gate -> implement [label="No", condition="outcome!=success"]
}`

func TestConditionalPassesOutcome(t *testing.T) {
	g := engineGraph(t, branchDOT)
	cp, _ := beginAt(t, g, "plan")
	advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "implement")
	advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "validate")

	if !FailureRoute(g, cp, "validate", Outcome{Status: StatusFail}) {
		t.Error("FailureRoute(validate): false, but the diamond takes the failure")
	}
	stop := advanceTo(t, g, cp, Outcome{Status: StatusFail, FailureReason: "2 tests fail"}, "implement")
	checkHops(t, stop.Hops, "validate(codergen) fail -edge-> gate\ngate(conditional) fail -condition-> implement\n")
	if cp.Outcomes["gate"] != StatusFail || cp.Outcomes["validate"] != StatusFail || cp.Context["outcome"] != StatusFail {
		t.Errorf("outcomes %v, context outcome %q", cp.Outcomes, cp.Context["outcome"])
	}
	if cp.Visits["implement"] != 2 {
		t.Errorf("implement visited %d times, want 2", cp.Visits["implement"])
	}

	advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "validate")
	stop = advance(t, g, cp, Outcome{Status: StatusSuccess})
	if !stop.Ended() || stop.Status != StatusSuccess {
		t.Fatalf("stopped at %s, want a successful end", stopName(stop))
	}
	checkHops(t, stop.Hops, "validate(codergen) success -edge-> gate\ngate(conditional) success -condition-> exit\nexit(exit) success --> \n")
	want := []string{"start", "plan", "implement", "validate", "gate", "implement", "validate", "gate", "exit"}
	if !reflect.DeepEqual(cp.Completed, want) {
		t.Errorf("completed %v\nwant      %v", cp.Completed, want)
	}
}

func TestConditionalPassesPreferredLabel(t *testing.T) {
	g := engineGraph(t, `digraph g {
		start [shape=Mdiamond]; exit [shape=Msquare]
		review; ship; rework
		choose [shape=diamond]
		start -> review -> choose
		choose -> ship   [label="[S] Ship", weight=5]
		choose -> rework [label="[R] Rework"]
		ship -> exit; rework -> exit
	}`)
	cp, _ := beginAt(t, g, "review")
	stop := advanceTo(t, g, cp, Outcome{Status: StatusSuccess, preferredLabel: "rework"}, "rework")
	checkHops(t, stop.Hops, "review(codergen) success -edge-> choose\nchoose(conditional) success -label-> rework\n")

	cp, _ = beginAt(t, g, "review")
	advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "ship")
}

func TestFailureRouting(t *testing.T) {
	tests := []struct {
		name   string
		body   string // nodes and edges besides start -> work
		o      Outcome
		want   string // the node the run stops at; "" for the end
		hops   string
		reason string // the end's reason
	}{
		{
			name: "an outcome=fail edge wins",
			body: `work [retry_target=other]
				check [shape=diamond]
				work -> fixer [condition="outcome=fail"]
				work -> check
				work -> next
				check -> other [condition="outcome=fail"]`,
			want: "fixer",
			hops: "work(codergen) fail -condition-> fixer\n",
		},
		{
			name: "a condition on the context",
			body: `work -> fixer [condition="context.flaky=true"]
				work -> next`,
			o:    Outcome{Status: StatusFail, ContextUpdates: map[string]string{"flaky": "true"}},
			want: "fixer",
			hops: "work(codergen) fail -condition-> fixer\n",
		},
		{
			name: "an unconditional edge into a diamond",
			body: `work [retry_target=other]
				check [shape=diamond]
				work -> next [weight=9]
				work -> check
				check -> fixer [condition="outcome=fail"]
				check -> next [condition="outcome=success"]`,
			want: "fixer",
			hops: "work(codergen) fail -edge-> check\ncheck(conditional) fail -condition-> fixer\n",
		},
		{
			name: "retry_target",
			body: `work [retry_target=fixer, fallback_retry_target=other]
				work -> next`,
			want: "fixer",
			hops: "work(codergen) fail -retry_target-> fixer\n",
		},
		{
			name: "fallback_retry_target",
			body: `work [fallback_retry_target=fixer]
				work -> next`,
			want: "fixer",
			hops: "work(codergen) fail -retry_target-> fixer\n",
		},
		{
			name: "fallback_retry_target when retry_target names no node",
			body: `work [retry_target=nosuch, fallback_retry_target=fixer]
				work -> next`,
			want: "fixer",
			hops: "work(codergen) fail -retry_target-> fixer\n",
		},
		{
			name:   "never along a plain edge to a box",
			body:   `work -> next [weight=3]`,
			hops:   "work(codergen) fail --> \n",
			reason: "the build broke",
		},
		{
			name:   "an outcome=success edge does not take a failure",
			body:   `work -> next [condition="outcome=success"]`,
			hops:   "work(codergen) fail --> \n",
			reason: "the build broke",
		},
		{
			name:   "no edges at all",
			body:   `work`,
			hops:   "work(codergen) fail --> \n",
			reason: "the build broke",
		},
		{
			name:   "a failure without a reason",
			body:   `work -> next`,
			o:      Outcome{Status: StatusFail},
			hops:   "work(codergen) fail --> \n",
			reason: "stage work failed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := engineGraph(t, `digraph g {
				start [shape=Mdiamond]; exit [shape=Msquare]
				start -> work
				fixer -> exit; next -> exit; other -> exit
				`+tt.body+`
			}`)
			cp, _ := beginAt(t, g, "work")
			o := tt.o
			if o.Status == "" {
				o = Outcome{Status: StatusFail, FailureReason: "the build broke"}
			}
			routed := FailureRoute(g, cp, "work", o)
			stop := advance(t, g, cp, o)
			checkHops(t, stop.Hops, tt.hops)
			if routed != (tt.want != "") {
				t.Errorf("FailureRoute = %v, but Advance stopped at %s", routed, stopName(stop))
			}
			if tt.want == "" {
				if !stop.Ended() || stop.Status != StatusFail || stop.Reason != tt.reason {
					t.Errorf("stopped at %s, want a failed end: %s", stopName(stop), tt.reason)
				}
				return
			}
			if stop.Ended() || stop.Node.ID != tt.want {
				t.Errorf("stopped at %s, want %s", stopName(stop), tt.want)
			}
			if cp.Outcomes["work"] != StatusFail {
				t.Errorf("work's outcome %q", cp.Outcomes["work"])
			}
		})
	}
}

func TestFailureRouteUnknownNode(t *testing.T) {
	g := engineGraph(t, linearDOT)
	if FailureRoute(g, nil, "nosuch", Outcome{Status: StatusFail}) {
		t.Error("FailureRoute of an unknown node: true")
	}
	g = engineGraph(t, `digraph g { start [shape=Mdiamond]; work [retry_target=start]; start -> work }`)
	if !FailureRoute(g, nil, "work", Outcome{Status: StatusFail}) {
		t.Error("FailureRoute with a nil checkpoint: false")
	}
}

// A FAIL whose only way on is a diamond with no edge for failures has no route there: the stage's retry_target is
// tried next, and without one the run ends with the stage's own failure reason (spec §3.7) — and FailureRoute says
// so, so that the worker asks a person instead.
func TestFailureThroughDiamondWithoutFailEdge(t *testing.T) {
	tests := []struct {
		name, work string
		retryTo    string
	}{
		{name: "no retry_target", work: "work"},
		{name: "with a retry_target", work: "work [retry_target=fixer]", retryTo: "fixer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := engineGraph(t, `digraph g {
				start [shape=Mdiamond]; exit [shape=Msquare]
				check [shape=diamond]
				`+tt.work+`
				start -> work -> check
				check -> exit [condition="outcome=success"]
				fixer -> work
			}`)
			cp, _ := beginAt(t, g, "work")
			o := Outcome{Status: StatusFail, FailureReason: "the build broke"}
			routed := FailureRoute(g, cp, "work", o)
			stop := advance(t, g, cp, o)
			if tt.retryTo != "" {
				if !routed || stop.Ended() || stop.Node.ID != tt.retryTo {
					t.Fatalf("FailureRoute %v, stopped at %s, want work's retry_target %s", routed, stopName(stop), tt.retryTo)
				}
				return
			}
			if routed || !stop.Ended() || stop.Status != StatusFail || stop.Reason != "the build broke" {
				t.Fatalf("FailureRoute %v, stopped at %s: %q", routed, stopName(stop), stop.Reason)
			}
			checkHops(t, stop.Hops, "work(codergen) fail --> \n")
		})
	}
}

// A failure that a diamond does route keeps its reason when the route ends the run.
func TestFailureReasonThroughDiamond(t *testing.T) {
	g := engineGraph(t, `digraph g {
		start [shape=Mdiamond]; exit [shape=Msquare]
		check [shape=diamond]
		start -> work -> check
		check -> exit [condition="outcome=success"]
		check -> report [condition="outcome=fail"]
		report [shape=diamond]
		report -> exit [condition="outcome=success"]
	}`)
	cp, _ := beginAt(t, g, "work")
	stop := advance(t, g, cp, Outcome{Status: StatusFail, FailureReason: "the build broke"})
	if !stop.Ended() || stop.Status != StatusFail || stop.Reason != "the build broke" {
		t.Fatalf("stopped at %s: %q", stopName(stop), stop.Reason)
	}
}

func TestAdvanceRetryIsFailure(t *testing.T) {
	t.Run("no route", func(t *testing.T) {
		g := engineGraph(t, linearDOT)
		cp, _ := beginAt(t, g, "plan")
		stop := advance(t, g, cp, Outcome{Status: statusRetry})
		if !stop.Ended() || stop.Status != StatusFail || stop.Reason != "max retries exceeded" {
			t.Errorf("stopped at %s, want a failed end: max retries exceeded", stopName(stop))
		}
		checkHops(t, stop.Hops, "plan(codergen) fail --> \n")
		if cp.Outcomes["plan"] != StatusFail || cp.Context["outcome"] != StatusFail {
			t.Errorf("plan's outcome %q, context outcome %q; want fail", cp.Outcomes["plan"], cp.Context["outcome"])
		}
	})
	t.Run("its own reason", func(t *testing.T) {
		g := engineGraph(t, linearDOT)
		cp, _ := beginAt(t, g, "plan")
		stop := advance(t, g, cp, Outcome{Status: statusRetry, FailureReason: "rate limited"})
		if stop.Status != StatusFail || stop.Reason != "rate limited" {
			t.Errorf("stopped at %s, want a failed end: rate limited", stopName(stop))
		}
	})
	t.Run("takes the fail edge", func(t *testing.T) {
		g := engineGraph(t, `digraph g {
			start [shape=Mdiamond]; exit [shape=Msquare]
			start -> work -> exit
			work -> fixer [condition="outcome=fail"]
			work -> other [condition="outcome=retry"]
			fixer -> exit; other -> exit
		}`)
		cp, _ := beginAt(t, g, "work")
		advanceTo(t, g, cp, Outcome{Status: statusRetry}, "fixer")
	})
}

func TestGoalGates(t *testing.T) {
	const src = `digraph g {
		graph [goal="x"%s]
		start [shape=Mdiamond]; exit [shape=Msquare]
		plan
		impl [goal_gate=true%s]
		review
		start -> plan -> impl
		impl -> review [condition="outcome!=fail"]
		impl -> exit   [condition="outcome=fail"]
		review -> exit
	}`
	tests := []struct {
		name, graphAttrs, nodeAttrs string
		retryTo                     string // where the run goes from the exit; "" for a failed end
	}{
		{name: "retry_target", nodeAttrs: ", retry_target=plan", retryTo: "plan"},
		{name: "fallback_retry_target", nodeAttrs: ", fallback_retry_target=plan", retryTo: "plan"},
		{name: "retry_target before fallback", nodeAttrs: ", retry_target=impl, fallback_retry_target=plan", retryTo: "impl"},
		{name: "graph retry_target", graphAttrs: ", retry_target=plan", retryTo: "plan"},
		{name: "graph fallback_retry_target", graphAttrs: `, fallback_retry_target=plan`, retryTo: "plan"},
		{name: "node before graph", graphAttrs: ", retry_target=plan", nodeAttrs: ", retry_target=impl", retryTo: "impl"},
		{name: "no target"},
		{name: "targets naming no node", graphAttrs: ", retry_target=nosuch", nodeAttrs: ", retry_target=ghost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := engineGraph(t, fmt.Sprintf(src, tt.graphAttrs, tt.nodeAttrs))
			cp, _ := beginAt(t, g, "plan")
			advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "impl")
			stop := advance(t, g, cp, Outcome{Status: StatusFail, FailureReason: "not done"})
			if tt.retryTo == "" {
				if !stop.Ended() || stop.Status != StatusFail || !strings.HasPrefix(stop.Reason, "Goal gate unsatisfied") ||
					!strings.Contains(stop.Reason, "impl") {
					t.Fatalf("stopped at %s, want a failed end: Goal gate unsatisfied … impl", stopName(stop))
				}
				checkHops(t, stop.Hops, "impl(codergen) fail -condition-> exit\nexit(exit) fail -goal_gate-> \n")
				return
			}
			if stop.Ended() || stop.Node.ID != tt.retryTo {
				t.Fatalf("stopped at %s, want %s", stopName(stop), tt.retryTo)
			}
			checkHops(t, stop.Hops, "impl(codergen) fail -condition-> exit\nexit(exit) retry -goal_gate-> "+tt.retryTo+"\n")
			if stop.Hops[1].Note == "" {
				t.Error("the goal gate hop has no note")
			}
			for _, id := range cp.Completed {
				if id == "exit" {
					t.Errorf("completed %v: the exit completed with a goal gate unsatisfied", cp.Completed)
				}
			}
			// Once the gate succeeds the run ends.
			if tt.retryTo == "plan" {
				advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "impl")
			}
			advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "review")
			if stop := advance(t, g, cp, Outcome{Status: StatusSuccess}); !stop.Ended() || stop.Status != StatusSuccess {
				t.Errorf("stopped at %s after the goal gate succeeded", stopName(stop))
			}
		})
	}
	t.Run("partial success satisfies", func(t *testing.T) {
		g := engineGraph(t, fmt.Sprintf(src, "", ""))
		cp, _ := beginAt(t, g, "plan")
		advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "impl")
		advanceTo(t, g, cp, Outcome{Status: statusPartialSuccess}, "review")
		if stop := advance(t, g, cp, Outcome{Status: StatusSuccess}); !stop.Ended() || stop.Status != StatusSuccess {
			t.Errorf("stopped at %s", stopName(stop))
		}
	})
	t.Run("a goal gate not run does not block", func(t *testing.T) {
		g := engineGraph(t, `digraph g {
			start [shape=Mdiamond]; exit [shape=Msquare]
			start -> work
			work -> exit [condition="outcome=success"]
			work -> gated [condition="outcome=fail"]
			gated [goal_gate=true]
			gated -> exit
		}`)
		cp, _ := beginAt(t, g, "work")
		if stop := advance(t, g, cp, Outcome{Status: StatusSuccess}); !stop.Ended() || stop.Status != StatusSuccess {
			t.Errorf("stopped at %s", stopName(stop))
		}
	})
}

const humanGateDOT = `digraph g {
	start [shape=Mdiamond]; exit [shape=Msquare]
	work
	review [shape=hexagon, label="Review the plan"]
	apply; revise
	start -> work -> review
	review -> apply  [label="[A] Approve"]
	review -> revise [label="[R] Reject", weight=10]
	apply -> exit
	revise -> review
}`

func TestHumanGate(t *testing.T) {
	g := engineGraph(t, humanGateDOT)
	tests := []struct {
		answer, key, label, to string
	}{
		{"A", "A", "Approve", "apply"},
		{" a ", "A", "Approve", "apply"},
		{"approve", "A", "Approve", "apply"},
		{"[A] Approve", "A", "Approve", "apply"},
		{"apply", "A", "Approve", "apply"},
		{"R", "R", "Reject", "revise"},
		{"reject", "R", "Reject", "revise"},
		{"revise", "R", "Reject", "revise"},
	}
	for _, tt := range tests {
		t.Run(tt.answer, func(t *testing.T) {
			o := GateOutcome(g, "review", tt.answer)
			if o.Status != StatusSuccess || !reflect.DeepEqual(o.suggestedNextIDs, []string{tt.to}) {
				t.Fatalf("GateOutcome(%q) = %+v, want success to %s", tt.answer, o, tt.to)
			}
			wantUpdates := map[string]string{"human.gate.selected": tt.key, "human.gate.label": tt.label}
			if !reflect.DeepEqual(o.ContextUpdates, wantUpdates) {
				t.Errorf("context updates %v, want %v", o.ContextUpdates, wantUpdates)
			}
			cp, _ := beginAt(t, g, "work")
			advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "review")
			stop := advanceTo(t, g, cp, o, tt.to)
			checkHops(t, stop.Hops, "review(wait.human) success -suggested-> "+tt.to+"\n")
			if cp.Context["human.gate.selected"] != tt.key || cp.Context["human.gate.label"] != tt.label {
				t.Errorf("context selected %q label %q", cp.Context["human.gate.selected"], cp.Context["human.gate.label"])
			}
		})
	}
	t.Run("weight decides without an answer", func(t *testing.T) {
		// What makes the suggested target matter: the heavier edge leads elsewhere.
		cp, _ := beginAt(t, g, "work")
		advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "review")
		advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "revise")
	})
	t.Run("round trip through the gate", func(t *testing.T) {
		cp, _ := beginAt(t, g, "work")
		advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "review")
		advanceTo(t, g, cp, GateOutcome(g, "review", "R"), "revise")
		advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "review")
		advanceTo(t, g, cp, GateOutcome(g, "review", "A"), "apply")
		if stop := advance(t, g, cp, Outcome{Status: StatusSuccess}); !stop.Ended() || stop.Status != StatusSuccess {
			t.Errorf("stopped at %s", stopName(stop))
		}
	})
	for _, answer := range []string{"maybe", "", "  ", "X"} {
		t.Run("not a choice "+strings.TrimSpace(answer), func(t *testing.T) {
			o := GateOutcome(g, "review", answer)
			if o.Status != StatusFail || o.FailureReason == "" || len(o.suggestedNextIDs) != 0 {
				t.Fatalf("GateOutcome(%q) = %+v, want a FAIL", answer, o)
			}
			cp, _ := beginAt(t, g, "work")
			advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "review")
			if FailureRoute(g, cp, "review", o) {
				t.Error("FailureRoute(review) = true")
			}
			stop := advance(t, g, cp, o)
			if !stop.Ended() || stop.Status != StatusFail || stop.Reason != o.FailureReason {
				t.Errorf("stopped at %s, want a failed end: %s", stopName(stop), o.FailureReason)
			}
		})
	}
	t.Run("no outgoing edges", func(t *testing.T) {
		g := engineGraph(t, `digraph g {
			start [shape=Mdiamond]; exit [shape=Msquare]
			ask [shape=hexagon]
			start -> work -> ask
			work -> exit [condition="outcome=fail"]
		}`)
		o := GateOutcome(g, "ask", "A")
		if o.Status != StatusFail || o.FailureReason != "No outgoing edges for human gate" {
			t.Fatalf("GateOutcome = %+v", o)
		}
		cp, _ := beginAt(t, g, "work")
		advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "ask")
		stop := advance(t, g, cp, o)
		if !stop.Ended() || stop.Status != StatusFail || stop.Reason != "No outgoing edges for human gate" {
			t.Errorf("stopped at %s", stopName(stop))
		}
	})
}

func TestIsInteractive(t *testing.T) {
	g := engineGraph(t, `digraph g {
		a ["agent.mode"="interactive"]
		b ["agent.mode"=" Interactive "]
		c ["agent.mode"="batch"]
		d
	}`)
	for id, want := range map[string]bool{"a": true, "b": true, "c": false, "d": false} {
		if got := g.Nodes[id].isInteractive(); got != want {
			t.Errorf("%s: isInteractive() = %v, want %v", id, got, want)
		}
	}
}

const loopDOT = `digraph g {
	graph [goal="green tests"%s]
	start [shape=Mdiamond]; exit [shape=Msquare]
	fix; test
	check [shape=diamond]
	start -> fix -> test -> check
	check -> exit [condition="outcome=success"]
	check -> fix  [condition="outcome!=success"]
}`

func TestLoopGuard(t *testing.T) {
	tests := []struct {
		attrs string
		max   int
	}{
		{"", DefaultMaxNodeVisits},
		{", max_node_visits=2", 2},
		{", max_node_visits=7", 7},
		{", max_node_visits=0", DefaultMaxNodeVisits},
		{`, max_node_visits="lots"`, DefaultMaxNodeVisits},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("max %d%s", tt.max, tt.attrs), func(t *testing.T) {
			g := engineGraph(t, fmt.Sprintf(loopDOT, tt.attrs))
			if got := g.MaxNodeVisits(); got != tt.max {
				t.Fatalf("MaxNodeVisits() = %d, want %d", got, tt.max)
			}
			cp, stop := beginAt(t, g, "fix")
			for visit := 1; ; visit++ {
				if stop.Node.ID != "fix" || cp.Visits["fix"] != visit {
					t.Fatalf("visit %d: at %s with visits %v", visit, stopName(stop), cp.Visits)
				}
				if stop.Loop != (visit > tt.max) {
					t.Fatalf("visit %d of fix: Loop = %v, max %d", visit, stop.Loop, tt.max)
				}
				if stop.Loop {
					break
				}
				advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "test")
				stop = advanceTo(t, g, cp, Outcome{Status: StatusFail}, "fix")
			}
			// A human had a say: the count starts again.
			ResetVisits(cp)
			if len(cp.Visits) != 0 {
				t.Errorf("visits %v after ResetVisits", cp.Visits)
			}
			if stop := advanceTo(t, g, cp, Outcome{Status: StatusSuccess}, "test"); stop.Loop {
				t.Error("Loop right after ResetVisits")
			}
			if stop := advanceTo(t, g, cp, Outcome{Status: StatusFail}, "fix"); stop.Loop || cp.Visits["fix"] != 1 {
				t.Errorf("after ResetVisits: Loop %v, visits %v", stop.Loop, cp.Visits)
			}
		})
	}
	t.Run("ResetVisits(nil)", func(t *testing.T) {
		ResetVisits(nil) // must not panic
	})
}

func TestConditionalCycleIsAnError(t *testing.T) {
	t.Run("diamonds only", func(t *testing.T) {
		g := engineGraph(t, `digraph g {
			start [shape=Mdiamond]; exit [shape=Msquare]
			d1 [shape=diamond]; d2 [shape=diamond]
			start -> d1 -> d2 -> d1
			d2 -> exit [condition="outcome=fail"]
		}`)
		var cp jobs.Checkpoint
		done := make(chan error, 1)
		go func() {
			_, err := Begin(g, &cp)
			done <- err
		}()
		select {
		case err := <-done:
			var de *dotError
			if !errors.As(err, &de) || de.rule != "reachability" {
				t.Errorf("err %v, want a reachability dotError", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Begin did not return")
		}
	})
	t.Run("a goal gate whose target leads back to the exit", func(t *testing.T) {
		g := engineGraph(t, `digraph g {
			start [shape=Mdiamond]; exit [shape=Msquare]
			impl [goal_gate=true, retry_target=d]
			d [shape=diamond]
			start -> impl
			impl -> d
			d -> exit [condition="outcome=fail"]
		}`)
		cp, _ := beginAt(t, g, "impl")
		done := make(chan error, 1)
		go func() {
			_, err := Advance(g, cp, Outcome{Status: StatusFail})
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Error("no error")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Advance did not return")
		}
	})
}

func TestRetryDelay(t *testing.T) {
	within := func(t *testing.T, policy string, n int, lo, hi time.Duration) {
		t.Helper()
		for range 200 {
			if d := RetryDelay(policy, n, rand.Float64()); d < lo || d > hi {
				t.Fatalf("RetryDelay(%q, %d) = %v, want within [%v, %v]", policy, n, d, lo, hi)
			}
		}
	}
	ms := time.Millisecond
	tests := []struct {
		policy string
		n      int
		lo, hi time.Duration
	}{
		{"standard", 1, 100 * ms, 300 * ms},
		{"standard", 2, 200 * ms, 600 * ms},
		{"standard", 3, 400 * ms, 1200 * ms},
		{"", 1, 100 * ms, 300 * ms},
		{"Standard ", 3, 400 * ms, 1200 * ms},
		{"no-such-policy", 1, 100 * ms, 300 * ms},
		{"no-such-policy", 3, 400 * ms, 1200 * ms},
		{"aggressive", 2, 500 * ms, 1500 * ms},
		{"linear", 1, 250 * ms, 750 * ms},
		{"linear", 3, 250 * ms, 750 * ms},
		{"patient", 2, 3000 * ms, 9000 * ms},
		{"standard", 20, maxBackoff / 2, maxBackoff * 3 / 2},
		{"patient", 1000, maxBackoff / 2, maxBackoff * 3 / 2},
		{"standard", 1 << 30, maxBackoff / 2, maxBackoff * 3 / 2},
	}
	for _, tt := range tests {
		within(t, tt.policy, tt.n, tt.lo, tt.hi)
	}
	for _, c := range []struct {
		policy string
		n      int
	}{{"none", 1}, {"none", 5}, {" NONE", 3}, {"standard", 0}, {"standard", -1}} {
		if d := RetryDelay(c.policy, c.n, rand.Float64()); d != 0 {
			t.Errorf("RetryDelay(%q, %d) = %v, want 0", c.policy, c.n, d)
		}
	}
	// The jitter is there: 200 delays are not all the same.
	seen := map[time.Duration]bool{}
	for range 200 {
		seen[RetryDelay("standard", 1, rand.Float64())] = true
	}
	if len(seen) < 2 {
		t.Error("RetryDelay has no jitter")
	}
	// The jitter is the draw it is given: the same draw, the same delay.
	if d := RetryDelay("standard", 2, 0.25); d != 300*ms || RetryDelay("standard", 2, 0.25) != d {
		t.Errorf("RetryDelay(standard, 2, 0.25) = %v, want 300ms every time", d)
	}
}

func TestKnownBackoff(t *testing.T) {
	for policy, want := range map[string]bool{
		"none": true, "standard": true, "aggressive": true, "linear": true, "patient": true,
		" Standard ": true, "PATIENT": true,
		"": false, "exponential": false, "fast": false,
	} {
		if got := knownBackoff(policy); got != want {
			t.Errorf("knownBackoff(%q) = %v, want %v", policy, got, want)
		}
	}
}

func TestNodeAttempts(t *testing.T) {
	tests := []struct {
		name, graphAttrs, nodeAttrs string
		want                        int
	}{
		{"node max_retries", "", "max_retries=2", 3},
		{"node max_retries=0", "default_max_retries=4", "max_retries=0", 1},
		{"node before graph", "default_max_retries=4", "max_retries=1", 2},
		{"graph default_max_retries", "default_max_retries=4", "", 5},
		{"legacy default_max_retry", "default_max_retry=1", "", 2},
		{"default_max_retries before the legacy alias", "default_max_retries=2, default_max_retry=7", "", 3},
		{"neither", "", "", 0},
		{"a node value that is no count", "default_max_retries=3", `max_retries="x"`, 4},
		{"a negative node value", "", "max_retries=-1", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := engineGraph(t, fmt.Sprintf(`digraph g { graph [%s]; n [%s] }`, tt.graphAttrs, tt.nodeAttrs))
			if got := g.NodeAttempts(g.Nodes["n"]); got != tt.want {
				t.Errorf("NodeAttempts = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestGraphTasks(t *testing.T) {
	g := engineGraph(t, `digraph g {
		graph [goal="a faster build", default_max_retries=1]
		node [shape=box]
		start [shape=Mdiamond]; exit [shape=Msquare]
		measure [label="Measure", prompt="Measure $goal", timeout="900s", max_retries=2, backoff_policy=patient]
		decide  [shape=hexagon, label="Go for $goal?", timeout="1h"]
		check   [shape=diamond]
		talk    [label="Talk", "agent.mode"="interactive"]
		tool    [shape=parallelogram]
		plain
		start -> measure -> decide -> check -> talk -> tool -> plain -> exit
	}`)
	got := g.Tasks()
	want := []Task{
		{ID: "measure", Title: "Measure", Description: "Measure a faster build", Kind: jobs.KindAgent,
			Timeout: 900 * time.Second, MaxAttempts: 3, Backoff: "patient"},
		{ID: "decide", Title: "Go for a faster build?", Description: "Go for a faster build?", Kind: jobs.KindGate, Timeout: time.Hour},
		{ID: "talk", Title: "Talk", Description: "Talk", Kind: jobs.KindChat, MaxAttempts: 2},
		{ID: "plain", Title: "plain", Description: "plain", Kind: jobs.KindAgent, MaxAttempts: 2},
	}
	for i := range want {
		want[i].Line = g.Nodes[want[i].ID].line
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Tasks():\n%+v\nwant\n%+v", got, want)
	}
	if got := (&Graph{}).Tasks(); len(got) != 0 {
		t.Errorf("an empty graph has tasks %v", got)
	}
}

func TestGraphTasksFixtures(t *testing.T) {
	g := parseFixture(t, "orchestra/test-human-gate.dot")
	var ids, kinds []string
	for _, task := range g.Tasks() {
		ids = append(ids, task.ID)
		kinds = append(kinds, task.Kind)
	}
	if want := []string{"do_work", "review_gate", "apply", "revise"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("tasks %v, want %v", ids, want)
	}
	if want := []string{jobs.KindAgent, jobs.KindGate, jobs.KindAgent, jobs.KindAgent}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds %q, want %q", kinds, want)
	}
	g = parseFixture(t, "spec-examples/branch.dot")
	for _, task := range g.Tasks() {
		if task.Timeout != 900*time.Second {
			t.Errorf("%s: timeout %v, want the node default 900s", task.ID, task.Timeout)
		}
	}
	g = parseFixture(t, "orchestra/test-interactive.dot")
	if tasks := g.Tasks(); len(tasks) != 2 || tasks[0].Kind != jobs.KindChat || tasks[1].Kind != jobs.KindAgent {
		t.Errorf("test-interactive tasks %+v", tasks)
	}
}

func TestRunnable(t *testing.T) {
	for _, name := range []string{
		"orchestra/test-human-gate.dot",
		"orchestra/test-interactive.dot",
		"orchestra/test-branching.dot",
		"orchestra/test-linear.dot",
		"spec-examples/branch.dot",
		"spec-examples/simple_linear.dot",
		"attractorbench-tier3/goal_gate.dot",
	} {
		t.Run(name, func(t *testing.T) {
			if err := Runnable(parseFixture(t, name)); err != nil {
				t.Errorf("Runnable: %v", err)
			}
		})
	}
	for name, nodes := range map[string][]string{
		"orchestra/test-parallel.dot":  {"fan_out (parallel)", "fan_in (parallel.fan_in)"},
		"mammoth/conformance_test.dot": {"ParallelSetup (parallel)", "ParallelJoin (parallel.fan_in)"},
	} {
		t.Run(name, func(t *testing.T) {
			g := parseFixture(t, name)
			if err := g.validate(); err != nil {
				t.Fatalf("the fixture is not even valid: %v", err)
			}
			err := Runnable(g)
			var de *dotError
			if !errors.As(err, &de) || de.rule != "handler_supported" {
				t.Fatalf("err %v, want a handler_supported dotError", err)
			}
			for _, n := range nodes {
				if !strings.Contains(err.Error(), n) {
					t.Errorf("%q does not name %s", err, n)
				}
			}
			if strings.Contains(err.Error(), "synthesize") || strings.Contains(err.Error(), "ContextCheck") {
				t.Errorf("%q names a box node", err)
			}
		})
	}
	inline := map[string]struct {
		src, node string
	}{
		"house":         {`mgr [shape=house]`, "mgr (stack.manager_loop)"},
		"parallelogram": {`run [shape=parallelogram]`, "run (tool)"},
		"component":     {`par [shape=component]`, "par (parallel)"},
		"type=tool":     {`run [shape=box, type=tool]`, "run (tool)"},
	}
	for name, tt := range inline {
		t.Run(name, func(t *testing.T) {
			g := engineGraph(t, `digraph g {
				start [shape=Mdiamond]; exit [shape=Msquare]
				`+tt.src+`
				start -> `+strings.Fields(tt.src)[0]+` -> exit
			}`)
			err := Runnable(g)
			if err == nil || !strings.Contains(err.Error(), tt.node) {
				t.Errorf("err %v, want one naming %s", err, tt.node)
			}
		})
	}
	for _, name := range []string{"attractorbench-tier3/missing_start.dot", "orchestra/test-invalid-no-start-exit.dot", "attractorbench-tier3/orphan.dot"} {
		t.Run(name, func(t *testing.T) {
			if err := Runnable(parseFixture(t, name)); err == nil {
				t.Error("an invalid pipeline is runnable")
			}
		})
	}
	t.Run("missing start inline", func(t *testing.T) {
		err := Runnable(engineGraph(t, `digraph g { a; exit [shape=Msquare]; a -> exit }`))
		var de *dotError
		if !errors.As(err, &de) || de.rule != "start_node" {
			t.Errorf("err %v, want a start_node dotError", err)
		}
	})
}

// TestEngineConformanceWalk walks every runnable fixture with agents that always succeed and humans that always take
// the first choice: each must end or stop on a loop, never error.
func TestEngineConformanceWalk(t *testing.T) {
	runnable := 0
	for _, path := range dotFixtures(t) {
		name := filepath.ToSlash(strings.TrimPrefix(path, filepath.Join("testdata", "dot")+string(filepath.Separator)))
		t.Run(name, func(t *testing.T) {
			g, err := ParseDOT(name, readTestdata(t, filepath.Join("dot", name)))
			if err != nil {
				t.Skipf("does not parse: %v", err)
			}
			if err := Runnable(g); err != nil {
				t.Skipf("not runnable: %v", err)
			}
			runnable++
			var cp jobs.Checkpoint
			stop, err := Begin(g, &cp)
			var trail []string
			for step := 0; ; step++ {
				if err != nil {
					t.Fatalf("step %d: %v\ntrail %v", step, err, trail)
				}
				if stop.Ended() {
					if stop.Status != StatusSuccess {
						t.Errorf("ended %s: %s; trail %v", stop.Status, stop.Reason, trail)
					}
					if last := cp.Completed[len(cp.Completed)-1]; g.Nodes[last].Handler() != handlerExit {
						t.Errorf("ended at %s, not at the exit", last)
					}
					return
				}
				if stop.Loop {
					t.Logf("stopped on a loop at %s; trail %v", stop.Node.ID, trail)
					return
				}
				if step >= 200 {
					t.Fatalf("no end after 200 steps; trail %v", trail)
				}
				n := stop.Node
				if cp.Current != n.ID {
					t.Fatalf("stop at %s, checkpoint at %s", n.ID, cp.Current)
				}
				trail = append(trail, n.ID)
				var o Outcome
				switch n.Handler() {
				case handlerWaitHuman:
					choices := Choices(g, n.ID)
					if len(choices) == 0 {
						t.Fatalf("gate %s has no choices", n.ID)
					}
					o = GateOutcome(g, n.ID, choices[0].Key)
				case handlerCodergen:
					o = Outcome{Status: StatusSuccess}
				default:
					t.Fatalf("stopped at %s, a %s node", n.ID, n.Handler())
				}
				stop, err = Advance(g, &cp, o)
			}
		})
	}
	if runnable < 5 {
		t.Errorf("only %d fixtures are runnable", runnable)
	}
}

// The engine on any graph the parser accepts and Runnable lets through: whatever the outcomes, every walk ends,
// stops at a node that does work, or returns an error — never a panic, never a walk without bound.
func FuzzWalk(f *testing.F) {
	dotSeeds(f)
	f.Fuzz(func(t *testing.T, src string) {
		g, err := ParseDOT("fuzz.dot", src)
		if err != nil || Runnable(g) != nil {
			return
		}
		statuses := []string{StatusSuccess, StatusFail, statusPartialSuccess, statusRetry, statusSkipped}
		cp := &jobs.Checkpoint{}
		stop, err := Begin(g, cp)
		for i := 0; err == nil && !stop.Ended() && i < 50; i++ {
			if stop.Loop {
				ResetVisits(cp)
			}
			o := Outcome{Status: statuses[(i+len(src))%len(statuses)], FailureReason: "fuzz"}
			if stop.Node.Handler() == handlerWaitHuman {
				if choices := Choices(g, stop.Node.ID); len(choices) > 0 {
					o = GateOutcome(g, stop.Node.ID, choices[i%len(choices)].Key)
				}
			}
			FailureRoute(g, cp, stop.Node.ID, o)
			stop, err = Advance(g, cp, o)
		}
		if err != nil {
			var de *dotError
			if !errors.As(err, &de) {
				t.Fatalf("engine error %v is not a *dotError", err)
			}
		}
	})
}
