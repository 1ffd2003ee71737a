package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
)

// limitedOnce is an agent that stops on Claude Code's usage limit on its first attempt, the reset five seconds after
// it printed it (the older CLI's "Claude AI usage limit reached|<epoch>" result), and finishes on the next.
const limitedOnce = `if [ "$ORCH_ATTEMPT" = 1 ]; then
reset=$(( $(date +%s) + 5 ))
printf '{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"Claude AI usage limit reached|%s","session_id":"s1","total_cost_usd":0.01}\n' "$reset"
exit 1
fi
printf '{"type":"result","subtype":"success","is_error":false,"result":"Done. All 12 tests pass.","session_id":"s1","total_cost_usd":0.02}\n'`

// until polls the run until ok says so; the bound is generous, for a loaded machine: what is tested is that it happens.
func until(t *testing.T, h *harness, id string, what string, ok func(*jobs.Run) bool) *jobs.Run {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if r := h.get(t, id); ok(r) {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the run never %s: %+v", what, h.get(t, id))
	return nil
}

func parkedOnLimit(r *jobs.Run) bool {
	e := r.OpenEscalation()
	return r.Status == jobs.RunParked && e != nil && e.Trigger == jobs.TriggerLimit
}

// activeSteps counts the step deliveries a worker holds now.
func activeSteps(t *testing.T, rdb redis.UniversalClient) int {
	t.Helper()
	tasks, err := asynq.NewInspectorFromRedisClient(rdb).ListActiveTasks(queue.Steps)
	if err != nil {
		t.Fatal(err)
	}
	return len(tasks)
}

// The agent stops on a usage limit that resets in five seconds: the run parks, holding no worker, and goes on by
// itself after the reset — with every process restarted in between, the timer being a task on the queue.
func TestUsageLimitWaitsForItsReset(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "same worker"
		if restart {
			name = "restarted"
		}
		t.Run(name, func(t *testing.T) {
			rdb := clients(t)["redis"]
			if rdb == nil {
				t.Skip("needs a Redis server: ORCH_TEST_REDIS_URL")
			}
			h := newHarness(t, rdb, "", costlyAgent(t, limitedOnce))
			if err := h.w.Start(rdb); err != nil {
				t.Fatal(err)
			}
			stopped := false
			defer func() {
				if !stopped {
					h.w.Shutdown()
				}
			}()
			r := h.newRun(t, "1.1")
			if err := h.queue.Start(context.Background(), r.ID); err != nil {
				t.Fatal(err)
			}
			got := until(t, h, r.ID, "parked on the limit", parkedOnLimit)
			e := got.OpenEscalation()
			task := got.Tasks[0]
			if task.Failures != 0 || task.Attempts[0].Status != "limit" || e.Default != limitGo || e.Timeout <= 0 {
				t.Fatalf("failures %d, attempt %+v, question %+v", task.Failures, task.Attempts[0], e)
			}
			if !strings.Contains(e.Question, "usage limit") || !strings.Contains(e.Question, "goes on by itself") {
				t.Fatalf("question: %s", e.Question)
			}
			// The step that parked it lets go of its delivery once its handler returns: nothing holds one after that.
			for deadline := time.Now().Add(time.Minute); activeSteps(t, rdb) != 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d step deliveries held while the run waits for the reset", activeSteps(t, rdb))
				}
			}
			if restart {
				h.w.Shutdown()
				stopped = true
				h = newHarness(t, rdb, "", costlyAgent(t, limitedOnce))
				if err := h.w.Start(rdb); err != nil {
					t.Fatal(err)
				}
				defer h.w.Shutdown()
			}
			got = until(t, h, r.ID, "completed", func(r *jobs.Run) bool { return r.Status.Terminal() })
			res := got.Escalations[0].Resolution
			if got.Status != jobs.RunCompleted || res == nil || res.By != "orch" || res.Via != "timeout" {
				t.Fatalf("%s, resolution %+v", got.Status, res)
			}
			reset := got.Escalations[0].CreatedAt.Add(got.Escalations[0].Timeout)
			if res.At.Before(reset.Add(-time.Second)) {
				t.Fatalf("went on at %v, before the reset (%v)", res.At, reset)
			}
		})
	}
}

// A person who answers before the reset wins: the run goes on at once, and the timer, when it fires, does nothing.
func TestAnAnswerBeforeTheResetWins(t *testing.T) {
	rdb := clients(t)["miniredis"]
	h := newHarness(t, rdb, "", costlyAgent(t, limitedOnce))
	r := h.newRun(t, "1.1")
	got := drive(t, h, r.ID)
	if !parkedOnLimit(got) {
		t.Fatalf("%s, %+v", got.Status, got.OpenEscalation())
	}
	e := got.OpenEscalation()
	inspector := asynq.NewInspectorFromRedisClient(rdb)
	timer := "timeout:" + r.ID + ":" + e.ID + ":1"
	if info, err := inspector.GetTaskInfo(queue.Control, timer); err != nil || info.State != asynq.TaskStateScheduled {
		t.Fatalf("the reset's timer: %+v, %v", info, err)
	}
	resolve(t, h, r.ID, escalation.Request{Type: jobs.ResolveChoose, Key: limitGo, By: "ann", Via: "slack"})
	got = drive(t, h, r.ID)
	if got.Status != jobs.RunCompleted {
		t.Fatalf("after the answer: %s", got.Status)
	}
	// The answer cancelled the timer; one that fires all the same (it was already on its way) does nothing.
	if _, err := inspector.GetTaskInfo(queue.Control, timer); !errors.Is(err, asynq.ErrTaskNotFound) {
		t.Fatalf("the timer is still queued after the answer: %v", err)
	}
	if err := h.process(t, queue.TypeTimeout, queue.Payload{RunID: r.ID, EscalationID: e.ID, N: 1}); err != nil {
		t.Fatal(err)
	}
	got = h.get(t, r.ID)
	if res := got.Escalations[0].Resolution; got.Status != jobs.RunCompleted || res.By != "ann" || len(got.Escalations) != 1 {
		t.Fatalf("after the timer: %s, resolution %+v, %d questions", got.Status, res, len(got.Escalations))
	}
	asynq.NewInspectorFromRedisClient(rdb).DeleteTask(queue.Control, "timeout:"+r.ID+":"+e.ID+":1")
}

// A limit that does not say when it resets is a failure like another: nothing waits on a guess.
func TestALimitWithoutAResetIsAFailure(t *testing.T) {
	rdb := clients(t)["miniredis"]
	h := newHarness(t, rdb, "", costlyAgent(t, resultLine(false, "API Error: 429 rate_limit_error", 0.01)))
	r := h.newRun(t, "1.1")
	got := drive(t, h, r.ID)
	if e := got.OpenEscalation(); e == nil || e.Trigger == jobs.TriggerLimit || got.Tasks[0].Failures == 0 {
		t.Fatalf("escalation %+v, failures %d", e, got.Tasks[0].Failures)
	}
}

// limitedBrain is an LLM brain whose provider refuses for a limit that resets at reset.
type limitedBrain struct{ reset time.Time }

func (b limitedBrain) Interpret(context.Context, string) (brain.Interpretation, error) {
	return brain.Interpretation{}, &brain.LimitedError{Reset: b.reset, Err: fmt.Errorf("anthropic messages: 429 rate_limit_error: %w", brain.ErrUnavailable)}
}

func (b limitedBrain) Decide(context.Context, brain.DecideInput) (brain.Decision, error) {
	return brain.Decision{}, &brain.LimitedError{Reset: b.reset, Err: brain.ErrUnavailable}
}

// A brain that cannot judge until its provider's limit resets parks the run on the timer instead of pausing it for a
// person; going on judges what the agent said without running it again.
func TestABrainsLimitWaitsForItsReset(t *testing.T) {
	rdb := clients(t)["miniredis"]
	runs := filepath.Join(t.TempDir(), "runs")
	h := newHarness(t, rdb, script(t, "echo ran >> "+runs+"\necho 'Implemented it. All 4 tests pass.'"), nil)
	h.w.cfg.Brain = func(jobs.Options) (Brain, error) { return limitedBrain{reset: time.Now().Add(time.Hour)}, nil }
	r := h.newRun(t, "1.1")
	got := drive(t, h, r.ID)
	e := got.OpenEscalation()
	if !parkedOnLimit(got) || e.Default != limitGo || e.Timeout < 59*time.Minute || got.Tasks[0].Pending == nil {
		t.Fatalf("%s, question %+v, pending %v", got.Status, e, got.Tasks[0].Pending != nil)
	}
	if !strings.Contains(e.Question, "could not be judged") {
		t.Fatalf("question: %s", e.Question)
	}
	h.w.cfg.Brain = func(jobs.Options) (Brain, error) { return &brain.Heuristic{}, nil }
	if err := h.process(t, queue.TypeTimeout, queue.Payload{RunID: r.ID, EscalationID: e.ID, N: 1}); err != nil {
		t.Fatal(err)
	}
	got = drive(t, h, r.ID)
	if got.Status != jobs.RunCompleted {
		t.Fatalf("after the reset: %s", got.Status)
	}
	if data, _ := os.ReadFile(runs); strings.Count(string(data), "ran") != 1 {
		t.Fatalf("the agent ran %d times: the reset should judge what it said, not run it again", strings.Count(string(data), "ran"))
	}
}

// An agent that says it is limited after every reset (or that writes such lines itself) does not keep the run waiting
// and retrying by itself for ever: after three resets in a row, a person is asked, and that question counts.
func TestALimitThatComesBackEveryTimeAsksAPerson(t *testing.T) {
	rdb := clients(t)["miniredis"]
	h := newHarness(t, rdb, "", costlyAgent(t, `reset=$(( $(date +%s) + 3600 ))
printf '{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"Claude AI usage limit reached|%s","session_id":"s1","total_cost_usd":0.01}\n' "$reset"
exit 1`))
	r := h.newRun(t, "1.1")
	for i := 1; i <= maxLimitWaits; i++ {
		got := drive(t, h, r.ID)
		e := got.OpenEscalation()
		if !parkedOnLimit(got) || e.Timeout <= 0 {
			t.Fatalf("limit %d: %s, %+v", i, got.Status, e)
		}
		if err := h.process(t, queue.TypeTimeout, queue.Payload{RunID: r.ID, EscalationID: e.ID, N: 1}); err != nil {
			t.Fatal(err)
		}
		asynq.NewInspectorFromRedisClient(rdb).DeleteTask(queue.Control, "timeout:"+r.ID+":"+e.ID+":1")
	}
	got := drive(t, h, r.ID)
	e := got.OpenEscalation()
	if e == nil || e.Trigger == jobs.TriggerLimit || e.Timeout != 0 || e.Default != "" || !e.Trigger.Counted() {
		t.Fatalf("after %d resets: %+v", maxLimitWaits, e)
	}
	if !strings.Contains(e.Question, "fourth time in a row") {
		t.Fatalf("question: %s", e.Question)
	}
}

// A finished attempt whose work stayed on a lost worker runs again by itself — unless it ran what a person let
// through with effects beyond its worktree (a push): then a person decides, shown the calls.
func TestLostWorkWithEffectsIsAPersonsToRunAgain(t *testing.T) {
	for _, effects := range [][]string{nil, {"Bash: git push --force origin main"}} {
		rdb := clients(t)["miniredis"]
		h := newHarness(t, rdb, "true", nil)
		r := h.newRun(t, "1.1")
		ctx := context.Background()
		r, err := h.store.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
			r.Start(c, "")
			r.Seq = 1
			tk := r.Tasks[0]
			r.StartAttempt(c, tk, "d1", "", time.Now())
			tk.Pending = &jobs.Pending{Text: "Force-pushed main.", Success: true, Effects: effects}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		at := &attempt{run: r, task: *r.Tasks[0], n: 1, owner: owner{id: "d1"}, seq: 1}
		if err := h.w.redo(ctx, at); err != nil {
			t.Fatal(err)
		}
		got := h.get(t, r.ID)
		e := got.OpenEscalation()
		switch {
		case len(effects) == 0 && (e != nil || got.Tasks[0].Pending != nil):
			t.Fatalf("without effects: %+v, pending %v", e, got.Tasks[0].Pending)
		case len(effects) > 0 && (e == nil || !strings.Contains(e.Question, "git push --force")):
			t.Fatalf("with effects: %s, %+v", got.Status, e)
		}
	}
}
