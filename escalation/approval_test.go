package escalation

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/jobs"
)

func pausedRun(p *jobs.Paused, spec Spec) (*jobs.Run, *jobs.Task, *jobs.Escalation) {
	t := &jobs.Task{ID: "1", Title: "t", Status: jobs.TaskRunning, Paused: p}
	r := &jobs.Run{ID: "r1", Status: jobs.RunRunning, Tasks: []*jobs.Task{t}}
	e := Open(r, t, &jobs.Change{}, spec, time.Unix(0, 0))
	p.EscalationID = e.ID
	return r, t, e
}

// answer applies res to escalation e about task of run r, as Resolve does; every move it makes must be allowed.
func answer(t *testing.T, r *jobs.Run, task *jobs.Task, e *jobs.Escalation, res *jobs.Resolution) {
	t.Helper()
	c := jobs.NewChange(r)
	apply(r, task, e, res, c)
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
}

// checkApproval checks the question of an approval of a forced push.
func checkApproval(t *testing.T, e *jobs.Escalation) {
	t.Helper()
	if e.Trigger != jobs.TriggerApproval || !strings.Contains(e.Question, "git push --force origin main") ||
		!strings.Contains(e.Question, "Bash(git push:*)") || len(e.Options) != 3 || e.Options[1].Label != "Allow for this run (Bash(git push:*))" {
		t.Fatalf("escalation: %+v", e)
	}
}

func TestApprovalResolutions(t *testing.T) {
	push := jobs.ToolCall{ID: "toolu_1", Tool: "Bash", Input: json.RawMessage(`{"command":"git push --force origin main"}`),
		Rule: "Bash(git push:*)", Reason: "orch's permission policy asks a person before Bash(git push:*)"}
	tests := []struct {
		name     string
		res      jobs.Resolution
		allow    bool
		message  string
		approved []string
	}{
		{"allow once", jobs.Resolution{Type: jobs.ResolveChoose, Key: "A", By: "ann"}, true, "", nil},
		{"allow for this run", jobs.Resolution{Type: jobs.ResolveChoose, Key: "b", By: "ann"}, true, "", []string{"Bash(git push:*)"}},
		{"deny", jobs.Resolution{Type: jobs.ResolveChoose, Key: "C", By: "ann"}, false, "ann", nil},
		{"free text denies with it", jobs.Resolution{Type: jobs.ResolveAnswer, Text: "use a pull request", By: "ann"}, false, "use a pull request", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &jobs.Paused{Session: "s1", Calls: []jobs.ToolCall{push}}
			spec := ApprovalSpec(p)
			r, task, e := pausedRun(p, spec)
			checkApproval(t, e)
			res := tt.res
			e.Resolution = &res
			answer(t, r, task, e, &res)
			d := task.Paused.Decision
			if d == nil || d.Allow != tt.allow || (tt.message != "" && !strings.Contains(d.Message, tt.message)) {
				t.Errorf("decision = %+v", d)
			}
			if strings.Join(r.Approved, ",") != strings.Join(tt.approved, ",") || task.Status != jobs.TaskPending {
				t.Errorf("approved = %v, status %s", r.Approved, task.Status)
			}
			if len(task.Guidance) != 0 {
				t.Errorf("a paused call's decision goes to the hook, not the prompt: %q", task.Guidance)
			}
		})
	}
	t.Run("approvals do not count against the cap", func(t *testing.T) {
		p := &jobs.Paused{Calls: []jobs.ToolCall{push}}
		r, task, _ := pausedRun(p, ApprovalSpec(p))
		for i := 0; i < DefaultMaxPerTask+2; i++ {
			r.Escalations[len(r.Escalations)-1].Resolution = &jobs.Resolution{Type: jobs.ResolveChoose, Key: "A"}
			if e := Open(r, task, &jobs.Change{}, ApprovalSpec(p), time.Unix(0, 0)); e == nil {
				t.Fatalf("approval %d ended the run: %s", i+2, r.Reason)
			}
		}
	})
	t.Run("refused calls: the decision goes in the next prompt", func(t *testing.T) {
		p := &jobs.Paused{Session: "s1", Denied: true, Calls: []jobs.ToolCall{push}}
		r, task, e := pausedRun(p, ApprovalSpec(p))
		res := jobs.Resolution{Type: jobs.ResolveChoose, Key: "A", By: "ann"}
		answer(t, r, task, e, &res)
		if len(task.Guidance) != 1 || !strings.Contains(task.Guidance[0], "git push --force origin main") {
			t.Errorf("guidance = %q", task.Guidance)
		}
	})
}

func TestClaudesQuestions(t *testing.T) {
	in := `{"questions":[
		{"question":"Which approach?","header":"Approach","options":[{"label":"CSS variables","description":"simple"},{"label":"Theme context (Recommended)"},{"label":"Both"}]},
		{"question":"Which pages?","header":"Pages","multiSelect":true,"options":[{"label":"Home"},{"label":"Settings"},{"label":"Profile"}]}]}`
	p := &jobs.Paused{Session: "s1", Calls: []jobs.ToolCall{{ID: "toolu_q", Tool: jobs.AskTool, Input: json.RawMessage(in)}}}
	spec, ok := QuestionSpec(p)
	if !ok {
		t.Fatal("no question")
	}
	r, task, e := pausedRun(p, spec)
	checkFirstQuestion(t, e)
	res := jobs.Resolution{Type: jobs.ResolveChoose, Key: "B", By: "ann"}
	e.Resolution = &res
	answer(t, r, task, e, &res)
	if task.Paused.Decision != nil {
		t.Fatal("decided before the second question was answered")
	}
	spec, ok = QuestionSpec(p)
	if !ok || !strings.Contains(spec.Question, "Which pages?") || !strings.Contains(spec.Question, "Several may be chosen") {
		t.Fatalf("second question: %+v", spec)
	}
	e2 := Open(r, task, &jobs.Change{}, spec, time.Unix(0, 0))
	p.EscalationID = e2.ID
	if e2 == e {
		t.Fatal("the second question reopened the first")
	}
	res2 := jobs.Resolution{Type: jobs.ResolveAnswer, Text: "A, C", By: "ann"}
	e2.Resolution = &res2
	answer(t, r, task, e2, &res2)
	d := task.Paused.Decision
	if d == nil || !d.Allow {
		t.Fatalf("decision = %+v", d)
	}
	var got struct {
		Questions []any             `json:"questions"`
		Answers   map[string]string `json:"answers"`
	}
	if err := json.Unmarshal(d.UpdatedInput, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Questions) != 2 || got.Answers["Which approach?"] != "Theme context (Recommended)" || got.Answers["Which pages?"] != "Home, Profile" {
		t.Errorf("updated input = %s", d.UpdatedInput)
	}
}

// checkFirstQuestion checks the question asked of Claude's first question, its recommendation marked.
func checkFirstQuestion(t *testing.T, e *jobs.Escalation) {
	t.Helper()
	if e.Trigger != jobs.TriggerNeedsHelp || e.Recommendation != "B" || len(e.Options) != 3 || e.Options[1].Label != "Theme context (Recommended)" ||
		!strings.Contains(e.Question, "[Approach] Which approach? (question 1 of 2)") || !strings.Contains(e.Question, "A) CSS variables — simple") {
		t.Fatalf("first question: %+v", e)
	}
}
