package worker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// A transition may be played more than once: on a copy of the run to learn whether it needs the run's worktree first
// (preview), and again by the store's Update when another writer changed the run meanwhile. So every transition the
// worker builds is pure: played twice on copies of the same run, it leaves the same run and records the same events
// and audit entries, changes nothing of what it was built from, and makes only allowed moves. And what the worker
// reads from the verdict or the answer alone, before any transaction (settleFinishes, answerFinishes), says "finishes
// nothing" only of transitions that finish nothing.
func TestTransitionsArePure(t *testing.T) {
	for _, p := range plays() {
		t.Run(p.name, func(t *testing.T) {
			h := newHarnessAt(t, jobsClient(t), "true", nil, func() time.Time { return stillTime })
			r0, fn, predicted := p.setup(t, h)
			a, err := playTwice(t, r0, fn)
			if a.Status != p.run {
				t.Fatalf("the play left the run %s (%s), want %s", a.Status, a.Reason, p.run)
			}
			if got := err == nil && finishes(currentTaskID(r0), a); got != p.finishes {
				t.Fatalf("finishes = %v, want %v", got, p.finishes)
			}
			if p.finishes && !predicted && !p.caught {
				t.Fatal("the transition finishes what the worker read would finish nothing")
			}
		})
	}
}

var stillTime = time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)

// play is a transition the worker builds, on the run it applies to.
type play struct {
	name string
	// setup brings a run to where the transition applies, and returns it, the transition as the worker builds it, and
	// whether the worker, reading the verdict or the answer, takes it to need the run's worktree first.
	setup func(t *testing.T, h *harness) (*jobs.Run, func(*jobs.Run, *jobs.Change) error, bool)
	// run is where the transition leaves the run; finishes, whether it finishes the task or the run.
	run      jobs.RunStatus
	finishes bool
	// caught marks a transition that finishes something no verdict or answer could tell: the transaction that plays
	// it gives itself up and has it delivered first (transition).
	caught bool
}

func plays() []play {
	parked, running := jobs.RunParked, jobs.RunRunning
	return []play{
		// The run's start, and its continuation after a pause.
		{name: "a milestone starts", run: running, setup: started(nil)},
		{name: "a pipeline that opens on a gate starts", run: parked, setup: started(func(t *testing.T, h *harness) *jobs.Run {
			return h.newPipelineRun(t, gateFirst)
		})},
		{name: "a paused run continues", run: running, setup: func(t *testing.T, h *harness) (*jobs.Run, func(*jobs.Run, *jobs.Change) error, bool) {
			r := h.settled(t, h.attemptAt(t, h.started(t, h.newRun(t, "1", "2"))), unavailableOutcome())
			return r, continuePaused, false
		}},

		// Every verdict on an attempt.
		{name: "a completed attempt", run: running, finishes: true, setup: step(completedOutcome, nil)},
		{name: "the last task completed", run: jobs.RunCompleted, finishes: true,
			setup: stepOn(func(t *testing.T, h *harness) *jobs.Run { return h.newRun(t, "1") }, completedOutcome, nil)},
		{name: "a completed attempt held for a secret", run: parked, setup: step(secretOutcome, nil)},
		{name: "the agent asks", run: parked, setup: step(needsHelpOutcome, nil)},
		{name: "a failure retried", run: running, setup: step(retriedFailure, nil)},
		{name: "a failure the brain escalates", run: parked, setup: step(escalatedFailure, nil)},
		{name: "a failure at the attempt cap", run: parked, setup: step(retriedFailure, atAttemptCap)},
		{name: "a question at the escalation cap", run: jobs.RunFailed, finishes: true, setup: step(needsHelpOutcome, atEscalationCap)},
		{name: "a failure routed by the pipeline", run: running,
			setup: stepOn(func(t *testing.T, h *harness) *jobs.Run { return h.newPipelineRun(t, routed) }, retriedFailure, nil)},
		{name: "the brain unavailable", run: jobs.RunPaused, setup: step(unavailableOutcome, nil)},
		{name: "the agent cannot run", run: parked, setup: step(sandboxFailure, nil)},
		{name: "a call waits for an approval", run: parked, setup: step(approvalOutcome, nil)},
		{name: "Claude asks its questions", run: parked, setup: step(questionsOutcome, nil)},
		{name: "a conversation's reply", run: parked, setup: stepOn(chatRun, chatReply, nil)},
		{name: "a conversation's turn held for a secret", run: parked,
			setup: stepOn(chatRun, heldChatTurn, nil)},

		// Every answer to an agent's question.
		{name: "an option chosen", run: running, setup: answer(needsHelpOutcome(), choose("A"), nil)},
		{name: "an answer in words", run: running, setup: answer(needsHelpOutcome(), escalation.Request{Type: jobs.ResolveAnswer, Text: "use Redis"}, nil)},
		{name: "resumed", run: running, setup: answer(needsHelpOutcome(), escalation.Request{Type: jobs.ResolveResume}, nil)},
		{name: "retried", run: running, setup: answer(needsHelpOutcome(), escalation.Request{Type: jobs.ResolveRetry}, nil)},
		{name: "forced", run: running, finishes: true, setup: answer(needsHelpOutcome(),
			escalation.Request{Type: jobs.ResolveForce, AcknowledgeRisk: true}, nil)},
		{name: "aborted (the answer ended the run)", run: jobs.RunAborted, setup: answer(needsHelpOutcome(),
			escalation.Request{Type: jobs.ResolveAbort, Reason: "wrong plan"}, nil)},
		{name: "a held attempt accepted", run: running, finishes: true, setup: answer(secretOutcome(), escalation.Request{Type: jobs.ResolveResume}, nil)},
		{name: "a held attempt retried", run: running, setup: answer(secretOutcome(), escalation.Request{Type: jobs.ResolveRetry}, nil)},
		{name: "a call allowed", run: running, setup: answer(approvalOutcome(), choose("A"), nil)},
		{name: "Claude's first question answered", run: parked, setup: answer(questionsOutcome(), choose("B"), nil)},
		{name: "the next queued question", run: parked, setup: answer(secretQuestionOutcome(), escalation.Request{Type: jobs.ResolveResume}, nil)},
		{name: "an answer the run's state fails validation for", run: parked,
			setup: answer(needsHelpOutcome(), escalation.Request{Type: jobs.ResolveResume}, withoutWorkspace)},
		{name: "an answer the run's state fails validation for, at the escalation cap", run: jobs.RunFailed, finishes: true,
			caught: true, setup: answer(needsHelpOutcome(), escalation.Request{Type: jobs.ResolveResume}, func(r *jobs.Run) {
				withoutWorkspace(r)
				atEscalationCap(r)
			})},

		// A gate's answers, and a conversation's.
		{name: "a gate approved", run: jobs.RunCompleted, finishes: true, setup: gateAnswer(choose("A"))},
		{name: "a gate rejected", run: running, finishes: true, setup: gateAnswer(choose("R"))},
		{name: "a gate timed out with no default", run: jobs.RunFailed, finishes: true,
			setup: gateAnswer(escalation.Request{Type: jobs.ResolveRetry, Via: "timeout"})},
		{name: "a conversation's next message", run: running, setup: chatAnswer(escalation.Request{Type: jobs.ResolveAnswer, Text: "add a TTL"})},
		{name: "a conversation's turn again", run: running, setup: chatAnswer(escalation.Request{Type: jobs.ResolveRetry})},
		{name: "a conversation done", run: running, finishes: true, setup: chatAnswer(escalation.Request{Type: jobs.ResolveAnswer, Text: "/done"})},
		{name: "a conversation approved", run: running, finishes: true, setup: chatAnswer(choose(escalation.ChatApprove))},
		{name: "a conversation rejected", run: jobs.RunFailed, finishes: true,
			setup: chatAnswer(escalation.Request{Type: jobs.ResolveAnswer, Text: "/reject not what I asked"})},
	}
}

// playTwice plays fn on two copies of r and checks that both plays agree, that r is as it was, and that every move was
// allowed. It returns the first play's run and error: r itself for a transition that finds r stale.
func playTwice(t *testing.T, r *jobs.Run, fn func(*jobs.Run, *jobs.Change) error) (*jobs.Run, error) {
	t.Helper()
	was := copyOf(t, r)
	a, b := copyOf(t, r), copyOf(t, r)
	ca, cb := jobs.NewChange(a), jobs.NewChange(b)
	ea, eb := fn(a, ca), fn(b, cb)
	if ea != eb && (ea == nil || eb == nil || ea.Error() != eb.Error()) {
		t.Fatalf("the plays ended differently: %v, %v", ea, eb)
	}
	if ea != nil && !errors.Is(ea, errStale) {
		t.Fatalf("the play failed: %v", ea)
	}
	if ea != nil {
		a = r // a stale transition changes nothing: the run is where it was
	} else if !reflect.DeepEqual(a, b) {
		t.Fatalf("the plays left different runs:\n%s\n%s", asJSON(t, a), asJSON(t, b))
	}
	if !reflect.DeepEqual(ca.Events, cb.Events) || !reflect.DeepEqual(ca.Audit, cb.Audit) {
		t.Fatalf("the plays recorded differently:\n%s %s\n%s %s", asJSON(t, ca.Events), asJSON(t, ca.Audit),
			asJSON(t, cb.Events), asJSON(t, cb.Audit))
	}
	if err := ca.Err(); err != nil {
		t.Fatalf("the play made a move that is not allowed: %v", err)
	}
	if !reflect.DeepEqual(r, was) {
		t.Fatalf("the play changed the run it was built from:\n%s\n%s", asJSON(t, r), asJSON(t, was))
	}
	return a, ea
}

func copyOf(t *testing.T, r *jobs.Run) *jobs.Run {
	t.Helper()
	cp, err := clone(r)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// started is the start of the run made by create (a milestone of two tasks when nil).
func started(create func(t *testing.T, h *harness) *jobs.Run) func(*testing.T, *harness) (*jobs.Run, func(*jobs.Run, *jobs.Change) error, bool) {
	return func(t *testing.T, h *harness) (*jobs.Run, func(*jobs.Run, *jobs.Change) error, bool) {
		if create == nil {
			return h.newRun(t, "1", "2"), h.w.startRun, false
		}
		return create(t, h), h.w.startRun, false
	}
}

// step is the settlement of an attempt with the outcome mk makes on the first of two tasks of a milestone, the run
// changed by prep first (when set).
func step(mk func() *outcome, prep func(*jobs.Run)) func(*testing.T, *harness) (*jobs.Run, func(*jobs.Run, *jobs.Change) error, bool) {
	return stepOn(func(t *testing.T, h *harness) *jobs.Run { return h.newRun(t, "1", "2") }, mk, prep)
}

// stepOn is step on the run create makes. Every play checks that the outcome it settles is as mk made it.
func stepOn(create func(*testing.T, *harness) *jobs.Run, mk func() *outcome,
	prep func(*jobs.Run)) func(*testing.T, *harness) (*jobs.Run, func(*jobs.Run, *jobs.Change) error, bool) {
	return func(t *testing.T, h *harness) (*jobs.Run, func(*jobs.Run, *jobs.Change) error, bool) {
		at := h.attemptAt(t, h.started(t, create(t, h)))
		if prep != nil {
			prep(at.run)
		}
		out := mk()
		settle := h.w.settlement(at, out)
		played := func(r *jobs.Run, c *jobs.Change) error {
			err := settle(r, c)
			if !reflect.DeepEqual(out, mk()) {
				t.Errorf("the play changed the outcome it settles: %+v", out)
			}
			return err
		}
		return at.run, played, h.w.settleFinishes(at.run, out)
	}
}

// answer is the answer req to the question an attempt with out on a milestone's first task asked, the run changed by
// prep first (when set).
func answer(out *outcome, req escalation.Request, prep func(*jobs.Run)) func(*testing.T, *harness) (*jobs.Run, func(*jobs.Run, *jobs.Change) error, bool) {
	return func(t *testing.T, h *harness) (*jobs.Run, func(*jobs.Run, *jobs.Change) error, bool) {
		r := h.settled(t, h.attemptAt(t, h.started(t, h.newRun(t, "1", "2"))), out)
		return h.answered(t, r, req, prep)
	}
}

// gateAnswer is the answer req to the gate of gatePipeline, reached after its work completed.
func gateAnswer(req escalation.Request) func(*testing.T, *harness) (*jobs.Run, func(*jobs.Run, *jobs.Change) error, bool) {
	return func(t *testing.T, h *harness) (*jobs.Run, func(*jobs.Run, *jobs.Change) error, bool) {
		r := h.settled(t, h.attemptAt(t, h.started(t, h.newPipelineRun(t, gatePipeline))), completedOutcome())
		return h.answered(t, r, req, nil)
	}
}

// chatAnswer is the answer req to the agent's first reply in chatPipeline's conversation.
func chatAnswer(req escalation.Request) func(*testing.T, *harness) (*jobs.Run, func(*jobs.Run, *jobs.Change) error, bool) {
	return func(t *testing.T, h *harness) (*jobs.Run, func(*jobs.Run, *jobs.Change) error, bool) {
		r := h.settled(t, h.attemptAt(t, h.started(t, chatRun(t, h))), chatReply())
		return h.answered(t, r, req, nil)
	}
}

func chatRun(t *testing.T, h *harness) *jobs.Run { return h.newPipelineRun(t, chatPipeline) }

func chatReply() *outcome { return &outcome{ran: true, said: said("What now?")} }

func heldChatTurn() *outcome {
	return &outcome{ran: true, said: said("the key is …"), secrets: []string{"AWS access key"}}
}

// started saves the start of run r, as handleStart does.
func (h *harness) started(t *testing.T, r *jobs.Run) *jobs.Run {
	t.Helper()
	if _, err := h.store.Update(context.Background(), r.ID, h.w.startRun); err != nil {
		t.Fatal(err)
	}
	return h.get(t, r.ID)
}

// attemptAt begins an attempt of r's current task, as a step does.
func (h *harness) attemptAt(t *testing.T, r *jobs.Run) *attempt {
	t.Helper()
	var at attempt
	var lock stepLock
	defer lock.release()
	if _, err := h.store.Update(context.Background(), r.ID, func(r *jobs.Run, c *jobs.Change) error {
		return h.w.beginAttempt(context.Background(), r, c, r.Seq, owner{id: "step:test"}, &at, &lock)
	}); err != nil || at.run == nil {
		t.Fatalf("beginning an attempt: %v", err)
	}
	at.run = h.get(t, r.ID)
	return &at
}

// settled saves out as the outcome of attempt at, as a step does.
func (h *harness) settled(t *testing.T, at *attempt, out *outcome) *jobs.Run {
	t.Helper()
	if _, err := h.store.Update(context.Background(), at.run.ID, h.w.settlement(at, out)); err != nil {
		t.Fatal(err)
	}
	return h.get(t, at.run.ID)
}

// answered resolves r's open question with req and returns the run, changed by prep (when set), with the transition
// that applies the answer and what the worker reads from the answer.
func (h *harness) answered(t *testing.T, r *jobs.Run, req escalation.Request,
	prep func(*jobs.Run)) (*jobs.Run, func(*jobs.Run, *jobs.Change) error, bool) {
	t.Helper()
	if r.OpenEscalation() == nil {
		t.Fatalf("no question to answer: the run is %s", r.Status)
	}
	req.RunID, req.By = r.ID, "ann"
	_, e, err := escalation.Resolve(context.Background(), h.store, h.queue, req)
	if err != nil {
		t.Fatal(err)
	}
	r = h.get(t, r.ID)
	if prep != nil {
		prep(r)
	}
	return r, h.w.applyAnswer(e.ID), answerFinishes(r, e.ID)
}

func choose(key string) escalation.Request {
	return escalation.Request{Type: jobs.ResolveChoose, Key: key}
}

func said(text string) jobs.Pending { return jobs.Pending{Text: text, Success: true} }

func completedOutcome() *outcome {
	return &outcome{ran: true, said: said("Done. All tests pass."),
		interp: brain.Interpretation{Status: brain.StatusCompleted, Summary: "built it"}}
}

func secretOutcome() *outcome {
	out := completedOutcome()
	out.secrets = []string{"AWS access key"}
	return out
}

func needsHelpOutcome() *outcome {
	return &outcome{ran: true, said: said("Which store?"), interp: brain.Interpretation{Status: brain.StatusNeedsHelp,
		Question: "Which store?", Options: []string{"A) Redis", "B) Postgres"}, Recommendation: "A"}}
}

// secretQuestionOutcome asks and shows a secret: two questions at once, one of them queued.
func secretQuestionOutcome() *outcome {
	out := needsHelpOutcome()
	out.secrets = []string{"AWS access key"}
	return out
}

func failedOutcome(d brain.Verdict) *outcome {
	return &outcome{ran: true, said: jobs.Pending{Text: "FAIL: tests", ExitCode: 1},
		interp:     brain.Interpretation{Status: brain.StatusFailed, Error: "2 tests fail"},
		decision:   &brain.Decision{Decision: d, Reason: "a flaky test", GuidanceForRetry: "run them one by one"},
		similarity: 0.3}
}

func retriedFailure() *outcome { return failedOutcome(brain.Retry) }

func escalatedFailure() *outcome { return failedOutcome(brain.Escalate) }

func sandboxFailure() *outcome { return &outcome{execErr: errors.New("docker is not running")} }

func unavailableOutcome() *outcome {
	return &outcome{ran: true, said: said("Done."), unavailable: errors.New("the brain's API is down")}
}

func approvalOutcome() *outcome {
	return &outcome{ran: true, said: said("waiting"), paused: &jobs.Paused{Session: "s1", Calls: []jobs.ToolCall{{
		ID: "toolu_1", Tool: "Bash", Input: json.RawMessage(`{"command":"git push"}`), Rule: "Bash(git push:*)"}}}}
}

func questionsOutcome() *outcome {
	in := `{"questions":[{"question":"Which approach?","options":[{"label":"CSS"},{"label":"Theme (Recommended)"}]},
		{"question":"Which pages?","options":[{"label":"Home"},{"label":"Settings"}]}]}`
	return &outcome{ran: true, said: said("asking"), paused: &jobs.Paused{Session: "s1", Calls: []jobs.ToolCall{{
		ID: "toolu_q", Tool: jobs.AskTool, Input: json.RawMessage(in)}}}}
}

// atAttemptCap makes the current task's next failure its last.
func atAttemptCap(r *jobs.Run) { r.Current().Failures = r.Options.MaxAttempts - 1 }

// atEscalationCap gives the current task as many answered questions as it may have.
func atEscalationCap(r *jobs.Run) {
	t := r.Current()
	for i := range escalation.DefaultMaxPerTask {
		r.Escalations = append([]*jobs.Escalation{{ID: "old" + string(rune('a'+i)), TaskID: t.ID, Trigger: jobs.TriggerBrain,
			Resolution: &jobs.Resolution{Type: jobs.ResolveResume, At: stillTime}}}, r.Escalations...)
	}
}

// withoutWorkspace takes the run's workspace away.
func withoutWorkspace(r *jobs.Run) { r.Workspace = filepath.Join(os.TempDir(), "orch-gone", r.ID) }

const gateFirst = `digraph g {
  start [shape=Mdiamond]; exit [shape=Msquare]
  gate [shape=hexagon, label="Go?"]
  start -> gate
  gate -> exit [label="[Y] Yes"]
}`

// routed sends a failure of implement (its one attempt) on to review.
const routed = `digraph g {
  start [shape=Mdiamond]; done [shape=Msquare]
  implement [shape=box, prompt="build it", max_retries=0]
  review [shape=box, prompt="review it"]
  start -> implement
  implement -> review [condition="outcome=success"]
  implement -> review [condition="outcome=fail"]
  review -> done
}`

// An answer that sends the agent back to work is played once, in the transaction that saves it, without a look at the
// run's worktree; one that finishes the task is played on a copy first and has its work committed before it is saved.
// Should the answer finish what the worker took it to leave alone, the transaction is given up and the work delivered
// all the same.
func TestAnAnswerIsPlayedOnceUnlessItNeedsTheWorktree(t *testing.T) {
	for _, c := range []struct {
		name      string
		req       escalation.Request
		misjudged bool // the worker takes the answer to finish nothing
		plays     int
		status    jobs.TaskStatus
		committed bool
	}{
		{"retried", escalation.Request{Type: jobs.ResolveRetry}, false, 1, jobs.TaskPending, false},
		{"answered", escalation.Request{Type: jobs.ResolveAnswer, Text: "use Redis"}, false, 1, jobs.TaskPending, false},
		{"forced", escalation.Request{Type: jobs.ResolveForce, AcknowledgeRisk: true}, false, 2, jobs.TaskForced, true},
		{"forced, taken to finish nothing", escalation.Request{Type: jobs.ResolveForce, AcknowledgeRisk: true}, true, 3,
			jobs.TaskForced, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			h := newHarness(t, jobsClient(t), "true", nil)
			r, _, _ := h.gitRun(t, false)
			wt, err := h.w.cfg.Workspaces.Checkout(ctx, r.ID, r.Git)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(wt.Dir, "work.txt"), []byte("the agent's work\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r = h.settled(t, h.attemptAt(t, r), needsHelpOutcome())
			c.req.RunID, c.req.By = r.ID, "ann"
			_, e, err := escalation.Resolve(ctx, h.store, h.queue, c.req)
			if err != nil {
				t.Fatal(err)
			}
			plays := 0
			apply := h.w.applyAnswer(e.ID)
			counted := func(r *jobs.Run, ch *jobs.Change) error {
				plays++
				return apply(r, ch)
			}
			finishing := func(r *jobs.Run) bool { return !c.misjudged && answerFinishes(r, e.ID) }
			got, err := h.w.transition(ctx, r.ID, finishing, counted)
			if err != nil {
				t.Fatal(err)
			}
			task := got.Task("1")
			if plays != c.plays || task.Status != c.status || (task.Commit != "") != c.committed {
				t.Fatalf("played %d times, task %s with commit %q; want %d, %s, committed %v", plays, task.Status,
					task.Commit, c.plays, c.status, c.committed)
			}
		})
	}
}
