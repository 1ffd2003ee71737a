package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/sandbox"
)

func clients(t *testing.T) map[string]redis.UniversalClient { return jobstest.Clients(t) }

// script writes an agent: a shell script whose reply depends on ORCH_ATTEMPT.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

type harness struct {
	w     *Worker
	store *store.Store
	queue *queue.Queue
	rdb   redis.UniversalClient
}

func newHarness(t *testing.T, rdb redis.UniversalClient, agentCmd string, adapter func(jobs.Options) (agent.Adapter, error)) *harness {
	t.Helper()
	return newHarnessAt(t, rdb, agentCmd, adapter, nil)
}

func newHarnessAt(t *testing.T, rdb redis.UniversalClient, agentCmd string, adapter func(jobs.Options) (agent.Adapter, error), now func() time.Time) *harness {
	t.Helper()
	store := store.New(rdb, now)
	queue := queue.New(rdb)
	if adapter == nil {
		adapter = func(jobs.Options) (agent.Adapter, error) { return agent.NewTemplate(agentCmd) }
	}
	w, err := New(Config{Store: store, Queue: queue, Sandbox: sandbox.NewLocal(sandbox.LocalConfig{}),
		Brain: func(jobs.Options) (Brain, error) { return &brain.Heuristic{}, nil }, Agent: adapter})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{w: w, store: store, queue: queue, rdb: rdb}
}

func (h *harness) newRun(t *testing.T, tasks ...string) *jobs.Run {
	t.Helper()
	r := &jobs.Run{ID: jobs.NewRunID(), Status: jobs.RunQueued, Workspace: t.TempDir(),
		Options: jobs.Options{Agent: "cmd", Brain: "heuristic", MaxAttempts: 3, AgentTimeout: time.Minute}}
	for _, id := range tasks {
		r.Tasks = append(r.Tasks, &jobs.Task{ID: id, Title: "task " + id, Status: jobs.TaskPending})
	}
	if err := h.store.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

// process runs one task through the handler, as asynq would deliver it.
func (h *harness) process(t *testing.T, typ string, p queue.Payload) error {
	t.Helper()
	data, _ := json.Marshal(p)
	return h.w.Handler().ProcessTask(context.Background(), asynq.NewTask(typ, data))
}

func (h *harness) get(t *testing.T, id string) *jobs.Run {
	t.Helper()
	r, err := h.store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func countEvents(t *testing.T, h *harness, id, typ string) int {
	t.Helper()
	evs, err := h.store.Events(context.Background(), id, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Type() == typ {
			n++
		}
	}
	return n
}

// asynq delivers at least once: every handler run twice leaves the same state as run once.
func TestHandlersAreIdempotent(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			agentSh := script(t, `case "$ORCH_ATTEMPT" in
1) printf 'QUESTION: Which store?\nOPTIONS:\nA) Redis\nB) Memory\nRECOMMENDATION: B\n' ;;
*) echo "Implemented it. All 4 tests pass." ;;
esac`)
			h := newHarness(t, rdb, agentSh, nil)
			r := h.newRun(t, "1.1")

			for range 2 {
				if err := h.process(t, queue.TypeStart, queue.Payload{RunID: r.ID}); err != nil {
					t.Fatal(err)
				}
			}
			if got := h.get(t, r.ID); got.Status != jobs.RunRunning || got.Seq != 1 || countEvents(t, h, r.ID, jobs.RunStartedEvent{}.Kind()) != 1 {
				t.Fatalf("after two starts: %s seq %d", got.Status, got.Seq)
			}

			for range 2 {
				if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
					t.Fatal(err)
				}
			}
			got := h.get(t, r.ID)
			if got.Status != jobs.RunParked || got.Tasks[0].Started != 1 || len(got.Escalations) != 1 {
				t.Fatalf("after two deliveries of step 1: %s started %d escalations %d", got.Status, got.Tasks[0].Started, len(got.Escalations))
			}
			e := got.Escalations[0]
			if e.Trigger != jobs.TriggerNeedsHelp || len(e.Options) != 2 || e.Recommendation != "B" {
				t.Fatalf("escalation = %+v", e)
			}

			_, _, err := escalation.Resolve(context.Background(), h.store, h.queue, escalation.Request{RunID: r.ID,
				Type: jobs.ResolveChoose, Key: "B", By: "test", Via: "test"})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := h.process(t, queue.TypeResume, queue.Payload{RunID: r.ID, EscalationID: e.ID}); err != nil {
					t.Fatal(err)
				}
			}
			got = h.get(t, r.ID)
			if got.Status != jobs.RunRunning || got.Seq != 2 || countEvents(t, h, r.ID, jobs.ResumedEvent{}.Kind()) != 1 {
				t.Fatalf("after two resumes: %s seq %d", got.Status, got.Seq)
			}
			if g := got.Tasks[0].Guidance; len(g) != 1 || g[0] != "The human chose option B: Memory" {
				t.Fatalf("guidance = %q", g)
			}

			for range 2 {
				if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 2}); err != nil {
					t.Fatal(err)
				}
			}
			// A stale step of an old seq is harmless too.
			if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
				t.Fatal(err)
			}
			got = h.get(t, r.ID)
			if got.Status != jobs.RunCompleted || got.Tasks[0].Started != 2 || countEvents(t, h, r.ID, jobs.RunCompletedEvent{}.Kind()) != 1 {
				t.Fatalf("after two deliveries of step 2: %s started %d", got.Status, got.Tasks[0].Started)
			}
		})
	}
}

func TestRetryThenCap(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			sh := script(t, `echo "ERROR: build failed: undefined: NewServer (attempt $ORCH_ATTEMPT)"; exit 1`)
			h := newHarness(t, rdb, sh, nil)
			r := h.newRun(t, "1.1", "1.2")
			if err := h.process(t, queue.TypeStart, queue.Payload{RunID: r.ID}); err != nil {
				t.Fatal(err)
			}
			for seq := int64(1); seq <= 3; seq++ {
				if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: seq}); err != nil {
					t.Fatal(err)
				}
			}
			got := h.get(t, r.ID)
			task := got.Tasks[0]
			if got.Status != jobs.RunParked || task.Failures != 3 || len(task.Errors) != 3 {
				t.Fatalf("%s failures %d errors %d", got.Status, task.Failures, len(task.Errors))
			}
			e := got.OpenEscalation()
			if e == nil || e.Trigger != jobs.TriggerAttemptCap || e.Similarity < 0.8 {
				t.Fatalf("escalation = %+v", e)
			}
			if countEvents(t, h, r.ID, jobs.RetryingEvent{}.Kind()) != 2 || countEvents(t, h, r.ID, jobs.LoopDetectedEvent{}.Kind()) != 1 {
				t.Fatal("want two retries and one loop detection")
			}
			// The brain's guidance reached the second attempt's state.
			if got.Tasks[1].Started != 0 {
				t.Fatal("the next task ran while the run was parked")
			}

			// --retry: one more attempt, counter kept: the cap stops it again at once.
			if _, _, err := escalation.Resolve(context.Background(), h.store, h.queue, escalation.Request{RunID: r.ID, Type: jobs.ResolveRetry, By: "t"}); err != nil {
				t.Fatal(err)
			}
			if err := h.process(t, queue.TypeResume, queue.Payload{RunID: r.ID, EscalationID: e.ID}); err != nil {
				t.Fatal(err)
			}
			seq := h.get(t, r.ID).Seq
			if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: seq}); err != nil {
				t.Fatal(err)
			}
			got = h.get(t, r.ID)
			if got.Status != jobs.RunParked || got.Tasks[0].Failures != 4 || len(got.Escalations) != 2 {
				t.Fatalf("after --retry: %s failures %d escalations %d", got.Status, got.Tasks[0].Failures, len(got.Escalations))
			}
		})
	}
}

func TestPermanentErrorEscalatesAtOnce(t *testing.T) {
	rdb := clients(t)["miniredis"]
	sh := script(t, `echo "Error: permission denied: cannot push to registry.internal (401 Unauthorized)"; exit 1`)
	h := newHarness(t, rdb, sh, nil)
	r := h.newRun(t, "2.3")
	h.process(t, queue.TypeStart, queue.Payload{RunID: r.ID})
	if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	got := h.get(t, r.ID)
	if e := got.OpenEscalation(); e == nil || e.Trigger != jobs.TriggerPermanent || got.Tasks[0].Started != 1 {
		t.Fatalf("want a permanent escalation after one attempt, got %+v", got.OpenEscalation())
	}
}

func TestSecretInOutputEscalatesAndIsRedacted(t *testing.T) {
	rdb := clients(t)["miniredis"]
	secret := "AKIA" + "ABCDEFGHIJKLMNOP"
	sh := script(t, `echo "Done. I used the key `+secret+` to deploy. All tests pass."`)
	h := newHarness(t, rdb, sh, nil)
	r := h.newRun(t, "1.1")
	h.process(t, queue.TypeStart, queue.Payload{RunID: r.ID})
	if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	got := h.get(t, r.ID)
	if e := got.OpenEscalation(); e == nil || e.Trigger != jobs.TriggerSecurity {
		t.Fatalf("escalation = %+v", got.OpenEscalation())
	}
	keys := rdb.Keys(context.Background(), "*").Val()
	for _, k := range keys {
		if rdb.Type(context.Background(), k).Val() != "string" {
			continue
		}
		if v := rdb.Get(context.Background(), k).Val(); strings.Contains(v, secret) {
			t.Fatalf("the secret is stored in %s", k)
		}
	}
	evs, _ := h.store.Events(context.Background(), r.ID, "", 0)
	for _, e := range evs {
		data, _ := json.Marshal(e)
		if strings.Contains(string(data), secret) {
			t.Fatalf("the secret is in event %s", e.Type())
		}
	}
}

type panicky struct{ agent.Adapter }

func (panicky) Command(agent.Request) (agent.Command, error) { panic("adapter bug") }

func TestPanicBecomesAnError(t *testing.T) {
	rdb := clients(t)["miniredis"]
	h := newHarness(t, rdb, "", func(jobs.Options) (agent.Adapter, error) {
		tmpl, _ := agent.NewTemplate("true")
		return panicky{tmpl}, nil
	})
	r := h.newRun(t, "1.1")
	h.process(t, queue.TypeStart, queue.Payload{RunID: r.ID})
	err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1})
	if err == nil || !errors.Is(err, asynq.SkipRetry) {
		t.Fatalf("err = %v", err)
	}
	// The step will not run again: the run waits for a human instead of hanging in "running".
	got := h.get(t, r.ID)
	if e := got.OpenEscalation(); got.Status != jobs.RunParked || e == nil || e.Trigger != jobs.TriggerConfig ||
		!strings.Contains(e.Question, "adapter bug") {
		t.Fatalf("after a panic: %s %+v", got.Status, e)
	}
}

// The brain may see a loop before the cap does: that is a loop stop too, with its similarity.
func TestBrainSeesTheLoopBeforeTheCap(t *testing.T) {
	rdb := clients(t)["miniredis"]
	sh := script(t, `echo "FAILED TestParse: got 3 tasks, want 4"; exit 1`)
	h := newHarness(t, rdb, sh, nil)
	r := h.newRun(t, "1.1")
	h.store.Update(context.Background(), r.ID, func(r *jobs.Run, c *jobs.Change) error {
		r.Options.MaxAttempts = 10
		return nil
	})
	h.process(t, queue.TypeStart, queue.Payload{RunID: r.ID})
	for seq := int64(1); h.get(t, r.ID).Status == jobs.RunRunning && seq < 10; seq++ {
		if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: seq}); err != nil {
			t.Fatal(err)
		}
	}
	got := h.get(t, r.ID)
	e := got.OpenEscalation()
	if e == nil || got.Tasks[0].Failures >= 10 || e.Similarity < 0.8 || countEvents(t, h, r.ID, jobs.LoopDetectedEvent{}.Kind()) != 1 {
		t.Fatalf("failures %d, escalation %+v", got.Tasks[0].Failures, e)
	}
}

func TestMissingAgentIsAConfigEscalation(t *testing.T) {
	rdb := clients(t)["miniredis"]
	h := newHarness(t, rdb, "/no/such/agent-binary {prompt}", nil)
	r := h.newRun(t, "1.1")
	h.process(t, queue.TypeStart, queue.Payload{RunID: r.ID})
	if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	if e := h.get(t, r.ID).OpenEscalation(); e == nil || e.Trigger != jobs.TriggerConfig {
		t.Fatalf("escalation = %+v", e)
	}
}

func TestUnknownRunIsNotRetried(t *testing.T) {
	rdb := clients(t)["miniredis"]
	h := newHarness(t, rdb, "true", nil)
	for _, typ := range []string{queue.TypeStart, queue.TypeStep, queue.TypeResume} {
		err := h.process(t, typ, queue.Payload{RunID: "r-nosuchrun1", Seq: 1, EscalationID: "e1"})
		if !errors.Is(err, asynq.SkipRetry) {
			t.Fatalf("%s: err = %v", typ, err)
		}
	}
	if err := h.w.Handler().ProcessTask(context.Background(), asynq.NewTask(queue.TypeStep, []byte("{"))); !errors.Is(err, asynq.SkipRetry) {
		t.Fatalf("bad payload: %v", err)
	}
}

// The worker really serves the queue: a run goes from enqueue to completed through asynq.
func TestServesTheQueue(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			sh := script(t, `echo "Task $ORCH_TASK_ID done. All tests pass."`)
			h := newHarness(t, rdb, sh, nil)
			if err := h.w.Start(rdb); err != nil {
				t.Fatal(err)
			}
			defer h.w.Shutdown()
			r := h.newRun(t, "1.1", "1.2", "1.3")
			if err := h.queue.Start(context.Background(), r.ID); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				if h.get(t, r.ID).Status == jobs.RunCompleted {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Fatalf("run did not complete: %+v", h.get(t, r.ID))
		})
	}
}

// A step whose worker died (asynq finds its lease expired) is run again at once and does not count as a failure of
// the task: the agent did nothing wrong.
func TestOrphanedStepIsRetriedAtOnce(t *testing.T) {
	if isFailure(asynq.ErrLeaseExpired) || isFailure(context.Canceled) || !isFailure(errors.New("redis down")) {
		t.Fatal("isFailure: a lost lease or an interruption counted against the task, or a real error did not")
	}
	task := asynq.NewTask(queue.TypeStep, nil)
	if retryDelay(3, asynq.ErrLeaseExpired, task) != 0 || retryDelay(3, errors.New("x"), task) == 0 {
		t.Fatal("retryDelay: an orphaned step must run again at once, other errors back off")
	}
}

// A step whose lease expired (its worker died) is enqueued again under a rescue id, and so is a rescue that died in
// turn; steps of runs that moved on are left to asynq.
func TestRescueOrphans(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			h := newHarness(t, rdb, script(t, `echo "Done."`), nil)
			orphan, moved, again := h.newRun(t, "1.1"), h.newRun(t, "1.1"), h.newRun(t, "1.1")
			for _, r := range []*jobs.Run{orphan, moved, again} {
				if err := h.process(t, queue.TypeStart, queue.Payload{RunID: r.ID}); err != nil {
					t.Fatal(err)
				}
			}
			past := float64(time.Now().Add(-time.Second).Unix())
			future := float64(time.Now().Add(time.Minute).Unix())
			leases := []redis.Z{
				{Score: past, Member: fmt.Sprintf("step:%s:1", orphan.ID)},
				{Score: past, Member: fmt.Sprintf("step:%s:7", moved.ID)},        // the run is at seq 1
				{Score: past, Member: fmt.Sprintf("step:%s:1:rescue", again.ID)}, // a rescue that died
				{Score: future, Member: fmt.Sprintf("step:%s:1", moved.ID)},      // alive: its lease runs
			}
			// asynq's lease set of the steps queue, as workers that died left it (the layout jobs/queue reads and
			// its TestExpiredStepsSeesAsynqLeases pins).
			const leaseSet = "asynq:{" + queue.Steps + "}:lease"
			rdb.ZAdd(ctx, leaseSet, leases...)
			t.Cleanup(func() {
				for _, z := range leases {
					rdb.ZRem(ctx, leaseSet, z.Member)
				}
			})
			n, err := h.w.RescueOrphans(ctx)
			if err != nil || n != 2 {
				t.Fatalf("rescued %d, %v; want 2", n, err)
			}
			if _, err := asynq.NewInspectorFromRedisClient(rdb).GetTaskInfo(queue.Steps, fmt.Sprintf("step:%s:1:rescue:rescue", again.ID)); err != nil {
				t.Fatalf("the dead rescue was not rescued: %v", err)
			}
			info, err := asynq.NewInspectorFromRedisClient(rdb).GetTaskInfo(queue.Steps, fmt.Sprintf("step:%s:1:rescue", orphan.ID))
			if err != nil || info.Type != queue.TypeStep {
				t.Fatalf("rescue task: %+v, %v", info, err)
			}
			// The rescue runs the step; the original, when asynq gets round to it, finds it done.
			if err := h.process(t, queue.TypeStep, queue.Payload{RunID: orphan.ID, Seq: 1}); err != nil {
				t.Fatal(err)
			}
			if err := h.process(t, queue.TypeStep, queue.Payload{RunID: orphan.ID, Seq: 1}); err != nil {
				t.Fatal(err)
			}
			if got := h.get(t, orphan.ID); got.Status != jobs.RunCompleted || got.Tasks[0].Started != 1 {
				t.Fatalf("%s, started %d", got.Status, got.Tasks[0].Started)
			}
		})
	}
}

func TestParseStepID(t *testing.T) {
	for id, want := range map[string]bool{"step:r-abc:12": true, "step:r-abc:12:rescue": true, "step:r-abc:12:rescue:rescue": true,
		"step:r-abc:3:later-k2": true, "resume:r-abc:e1": false, "step:r-abc:x": false, "step:r-abc": false, "step::1": false} {
		if _, _, ok := parseStepID(id); ok != want {
			t.Errorf("parseStepID(%q) ok = %v", id, ok)
		}
	}
}

// A delivery of a step that finds its task running takes it over only when the delivery that runs the attempt is
// dead: its lease in asynq is gone or ran out. While the owner's lease lives, the delivery leaves the attempt alone.
// Otherwise asynq's late redelivery of a rescued step would kill the rescued attempt and start another.
func TestOneOwnerPerStep(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			agentCmd := script(t, `echo "Done. All tests pass."`)
			const leaseSet = "asynq:{" + queue.Steps + "}:lease" // see TestRescueOrphans
			for _, tt := range []struct {
				name  string
				owner string        // of the running attempt; RUN stands for the run's id
				lease time.Duration // of the owner, from now; 0: it holds none
				taken bool
			}{
				{"owner alive", "step:RUN:1:rescue", time.Minute, false},
				{"owner's lease ran out", "step:RUN:1:rescue", -time.Second, true},
				{"owner holds no lease", "step:RUN:1:rescue", 0, true},
				{"the same delivery again", "step:RUN:1", 0, true},
				{"no owner recorded", "", 0, true},
			} {
				t.Run(tt.name, func(t *testing.T) {
					// The worker starts once the state is set up: the step the start enqueues must not run before.
					h := newHarness(t, rdb, agentCmd, nil)
					r := h.newRun(t, "1.1")
					if err := h.process(t, queue.TypeStart, queue.Payload{RunID: r.ID}); err != nil {
						t.Fatal(err)
					}
					owner := strings.ReplaceAll(tt.owner, "RUN", r.ID)
					// The state a step's first transaction leaves: the task running its first attempt.
					_, err := h.store.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
						task := r.Current()
						task.Status, task.Started = jobs.TaskRunning, 1
						task.Attempts = []*jobs.Attempt{{N: 1, StartedAt: time.Now().UTC(), Owner: owner}}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if tt.lease != 0 {
						rdb.ZAdd(ctx, leaseSet, redis.Z{Score: float64(time.Now().Add(tt.lease).Unix()), Member: owner})
						t.Cleanup(func() { rdb.ZRem(ctx, leaseSet, owner) })
					}
					if err := h.queue.Step(ctx, "", r.ID, 1, time.Minute); err != nil {
						t.Fatal(err)
					}
					if err := h.w.Start(rdb); err != nil {
						t.Fatal(err)
					}
					defer h.w.Shutdown()
					inspector := asynq.NewInspectorFromRedisClient(rdb)
					for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
						_, err := inspector.GetTaskInfo(queue.Steps, fmt.Sprintf("step:%s:1", r.ID))
						if errors.Is(err, asynq.ErrTaskNotFound) {
							break // delivered and done
						}
						if time.Now().After(deadline) {
							t.Fatalf("the step was not delivered: %v", err)
						}
					}
					got := h.get(t, r.ID)
					switch task := got.Tasks[0]; {
					case tt.taken && (got.Status != jobs.RunCompleted || task.Started != 2):
						t.Fatalf("taken over: want the run completed by attempt 2, got %s, started %d", got.Status, task.Started)
					case tt.taken && task.Attempts[1].Owner != fmt.Sprintf("step:%s:1", r.ID):
						t.Fatalf("attempt 2's owner is %q", task.Attempts[1].Owner)
					case !tt.taken && (got.Status != jobs.RunRunning || task.Status != jobs.TaskRunning || task.Started != 1):
						t.Fatalf("left to its owner: want the first attempt still running, got %s, task %s, started %d",
							got.Status, task.Status, task.Started)
					}
				})
			}
		})
	}
}

// A worker that dies is found by its word that it lives running out (a few seconds), not by its 30 s lease: its step
// is rescued while the lease still runs, and a delivery of the step takes the attempt over. A worker that lives keeps
// its step; and a worker whose own word has not held for a while (it was cut off itself) judges nobody.
func TestADeadWorkersStepIsRescuedBeforeItsLeaseEnds(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			h := newHarness(t, rdb, script(t, `echo "Done. All tests pass."`), nil)
			dead, live := h.newRun(t, "1.1"), h.newRun(t, "1.1")
			const leaseSet = "asynq:{" + queue.Steps + "}:lease" // see TestRescueOrphans
			future := float64(time.Now().Add(25 * time.Second).Unix())
			for _, r := range []*jobs.Run{dead, live} {
				if err := h.process(t, queue.TypeStart, queue.Payload{RunID: r.ID}); err != nil {
					t.Fatal(err)
				}
				id := fmt.Sprintf("step:%s:1", r.ID)
				// The step's first transaction, under a delivery whose lease runs for 25 s more.
				if _, err := h.store.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
					task := r.Current()
					task.Status, task.Started = jobs.TaskRunning, 1
					task.Attempts = []*jobs.Attempt{{N: 1, StartedAt: time.Now().UTC(), Owner: id}}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				rdb.ZAdd(ctx, leaseSet, redis.Z{Score: future, Member: id})
				t.Cleanup(func() { rdb.ZRem(ctx, leaseSet, id) })
			}
			if err := h.queue.Claim(ctx, "step:"+dead.ID+":1", "w-dead"); err != nil {
				t.Fatal(err)
			}
			if err := h.queue.Claim(ctx, "step:"+live.ID+":1", "w-live"); err != nil {
				t.Fatal(err)
			}
			if err := h.queue.Beat(ctx, "w-live"); err != nil {
				t.Fatal(err)
			}
			// Not steady yet: it judges nobody.
			if n, err := h.w.RescueOrphans(ctx); err != nil || n != 0 {
				t.Fatalf("a worker just back rescued %d, %v", n, err)
			}
			h.w.alive.since.Store(time.Now().Add(-queue.AliveTTL).UnixNano())
			if n, err := h.w.RescueOrphans(ctx); err != nil || n != 1 {
				t.Fatalf("rescued %d, %v; want the dead worker's step", n, err)
			}
			if _, err := asynq.NewInspectorFromRedisClient(rdb).GetTaskInfo(queue.Steps, "step:"+dead.ID+":1:rescue"); err != nil {
				t.Fatalf("no rescue of the dead worker's step: %v", err)
			}
			// A delivery of each step: the dead worker's attempt is taken over, the live one's left alone.
			for _, r := range []*jobs.Run{dead, live} {
				if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
					t.Fatal(err)
				}
			}
			if got := h.get(t, dead.ID); got.Status != jobs.RunCompleted || got.Tasks[0].Started != 2 {
				t.Fatalf("the dead worker's run: %s, started %d", got.Status, got.Tasks[0].Started)
			}
			if got := h.get(t, live.ID); got.Status != jobs.RunRunning || got.Tasks[0].Started != 1 {
				t.Fatalf("the live worker's run: %s, started %d", got.Status, got.Tasks[0].Started)
			}
		})
	}
}
