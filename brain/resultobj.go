package brain

import (
	"encoding/json"
	"strings"
)

// A Claude Code result object as what the agent said: what `claude -p --output-format json` prints, or the last line
// of stream-json, when a CLI adapter passes it on whole (code.claude.com/docs/en/headless, "Output formats": type
// "result", subtype "success" or "error_max_turns" / "error_during_execution", is_error, result). Its answer is the
// result text, not the JSON around it; a session that ended in error with no text is a failure, said in words.

// agentResult is the part of a result object the brain reads.
type agentResult struct {
	Type    string  `json:"type"`
	Subtype string  `json:"subtype"`
	IsError bool    `json:"is_error"`
	Result  *string `json:"result"`
}

// resultObject reads output as a result object; ok is false for anything else.
func resultObject(output string) (agentResult, bool) {
	s := strings.TrimSpace(output)
	if !strings.HasPrefix(s, "{") || !strings.Contains(s, `"result"`) {
		return agentResult{}, false
	}
	var r agentResult
	if json.Unmarshal([]byte(s), &r) != nil || r.Type != "result" {
		return agentResult{}, false
	}
	return r, true
}

// interpretResult judges a result object: its text as any answer, and a session that ended in error as a failure
// whatever its text says.
func interpretResult(r agentResult) Interpretation {
	text := ""
	if r.Result != nil {
		text = strings.TrimSpace(*r.Result)
	}
	failedSession := r.IsError || strings.HasPrefix(r.Subtype, "error")
	if text == "" {
		if !failedSession {
			return Interpretation{Status: StatusFailed, Summary: "The agent's session ended with no answer.",
				Error: "the agent's session ended with no answer", Via: viaHeuristic}
		}
		why := "the agent's session ended in error (" + r.Subtype + ") with no answer"
		if r.Subtype == "" {
			why = "the agent's session ended in error with no answer"
		}
		return Interpretation{Status: StatusFailed, Summary: strings.ToUpper(why[:1]) + why[1:] + ".", Error: why,
			Via: viaHeuristic}
	}
	in := interpretText(text)
	if failedSession && (in.Status == StatusCompleted || in.Unclear()) {
		// The session says it ended in error: words that claim success, or say nothing clear, do not outweigh that.
		in.Question, in.Options, in.Recommendation = "", nil, ""
		in.Status = StatusFailed
		in.Error = "the agent's session ended in error (" + r.Subtype + "): " + truncate(collapse(text), 400)
	}
	return in
}
