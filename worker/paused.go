package worker

import (
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// Tool calls that wait for a person: the policy a claude agent works under and the decisions people took, given to
// orch's hook with every agent run; a call the session paused at (or calls it was refused) parked as a question; the
// answer resuming the same session.

// Policy is the permission policy of a run: its own, or its sandbox's defaults.
func Policy(o jobs.Options) agent.Policy {
	p := o.Permissions
	if p == nil {
		return agent.DefaultPolicy(o.Sandbox)
	}
	return agent.Policy{Name: p.Name, Default: agent.Decision(p.Default), Allow: p.Allow, Ask: p.Ask, Deny: p.Deny}
}

// deferSupport remembers that an agent CLI too old to pause a call (Claude Code before 2.1.89) has been seen: the hook
// then refuses what needs a person, and the run asks afterwards.
type deferSupport struct{ old atomic.Bool }

func (d *deferSupport) saw(version string) {
	if version != "" && !agent.SupportsDefer(version) {
		d.old.Store(true)
	}
}

// hookState is what orch's hook decides from in task t's next agent run.
func (w *Worker) hookState(r *jobs.Run, t *jobs.Task, dir string) *agent.HookState {
	st := &agent.HookState{Policy: Policy(r.Options), Approved: r.Approved, Defer: !w.defers.old.Load(), Root: dir}
	if p := t.Paused; p != nil && p.Decision != nil {
		for _, c := range p.Calls {
			d := agent.HookDecision{ToolUseID: c.ID, Allow: p.Decision.Allow, Message: p.Decision.Message,
				UpdatedInput: p.Decision.UpdatedInput}
			if p.Denied {
				// A refused call comes back in a new turn with a new id: the same tool and input is that call. A paused
				// call is resumed under its own id, and the decision is for it alone: "Allow once" allows no repeat.
				d.Tool, d.Input = c.Tool, c.Input
			}
			st.Decisions = append(st.Decisions, d)
		}
	}
	return st
}

// pausedCalls is what a claude run stopped at for a person, nil when nothing: the call it paused at, or the calls it
// was refused for want of an approval.
func pausedCalls(res agent.Result, st *agent.HookState, home string) *jobs.Paused {
	if st == nil {
		return nil
	}
	toCall := func(c agent.Call) jobs.ToolCall {
		tc := jobs.ToolCall{ID: c.ID, Tool: c.Tool, Input: c.Input}
		if !c.IsQuestion() {
			v := st.Policy.Decide(c, st.Approved, st.Root, st.Root, home)
			tc.Rule, tc.Reason = agent.RuleFor(c, v), safetext.Redact(v.Reason)
		}
		return tc
	}
	if res.Paused != nil {
		return &jobs.Paused{Session: res.SessionID, Calls: []jobs.ToolCall{toCall(*res.Paused)}}
	}
	// Calls refused for good (a person's denial, a deny rule) were answered: the agent read why.
	var denied []agent.Call
	for _, c := range res.Denied {
		if !st.Refused(c, home) {
			denied = append(denied, c)
		}
	}
	if len(denied) == 0 {
		return nil
	}
	p := &jobs.Paused{Session: res.SessionID, Denied: true}
	// Claude's question refused by a CLI that cannot pause it is asked all the same; its answers go in the next prompt.
	for _, c := range denied {
		if c.IsQuestion() {
			p.Calls = []jobs.ToolCall{toCall(c)}
			return p
		}
	}
	for _, c := range denied {
		p.Calls = append(p.Calls, toCall(c))
	}
	return p
}

// pauseAt parks the run on the call its agent stopped at: an approval, or Claude's own question. The task keeps a
// copy of the call, which the question then marks: the outcome p comes from stays as it was, however often it is
// settled.
func (w *Worker) pauseAt(r *jobs.Run, t *jobs.Task, c *jobs.Change, a *jobs.Attempt, p *jobs.Paused, now time.Time) {
	own := *p
	p = &own
	t.Paused = p
	var spec escalation.Spec
	if len(p.Calls) == 1 && p.Calls[0].Tool == jobs.AskTool {
		a.Status = "question"
		s, ok := escalation.QuestionSpec(p)
		if !ok {
			// A question with no questions: the tool is told so and the agent goes on.
			p.Decision = &jobs.CallDecision{Message: "The question had no questions to ask."}
			resumePaused(r, t, c)
			return
		}
		spec = s
	} else {
		a.Status = "approval"
		spec = escalation.ApprovalSpec(p)
	}
	a.Summary = "waiting for a person: " + strings.Join(callNames(p), "; ")
	spec.MaxPerTask = r.Options.Escalation.MaxPerTask
	if e := escalation.Escalate(r, t, c, []escalation.Spec{spec}, now); e != nil {
		p.EscalationID = e.ID
	}
}

// nextQuestion asks the next of Claude's questions after one was answered; it reports false when all were.
func (w *Worker) nextQuestion(r *jobs.Run, t *jobs.Task, c *jobs.Change, now time.Time) bool {
	p := t.Paused
	if p == nil || p.Decision != nil {
		return false
	}
	spec, ok := escalation.QuestionSpec(p)
	if !ok {
		return false
	}
	spec.MaxPerTask = r.Options.Escalation.MaxPerTask
	if e := escalation.Open(r, t, c, spec, now); e != nil {
		p.EscalationID = e.ID
	}
	return true
}

// resumePaused sends the run on to resume the paused session with the decision.
func resumePaused(r *jobs.Run, t *jobs.Task, c *jobs.Change) {
	t.Reopen(c)
	r.Resume(c)
	r.Seq++
}

func callNames(p *jobs.Paused) []string {
	var s []string
	for _, c := range p.Calls {
		s = append(s, safetext.Redact(escalation.DescribeCall(c)))
	}
	return s
}

func homeDir() string {
	h, _ := os.UserHomeDir()
	return h
}
