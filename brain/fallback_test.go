package brain

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// fakeLLM is an LLM that answers from its fields and counts its calls.
type fakeLLM struct {
	interp   Interpretation
	decision Decision
	tasks    TaskList
	err      error // returned by every call, with the Usage of the answer fields
	calls    int
}

func (f *fakeLLM) Interpret(ctx context.Context, output string) (Interpretation, error) {
	f.calls++
	if f.err != nil {
		return Interpretation{Usage: f.interp.Usage}, f.err
	}
	return f.interp, nil
}

func (f *fakeLLM) Decide(ctx context.Context, in DecideInput) (Decision, error) {
	f.calls++
	if f.err != nil {
		return Decision{Usage: f.decision.Usage}, f.err
	}
	return f.decision, nil
}

func (f *fakeLLM) Tasks(ctx context.Context, plan string) (TaskList, error) {
	f.calls++
	if f.err != nil {
		return TaskList{Usage: f.tasks.Usage}, f.err
	}
	return f.tasks, nil
}

var llmUsage = Usage{Backend: "anthropic", Model: DefaultModel, InputTokens: 2000, OutputTokens: 80, CostUSD: 0.0024, Calls: 2}

func TestFallbackInterpret(t *testing.T) {
	const marked = "I need a decision.\nSTATUS: needs_human\nQUESTION: Which cache should I use?\nOPTIONS:\nA) Redis  B) In-memory\nRECOMMENDATION: B"
	llmAnswer := Interpretation{Status: StatusCompleted, Summary: "the LLM's", Via: "anthropic", Usage: llmUsage}
	invalidErr := invalid("anthropic interpret: unusable reply, also after a corrective prompt: the reply has no JSON object", nil)
	unavailableErr := unavailable("anthropic messages: 529 overloaded_error: Overloaded; gave up after 3 tries", nil)
	tests := []struct {
		name      string
		llmOnly   bool
		output    string
		err       error
		wantCalls int
		wantVia   string
		wantErr   error
		check     func(t *testing.T, in Interpretation)
	}{
		{name: "an explicit marker needs no LLM call", output: marked, wantCalls: 0, wantVia: "marker",
			check: func(t *testing.T, in Interpretation) {
				if in.Status != StatusNeedsHelp || in.Question != "Which cache should I use?" {
					t.Errorf("got %+v", in)
				}
			}},
		{name: "an empty output needs no LLM call", output: "  \n", wantCalls: 0, wantVia: "heuristic"},
		{name: "LLMOnly asks the LLM despite the marker", llmOnly: true, output: marked, wantCalls: 1, wantVia: "anthropic"},
		{name: "no marker: the LLM answers", output: "Implemented it. All tests pass.", wantCalls: 1, wantVia: "anthropic",
			check: func(t *testing.T, in Interpretation) {
				if in.Summary != "the LLM's" || in.Fallback != "" || in.Usage != llmUsage {
					t.Errorf("got %+v", in)
				}
			}},
		{name: "an invalid reply: the heuristic answers, with a note", output: "Traceback (most recent call last):\nValueError: bad input",
			err: invalidErr, wantCalls: 1, wantVia: "heuristic",
			check: func(t *testing.T, in Interpretation) {
				if in.Status != StatusFailed || !strings.Contains(in.Error, "ValueError: bad input") {
					t.Errorf("got %+v, want the heuristic's failure", in)
				}
				if !strings.Contains(in.Fallback, "no JSON object") || !strings.Contains(in.Fallback, "heuristic answered") {
					t.Errorf("Fallback %q", in.Fallback)
				}
				if in.Usage != llmUsage {
					t.Errorf("usage %+v: the failed calls' cost is lost", in.Usage)
				}
			}},
		{name: "unavailable: the error as it is", output: "Implemented it.", err: unavailableErr, wantCalls: 1, wantErr: ErrUnavailable},
		{name: "a cancelled call: the error as it is", output: "Implemented it.", err: context.Canceled, wantCalls: 1, wantErr: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			llm := &fakeLLM{interp: llmAnswer, err: tt.err}
			f := &Fallback{LLM: llm, LLMOnly: tt.llmOnly}
			in, err := f.Interpret(context.Background(), tt.output)
			if llm.calls != tt.wantCalls {
				t.Errorf("%d LLM calls, want %d", llm.calls, tt.wantCalls)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || err != tt.err {
					t.Errorf("error %v, want %v returned as it is", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if in.Via != tt.wantVia {
				t.Errorf("Via %q, want %q", in.Via, tt.wantVia)
			}
			if tt.check != nil {
				tt.check(t, in)
			}
		})
	}
}

func TestFallbackDecide(t *testing.T) {
	in := DecideInput{TaskID: "1.1", TaskTitle: "t", AttemptHistory: []string{
		"ModuleNotFoundError: No module named 'redis'", "ModuleNotFoundError: No module named 'redis'", "ModuleNotFoundError: No module named 'redis'"}}
	t.Run("the LLM decides", func(t *testing.T) {
		llm := &fakeLLM{decision: Decision{Decision: Retry, Reason: "r", Via: "claude"}}
		d, err := (&Fallback{LLM: llm}).Decide(context.Background(), in)
		if err != nil || d.Via != "claude" || d.Decision != Retry || llm.calls != 1 {
			t.Errorf("got %+v, %v", d, err)
		}
	})
	t.Run("an invalid reply: the heuristic decides, with a note", func(t *testing.T) {
		llm := &fakeLLM{decision: Decision{Usage: llmUsage}, err: invalid("claude decide: unusable reply", nil)}
		d, err := (&Fallback{LLM: llm}).Decide(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if d.Via != "heuristic" || d.Decision != Escalate || !strings.Contains(d.Fallback, "claude decide: unusable reply") || d.Usage != llmUsage {
			t.Errorf("got %+v", d)
		}
	})
	t.Run("unavailable", func(t *testing.T) {
		llm := &fakeLLM{err: unavailable("claude CLI not found on PATH", nil)}
		if _, err := (&Fallback{LLM: llm}).Decide(context.Background(), in); !errors.Is(err, ErrUnavailable) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("no LLM", func(t *testing.T) {
		d, err := (&Fallback{}).Decide(context.Background(), in)
		if err != nil || d.Via != "heuristic" || d.Decision != Escalate {
			t.Errorf("got %+v, %v", d, err)
		}
	})
}

func TestFallbackTasks(t *testing.T) {
	split := func(plan string) ([]Task, error) { return []Task{{ID: "1.1", Title: "from the splitter"}}, nil }
	t.Run("the LLM extracts", func(t *testing.T) {
		llm := &fakeLLM{tasks: TaskList{Tasks: []Task{{ID: "1.1", Title: "from the LLM"}}, Via: "anthropic"}}
		l, err := (&Fallback{LLM: llm, SplitPlan: split}).Tasks(context.Background(), "plan")
		if err != nil || l.Via != "anthropic" || l.Tasks[0].Title != "from the LLM" {
			t.Errorf("got %+v, %v", l, err)
		}
	})
	t.Run("an invalid reply: the splitter, with a note", func(t *testing.T) {
		llm := &fakeLLM{tasks: TaskList{Usage: llmUsage}, err: invalid("anthropic tasks: unusable reply", nil)}
		l, err := (&Fallback{LLM: llm, SplitPlan: split}).Tasks(context.Background(), "plan")
		if err != nil || l.Via != "heuristic" || l.Tasks[0].Title != "from the splitter" || l.Fallback == "" || l.Usage != llmUsage {
			t.Errorf("got %+v, %v", l, err)
		}
	})
	t.Run("an invalid reply and no splitter", func(t *testing.T) {
		llm := &fakeLLM{err: invalid("anthropic tasks: unusable reply", nil)}
		if _, err := (&Fallback{LLM: llm}).Tasks(context.Background(), "plan"); !errors.Is(err, ErrInvalidReply) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("unavailable", func(t *testing.T) {
		llm := &fakeLLM{err: unavailable("down", nil)}
		if _, err := (&Fallback{LLM: llm, SplitPlan: split}).Tasks(context.Background(), "plan"); !errors.Is(err, ErrUnavailable) {
			t.Errorf("error %v", err)
		}
	})
}

// TestFallbackOverAnthropic runs the composition end to end against the fake Messages API.
func TestFallbackOverAnthropic(t *testing.T) {
	f := newFakeMessagesAPI(t, okReply("It seems fine."), okReply("Still fine, I think."))
	a := newTestAnthropic(t, f, &sleeps{})
	in, err := (&Fallback{LLM: a}).Interpret(context.Background(), "Implemented the parser. All 12 tests pass.")
	if err != nil {
		t.Fatal(err)
	}
	if in.Via != "heuristic" || in.Status != StatusCompleted || !strings.Contains(in.Fallback, "anthropic interpret") || in.Usage.Calls != 2 {
		t.Errorf("got %+v", in)
	}

	down := newFakeMessagesAPI(t, errReply(http.StatusServiceUnavailable, "api_error", "down"))
	a = newTestAnthropic(t, down, &sleeps{})
	_, err = (&Fallback{LLM: a}).Interpret(context.Background(), "Implemented the parser.")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "503") {
		t.Errorf("error %v", err)
	}
}

func TestAvailable(t *testing.T) {
	found := func(string) (string, error) { return "/usr/bin/claude", nil }
	missing := func(name string) (string, error) {
		return "", errors.New(`exec: "claude": executable file not found in $PATH`)
	}
	tests := []struct {
		name, brain, key string
		look             func(string) (string, error)
		wantErr          error
	}{
		{"heuristic", "heuristic", "", missing, nil},
		{"claude on PATH", "claude", "", found, nil},
		{"claude missing", "claude", "", missing, ErrUnavailable},
		{"anthropic with a key", "anthropic", "sk-x", missing, nil},
		{"anthropic without", "anthropic", "", found, ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Available(tt.brain, tt.look, tt.key)
			if (tt.wantErr == nil) != (err == nil) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
		})
	}
	if err := Available("claude", missing, ""); err == nil || !strings.Contains(err.Error(), "claude CLI not found on PATH") {
		t.Errorf("error %v", err)
	}
	if err := Available("gpt", found, "k"); err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("an unknown brain: error %v", err)
	}
}
