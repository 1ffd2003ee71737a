package jobs

import (
	"encoding/json"
	"fmt"
)

// Permissions is the policy a run's agent works under, fixed when the run is created: rules in Claude Code's
// permission-rule syntax and what a call no rule names gets ("allow", "ask" or "deny").
type Permissions struct {
	Name    string   `json:"name,omitempty"` // where it comes from: "docker defaults", "orch.yaml", …
	Default string   `json:"default"`
	Allow   []string `json:"allow,omitempty"`
	Ask     []string `json:"ask,omitempty"`
	Deny    []string `json:"deny,omitempty"`
}

// ToolCall is one tool call an agent made, as a person is asked about it.
type ToolCall struct {
	ID    string          `json:"id,omitempty"`
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input,omitempty"`
	// Rule is what "Allow for this run" allows from then on; Reason why the policy asked.
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Paused is the tool call a task's agent session stopped at for a person: a call the policy asks about, Claude's own
// question (AskUserQuestion), or calls that were denied outright (an agent CLI that cannot pause).
type Paused struct {
	// Session is the agent's session, resumed with the decision.
	Session string `json:"session"`
	// Calls holds the paused call, or every denied call when Denied.
	Calls []ToolCall `json:"calls"`
	// Denied is set when the calls were refused rather than paused: the session has no call waiting, so it is resumed
	// with a prompt that tells the agent what was decided.
	Denied bool `json:"denied,omitempty"`
	// EscalationID is the question open about the call.
	EscalationID string `json:"escalation_id,omitempty"`
	// Answers are the answers to Claude's questions so far (question text → label, or labels joined with ", ").
	Answers map[string]string `json:"answers,omitempty"`
	// Decision is what a person decided; the next agent run carries it to the hook.
	Decision *CallDecision `json:"decision,omitempty"`
}

// CallDecision is a person's decision on a paused call.
type CallDecision struct {
	Allow   bool   `json:"allow"`
	Message string `json:"message,omitempty"` // a denial's reason, which the agent reads
	// UpdatedInput replaces the call's input (the answers to Claude's questions).
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	By           string          `json:"by,omitempty"`
}

// AskTool is Claude Code's structured question tool.
const AskTool = "AskUserQuestion"

// Question is one of the questions of a call to AskUserQuestion (1 to 4 of them, each with 2 to 4 options; Claude
// Code's tool schema).
type Question struct {
	Question    string           `json:"question"`
	Header      string           `json:"header,omitempty"`
	Options     []QuestionOption `json:"options"`
	MultiSelect bool             `json:"multiSelect,omitempty"`
}

// QuestionOption is one option of a question.
type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Questions are the questions of a call to AskUserQuestion; nil for any other call.
func (c ToolCall) Questions() []Question {
	if c.Tool != AskTool {
		return nil
	}
	var in struct {
		Questions []Question `json:"questions"`
	}
	if json.Unmarshal(c.Input, &in) != nil {
		return nil
	}
	return in.Questions
}

// Answered is the input that answers a call to AskUserQuestion: its questions as they were, with the answers keyed by
// question text (several labels of a multi-select question joined with ", "), as a Claude Code hook gives them back
// (code.claude.com/docs/en/hooks, "AskUserQuestion": allow with updatedInput holding questions and answers; 2.1.85+).
func (c ToolCall) Answered(answers map[string]string) (json.RawMessage, error) {
	in := map[string]json.RawMessage{}
	if err := json.Unmarshal(c.Input, &in); err != nil {
		return nil, fmt.Errorf("the question's input is not an object: %w", err)
	}
	a, err := json.Marshal(answers)
	if err != nil {
		return nil, err
	}
	in["answers"] = a
	return json.Marshal(in)
}
