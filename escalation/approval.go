package escalation

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/orchrun/orch/jobs"
)

// The options of an approval: the keys are fixed, so that a button, `--choose B` and an answers file all mean the
// same on every approval.
const (
	AllowOnce   = "A"
	AllowForRun = "B"
	DenyCall    = "C"
)

// ApprovalOptions are an approval's options; rule is what "Allow for this run" allows from then on.
func ApprovalOptions(rule string) []jobs.Option {
	forRun := "Allow for this run"
	if rule != "" {
		forRun += " (" + rule + ")"
	}
	return []jobs.Option{{Key: AllowOnce, Label: "Allow once"}, {Key: AllowForRun, Label: forRun}, {Key: DenyCall, Label: "Deny"}}
}

// QuestionSpec is the question about the next unanswered question of Claude's AskUserQuestion call in p: Claude's own
// question, header and options (their labels exact, their descriptions beside them), the one labelled
// "(Recommended)" recommended. ok is false when every question has its answer.
func QuestionSpec(p *jobs.Paused) (s Spec, ok bool) {
	if len(p.Calls) == 0 {
		return Spec{}, false
	}
	qs := p.Calls[0].Questions()
	for i, q := range qs {
		if _, done := p.Answers[q.Question]; done {
			continue
		}
		var b strings.Builder
		if q.Header != "" {
			b.WriteString("[" + q.Header + "] ")
		}
		b.WriteString(q.Question)
		if len(qs) > 1 {
			fmt.Fprintf(&b, " (question %d of %d)", i+1, len(qs))
		}
		s = Spec{Trigger: jobs.TriggerNeedsHelp, Source: "agent", Call: true}
		for j, o := range q.Options {
			key := string(rune('A' + j))
			s.Keyed = append(s.Keyed, jobs.Option{Key: key, Label: o.Label})
			if o.Description != "" {
				fmt.Fprintf(&b, "\n%s) %s — %s", key, o.Label, o.Description)
			}
			if strings.Contains(strings.ToLower(o.Label), "(recommended)") && s.Recommendation == "" {
				s.Recommendation = key
			}
		}
		if q.MultiSelect {
			b.WriteString("\nSeveral may be chosen: answer with their letters, e.g. \"A, C\".")
		}
		b.WriteString("\nOr answer in your own words.")
		s.Question = b.String()
		return s, true
	}
	return Spec{}, false
}

// settlePaused applies a person's answer to the question a paused tool call waits on: the decision on the call, or
// the answer to one of Claude's questions, kept for the agent's next run. It reports false when e is not about a
// paused call, or when the answer is an abort or force-continue, which apply as to any question.
func settlePaused(r *jobs.Run, t *jobs.Task, e *jobs.Escalation, res *jobs.Resolution, c *jobs.Change) bool {
	p := t.Paused
	if p == nil || p.EscalationID != e.ID || (res.Type != jobs.ResolveChoose && res.Type != jobs.ResolveAnswer) {
		return false
	}
	t.Reopen(c)
	if e.Trigger != jobs.TriggerApproval {
		answerQuestion(t, e, res)
		return true
	}
	d := &jobs.CallDecision{By: res.By}
	switch {
	case res.Type == jobs.ResolveAnswer:
		d.Message = fmt.Sprintf("A person (%s) denied this call: %s", res.By, res.Text)
	case strings.EqualFold(res.Key, DenyCall):
		d.Message = fmt.Sprintf("A person (%s) denied this call.", res.By)
	case strings.EqualFold(res.Key, AllowForRun):
		d.Allow = true
		for _, c := range p.Calls {
			if c.Rule != "" && !slices.Contains(r.Approved, c.Rule) {
				r.Approved = append(r.Approved, c.Rule)
			}
		}
	default:
		d.Allow = true
	}
	p.Decision = d
	if p.Denied {
		// The session has no call waiting: the next prompt tells the agent what was decided.
		t.Guidance = append(t.Guidance, deniedGuidance(p, d))
	}
	return true
}

// answerQuestion records the answer to the current question of Claude's AskUserQuestion call, and the decision that
// returns the answers to the tool once every question has one.
func answerQuestion(t *jobs.Task, e *jobs.Escalation, res *jobs.Resolution) {
	p := t.Paused
	call := p.Calls[0]
	qs := call.Questions()
	var q jobs.Question
	for _, x := range qs {
		if _, done := p.Answers[x.Question]; !done {
			q = x
			break
		}
	}
	answer := strings.TrimSpace(res.Text)
	if res.Type == jobs.ResolveChoose {
		if o, ok := e.OptionByKey(res.Key); ok {
			answer = o.Label
		}
	} else if labels := chosenLabels(e, answer); len(labels) > 0 && (q.MultiSelect || len(labels) == 1) {
		answer = strings.Join(labels, ", ")
	}
	if p.Answers == nil {
		p.Answers = map[string]string{}
	}
	p.Answers[q.Question] = answer
	if len(p.Answers) < len(qs) {
		return // the next question is asked before the agent goes on
	}
	if p.Denied {
		// An agent CLI that could not pause the question: the answers go in its next prompt.
		var parts []string
		for _, x := range qs {
			parts = append(parts, fmt.Sprintf("%q=%q", x.Question, p.Answers[x.Question]))
		}
		answered := "A person answered your questions: " + strings.Join(parts, ", ") + "."
		t.Guidance = append(t.Guidance, answered)
		// Asked again, the same question is refused with the answers it already has.
		p.Decision = &jobs.CallDecision{By: res.By, Message: answered}
		return
	}
	in, err := call.Answered(p.Answers)
	if err != nil {
		p.Decision = &jobs.CallDecision{By: res.By, Message: "orch could not return the answers: " + err.Error()}
		return
	}
	p.Decision = &jobs.CallDecision{Allow: true, UpdatedInput: in, By: res.By}
}

var keyList = regexp.MustCompile(`^\s*[A-Za-z]\s*(?:[,;/ ]\s*[A-Za-z]\s*)*$`)

// chosenLabels reads an answer that names options by key ("A, C") or by label; nil when it names none.
func chosenLabels(e *jobs.Escalation, answer string) []string {
	if o, ok := namedOption(e, answer); ok {
		return []string{o.Label}
	}
	if !keyList.MatchString(answer) {
		return nil
	}
	var labels []string
	for _, k := range strings.FieldsFunc(answer, func(r rune) bool { return strings.ContainsRune(",;/ ", r) }) {
		o, ok := e.OptionByKey(k)
		if !ok {
			return nil
		}
		if !slices.Contains(labels, o.Label) {
			labels = append(labels, o.Label)
		}
	}
	return labels
}

// deniedGuidance tells an agent whose calls were refused what a person decided about them.
func deniedGuidance(p *jobs.Paused, d *jobs.CallDecision) string {
	var calls []string
	for _, c := range p.Calls {
		calls = append(calls, DescribeCall(c))
	}
	if d.Allow {
		return "A person approved what was refused before; do it now: " + strings.Join(calls, "; ")
	}
	return d.Message + " (" + strings.Join(calls, "; ") + "). Do not try it again; find another way or say why you cannot."
}

// DescribeCall says what a call does, in a line: "Bash: git push --force", "Write: /w/src/x.go".
func DescribeCall(c jobs.ToolCall) string {
	what := callSubject(c)
	if what == "" {
		return c.Tool
	}
	return c.Tool + ": " + what
}

// ApprovalSpec is the question about calls the policy asks a person about (one paused call, or the calls a CLI that
// could not pause refused): what each does, in a readable form, and the three options.
func ApprovalSpec(p *jobs.Paused) Spec {
	var b strings.Builder
	if p.Denied {
		b.WriteString("The agent was refused ")
		if len(p.Calls) == 1 {
			b.WriteString("a tool call that needs a person's approval")
		} else {
			fmt.Fprintf(&b, "%d tool calls that need a person's approval", len(p.Calls))
		}
		b.WriteString(". Allow it to try again?")
	} else {
		b.WriteString("The agent wants to make a tool call that needs a person's approval.")
	}
	rule := ""
	for _, c := range p.Calls {
		b.WriteString("\n\n" + callDetail(c))
		if c.Reason != "" {
			b.WriteString("\nWhy it asks: " + c.Reason)
		}
		if rule == "" {
			rule = c.Rule
		}
	}
	return Spec{Trigger: jobs.TriggerApproval, Source: "agent", Call: true, Question: b.String(),
		Keyed: ApprovalOptions(rule)}
}

// Bounds of a call's description: a command or a diff a person reads on a phone.
const (
	maxCallLines = 12
	maxCallLine  = 200
)

// callSubject is the one line that says what a call acts on.
func callSubject(c jobs.ToolCall) string {
	in := callInput(c)
	for _, k := range []string{"command", "file_path", "notebook_path", "url", "query", "pattern", "path"} {
		if s, ok := in[k].(string); ok && s != "" {
			return clip(strings.Join(strings.Fields(s), " "), maxCallLine)
		}
	}
	return ""
}

// callDetail shows a call as a person judges it: the command, the file and a short diff, or the input.
func callDetail(c jobs.ToolCall) string {
	in := callInput(c)
	str := func(k string) string { s, _ := in[k].(string); return s }
	switch c.Tool {
	case "Bash":
		s := "Run: " + indentBlock(str("command"))
		if d := str("description"); d != "" {
			s += "\n(" + clip(d, maxCallLine) + ")"
		}
		return s
	case "Edit":
		return "Edit " + str("file_path") + ":\n" + diffLines("-", str("old_string")) + "\n" + diffLines("+", str("new_string"))
	case "MultiEdit":
		return "Edit " + str("file_path") + " (several changes)"
	case "Write":
		return "Write " + str("file_path") + ":\n" + diffLines("+", str("content"))
	case "NotebookEdit":
		return "Edit the notebook " + str("notebook_path")
	case "WebFetch":
		return "Fetch " + str("url")
	}
	raw := strings.TrimSpace(string(c.Input))
	return c.Tool + " " + clip(raw, 4*maxCallLine)
}

func callInput(c jobs.ToolCall) map[string]any {
	in := map[string]any{}
	_ = json.Unmarshal(c.Input, &in)
	return in
}

// indentBlock puts a command on its own indented lines, bounded.
func indentBlock(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	out := boundedLines(lines, "    ")
	if len(out) == 1 {
		return strings.TrimSpace(out[0])
	}
	return "\n" + strings.Join(out, "\n")
}

// diffLines marks each line of s with sign, bounded.
func diffLines(sign, s string) string {
	if s == "" {
		return sign + " (nothing)"
	}
	return strings.Join(boundedLines(strings.Split(strings.TrimRight(s, "\n"), "\n"), sign+" "), "\n")
}

func boundedLines(lines []string, prefix string) []string {
	var out []string
	for i, l := range lines {
		if i == maxCallLines {
			out = append(out, fmt.Sprintf("%s… %d more lines", prefix, len(lines)-maxCallLines))
			break
		}
		out = append(out, prefix+clip(l, maxCallLine))
	}
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n-1], "") + "…"
}
