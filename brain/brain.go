// Package brain decides what an agent's output means and what to do next.
package brain

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Status is the interpret judgement's verdict on one agent run.
type Status string

const (
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusNeedsHelp Status = "needs_help"
)

// Interpretation is the interpret judgement: what the agent's output means.
//
// Its JSON form is {"status","summary","error","question","options","recommendation"} with every key always
// present and empty values as null, the shape the LLM prompt asks for, so an LLM answer and a heuristic one
// are interchangeable.
type Interpretation struct {
	Status         Status
	Summary        string
	Error          string
	Question       string
	Options        []string
	Recommendation string
	// Via says which path produced the interpretation: "marker" (explicit-marker fast path), "heuristic",
	// or the LLM backend ("anthropic", "claude"). It is for the event log, not part of the judgement, so it is
	// not marshalled.
	Via string
	// OmittedBytes is how many bytes from the middle of the output an LLM brain did not see because the output
	// was larger than its context allows (0: it read all of it). The event log should say so when it is not 0.
	OmittedBytes int
	// Fallback is set when an LLM brain could not give a usable answer and the heuristic answered instead: it
	// says why, for a brain_fallback event.
	Fallback string
	// Usage is what the LLM calls behind this answer cost, failed ones included (zero for the offline paths).
	Usage Usage
}

// Unclear reports whether the brain could not tell what the attempt came to: no sign of completion, of failure or of
// a question of the agent's own. Such an answer is no question the agent asked, and it is put to a person as one
// about the attempt (accept its work, or run it again), never as a bare prompt whose every answer runs it again.
func (in Interpretation) Unclear() bool {
	return in.Status == StatusNeedsHelp && len(in.Options) == 0 && strings.TrimSpace(in.Question) == unclearQuestion
}

// Via values for the offline paths; LLM backends name themselves.
const (
	viaMarker    = "marker"
	viaHeuristic = "heuristic"
)

// interpretationJSON uses pointers so that empty values marshal as null, as the prompt's contract has them.
type interpretationJSON struct {
	Status         *string  `json:"status"`
	Summary        *string  `json:"summary"`
	Error          *string  `json:"error"`
	Question       *string  `json:"question"`
	Options        []string `json:"options"`
	Recommendation *string  `json:"recommendation"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// MarshalJSON writes every key, with null for empty strings and empty options.
func (in Interpretation) MarshalJSON() ([]byte, error) {
	v := interpretationJSON{
		Status:         nullable(string(in.Status)),
		Summary:        nullable(in.Summary),
		Error:          nullable(in.Error),
		Question:       nullable(in.Question),
		Recommendation: nullable(in.Recommendation),
	}
	if len(in.Options) > 0 {
		v.Options = in.Options
	}
	return json.Marshal(v)
}

// UnmarshalJSON accepts null or a string for every string key and null or an array for options, since LLM
// answers use both for "nothing".
func (in *Interpretation) UnmarshalJSON(data []byte) error {
	var v interpretationJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("decoding interpretation: %w", err)
	}
	*in = Interpretation{
		Status:         Status(deref(v.Status)),
		Summary:        deref(v.Summary),
		Error:          deref(v.Error),
		Question:       deref(v.Question),
		Recommendation: deref(v.Recommendation),
	}
	if len(v.Options) > 0 {
		in.Options = v.Options
	}
	return nil
}

// DecideInput is the decide judgement's input: {"task_id","task_title","attempt_history":[...]}.
type DecideInput struct {
	TaskID         string   `json:"task_id"`
	TaskTitle      string   `json:"task_title"`
	AttemptHistory []string `json:"attempt_history"`
}

// Verdict is the decide judgement's answer for a failed task.
type Verdict string

const (
	Retry    Verdict = "retry"
	Escalate Verdict = "escalate"
)

// Decision is the decide judgement: JSON {"decision","reason","guidance_for_retry"}, guidance null when empty.
type Decision struct {
	Decision         Verdict
	Reason           string
	GuidanceForRetry string
	// Similarity is the mean similarity of consecutive errors in the history; the CLI prints it at a loop stop.
	Similarity float64
	// Permanent reports that the latest error is one no retry can fix.
	Permanent bool
	// Via says which path decided: "heuristic" or the LLM backend ("anthropic", "claude"); empty when the
	// Heuristic was called directly. Not marshalled, like Interpretation.Via.
	Via string
	// Fallback is set when an LLM brain could not give a usable answer and the heuristic decided instead.
	Fallback string
	// Usage is what the LLM calls behind this decision cost, failed ones included.
	Usage Usage
}

type decisionJSON struct {
	Decision         string  `json:"decision"`
	Reason           string  `json:"reason"`
	GuidanceForRetry *string `json:"guidance_for_retry"`
}

// MarshalJSON writes the three keys of the decide contract; the heuristic's measurements stay in memory.
func (d Decision) MarshalJSON() ([]byte, error) {
	return json.Marshal(decisionJSON{
		Decision:         string(d.Decision),
		Reason:           d.Reason,
		GuidanceForRetry: nullable(d.GuidanceForRetry),
	})
}

// UnmarshalJSON accepts null or a string for guidance_for_retry (and for reason, which LLMs sometimes null).
func (d *Decision) UnmarshalJSON(data []byte) error {
	var v struct {
		Decision         *string `json:"decision"`
		Reason           *string `json:"reason"`
		GuidanceForRetry *string `json:"guidance_for_retry"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("decoding decision: %w", err)
	}
	*d = Decision{
		Decision:         Verdict(deref(v.Decision)),
		Reason:           deref(v.Reason),
		GuidanceForRetry: deref(v.GuidanceForRetry),
	}
	return nil
}

// Heuristic is the offline brain: explicit markers, question patterns, error evidence, error similarity and
// A-B-A oscillation. It does no I/O, so it is also the fallback when an LLM brain cannot answer.
// The zero value works.
type Heuristic struct {
	SimilarityThreshold float64 // default 0.8 when 0
}

// defaultSimilarityThreshold is the ratio at or above which two errors count as the same error: the loop
// detector's value from the seed plan, where it separated reworded repeats from genuinely new errors.
const defaultSimilarityThreshold = 0.8

func (h *Heuristic) threshold() float64 {
	if h == nil || h.SimilarityThreshold <= 0 {
		return defaultSimilarityThreshold
	}
	return h.SimilarityThreshold
}
