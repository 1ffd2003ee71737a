package worker

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
)

// clock is the scenario's time: "an hour later" takes no time at all.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

const asksThenDone = `case "$ORCH_ATTEMPT" in
1) printf 'QUESTION: Which store?\nOPTIONS:\nA) Redis\nB) Memory\nRECOMMENDATION: B\n' ;;
*) echo "Implemented it. All 4 tests pass." ;;
esac`

func setPolicy(t *testing.T, h *harness, id string, p jobs.EscalationPolicy) {
	t.Helper()
	if _, err := h.store.Update(context.Background(), id, func(r *jobs.Run, c *jobs.Change) error {
		r.Options.Escalation = p
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// drive processes the run's tasks the way the queue would deliver them, until it stops moving.
func drive(t *testing.T, h *harness, id string) *jobs.Run {
	t.Helper()
	for range 50 {
		r := h.get(t, id)
		switch r.Status {
		case jobs.RunQueued:
			h.process(t, queue.TypeStart, queue.Payload{RunID: id})
		case jobs.RunRunning:
			if err := h.process(t, queue.TypeStep, queue.Payload{RunID: id, Seq: r.Seq}); err != nil {
				t.Fatal(err)
			}
		case jobs.RunParked:
			last := r.Escalations[len(r.Escalations)-1]
			if r.OpenEscalation() != nil || last.Resolution == nil {
				return r
			}
			if err := h.process(t, queue.TypeResume, queue.Payload{RunID: id, EscalationID: last.ID}); err != nil {
				t.Fatal(err)
			}
		default:
			return r
		}
	}
	t.Fatal("the run kept moving")
	return nil
}

// Asks, nobody answers for an hour, the timeout takes the recommended option, the run completes.
func TestTimeoutTakesTheDefault(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			// The scenario starts tomorrow, so that asynq keeps the timeout as a task scheduled in the future.
			clk := &clock{now: time.Now().Add(24 * time.Hour).Truncate(time.Second)}
			h := newHarnessAt(t, rdb, script(t, asksThenDone), nil, clk.Now)
			r := h.newRun(t, "1.1")
			setPolicy(t, h, r.ID, jobs.EscalationPolicy{Timeout: time.Hour, TimeoutDefault: true})
			got := drive(t, h, r.ID)
			e := got.OpenEscalation()
			if e == nil {
				t.Fatalf("run did not ask: %s", got.Status)
			}
			// The timeout is a scheduled task for an hour after the question, not a sleeping goroutine.
			info, err := asynq.NewInspectorFromRedisClient(rdb).GetTaskInfo(queue.Control, "timeout:"+r.ID+":e1:1")
			if err != nil || info.State != asynq.TaskStateScheduled || info.NextProcessAt.Unix() != e.CreatedAt.Add(time.Hour).Unix() {
				t.Fatalf("timeout task: %+v, %v", info, err)
			}
			clk.Advance(time.Hour)
			if err := h.process(t, queue.TypeTimeout, queue.Payload{RunID: r.ID, EscalationID: "e1", N: 1}); err != nil {
				t.Fatal(err)
			}
			got = drive(t, h, r.ID)
			res := got.Escalations[0].Resolution
			if got.Status != jobs.RunCompleted || res == nil || res.Key != "B" || res.Via != "timeout" {
				t.Fatalf("after the timeout: %s, resolution %+v", got.Status, res)
			}
			if wait := res.At.Sub(got.Escalations[0].CreatedAt); wait != time.Hour {
				t.Fatalf("recorded wait %v, want 1h", wait)
			}
			// A late second delivery of the same timeout does nothing.
			if err := h.process(t, queue.TypeTimeout, queue.Payload{RunID: r.ID, EscalationID: "e1", N: 1}); err != nil {
				t.Fatal(err)
			}
			asynq.NewInspectorFromRedisClient(rdb).DeleteTask(queue.Control, "timeout:"+r.ID+":e1:1")
		})
	}
}

// Without a default the timeout is recorded as TIMEOUT (never a denial), reminded, and then the fallback applies.
func TestTimeoutRemindsThenFallsBack(t *testing.T) {
	rdb := clients(t)["miniredis"]
	for _, fallback := range []string{"wait", "abort"} {
		t.Run(fallback, func(t *testing.T) {
			clk := &clock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
			h := newHarnessAt(t, rdb, script(t, `echo "I'm not sure whether to drop the legacy column. Should I?"`), nil, clk.Now)
			r := h.newRun(t, "1.1")
			setPolicy(t, h, r.ID, jobs.EscalationPolicy{Timeout: 30 * time.Minute, Reminders: 2, Fallback: fallback})
			drive(t, h, r.ID)
			for n := 1; n <= 2; n++ {
				clk.Advance(30 * time.Minute)
				if err := h.process(t, queue.TypeTimeout, queue.Payload{RunID: r.ID, EscalationID: "e1", N: n}); err != nil {
					t.Fatal(err)
				}
			}
			got := drive(t, h, r.ID)
			audit, _ := h.store.Audit(context.Background(), r.ID)
			timeouts := 0
			for _, a := range audit {
				if a.Action == "timeout" {
					timeouts++
					if a.Resolution != "TIMEOUT" {
						t.Errorf("timeout recorded as %q", a.Resolution)
					}
				}
			}
			if timeouts != 2 || got.Escalations[0].Timeouts != 2 {
				t.Fatalf("timeouts recorded %d, on the escalation %d", timeouts, got.Escalations[0].Timeouts)
			}
			switch fallback {
			case "wait":
				if got.Status != jobs.RunParked || got.OpenEscalation() == nil {
					t.Fatalf("wait: %s", got.Status)
				}
			case "abort":
				if got.Status != jobs.RunAborted || got.Escalations[0].Resolution.Via != "timeout" {
					t.Fatalf("abort: %s %+v", got.Status, got.Escalations[0].Resolution)
				}
			}
		})
	}
}

// A secret, a custom trigger and a question fire together: the secret is asked first, the others follow in order
// of priority, one at a time, before the task goes on.
func TestTriggersAreSerialisedByPriority(t *testing.T) {
	rdb := clients(t)["miniredis"]
	key := "AKIA" + "QWERTYUIOPASDFGH"
	h := newHarness(t, rdb, script(t, `case "$ORCH_ATTEMPT" in
1) echo "I ran DROP TABLE users with key `+key+`. Should I also drop the sessions table?" ;;
*) echo "Done. All tests pass." ;;
esac`), nil)
	r := h.newRun(t, "1.1")
	setPolicy(t, h, r.ID, jobs.EscalationPolicy{Triggers: []jobs.CustomTrigger{
		{Name: "schema-change", Pattern: `(?i)\bDROP TABLE\b`, Priority: 45},
		{Name: "never", Pattern: `no such text`, Priority: 99},
	}})
	got := drive(t, h, r.ID)
	var order []string
	for range 3 {
		e := got.OpenEscalation()
		if e == nil {
			t.Fatalf("no open escalation; asked %v, run %s", order, got.Status)
		}
		order = append(order, string(e.Trigger)+":"+e.Name)
		if strings.Contains(e.Output, key) || strings.Contains(e.Question, key) {
			t.Fatal("the secret is in the escalation")
		}
		if _, _, err := escalation.Resolve(context.Background(), h.store, h.queue, escalation.Request{RunID: r.ID,
			Type: jobs.ResolveResume, By: "t"}); err != nil {
			t.Fatal(err)
		}
		got = drive(t, h, r.ID)
	}
	want := "security: custom:schema-change needs_help:"
	if strings.Join(order, " ") != want {
		t.Fatalf("asked in the order %v, want %s", order, want)
	}
	if got.Status != jobs.RunCompleted || got.Tasks[0].Started != 2 {
		t.Fatalf("after all three: %s, started %d", got.Status, got.Tasks[0].Started)
	}
}

// A task that keeps needing a human stops at the escalation cap: the run fails instead of asking forever.
func TestEscalationCapStopsTheLoop(t *testing.T) {
	rdb := clients(t)["miniredis"]
	h := newHarness(t, rdb, script(t, `echo "NEEDS_HUMAN: which branch should I use?"`), nil)
	r := h.newRun(t, "1.1")
	setPolicy(t, h, r.ID, jobs.EscalationPolicy{MaxPerTask: 3})
	got := drive(t, h, r.ID)
	for got.Status == jobs.RunParked {
		if _, _, err := escalation.Resolve(context.Background(), h.store, h.queue, escalation.Request{RunID: r.ID,
			Type: jobs.ResolveAnswer, Text: "main", By: "t"}); err != nil {
			t.Fatal(err)
		}
		got = drive(t, h, r.ID)
	}
	if got.Status != jobs.RunFailed || len(got.Escalations) != 3 || !strings.Contains(got.Reason, "escalation loop") {
		t.Fatalf("%s after %d escalations: %s", got.Status, len(got.Escalations), got.Reason)
	}
}

// A resume whose saved state no longer holds (the workspace is gone) asks a human instead of running blind.
func TestValidationFailureOnResume(t *testing.T) {
	rdb := clients(t)["miniredis"]
	h := newHarness(t, rdb, script(t, asksThenDone), nil)
	r := h.newRun(t, "1.1")
	drive(t, h, r.ID)
	if err := os.RemoveAll(r.Workspace); err != nil {
		t.Fatal(err)
	}
	if _, _, err := escalation.Resolve(context.Background(), h.store, h.queue, escalation.Request{RunID: r.ID,
		Type: jobs.ResolveChoose, Key: "B", By: "t"}); err != nil {
		t.Fatal(err)
	}
	got := drive(t, h, r.ID)
	e := got.OpenEscalation()
	if e == nil || e.Trigger != jobs.TriggerValidation || !strings.Contains(e.Question, "workspace") {
		t.Fatalf("escalation %+v", e)
	}
}

// A timeout delivered again after it was recorded (its follow-up failed the first time) still does the follow-up.
func TestTimeoutRedeliveryStillFallsBack(t *testing.T) {
	rdb := clients(t)["miniredis"]
	clk := &clock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	h := newHarnessAt(t, rdb, script(t, `echo "I'm not sure whether to drop the legacy column. Should I?"`), nil, clk.Now)
	r := h.newRun(t, "1.1")
	setPolicy(t, h, r.ID, jobs.EscalationPolicy{Timeout: time.Minute, Reminders: 1, Fallback: "abort"})
	drive(t, h, r.ID)
	// The first delivery recorded TIMEOUT 1, then failed before aborting.
	h.store.Update(context.Background(), r.ID, func(r *jobs.Run, c *jobs.Change) error {
		r.Escalations[0].Timeouts = 1
		return nil
	})
	clk.Advance(time.Minute)
	if err := h.process(t, queue.TypeTimeout, queue.Payload{RunID: r.ID, EscalationID: "e1", N: 1}); err != nil {
		t.Fatal(err)
	}
	if got := h.get(t, r.ID); got.Status != jobs.RunAborted {
		t.Fatalf("after the redelivered timeout: %s", got.Status)
	}
}

// A run that waited long enough to be kept compact (its log in one value, no streams) is answered and goes on as any
// other: the answer's commit writes its log back, and the log reads whole and in order.
func TestACompactRunIsAnsweredAndGoesOn(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			h := newHarness(t, rdb, script(t, asksThenDone), nil)
			r := h.newRun(t, "1.1")
			if got := drive(t, h, r.ID); got.Status != jobs.RunParked {
				t.Fatalf("the run is %s, not parked on its question", got.Status)
			}
			asked, err := h.store.Events(ctx, r.ID, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			for {
				n, err := h.store.CompactResting(ctx, 0)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break // other tests' runs on the same Redis may be compacted too
				}
			}
			if n, _ := rdb.Exists(ctx, "orch:run:{"+r.ID+"}:events", "orch:run:{"+r.ID+"}:audit").Result(); n != 0 {
				t.Fatalf("the parked run was not compacted: %d streams left", n)
			}
			if _, _, err := escalation.Resolve(ctx, h.store, h.queue, escalation.Request{RunID: r.ID,
				Type: jobs.ResolveChoose, Key: "B", By: "t"}); err != nil {
				t.Fatal(err)
			}
			if got := drive(t, h, r.ID); got.Status != jobs.RunCompleted {
				t.Fatalf("after the answer the run is %s", got.Status)
			}
			evs, err := h.store.Events(ctx, r.ID, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for i, e := range evs {
				if i < len(asked) && e.ID != asked[i].ID {
					t.Fatalf("event %d is %s, was %s before the run was compacted", i, e.ID, asked[i].ID)
				}
				if i > 0 && !after(e.ID, evs[i-1].ID) {
					t.Fatalf("event %s comes after %s", e.ID, evs[i-1].ID)
				}
				types = append(types, e.Type())
			}
			if !slices.Contains(types, "escalation") || !slices.Contains(types, "resumed") || types[len(types)-1] != "run_completed" {
				t.Fatalf("events: %v", types)
			}
			audit, err := h.store.Audit(ctx, r.ID)
			if err != nil || len(audit) < 2 || audit[0].Action != "escalated" {
				t.Fatalf("audit: %+v, %v", audit, err)
			}
		})
	}
}

// after compares two stream ids.
func after(a, b string) bool {
	var am, as, bm, bs uint64
	fmt.Sscanf(a, "%d-%d", &am, &as)
	fmt.Sscanf(b, "%d-%d", &bm, &bs)
	return am > bm || am == bm && as > bs
}
