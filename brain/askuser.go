package brain

import (
	"encoding/json"
	"strings"
)

// askuser.go reads Claude Code's AskUserQuestion tool call out of an agent's output. In a headless run nobody
// answers the call in the CLI, so it ends up in the output: on a line of its own, inside a stream-json assistant message, or in a result's
// deferred_tool_use. Its input is the question put exactly as the agent meant it:
//
//	{"questions":[{"question":"…","header":"…","options":[{"label":"…","description":"…"}],"multiSelect":false}]}
//
// Only the first question becomes the escalation: a button row answers one question.

// askUserInput is the part of the tool's input a human needs. Answers is set on the copy the tool's result
// carries back ("toolUseResult"), which is a question already answered.
type askUserInput struct {
	Questions []struct {
		Question string `json:"question"`
		Options  []struct {
			Label string `json:"label"`
		} `json:"options"`
	} `json:"questions"`
	Answers map[string]any `json:"answers"`
}

// maxAskUserDecodes bounds the decodes tried in one output: each starts at a '{' before a "questions" key,
// and an output quoting many of them must not cost a decode of the rest of it for each.
const maxAskUserDecodes = 64

// askUserQuestion returns the first question of the last unanswered AskUserQuestion call in text and its
// options, the "(Recommended)" marker Claude puts on a label taken off and remembered; ok=false when there is
// none. The last call, since an earlier one in a transcript may have been answered already.
func askUserQuestion(text string) (question string, opts []choice, ok bool) {
	const key = `"questions"`
	decodes := 0
	for end := len(text); decodes < maxAskUserDecodes; {
		at := strings.LastIndex(text[:end], key)
		if at < 0 {
			return "", nil, false
		}
		// The object holding the key opens at one of the braces before it; the nearest that decodes to a
		// value with questions is the tool's input.
		for open := at; decodes < maxAskUserDecodes; decodes++ {
			open = strings.LastIndexByte(text[:open], '{')
			if open < 0 {
				break
			}
			if q, o, found := decodeAskUser(text[open:]); found {
				return q, o, true
			}
		}
		end = at
	}
	return "", nil, false
}

// decodeAskUser decodes the JSON value at the start of s as a tool input with at least one unanswered
// question that offers options.
func decodeAskUser(s string) (string, []choice, bool) {
	var in askUserInput
	if err := json.NewDecoder(strings.NewReader(s)).Decode(&in); err != nil || len(in.Questions) == 0 || len(in.Answers) > 0 {
		return "", nil, false
	}
	q := in.Questions[0]
	var opts []choice
	for _, o := range q.Options {
		if c := cleanOption(o.Label); c.label != "" {
			opts = append(opts, c)
		}
	}
	if len(opts) == 0 {
		return "", nil, false
	}
	return strings.TrimSpace(q.Question), opts, true
}
