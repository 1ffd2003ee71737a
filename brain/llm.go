package brain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// llm.go is what the LLM backends share: the three judgements as prompts, the JSON read back out of the
// replies and checked, one corrective prompt when a reply is unusable, and usage summed over the calls. A
// backend only sends a conversation and returns the reply text (see judge.send).

// DefaultModel is the model the LLM brains use unless told otherwise: Haiku, as the seed chose it — cheap
// and fast enough to ask after every agent run.
const DefaultModel = "claude-haiku-4-5-20251001"

// Via values of the LLM backends.
const (
	viaAnthropic = "anthropic"
	viaClaude    = "claude"
)

// ErrInvalidReply means the LLM gave no usable answer to this request: its reply was not the JSON asked for
// even after a corrective prompt, or the API rejected the request itself (400, 413: a prompt too long for
// the model). Asking again would not help; the heuristic can answer instead.
var ErrInvalidReply = errors.New("the LLM brain gave no usable reply")

// ErrUnavailable means the LLM brain cannot answer at all now: the service stayed overloaded or rate-limited
// through every try, the CLI is missing or keeps failing, or the credentials are refused. The error's message
// says which. The caller saves the run and stops; it can be resumed once the cause is gone.
var ErrUnavailable = errors.New("the LLM brain is unavailable")

// LimitedError is an LLM brain's provider refusing for a rate or usage limit that says when it resets (a 429 with
// retry-after, or Anthropic's anthropic-ratelimit-*-reset headers): a run that cannot go on without this brain can
// wait for Reset instead of for a person. It is found with errors.As in the error of a judgement.
type LimitedError struct {
	Reset time.Time
	Err   error
}

func (e *LimitedError) Error() string { return e.Err.Error() }
func (e *LimitedError) Unwrap() error { return e.Err }

// errEmptyAttemptHistory: with no failed attempt there is nothing to decide, and a model would only guess.
var errEmptyAttemptHistory = errors.New("deciding retry: attempt history is empty")

// turn is one message of a conversation with the model.
type turn struct {
	assistant bool // false: the user (orch) speaking
	text      string
}

// reply is a model's answer to one call.
type reply struct {
	text   string
	usage  Usage
	cutOff bool // the reply stopped at the token limit
}

// judge runs the three judgements over one backend.
type judge struct {
	via       string // Via on results, and the head of error messages
	maxOutput int    // bytes of agent output the interpret prompt may hold
	// send makes one call, retries included, and returns the reply or a classified error (ErrUnavailable,
	// ErrInvalidReply, or ctx's error).
	send func(ctx context.Context, conv []turn) (reply, error)
}

// interpret asks the model what an agent's output means. The whole output goes into the prompt unless it is
// larger than the model's context allows; then head and tail do, and the result says how much was cut. If
// the API still finds the prompt too long (dense text has more tokens per byte), it tries again with half.
func (j *judge) interpret(ctx context.Context, output string) (Interpretation, error) {
	budget := j.maxOutput
	if budget <= 0 {
		budget = defaultMaxOutputBytes
	}
	// The prompt's closing form read back ("QUESTION: <your question>") would read as the agent's question.
	output = withoutForms(output)
	var total Usage
	for shrinks := 0; ; shrinks++ {
		text, omitted := clipMiddle(output, budget)
		prompt, err := renderPrompt("interpret.tmpl", interpretData{Output: text, Omitted: omitted, Marker: omittedMarker})
		if err != nil {
			return Interpretation{}, err
		}
		in, u, err := ask(ctx, j, "interpret", prompt, '{', parseInterpretation)
		total.add(u)
		if err != nil {
			if isPromptTooLong(err) && shrinks < 2 && budget/2 < len(output) {
				budget /= 2
				continue
			}
			return Interpretation{Usage: total}, err
		}
		in.Via, in.OmittedBytes, in.Usage = j.via, omitted, total
		return in, nil
	}
}

// decide asks the model whether a failed task should be retried or escalated.
func (j *judge) decide(ctx context.Context, in DecideInput) (Decision, error) {
	if len(in.AttemptHistory) == 0 {
		return Decision{}, errEmptyAttemptHistory
	}
	prompt, err := renderPrompt("decide.tmpl", in)
	if err != nil {
		return Decision{}, err
	}
	d, u, err := ask(ctx, j, "decide", prompt, '{', parseDecision)
	if err != nil {
		return Decision{Usage: u}, err
	}
	d.Via, d.Usage = j.via, u
	// The CLI prints the similarity at a loop stop, whoever decided.
	d.Similarity = MeanSimilarity(in.AttemptHistory)
	return d, nil
}

// tasks asks the model for the tasks of a plan.
func (j *judge) tasks(ctx context.Context, plan string) (TaskList, error) {
	prompt, err := renderPrompt("tasks.tmpl", tasksData{Plan: plan})
	if err != nil {
		return TaskList{}, err
	}
	ts, u, err := ask(ctx, j, "tasks", prompt, '[', parseTasks)
	if err != nil {
		return TaskList{Usage: u}, err
	}
	return TaskList{Tasks: ts, Via: j.via, Usage: u}, nil
}

// ask sends prompt, reads the wanted JSON value (kind '{' or '[') out of the reply and parses it. An unusable
// reply gets one corrective prompt, in the same conversation, saying what was wrong and repeating the shape;
// a second unusable reply is ErrInvalidReply. Usage counts every call that got a reply, also on error.
func ask[T any](ctx context.Context, j *judge, judgement, prompt string, kind byte, parse func(json.RawMessage) (T, error)) (T, Usage, error) {
	var zero T
	var u Usage
	conv := []turn{{text: prompt}}
	for {
		r, err := j.send(ctx, conv)
		if err != nil {
			return zero, u, err
		}
		u.add(r.usage)
		v, problem := readReply(r, kind, parse)
		if problem == nil {
			return v, u, nil
		}
		if len(conv) > 1 {
			return zero, u, invalid(fmt.Sprintf("%s %s: unusable reply, also after a corrective prompt: %v", j.via, judgement, problem), problem)
		}
		fix, err := renderPrompt("corrective.tmpl", correctiveData{Judgement: judgement, Problem: problem.Error()})
		if err != nil {
			return zero, u, err
		}
		said := r.text
		if strings.TrimSpace(said) == "" {
			said = "(empty reply)" // the Messages API refuses an empty turn
		}
		conv = append(conv, turn{assistant: true, text: said}, turn{text: fix})
	}
}

// readReply extracts and parses the JSON of a reply; the error says what is wrong, in words for the model.
func readReply[T any](r reply, kind byte, parse func(json.RawMessage) (T, error)) (T, error) {
	var zero T
	raw, err := extractJSON(r.text, kind)
	if err != nil {
		what := "object"
		if kind == '[' {
			what = "array"
		}
		switch {
		case strings.TrimSpace(r.text) == "":
			err = errors.New("the reply was empty")
		case errors.Is(err, errNoJSON):
			err = fmt.Errorf("the reply has no JSON %s", what)
		}
		if r.cutOff {
			err = fmt.Errorf("%w; the reply was cut off at the token limit, so keep it shorter", err)
		}
		return zero, err
	}
	return parse(raw)
}

// parseInterpretation reads and checks an interpret reply. Only the status must be right; the rest is
// filled in where the contract needs it (a failure has an error, a question is never empty), since a model
// that got the status right and left a field null has still answered.
func parseInterpretation(raw json.RawMessage) (Interpretation, error) {
	var in Interpretation
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, fmt.Errorf("the JSON object does not have the required field types: %v", unwrapJSON(err))
	}
	in.Status = Status(strings.ToLower(strings.TrimSpace(string(in.Status))))
	switch in.Status {
	case StatusCompleted, StatusFailed, StatusNeedsHelp:
	case "":
		return in, errors.New(`"status" is missing`)
	default:
		return in, fmt.Errorf(`"status" is %q, not one of "completed", "failed", "needs_help"`, in.Status)
	}
	in.Summary = strings.TrimSpace(in.Summary)
	in.Error = strings.TrimSpace(in.Error)
	in.Question = strings.TrimSpace(in.Question)
	in.Recommendation = strings.TrimSpace(in.Recommendation)
	var opts []string
	for _, o := range in.Options {
		if o = strings.TrimSpace(o); o != "" {
			opts = append(opts, o)
		}
	}
	in.Options = opts
	switch in.Status {
	case StatusFailed:
		if in.Error == "" {
			in.Error = in.Summary
		}
		if in.Error == "" {
			in.Error = "the agent failed (the brain gave no details)"
		}
		in.Error = truncate(in.Error, maxErrorLen)
	case StatusNeedsHelp:
		if in.Question == "" {
			in.Question = "The agent's result is unclear. Please review the output and advise."
		}
	case StatusCompleted:
		in.Error = ""
	}
	return in, nil
}

// parseDecision reads and checks a decide reply: a decision of the two, with a reason.
func parseDecision(raw json.RawMessage) (Decision, error) {
	var d Decision
	if err := json.Unmarshal(raw, &d); err != nil {
		return d, fmt.Errorf("the JSON object does not have the required field types: %v", unwrapJSON(err))
	}
	d.Decision = Verdict(strings.ToLower(strings.TrimSpace(string(d.Decision))))
	switch d.Decision {
	case Retry:
	case Escalate:
		d.GuidanceForRetry = "" // the contract has it null when escalating
	case "":
		return d, errors.New(`"decision" is missing`)
	default:
		return d, fmt.Errorf(`"decision" is %q, not "retry" or "escalate"`, d.Decision)
	}
	d.Reason = strings.TrimSpace(d.Reason)
	d.GuidanceForRetry = strings.TrimSpace(d.GuidanceForRetry)
	if d.Reason == "" {
		// The reason is what the human reads at an escalation; a decision without one is not an answer.
		return d, errors.New(`"reason" is missing`)
	}
	return d, nil
}

// parseTasks reads and checks a tasks reply: every task has an id and a title, and no id repeats. Ids may
// come as numbers (1.1 instead of "1.1"); their text is kept as written.
func parseTasks(raw json.RawMessage) ([]Task, error) {
	var items []struct {
		ID          json.RawMessage `json:"id"`
		Title       *string         `json:"title"`
		Description *string         `json:"description"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("the JSON array is not an array of task objects: %v", unwrapJSON(err))
	}
	if len(items) == 0 {
		return nil, errors.New("the array is empty, but a plan has at least one task")
	}
	tasks := make([]Task, 0, len(items))
	seen := map[string]bool{}
	for i, it := range items {
		id, err := taskID(it.ID)
		if err != nil {
			return nil, fmt.Errorf("task %d: %v", i+1, err)
		}
		t := Task{ID: id, Title: strings.TrimSpace(deref(it.Title)), Description: strings.TrimSpace(deref(it.Description))}
		if t.Title == "" {
			return nil, fmt.Errorf("task %d (id %q) has no \"title\"", i+1, t.ID)
		}
		if seen[t.ID] {
			return nil, fmt.Errorf("task id %q appears more than once", t.ID)
		}
		seen[t.ID] = true
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// taskID reads an id given as a string or a number.
func taskID(raw json.RawMessage) (string, error) {
	var s string
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New(`it has no "id"`)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return "", fmt.Errorf(`its "id" is %s, not a string`, raw)
		}
		s = n.String()
	}
	if s = strings.TrimSpace(s); s == "" {
		return "", errors.New(`its "id" is empty`)
	}
	return s, nil
}

// unwrapJSON drops the "decoding interpretation:" heads the types' UnmarshalJSON add: the model needs only
// the cause.
func unwrapJSON(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}
