package pipeline

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/orchrun/orch/internal/backoff"
	"github.com/orchrun/orch/jobs"
)

// The engine is the traversal of attractor spec §3.2, cut at the nodes that do work. The worker runs those nodes (an
// agent task, a human gate, an interactive chat: each may take hours and park the run); everything between them —
// recording an outcome, context updates, edge selection, failure routing, the start and conditional nodes, goal gates
// at the exit — is decided here, in one call, on the run's checkpoint, inside the transaction that saves it.

// Runnable handlers: what orch's engine runs. Others parse and validate but cannot run here.
var runnable = map[string]bool{
	handlerStart: true, handlerExit: true, handlerCodergen: true, handlerWaitHuman: true, handlerConditional: true,
}

// DefaultMaxNodeVisits is how often the engine enters one node with no human in between before it stops the run as
// a loop. The graph attribute max_node_visits changes it.
const DefaultMaxNodeVisits = 5

// Stop is where a walk through the graph stopped: at the next node that does work, or at the end of the pipeline.
type Stop struct {
	// Node is the node to run next; nil when the pipeline ended.
	Node *Node
	// Loop is set when Node was entered more than MaxNodeVisits times with no human in between.
	Loop bool
	// Status and Reason say how an ended pipeline ended: StatusSuccess, or StatusFail and why.
	Status string
	Reason string
	// Hops are the stages the walk completed or passed, in order: the node that just finished first, then the
	// start, conditional and exit nodes it went through.
	Hops []Hop
}

// Ended reports whether the pipeline is over.
func (s Stop) Ended() bool { return s.Node == nil }

// Hop is one stage a walk went through.
type Hop struct {
	Node    string
	Handler string
	Status  string // the stage's outcome
	Next    string // the node the run went to from it; "" at the end
	Route   string // how Next was chosen: "edge", "condition", "label", "suggested", "retry_target", "goal_gate"
	Note    string
}

// Runnable reports whether orch can run g: it must be valid (validate) and use only the handlers orch runs.
func Runnable(g *Graph) error {
	if err := g.validate(); err != nil {
		return err
	}
	var bad []string
	for _, id := range g.ids() {
		if h := g.Nodes[id].Handler(); !runnable[h] {
			bad = append(bad, fmt.Sprintf("%s (%s)", id, h))
		}
	}
	if len(bad) > 0 {
		return &dotError{file: g.file, rule: "handler_supported", msg: fmt.Sprintf(
			"orch cannot run these nodes: %s; it runs start, exit, box (agent), hexagon (human gate) and diamond (conditional) nodes",
			strings.Join(bad, ", "))}
	}
	return nil
}

// MaxNodeVisits is how often the engine may enter one node with no human in between.
func (g *Graph) MaxNodeVisits() int {
	if n := attrInt(g.Attrs, "max_node_visits", 0); n > 0 {
		return n
	}
	return DefaultMaxNodeVisits
}

// isInteractive reports whether a box node converses with a human (agent.mode="interactive").
func (n *Node) isInteractive() bool {
	return strings.EqualFold(strings.TrimSpace(n.Attrs["agent.mode"]), "interactive")
}

// Begin starts cp at g's start node, mirrors the graph's attributes into the context (graph.goal, graph.label, …),
// and walks to the first node that does work.
func Begin(g *Graph, cp *jobs.Checkpoint) (Stop, error) {
	start := g.start()
	if start == nil {
		return Stop{}, &dotError{file: g.file, rule: "start_node", msg: "the pipeline has no single start node"}
	}
	*cp = jobs.Checkpoint{Context: map[string]string{}, Outcomes: map[string]string{}, Retries: map[string]int{},
		Visits: map[string]int{}}
	for k, v := range g.Attrs {
		cp.Context["graph."+k] = v
	}
	w := walker{g: g, cp: cp}
	return w.walk(start.ID)
}

// Advance completes cp's current node with outcome o and walks on: it records the outcome and its context updates,
// selects the next edge (spec §3.3; a FAIL goes only where failureRoute says, spec §3.7), passes start and conditional nodes, enforces goal gates at the exit (§3.4), and stops at the next node that
// does work or at the end. Retrying a node (RETRY) is the caller's: a RETRY outcome here counts as a failure whose
// retries ran out.
func Advance(g *Graph, cp *jobs.Checkpoint, o Outcome) (Stop, error) {
	n := g.Nodes[cp.Current]
	if n == nil {
		return Stop{}, &dotError{file: g.file, rule: "checkpoint", msg: fmt.Sprintf("the checkpoint's node %q is not in the pipeline", cp.Current)}
	}
	ensure(cp)
	if o.Status == statusRetry {
		o.Status = StatusFail
		if o.FailureReason == "" {
			o.FailureReason = "max retries exceeded"
		}
	}
	w := walker{g: g, cp: cp, reason: o.FailureReason}
	w.complete(n, o)
	next, route, err := w.route(n, o)
	if err != nil {
		return Stop{}, err
	}
	w.hop(n, o.Status, next, route, o.Notes)
	if next == "" {
		return w.end(o), nil
	}
	return w.walk(next)
}

// FailureRoute reports whether a FAIL of node id has somewhere to go (spec §3.7; see failureRoute). With none, orch
// asks a human instead of ending the run.
func FailureRoute(g *Graph, cp *jobs.Checkpoint, id string, o Outcome) bool {
	n := g.Nodes[id]
	if n == nil {
		return false
	}
	ctx := map[string]string{}
	if cp != nil {
		for k, v := range cp.Context {
			ctx[k] = v
		}
	}
	ctx["outcome"] = o.Status
	next, _, err := failureRoute(g, n, o, ctx)
	return err == nil && next != ""
}

// failureRoute is where a FAIL of n goes: an edge whose condition holds (outcome=fail), else an unconditional edge
// into a conditional node (which routes on the outcome: "validate -> tests_passing?"), else n's retry_target or
// fallback_retry_target; "" for nowhere. Unlike success, a failure never flows along a plain edge to the next stage:
// the pipeline must say where failures go, or a person decides.
func failureRoute(g *Graph, n *Node, o Outcome, ctx map[string]string) (next, how string, err error) {
	e, err := conditionEdge(g, n.ID, o, ctx)
	if err != nil {
		return "", "", err
	}
	if e != nil {
		return e.to, "condition", nil
	}
	var deciders []*Edge
	for _, e := range g.out(n.ID) {
		if e.condition() == "" && decides(g, e.to, o, ctx) {
			deciders = append(deciders, e)
		}
	}
	if len(deciders) > 0 {
		return heaviest(deciders).to, "edge", nil
	}
	if t := g.failureTarget(n); t != "" {
		return t, "retry_target", nil
	}
	return "", "", nil
}

// ResetVisits forgets the node visit counts: a human had a say, so what follows is no runaway loop.
func ResetVisits(cp *jobs.Checkpoint) {
	if cp != nil {
		clear(cp.Visits)
	}
}

type walker struct {
	g    *Graph
	cp   *jobs.Checkpoint
	hops []Hop
	// reason is the failure reason of the outcome being routed: a conditional passes it on with the status.
	reason string
}

func ensure(cp *jobs.Checkpoint) {
	if cp.Context == nil {
		cp.Context = map[string]string{}
	}
	if cp.Outcomes == nil {
		cp.Outcomes = map[string]string{}
	}
	if cp.Retries == nil {
		cp.Retries = map[string]int{}
	}
	if cp.Visits == nil {
		cp.Visits = map[string]int{}
	}
}

// complete records a node's outcome (spec §3.2 steps 3 and 4).
func (w *walker) complete(n *Node, o Outcome) {
	cp := w.cp
	if o.Status != statusSkipped {
		cp.Outcomes[n.ID] = o.Status
	}
	cp.Completed = append(cp.Completed, n.ID)
	if len(cp.Completed) > jobs.MaxCompleted {
		cp.Completed = append(cp.Completed[:0:0], cp.Completed[len(cp.Completed)-jobs.MaxCompleted:]...)
	}
	cp.Last = n.ID
	delete(cp.Retries, n.ID)
	keys := make([]string, 0, len(o.ContextUpdates))
	for k := range o.ContextUpdates {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cp.Context[k] = o.ContextUpdates[k]
	}
	cp.Context["outcome"] = o.Status
	if o.preferredLabel != "" {
		cp.Context["preferred_label"] = o.preferredLabel
	} else {
		delete(cp.Context, "preferred_label")
	}
}

// route picks where the run goes from n after outcome o: "" for nowhere.
func (w *walker) route(n *Node, o Outcome) (next, how string, err error) {
	if o.Status == StatusFail {
		return failureRoute(w.g, n, o, w.cp.Context)
	}
	e, err := selectEdge(w.g, n.ID, o, w.cp.Context)
	if err != nil || e == nil {
		return "", "", err
	}
	return e.to, edgeRoute(e, o), nil
}

// decides reports whether id is a conditional node with an edge for outcome o: a diamond that routes only successes
// is no route for a failure.
func decides(g *Graph, id string, o Outcome, ctx map[string]string) bool {
	n := g.Nodes[id]
	if n == nil || n.Handler() != handlerConditional {
		return false
	}
	c := make(map[string]string, len(ctx)+1)
	for k, v := range ctx {
		c[k] = v
	}
	c["outcome"] = o.Status
	e, err := selectEdge(g, id, Outcome{Status: o.Status, preferredLabel: o.preferredLabel}, c)
	return err == nil && e != nil
}

// edgeRoute names the step of edge selection that chose e.
func edgeRoute(e *Edge, o Outcome) string {
	switch {
	case e.condition() != "":
		return "condition"
	case o.preferredLabel != "" && normalizeLabel(e.label()) == normalizeLabel(o.preferredLabel):
		return "label"
	}
	for _, id := range o.suggestedNextIDs {
		if e.to == id {
			return "suggested"
		}
	}
	return "edge"
}

// conditionEdge is the best edge out of id whose condition holds, or nil.
func conditionEdge(g *Graph, id string, o Outcome, ctx map[string]string) (*Edge, error) {
	var matched []*Edge
	for _, e := range g.out(id) {
		c := e.condition()
		if c == "" {
			continue
		}
		ok, err := evalCondition(c, o, ctx)
		if err != nil {
			return nil, &dotError{file: g.file, line: e.line, rule: "condition_syntax", msg: fmt.Sprintf("edge %s -> %s: %v", e.from, e.to, err)}
		}
		if ok {
			matched = append(matched, e)
		}
	}
	if len(matched) == 0 {
		return nil, nil
	}
	return heaviest(matched), nil
}

func (w *walker) hop(n *Node, status, next, route, note string) {
	w.hops = append(w.hops, Hop{Node: n.ID, Handler: n.Handler(), Status: status, Next: next, Route: route, Note: note})
}

// end closes the pipeline after the outcome of its last node: a failure ends it failed, anything else completed.
func (w *walker) end(o Outcome) Stop {
	if o.Status == StatusFail {
		reason := o.FailureReason
		if reason == "" {
			reason = fmt.Sprintf("stage %s failed", w.cp.Last)
		}
		return Stop{Status: StatusFail, Reason: reason, Hops: w.hops}
	}
	return Stop{Status: StatusSuccess, Reason: "Pipeline completed", Hops: w.hops}
}

// walk enters node id and goes on through the nodes that do no work.
func (w *walker) walk(id string) (Stop, error) {
	g, cp := w.g, w.cp
	// Every pass through start, conditional and exit nodes is bounded: a cycle of them would never end.
	for step := 0; step <= 2*len(g.Nodes)+2; step++ {
		n := g.Nodes[id]
		if n == nil {
			return Stop{}, &dotError{file: g.file, rule: "edge_target_exists", msg: fmt.Sprintf("no node %q", id)}
		}
		cp.Current = n.ID
		cp.Context["current_node"] = n.ID
		switch n.Handler() {
		case handlerExit:
			if gate := g.unsatisfiedGoalGate(cp.Outcomes); gate != nil {
				target := g.goalGateTarget(gate)
				note := fmt.Sprintf("goal gate %s is %s", gate.ID, cp.Outcomes[gate.ID])
				if target == "" {
					w.hop(n, StatusFail, "", "goal_gate", note)
					return Stop{Status: StatusFail, Reason: fmt.Sprintf("Goal gate unsatisfied and no retry target: %s", note), Hops: w.hops}, nil
				}
				w.hop(n, statusRetry, target, "goal_gate", note)
				id = target
				continue
			}
			w.complete(n, Outcome{Status: StatusSuccess})
			w.hop(n, StatusSuccess, "", "", "")
			return Stop{Status: StatusSuccess, Reason: "Pipeline completed", Hops: w.hops}, nil
		case handlerStart, handlerConditional:
			o := Outcome{Status: StatusSuccess}
			if n.Handler() == handlerConditional {
				// A conditional routes on what came before it (spec §4.7: the engine evaluates the edges against the
				// outcome and context): it passes the previous outcome through.
				if s := cp.Context["outcome"]; s != "" {
					o.Status = s
				}
				o.preferredLabel = cp.Context["preferred_label"]
				o.FailureReason = w.reason
			}
			w.complete(n, o)
			next, route, err := w.route(n, o)
			if err != nil {
				return Stop{}, err
			}
			w.hop(n, o.Status, next, route, "")
			if next == "" {
				return w.end(o), nil
			}
			id = next
		default:
			cp.Visits[n.ID]++
			return Stop{Node: n, Loop: cp.Visits[n.ID] > g.MaxNodeVisits(), Hops: w.hops}, nil
		}
	}
	return Stop{}, &dotError{file: g.file, rule: "reachability", msg: fmt.Sprintf("the pipeline cycles through start, conditional and exit nodes without reaching a node that does work (at %s)", id)}
}

// GateOutcome is a human gate's outcome for an answer (spec §4.6): the chosen edge's target as the suggested next
// node and human.gate.selected / human.gate.label in the context. An answer that names no choice (by key, label or
// target) is a FAIL, never a silent first choice.
func GateOutcome(g *Graph, id, answer string) Outcome {
	choices := Choices(g, id)
	if len(choices) == 0 {
		return Outcome{Status: StatusFail, FailureReason: "No outgoing edges for human gate"}
	}
	c, ok := MatchChoice(choices, answer)
	if !ok {
		return Outcome{Status: StatusFail, FailureReason: fmt.Sprintf("%q is not a choice of gate %s", answer, id)}
	}
	return Outcome{Status: StatusSuccess, suggestedNextIDs: []string{c.to}, Notes: "[" + c.Key + "] " + c.Label,
		ContextUpdates: map[string]string{"human.gate.selected": c.Key, "human.gate.label": c.Label}}
}

// Backoff presets (spec §3.6): first delay, factor, attempts of the preset.
var backoffs = map[string]backoff.Policy{
	"none":       {},
	"standard":   {Initial: 200 * time.Millisecond, Factor: 2, Max: maxBackoff, Jitter: backoff.Spread},
	"aggressive": {Initial: 500 * time.Millisecond, Factor: 2, Max: maxBackoff, Jitter: backoff.Spread},
	"linear":     {Initial: 500 * time.Millisecond, Factor: 1, Max: maxBackoff, Jitter: backoff.Spread},
	"patient":    {Initial: 2 * time.Second, Factor: 3, Max: maxBackoff, Jitter: backoff.Spread},
}

// maxBackoff caps one retry delay.
const maxBackoff = time.Minute

// RetryDelay is how long to wait before retry n (1-based) under a backoff policy ("standard" when empty or unknown),
// with the spec's jitter of ×0.5–1.5 drawn as u, in [0, 1): the same draw, the same delay.
func RetryDelay(policy string, n int, u float64) time.Duration {
	b, ok := backoffs[strings.ToLower(strings.TrimSpace(policy))]
	if !ok {
		b = backoffs["standard"]
	}
	return b.Drawn(n, u)
}

// knownBackoff reports whether policy names a backoff preset.
func knownBackoff(policy string) bool {
	_, ok := backoffs[strings.ToLower(strings.TrimSpace(policy))]
	return ok
}

// NodeAttempts is how many attempts a node's retry policy allows (max_retries + 1, spec §3.5), or 0 when neither
// the node nor the graph sets one and the run's own attempt cap applies.
func (g *Graph) NodeAttempts(n *Node) int {
	if r, set := g.retries(n); set {
		return r + 1
	}
	return 0
}

// Tasks are the nodes of g that do work, in declaration order, as a run's tasks: agent tasks (box), interactive
// chats (box with agent.mode="interactive") and human gates (hexagon). A task's id is its node's id.
func (g *Graph) Tasks() []Task {
	var out []Task
	for _, id := range g.ids() {
		n := g.Nodes[id]
		t := Task{ID: n.ID, Title: expandGoal(n.label(), g.Goal()), Line: n.line, Backoff: n.Attrs["backoff_policy"]}
		t.Timeout, _ = n.attrDuration("timeout")
		switch n.Handler() {
		case handlerWaitHuman:
			t.Kind = jobs.KindGate
			t.Description = expandGoal(n.label(), g.Goal())
		case handlerCodergen:
			t.Kind = jobs.KindAgent
			if n.isInteractive() {
				t.Kind = jobs.KindChat
			}
			t.Description = g.prompt(n)
			t.MaxAttempts = g.NodeAttempts(n)
		default:
			continue
		}
		out = append(out, t)
	}
	return out
}
