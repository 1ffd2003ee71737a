package worker

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// recordingBrain is the heuristic brain, keeping every output it is asked to interpret: what an LLM brain would be
// sent.
type recordingBrain struct {
	brain.Heuristic
	mu   sync.Mutex
	seen []string
}

func (b *recordingBrain) Interpret(ctx context.Context, output string) (brain.Interpretation, error) {
	b.mu.Lock()
	b.seen = append(b.seen, output)
	b.mu.Unlock()
	return b.Heuristic.Interpret(ctx, output)
}

// An agent that sends its prompt back is not asking orch's template question: the brain never sees the copy, and
// an attempt that was nothing but the copy is a failure that the attempt cap stops.
func TestEchoedPromptIsNotTheAgentsQuestion(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) { testEchoedPrompt(t, rdb) })
	}
}

func testEchoedPrompt(t *testing.T, rdb redis.UniversalClient) {
	withBrain := func(h *harness, b *recordingBrain) {
		h.w.cfg.Brain = func(jobs.Options) (Brain, error) { return b, nil }
	}
	placeholder := func(t *testing.T, r *jobs.Run) {
		t.Helper()
		for _, e := range r.Escalations {
			if strings.Contains(e.Question, "<your question>") || strings.Contains(labels(e.Options), "<first option>") {
				t.Errorf("escalation %s asks orch's template: %q %q", e.Trigger, e.Question, e.Options)
			}
		}
	}

	t.Run("echo only", func(t *testing.T) {
		h := newHarness(t, rdb, script(t, `cat`), nil)
		b := &recordingBrain{}
		withBrain(h, b)
		r := h.newRun(t, "1.1")
		got := drive(t, h, r.ID)
		placeholder(t, got)
		e := got.OpenEscalation()
		if got.Status != jobs.RunParked || e == nil || e.Trigger != jobs.TriggerAttemptCap {
			t.Fatalf("run %s, escalation %+v; want parked at the attempt cap", got.Status, e)
		}
		task := got.Tasks[0]
		if task.Failures != 3 || len(task.Errors) != 3 {
			t.Fatalf("failures %d, errors %q", task.Failures, task.Errors)
		}
		for _, err := range task.Errors {
			if !strings.Contains(err, "only the prompt orch sent it, echoed back") {
				t.Errorf("error %q", err)
			}
		}
		// Attempts 2 and 3 echoed the brain's retry guidance too: nothing of it reached the brain as the agent's.
		if len(b.seen) != 0 {
			t.Errorf("the brain was asked to interpret %q", b.seen)
		}
	})

	t.Run("echo, then a real question", func(t *testing.T) {
		h := newHarness(t, rdb, script(t, `cat; printf '\n\n'
case "$ORCH_ATTEMPT" in
1) printf 'I read the service.\n\nQUESTION: Which store?\nOPTIONS:\nA) Redis\nB) Memory\nRECOMMENDATION: B\n' ;;
*) echo "Implemented it. All 4 tests pass." ;;
esac`), nil)
		b := &recordingBrain{}
		withBrain(h, b)
		r := h.newRun(t, "1.1")
		got := drive(t, h, r.ID)
		placeholder(t, got)
		e := got.OpenEscalation()
		if e == nil || e.Trigger != jobs.TriggerNeedsHelp || e.Question != "Which store?" ||
			labels(e.Options) != "Redis|Memory" || e.Recommendation != "B" {
			t.Fatalf("escalation %+v", e)
		}
		if _, _, err := escalation.Resolve(context.Background(), h.store, h.queue, escalation.Request{RunID: r.ID,
			Type: jobs.ResolveChoose, Key: "B", By: "test", Via: "test"}); err != nil {
			t.Fatal(err)
		}
		got = drive(t, h, r.ID)
		if got.Status != jobs.RunCompleted {
			t.Fatalf("run %s after the answer", got.Status)
		}
		// The brain read the agent's words and nothing of the prompt: neither the task's nor the footer's lines, nor
		// the guidance the second attempt was given.
		want := []string{"I read the service.\n\nQUESTION: Which store?\nOPTIONS:\nA) Redis\nB) Memory\nRECOMMENDATION: B",
			"Implemented it. All 4 tests pass."}
		if len(b.seen) != len(want) {
			t.Fatalf("the brain interpreted %d outputs, want %d: %q", len(b.seen), len(want), b.seen)
		}
		for i, s := range b.seen {
			if strings.TrimSpace(s) != want[i] {
				t.Errorf("interpretation %d read %q, want %q", i+1, s, want[i])
			}
		}
	})
}

func labels(opts []jobs.Option) string {
	l := make([]string, len(opts))
	for i, o := range opts {
		l[i] = o.Label
	}
	return strings.Join(l, "|")
}
