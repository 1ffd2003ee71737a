package worker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/pipeline"
)

// The seed's end-to-end and interactive test tables (stage 4), run through the real handlers with the Queue and
// AutoApprove interviewers answering.

// newPipelineRun creates a run of a DOT pipeline as `orch run` does.
func (h *harness) newPipelineRun(t *testing.T, src string) *jobs.Run {
	t.Helper()
	g, err := pipeline.ParseDOT("test.dot", src)
	if err == nil {
		err = pipeline.Runnable(g)
	}
	if err != nil {
		t.Fatal(err)
	}
	r := &jobs.Run{ID: jobs.NewRunID(), Status: jobs.RunQueued, Workspace: t.TempDir(), Graph: src, PlanPath: "test.dot",
		Options: jobs.Options{Agent: "cmd", Brain: "heuristic", MaxAttempts: 3}}
	for _, task := range g.Tasks() {
		r.Tasks = append(r.Tasks, &jobs.Task{ID: task.ID, Title: task.Title, Description: task.Description, Kind: task.Kind,
			Status: jobs.TaskPending, MaxAttempts: task.MaxAttempts, Timeout: task.Timeout, Backoff: "none"})
	}
	if err := h.store.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

// drive runs a run to its end or until the interviewer cannot answer: each step and resume is delivered to the
// handlers in turn, each question put to iv and its answer resolved as a person's would be.
func (h *harness) drive(t *testing.T, id string, iv escalation.Interviewer) *jobs.Run {
	t.Helper()
	ctx := context.Background()
	if err := h.process(t, queue.TypeStart, queue.Payload{RunID: id}); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		r := h.get(t, id)
		switch r.Status {
		case jobs.RunRunning:
			if err := h.process(t, queue.TypeStep, queue.Payload{RunID: id, Seq: r.Seq}); err != nil {
				t.Fatal(err)
			}
		case jobs.RunParked:
			e := r.OpenEscalation()
			q := escalation.QuestionFor(e)
			a, err := iv.Ask(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			req, ok := escalation.RequestFor(e, id, a, "tester", "test")
			if !ok {
				return r // nobody here can answer: the run stays parked
			}
			if _, _, err := escalation.Resolve(ctx, h.store, h.queue, req); err != nil {
				t.Fatal(err)
			}
			if err := h.process(t, queue.TypeResume, queue.Payload{RunID: id, EscalationID: e.ID}); err != nil {
				t.Fatal(err)
			}
		default:
			return r
		}
	}
	t.Fatal("the run did not end in 100 deliveries")
	return nil
}

// jobsClient is one Redis client for tests that need not run on both.
func jobsClient(t *testing.T) redis.UniversalClient { return clients(t)["miniredis"] }

// path is the nodes the run completed, in order.
func path(r *jobs.Run) string { return strings.Join(r.Pipeline.Completed, " ") }

const gatePipeline = `digraph g {
  graph [goal="ship it"]
  start [shape=Mdiamond]; exit [shape=Msquare]
  work  [shape=box, prompt="do $goal"]
  gate  [shape=hexagon, label="Review the work"]
  fix   [shape=box, prompt="rework it"]
  start -> work -> gate
  gate -> exit [label="[A] Approve"]
  gate -> fix  [label="[R] Reject"]
  fix -> gate
}`

func TestPipelineGateRoutes(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			sh := script(t, `echo "Done. All tests pass."`)
			cases := []struct {
				name    string
				iv      escalation.Interviewer
				status  jobs.RunStatus
				path    string
				context string
			}{
				{"approve routes to exit", escalation.NewQueue([]string{"A"}, nil), jobs.RunCompleted, "start work gate exit", "A"},
				{"reject routes to the retry path", escalation.NewQueue([]string{"R", "A"}, nil), jobs.RunCompleted, "start work gate fix gate exit", "A"},
				{"auto-approve takes the first choice", escalation.AutoApprove{}, jobs.RunCompleted, "start work gate exit", "A"},
				{"an exhausted queue leaves the run parked", escalation.NewQueue(nil, nil), jobs.RunParked, "start work", ""},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					h := newHarness(t, rdb, sh, nil)
					r := h.drive(t, h.newPipelineRun(t, gatePipeline).ID, c.iv)
					if r.Status != c.status || path(r) != c.path || r.Pipeline.Context["human.gate.selected"] != c.context {
						t.Fatalf("%s via %q, selected %q", r.Status, path(r), r.Pipeline.Context["human.gate.selected"])
					}
				})
			}
		})
	}
}

func TestPipelineMultipleGates(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, rdb, script(t, `echo "Done."`), nil)
			r := h.newPipelineRun(t, `digraph g {
  start [shape=Mdiamond]; exit [shape=Msquare]
  design [shape=hexagon, label="Which design?"]
  a [shape=box, prompt="build design A"]; b [shape=box, prompt="build design B"]
  deploy [shape=hexagon, label="Deploy now?"]
  start -> design
  design -> a [label="A) Simple"]
  design -> b [label="B - Fast"]
  a -> deploy; b -> deploy
  deploy -> exit [label="Yes, deploy"]
  deploy -> design [label="No, start over"]
}`)
			got := h.drive(t, r.ID, escalation.NewQueue([]string{"B", "Y"}, nil))
			if got.Status != jobs.RunCompleted || path(got) != "start design b deploy exit" {
				t.Fatalf("%s via %s", got.Status, path(got))
			}
			gate := got.Escalations[1]
			if gate.Trigger != jobs.TriggerGate || gate.Question != "Deploy now?" || gate.Options[0].Key != "Y" || gate.Options[1].Key != "N" {
				t.Fatalf("second gate: %+v", gate)
			}
		})
	}
}

// A gate without outgoing edges fails: "No outgoing edges for human gate".
func TestPipelineGateWithoutEdgesFails(t *testing.T) {
	h := newHarness(t, jobsClient(t), script(t, `echo "Done."`), nil)
	r := h.newPipelineRun(t, `digraph g {
  start [shape=Mdiamond]; exit [shape=Msquare]
  gate [shape=hexagon, label="Stuck?"]
  start -> gate [weight=5]; start -> exit
}`)
	got := h.drive(t, r.ID, escalation.AutoApprove{})
	if got.Status != jobs.RunFailed || got.Reason != "No outgoing edges for human gate" {
		t.Fatalf("%s: %s", got.Status, got.Reason)
	}
}

const chatPipeline = `digraph g {
  start [shape=Mdiamond]; exit [shape=Msquare]
  talk [shape=box, prompt="help the user", "agent.mode"="interactive"]
  after [shape=box, prompt="summarize"]
  start -> talk -> after -> exit
}`

// chatAgent replies with how many human messages its prompt carried, so a test can see the history arrive.
const chatAgent = `if [ "$ORCH_TASK_ID" != talk ]; then echo "Done. All tests pass."; exit 0; fi
n=$(printf '%s' "$1" | grep -c '^Human:')
echo "reply $ORCH_ATTEMPT, having read $n human messages"`

func TestPipelineInteractive(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			sh := script(t, chatAgent) + " {prompt}"
			cases := []struct {
				name    string
				answers []string
				status  jobs.RunStatus
				turns   int // agent replies in the conversation
				path    string
			}{
				{"multi-turn exchange ends with /done", []string{"use Redis", "add a TTL", "/done"}, jobs.RunCompleted, 3, "start talk after exit"},
				{"/approve ends with success", []string{"/approve"}, jobs.RunCompleted, 1, "start talk after exit"},
				{"/reject ends with failure", []string{"hmm", "/reject"}, jobs.RunFailed, 2, "start talk"},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					h := newHarness(t, rdb, sh, nil)
					got := h.drive(t, h.newPipelineRun(t, chatPipeline).ID, escalation.NewQueue(c.answers, nil))
					talk := got.Task("talk")
					if got.Status != c.status || talk.Replies() != c.turns || path(got) != c.path {
						t.Fatalf("%s, %d replies, via %q: %+v", got.Status, talk.Replies(), path(got), talk.Chat)
					}
					last := talk.Chat[len(talk.Chat)-1].Text
					if want := "having read " + string(rune('0'+c.turns-1)) + " human messages"; !strings.Contains(last, want) {
						t.Fatalf("last reply %q, want %q", last, want)
					}
				})
			}
		})
	}
}

// Each human turn is a checkpoint: stopped after two turns, a run resumes at turn three with the whole history.
func TestPipelineInteractiveResumesMidConversation(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, rdb, script(t, chatAgent)+" {prompt}", nil)
			r := h.newPipelineRun(t, chatPipeline)
			got := h.drive(t, r.ID, escalation.NewQueue([]string{"one", "two"}, nil))
			talk := got.Task("talk")
			if got.Status != jobs.RunParked || len(talk.Chat) != 5 || talk.Chat[3].Text != "two" {
				t.Fatalf("after two turns: %s, %+v", got.Status, talk.Chat)
			}
			// A new worker (the old one is gone) and a new interviewer: the conversation continues at turn three.
			h2 := newHarness(t, rdb, script(t, chatAgent)+" {prompt}", nil)
			iv := escalation.NewQueue([]string{"three", "/done"}, nil)
			for range 10 {
				got = h2.get(t, r.ID)
				if got.Status.Terminal() {
					break
				}
				if got.Status == jobs.RunRunning {
					if err := h2.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: got.Seq}); err != nil {
						t.Fatal(err)
					}
					continue
				}
				e := got.OpenEscalation()
				a, _ := iv.Ask(context.Background(), escalation.QuestionFor(e))
				req, _ := escalation.RequestFor(e, r.ID, a, "tester", "test")
				if _, _, err := escalation.Resolve(context.Background(), h2.store, h2.queue, req); err != nil {
					t.Fatal(err)
				}
				if err := h2.process(t, queue.TypeResume, queue.Payload{RunID: r.ID, EscalationID: e.ID}); err != nil {
					t.Fatal(err)
				}
			}
			talk = got.Task("talk")
			if got.Status != jobs.RunCompleted || talk.Replies() != 4 || !strings.Contains(talk.Chat[6].Text, "having read 3 human messages") {
				t.Fatalf("%s: %+v", got.Status, talk.Chat)
			}
			if n := countEvents(t, h2, r.ID, jobs.CheckpointSavedEvent{}.Kind()); n < 3 {
				t.Fatalf("%d checkpoints: every human turn is one", n)
			}
		})
	}
}

// A failing stage with a failure route follows it instead of asking a human; goal gates send the run back.
func TestPipelineFailureRouteAndGoalGate(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			// implement fails on its first start, succeeds after.
			sh := script(t, `if [ "$ORCH_TASK_ID" = implement ] && [ "$ORCH_ATTEMPT" = 1 ]; then echo "FAIL: it broke"; exit 1; fi
echo "Done. All tests pass."`)
			h := newHarness(t, rdb, sh, nil)
			r := h.newPipelineRun(t, `digraph g {
  start [shape=Mdiamond]; done [shape=Msquare]
  implement [shape=box, prompt="build it", goal_gate=true, max_retries=0, retry_target=implement]
  review [shape=box, prompt="review it"]
  start -> implement
  implement -> review [condition="outcome=success"]
  implement -> review [condition="outcome=fail"]
  review -> done
}`)
			got := h.drive(t, r.ID, escalation.NewQueue(nil, nil))
			if got.Status != jobs.RunCompleted || path(got) != "start implement review implement review done" {
				t.Fatalf("%s via %s (%s)", got.Status, path(got), got.Reason)
			}
			if len(got.Escalations) != 0 {
				t.Fatalf("a routed failure asked a human: %+v", got.Escalations[0])
			}
		})
	}
}

// A milestone is a linear pipeline: its run has a checkpoint like any other.
func TestMilestoneIsALinearPipeline(t *testing.T) {
	h := newHarness(t, jobsClient(t), script(t, `echo "Done."`), nil)
	r := h.newRun(t, "1.1", "1.2")
	got := h.drive(t, r.ID, escalation.NewQueue(nil, nil))
	if got.Status != jobs.RunCompleted || path(got) != "start 1.1 1.2 exit" || got.Cursor != 2 {
		t.Fatalf("%s via %s, cursor %d", got.Status, path(got), got.Cursor)
	}
}

// A gate's own timeout takes human.default_choice; without one it asks again while its retries last, then fails
// (attractor spec §4.6, §6.5).
func TestPipelineGateTimeout(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, rdb, script(t, `echo "Done. All tests pass."`), nil)
			timeout := func(r *jobs.Run) {
				t.Helper()
				e := r.OpenEscalation()
				if e == nil || e.Timeout != 30*time.Second {
					t.Fatalf("open gate: %+v", e)
				}
				if err := h.process(t, queue.TypeTimeout, queue.Payload{RunID: r.ID, EscalationID: e.ID, N: 1}); err != nil {
					t.Fatal(err)
				}
				if err := h.process(t, queue.TypeResume, queue.Payload{RunID: r.ID, EscalationID: e.ID}); err != nil {
					t.Fatal(err)
				}
			}

			withDefault := h.newPipelineRun(t, `digraph g {
  start [shape=Mdiamond]; exit [shape=Msquare]
  gate [shape=hexagon, label="Deploy?", timeout="30s", "human.default_choice"="skip_it"]
  deploy [shape=box, prompt="deploy"]; skip_it [shape=box, prompt="write a note instead"]
  start -> gate
  gate -> deploy [label="[D] Deploy"]
  gate -> skip_it [label="[S] Skip"]
  deploy -> exit; skip_it -> exit
}`)
			got := h.drive(t, withDefault.ID, escalation.NewQueue(nil, nil))
			timeout(got)
			got = h.drive(t, withDefault.ID, escalation.NewQueue(nil, nil))
			if got.Status != jobs.RunCompleted || path(got) != "start gate skip_it exit" || got.Escalations[0].Resolution.Via != "timeout" {
				t.Fatalf("%s via %s", got.Status, path(got))
			}
			if countEvents(t, h, got.ID, jobs.InterviewTimeoutEvent{}.Kind()) != 1 {
				t.Fatal("no interview_timeout event")
			}

			noDefault := h.newPipelineRun(t, `digraph g {
  start [shape=Mdiamond]; exit [shape=Msquare]
  gate [shape=hexagon, label="Deploy?", timeout="30s", max_retries=1]
  start -> gate
  gate -> exit [label="[D] Deploy"]
}`)
			got = h.drive(t, noDefault.ID, escalation.NewQueue(nil, nil))
			timeout(got) // asked again: one retry
			got = h.get(t, noDefault.ID)
			if got.Status != jobs.RunParked || len(got.Escalations) != 2 {
				t.Fatalf("after the first timeout: %s, %d questions", got.Status, len(got.Escalations))
			}
			timeout(got) // retries used up: the gate fails, and nothing routes the failure
			got = h.get(t, noDefault.ID)
			if got.Status != jobs.RunFailed || !strings.Contains(got.Reason, "human gate timeout, no default") {
				t.Fatalf("after the second timeout: %s: %s", got.Status, got.Reason)
			}
		})
	}
}
