package worker

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

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

// soakAgent's reply depends on a checksum of the run, task and attempt: over many runs every outcome comes up — a
// completion, a failure (retried, then the attempt cap), a question — in an order no test arranged.
const soakAgent = `case $(( $(printf '%s' "$ORCH_RUN_ID/$ORCH_TASK_ID/$ORCH_ATTEMPT" | cksum | cut -d' ' -f1) % 5 )) in
0) printf 'QUESTION: Which store should I use?\nOPTIONS:\nA) Redis  B) Memory\nRECOMMENDATION: B\n' ;;
1) echo "ERROR: build failed: undefined: NewServer"; exit 1 ;;
*) echo "Done. All tests pass." ;;
esac`

// A short soak: 200 runs with random outcomes through the real queue and worker, a human answering at random (an
// option, guidance, one more try, an abort, or nothing). Every run must end or wait for a human, and the counts of
// what happened must add up.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak")
	}
	for name, rdb := range clients(t) {
		if name == "redis" {
			// A database of its own: the worker's other tests enqueue work on this process's database at the same
			// time, and this test's workers would take it.
			opt, err := redis.ParseURL(jobstest.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			rdb = redis.NewClient(opt)
			t.Cleanup(func() { rdb.Close() })
		}
		t.Run(name, func(t *testing.T) {
			const runs = 200
			ctx := context.Background()
			store := store.New(rdb, nil)
			queue := queue.New(rdb)
			metrics := escalation.NewMetrics()
			store.Observe(metrics.Observe)
			sh := script(t, soakAgent)
			w, err := New(Config{Store: store, Queue: queue, Sandbox: sandbox.NewLocal(sandbox.LocalConfig{}),
				Brain: func(jobs.Options) (Brain, error) { return &brain.Heuristic{}, nil },
				Agent: func(jobs.Options) (agent.Adapter, error) { return agent.NewTemplate(sh) }, Concurrency: 4})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Start(rdb); err != nil {
				t.Fatal(err)
			}
			defer w.Shutdown()

			ids := make([]string, runs)
			for i := range ids {
				r := &jobs.Run{ID: jobs.NewRunID(), Status: jobs.RunQueued, Workspace: t.TempDir(),
					Options: jobs.Options{Agent: "cmd", Brain: "heuristic", MaxAttempts: 2, AgentTimeout: time.Minute}}
				for _, id := range []string{"1.1", "1.2", "1.3"} {
					r.Tasks = append(r.Tasks, &jobs.Task{ID: id, Title: "task " + id, Status: jobs.TaskPending})
				}
				if err := store.Create(ctx, r); err != nil {
					t.Fatal(err)
				}
				if err := queue.Start(ctx, r.ID); err != nil {
					t.Fatal(err)
				}
				ids[i] = r.ID
			}

			// The human: answers every question once it is asked, at random; leaves some unanswered for good.
			rnd := rand.New(rand.NewPCG(1, 2))
			left := map[string]bool{} // runs left waiting on purpose
			var resolved int
			deadline := time.Now().Add(3 * time.Minute)
			for {
				settled := 0
				for _, id := range ids {
					r, err := store.Get(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					switch {
					case r.Status.Terminal():
						settled++
						continue
					case r.Status != jobs.RunParked || r.OpenEscalation() == nil:
						continue
					case left[id]:
						settled++
						continue
					}
					e := r.OpenEscalation()
					req := escalation.Request{RunID: id, EscalationID: e.ID, By: "soak", Via: "test"}
					switch n := rnd.IntN(10); {
					case n == 0:
						left[id] = true
						continue
					case n == 1:
						req.Type, req.Reason = jobs.ResolveAbort, "soak says stop"
					case n < 4:
						req.Type = jobs.ResolveRetry
					case n < 6 && len(e.Options) > 0:
						req.Type, req.Key = jobs.ResolveChoose, e.Options[rnd.IntN(len(e.Options))].Key
					default:
						req.Type, req.Text = jobs.ResolveAnswer, "try the in-memory store"
					}
					if _, _, err := escalation.Resolve(ctx, store, queue, req); err != nil {
						t.Fatalf("resolving %s of %s: %v", e.ID, id, err)
					}
					resolved++
				}
				if settled == runs {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 3 minutes only %d of %d runs ended or wait on purpose", settled, runs)
				}
				time.Sleep(20 * time.Millisecond)
			}

			// The counts add up.
			byStatus := map[jobs.RunStatus]int{}
			escalations, resolutions, open := 0, 0, 0
			for _, id := range ids {
				r, _ := store.Get(ctx, id)
				byStatus[r.Status]++
				evs, err := store.Events(ctx, id, "", 0)
				if err != nil {
					t.Fatal(err)
				}
				ends, completions := 0, map[string]int{}
				for _, e := range evs {
					switch e.Body.(type) {
					case jobs.RunCompletedEvent, jobs.RunFailedEvent, jobs.RunAbortedEvent:
						ends++
					case jobs.TaskCompletedEvent:
						completions[e.TaskID]++
					}
				}
				if r.Status.Terminal() != (ends == 1) || ends > 1 {
					t.Fatalf("run %s is %s with %d end events", id, r.Status, ends)
				}
				for task, n := range completions {
					if n > 1 {
						t.Fatalf("run %s: task %s completed %d times", id, task, n)
					}
				}
				escalations += len(r.Escalations)
				for _, e := range r.Escalations {
					if e.Resolution != nil {
						resolutions++
					} else {
						open++
					}
				}
			}
			if byStatus[jobs.RunParked] != len(left) || byStatus[jobs.RunParked]+byStatus[jobs.RunCompleted]+
				byStatus[jobs.RunFailed]+byStatus[jobs.RunAborted] != runs {
				t.Fatalf("statuses %v, %d left waiting", byStatus, len(left))
			}
			snap := metrics.Snapshot()
			sum := func(m map[string]int) int {
				n := 0
				for _, v := range m {
					n += v
				}
				return n
			}
			// Every question is counted once; every answer given is one resolution (escalation-cap stops and
			// declines are resolutions orch made, not the soak's).
			if sum(snap.Escalations) != escalations || open != len(left) || resolutions != resolved || sum(snap.Resolutions) != resolved {
				t.Fatalf("escalations %d (metrics %d), resolutions %d (given %d, metrics %d), open %d (left %d)",
					escalations, sum(snap.Escalations), resolutions, resolved, sum(snap.Resolutions), open, len(left))
			}
			t.Logf("%d runs: %v; %d questions, %d answered, %d left waiting", runs, byStatus, escalations, resolved, len(left))
		})
	}
}
