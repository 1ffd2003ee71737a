package worker

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/pipeline"
)

// Every run walks a graph: a DOT pipeline's, or a milestone's tasks made linear. The engine (pipeline.Begin and
// Advance) decides where the run goes; the functions here apply its decisions to the run inside the transaction that
// saves them, so the checkpoint, the task states and the events always agree.

// graphs caches parsed pipelines by their source: a run's graph never changes, and a step should not parse it again.
type graphs struct {
	mu sync.Mutex
	m  map[string]*pipeline.Graph
}

const maxCachedGraphs = 64

// graphOf is the graph a run walks.
func (w *Worker) graphOf(r *jobs.Run) (*pipeline.Graph, error) {
	if r.Graph == "" {
		tasks := make([]pipeline.Task, len(r.Tasks))
		for i, t := range r.Tasks {
			tasks[i] = pipeline.Task{ID: t.ID, Title: t.Title, Kind: t.Kind}
		}
		g := pipeline.Linear(r.PlanTitle, tasks)
		if r.Task(jobs.VerifyTaskID) != nil {
			// The end-to-end phase loops through its fixes on purpose; its own limit (e2eStops) stops it first.
			g.Attrs["max_node_visits"] = strconv.Itoa(max(pipeline.DefaultMaxNodeVisits, r.Options.E2EFixAttempts()+2))
		}
		return g, nil
	}
	w.graphs.mu.Lock()
	defer w.graphs.mu.Unlock()
	if g := w.graphs.m[r.Graph]; g != nil {
		return g, nil
	}
	g, err := pipeline.ParseDOT(r.PlanPath, r.Graph)
	if err != nil {
		return nil, err
	}
	if w.graphs.m == nil || len(w.graphs.m) >= maxCachedGraphs {
		w.graphs.m = make(map[string]*pipeline.Graph)
	}
	w.graphs.m[r.Graph] = g
	return g, nil
}

// checkpoint is the run's checkpoint; a run saved before it had one gets one at its current task.
func checkpoint(r *jobs.Run) *jobs.Checkpoint {
	if r.Pipeline == nil {
		r.Pipeline = &jobs.Checkpoint{Current: currentTaskID(r)}
	}
	return r.Pipeline
}

// begin puts a starting run on its graph's first node that does work.
func (w *Worker) begin(r *jobs.Run, c *jobs.Change, now time.Time) {
	g, err := w.graphOf(r)
	if err != nil {
		endFailed(r, c, "", "the run's pipeline does not parse: "+err.Error(), now)
		return
	}
	r.Pipeline = &jobs.Checkpoint{}
	stop, err := pipeline.Begin(g, r.Pipeline)
	kind := "milestone"
	if r.Graph != "" {
		kind = "dot"
	}
	c.Emit(jobs.NewEvent(r.ID, "", jobs.PipelineStartedEvent{Name: g.Name, Goal: safetext.Redact(g.Goal()),
		PlanKind: kind, Nodes: len(g.Nodes), Edges: len(g.Edges)}))
	if err != nil {
		endFailed(r, c, "", err.Error(), now)
		return
	}
	w.enter(r, c, g, stop, now)
}

// finish completes task t, the run's current node, with outcome o and moves the run to what the engine says comes
// next.
func (w *Worker) finish(r *jobs.Run, t *jobs.Task, c *jobs.Change, o pipeline.Outcome, now time.Time) {
	g, err := w.graphOf(r)
	if err != nil {
		endFailed(r, c, t.ID, "the run's pipeline does not parse: "+err.Error(), now)
		return
	}
	cp := checkpoint(r)
	cp.Current = t.ID
	stop, err := pipeline.Advance(g, cp, o)
	if err != nil {
		endFailed(r, c, t.ID, err.Error(), now)
		return
	}
	w.enter(r, c, g, stop, now)
}

// enter applies where a walk stopped: the end of the run, or the next node, which is then run — a gate asks its
// question at once; an agent or chat task waits for its step.
func (w *Worker) enter(r *jobs.Run, c *jobs.Change, g *pipeline.Graph, stop pipeline.Stop, now time.Time) {
	cp := checkpoint(r)
	for _, h := range stop.Hops {
		hop := jobs.StageHop{Handler: h.Handler, Status: string(h.Status), Next: h.Next, Route: h.Route, Note: h.Note}
		if t := r.Task(h.Node); t != nil && t.Visits > 0 {
			// A stage that did work: its span runs from when the pipeline entered it.
			hop.Visit, hop.EnteredMS = t.Visits, t.EnteredAt.UnixMilli()
		}
		var body jobs.Body = jobs.StageCompletedEvent{StageHop: hop}
		if h.Status == pipeline.StatusFail {
			body = jobs.StageFailedEvent{StageHop: hop}
		}
		c.Emit(jobs.NewEvent(r.ID, h.Node, body))
	}
	cp.SavedAt = now.UTC()
	r.RetryAt = time.Time{}
	r.Seq++
	if stop.Ended() {
		r.Cursor = len(r.Tasks)
		c.Emit(checkpointEvent(r, cp))
		if stop.Status == pipeline.StatusSuccess {
			endCompleted(r, c, now)
		} else {
			endFailed(r, c, cp.Last, stop.Reason, now)
		}
		return
	}
	n := stop.Node
	idx := -1
	for i, t := range r.Tasks {
		if t.ID == n.ID {
			idx = i
		}
	}
	if idx < 0 {
		endFailed(r, c, n.ID, fmt.Sprintf("the pipeline reached node %s, which the run has no task for", n.ID), now)
		return
	}
	r.Cursor = idx
	t := r.Tasks[idx]
	if t.Visits > 0 {
		// Entered again (a revise loop, a retry target): a new visit starts from a clean slate; what humans said about
		// the node and the agent's session are kept.
		t.Failures, t.Errors, t.RetryGuidance, t.Summary, t.Pending, t.Chat, t.Commit = 0, nil, "", "", nil, nil, ""
	}
	t.Visits++
	t.EnteredAt = now.UTC()
	t.Reopen(c)
	r.Resume(c)
	c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.StageStartedEvent{Title: t.Title, Handler: n.Handler(), TaskKind: t.Kind,
		Visit: t.Visits, Index: idx}))
	c.Emit(checkpointEvent(r, cp))
	if stop.Loop {
		escalation.Open(r, t, c, escalation.Spec{Trigger: jobs.TriggerLoop, Source: "orch",
			MaxPerTask: r.Options.Escalation.MaxPerTask,
			Question: fmt.Sprintf("LOOP DETECTED: the pipeline entered %s %d times with no human in between (limit %d). "+
				"Resume to let it go on, answer to give the stage guidance, or abort.", t.ID, cp.Visits[t.ID], g.MaxNodeVisits())}, now)
		return
	}
	w.run(r, t, c, g, n, now)
}

// run starts work on the current node: a gate asks at once; an agent or chat task runs in the next step.
func (w *Worker) run(r *jobs.Run, t *jobs.Task, c *jobs.Change, g *pipeline.Graph, n *pipeline.Node, now time.Time) {
	if t.Kind != jobs.KindGate {
		return // the step enqueued after this transition runs the agent
	}
	choices := pipeline.Choices(g, n.ID)
	if len(choices) == 0 {
		t.Fail(c)
		w.finish(r, t, c, pipeline.Outcome{Status: pipeline.StatusFail, FailureReason: "No outgoing edges for human gate"}, now)
		return
	}
	opts := make([]jobs.Option, len(choices))
	for i, ch := range choices {
		opts[i] = jobs.Option{Key: ch.Key, Label: ch.Label}
	}
	def := ""
	if dc := n.Attrs["human.default_choice"]; dc != "" {
		if ch, ok := pipeline.MatchChoice(choices, dc); ok {
			def = ch.Key
		}
	}
	e := escalation.Open(r, t, c, escalation.Spec{Trigger: jobs.TriggerGate, Source: "pipeline", Question: t.Description,
		Keyed: opts, Default: def, Timeout: t.Timeout}, now)
	if e != nil {
		c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.InterviewStartedEvent{Question: e.Question, QuestionType: "MULTIPLE_CHOICE",
			Stage: t.ID, EscalationID: e.ID, Options: e.Options}))
	}
}

func checkpointEvent(r *jobs.Run, cp *jobs.Checkpoint) jobs.Event {
	return jobs.NewEvent(r.ID, cp.Current, jobs.CheckpointSavedEvent{NodeID: cp.Current, Last: cp.Last,
		Completed: len(cp.Completed)})
}

// endCompleted ends a run whose pipeline completed: the pipeline's event, then the run's.
func endCompleted(r *jobs.Run, c *jobs.Change, now time.Time) {
	r.Cursor = len(r.Tasks)
	c.Emit(jobs.NewEvent(r.ID, "", jobs.PipelineCompletedEvent{DurationMS: now.UTC().Sub(r.CreatedAt).Milliseconds(),
		Completed: r.Tally().Done}))
	r.Complete(c, now)
}

// endFailed ends a run whose pipeline failed: a stage failed with nowhere to go, or the graph itself is broken.
func endFailed(r *jobs.Run, c *jobs.Change, taskID, reason string, now time.Time) {
	reason = safetext.Redact(reason)
	r.Cursor = len(r.Tasks)
	r.Queued = nil
	c.Emit(jobs.NewEvent(r.ID, taskID, jobs.PipelineFailedEvent{Error: reason,
		DurationMS: now.UTC().Sub(r.CreatedAt).Milliseconds()}))
	r.Fail(c, taskID, reason, jobs.WorkOf(r), now)
}

// failureRoute reports whether the pipeline routes a failure of t somewhere (a fail edge, a retry target): then a
// failed task follows it instead of asking a human.
func (w *Worker) failureRoute(r *jobs.Run, t *jobs.Task, reason string) bool {
	if r.Graph == "" && t.Kind != jobs.KindVerify {
		return false // a milestone has no failure routes but its end-to-end phase's: a person decides
	}
	g, err := w.graphOf(r)
	if err != nil {
		return false
	}
	return pipeline.FailureRoute(g, r.Pipeline, t.ID, pipeline.Outcome{Status: pipeline.StatusFail, FailureReason: reason})
}

// agentOutcome is the outcome of an agent task that completed.
func agentOutcome(t *jobs.Task, said string) pipeline.Outcome {
	return pipeline.Outcome{Status: pipeline.StatusSuccess, Notes: t.Summary, ContextUpdates: map[string]string{
		"last_stage": t.ID, "last_response": truncate(safetext.Redact(said), 200)}}
}

// truncate cuts s to at most n runes.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
