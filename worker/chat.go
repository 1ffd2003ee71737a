package worker

import (
	"fmt"
	"strings"
	"time"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/pipeline"
)

// An interactive node (agent.mode="interactive") is a conversation: the agent replies, the run parks on the reply
// as a question (TriggerChat), the human's answer is the next turn — or /done, /approve, /reject ends the node. Each
// turn is saved with the run, so a stopped conversation resumes at the turn it stopped at, history and all.

// maxChatTurn bounds one message kept in a conversation.
const maxChatTurn = 16 << 10

// chatPrompt is the prompt of the next turn: the whole conversation, or only the human's last message for an agent
// that resumes its own session.
func chatPrompt(ad agent.Adapter, pt agent.PromptTask, guidance []string, t *jobs.Task) string {
	turns := make([]agent.Turn, len(t.Chat))
	for i, turn := range t.Chat {
		turns[i] = agent.Turn{Human: turn.Role == "human", Text: turn.Text}
	}
	if sr, ok := ad.(agent.SessionResumer); ok && sr.ResumesSessions() && t.SessionID != "" {
		if m := agent.ChatMessage(turns); m != "" {
			return m
		}
	}
	return agent.BuildChatPrompt(pt, guidance, turns)
}

// settleChat records the agent's turn and parks the run on it for the human's answer.
func (w *Worker) settleChat(r *jobs.Run, t *jobs.Task, c *jobs.Change, out *outcome) {
	if out.execErr != nil || out.unavailable != nil {
		w.settle(r, t, c, out) // orch could not run the agent: the same configuration escalation as any task
		return
	}
	now := w.cfg.Store.Now()
	a := recordAttempt(r, t, c, out, now)
	t.Pending = nil
	if out.security() {
		// The turn is not shown as the agent's reply: a person decides about what it did first, and an answer sends
		// the agent back to the conversation.
		a.Status = "held"
		w.escalate(r, t, c, out, beside(w.facts(r, t, out)), now)
		return
	}
	text := strings.TrimSpace(out.said.Text)
	if !out.said.Success {
		text = strings.TrimSpace(text + "\n\n(the agent did not finish cleanly: " + strings.Join(failureParts(&out.said), "; ") + ")")
	}
	if text == "" {
		text = "(the agent said nothing)"
	}
	text = safetext.Bound(safetext.Redact(text), maxChatTurn)
	a.Status, a.Summary = "replied", firstLines(text, 1)
	t.Chat = append(t.Chat, jobs.Turn{Role: "agent", Text: text, At: now.UTC()})
	e := escalation.Open(r, t, c, escalation.Spec{Trigger: jobs.TriggerChat, Source: "agent", Question: text,
		Keyed: escalation.ChatOptions(), Output: text}, now)
	if e != nil {
		c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.InterviewStartedEvent{Question: e.Question, QuestionType: "FREEFORM",
			Stage: t.ID, EscalationID: e.ID, Turn: t.Replies()}))
	}
}

// resumeChat applies the human's turn: a message runs the agent again; /done and /approve end the node as a
// success, /reject as a failure; retry asks the agent again without a new message.
func (w *Worker) resumeChat(r *jobs.Run, t *jobs.Task, e *jobs.Escalation, c *jobs.Change, now time.Time) {
	res := e.Resolution
	r.Resume(c)
	r.RetryAt = time.Time{}
	cmd := escalation.ChatCommand(res)
	answer := cmd
	if answer == "" {
		answer = res.Text
	}
	c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.InterviewCompletedEvent{EscalationID: e.ID, Answer: answer,
		By: res.By, Via: res.Via, WaitSeconds: res.At.Sub(e.CreatedAt).Seconds()}))
	turns := t.Replies()
	lastReply := ""
	for i := len(t.Chat) - 1; i >= 0; i-- {
		if t.Chat[i].Role == "agent" {
			lastReply = t.Chat[i].Text
			break
		}
	}
	switch {
	case cmd == escalation.ChatDone || cmd == escalation.ChatApprove:
		t.Summary = fmt.Sprintf("conversation ended by %s with %s after %s", res.By, cmd, jobs.Count(turns, "reply"))
		if why := escalation.ChatReason(res); why != "" {
			t.Summary += ": " + safetext.Bound(why, maxChatTurn)
		}
		t.Complete(c, t.Summary, nil)
		w.finish(r, t, c, pipeline.Outcome{Status: pipeline.StatusSuccess, Notes: t.Summary, ContextUpdates: map[string]string{
			"last_stage": t.ID, "last_response": truncate(lastReply, 200), "interactive.turns": fmt.Sprint(turns)}}, now)
	case cmd == escalation.ChatReject:
		t.Fail(c)
		reason := fmt.Sprintf("rejected by %s in the conversation", res.By)
		if why := escalation.ChatReason(res); why != "" {
			reason += ": " + safetext.Bound(why, maxChatTurn)
		}
		c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.TaskFailedEvent{Title: t.Title, Attempt: t.Failures + 1,
			MaxAttempts: r.MaxAttempts(t), Error: reason}))
		w.finish(r, t, c, pipeline.Outcome{Status: pipeline.StatusFail, FailureReason: reason,
			ContextUpdates: map[string]string{"last_stage": t.ID, "last_response": truncate(lastReply, 200)}}, now)
	case res.Type == jobs.ResolveRetry:
		t.Reopen(c)
		r.Seq++
		c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.ResumedEvent{Title: t.Title, Resolution: string(res.Type)}))
	default:
		t.Chat = append(t.Chat, jobs.Turn{Role: "human", Text: safetext.Bound(res.Text, maxChatTurn), By: res.By, At: res.At})
		t.Reopen(c)
		r.Seq++
		// Every human turn is a checkpoint: the conversation continues from here after any stop.
		c.Emit(checkpointEvent(r, checkpoint(r)))
	}
}

// resumeGate routes the pipeline along the choice a human made at a gate, or asks again after a timeout with no
// default choice, as far as the gate's retry policy allows.
func (w *Worker) resumeGate(r *jobs.Run, t *jobs.Task, e *jobs.Escalation, c *jobs.Change, now time.Time) {
	res := e.Resolution
	g, err := w.graphOf(r)
	if err != nil || g.Nodes[t.ID] == nil {
		endFailed(r, c, t.ID, fmt.Sprintf("the run's pipeline has no gate %s", t.ID), now)
		return
	}
	n := g.Nodes[t.ID]
	r.Resume(c)
	r.RetryAt = time.Time{}
	if res.Type == jobs.ResolveRetry {
		cp := checkpoint(r)
		allowed := max(g.NodeAttempts(n), 1)
		if cp.Retries == nil {
			cp.Retries = map[string]int{}
		}
		if cp.Retries[t.ID]+1 < allowed {
			cp.Retries[t.ID]++
			c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.StageRetryingEvent{Attempt: cp.Retries[t.ID] + 1,
				Reason: "the gate timed out with no default choice"}))
			w.run(r, t, c, g, n, now)
			return
		}
		t.Fail(c)
		w.finish(r, t, c, pipeline.Outcome{Status: pipeline.StatusFail, FailureReason: "human gate timeout, no default"}, now)
		return
	}
	o := pipeline.GateOutcome(g, t.ID, res.Key)
	c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.InterviewCompletedEvent{EscalationID: e.ID, Answer: res.Key,
		Label: o.ContextUpdates["human.gate.label"], By: res.By, Via: res.Via,
		WaitSeconds: res.At.Sub(e.CreatedAt).Seconds()}))
	if o.Status == pipeline.StatusSuccess {
		t.Pass(c)
		t.Summary = fmt.Sprintf("%s chose %s", res.By, o.Notes)
	} else {
		t.Fail(c)
	}
	w.finish(r, t, c, o, now)
}
