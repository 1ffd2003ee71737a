package brain

import "encoding/json"

// Task is one task of a plan, as the tasks judgement extracts it.
type Task struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

// TaskList is the tasks judgement: a plan's tasks in order. Its JSON form is the bare array of the contract,
// [{"id","title","description"}]; the other fields are for the event log and costs, like Interpretation's.
type TaskList struct {
	Tasks []Task
	// Via is the backend that answered ("anthropic", "claude") or "heuristic" (the offline plan splitter).
	Via string
	// Fallback says why the LLM's answer was not used, when it was not.
	Fallback string
	Usage    Usage
}

// MarshalJSON writes the tasks as an array, [] when there are none.
func (l TaskList) MarshalJSON() ([]byte, error) {
	if l.Tasks == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(l.Tasks)
}
