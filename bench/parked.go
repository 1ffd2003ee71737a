package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/jobs/store"
)

type parkedResult struct {
	runs        int
	busy        int
	bytesPerRun float64
	resumeAll   time.Duration
	note        string
	resumeNote  string
}

// measureParked parks n runs of the ambiguous-task example on their question through the real path — start task,
// step task, the sim agent process, the heuristic brain reading its question, the escalation opening — with one
// worker. While they wait it counts the worker slots they hold (asynq's active tasks) and the Redis memory they take;
// then it answers every one of them (escalation.Resolve, as a click or `orch escalation resolve` does) and times
// until the worker's resume handler has resumed the last one.
func measureParked(ctx context.Context, r *rig, n int) (parkedResult, error) {
	ws, plan, err := r.ambiguousWorkspace()
	if err != nil {
		return parkedResult{}, err
	}
	st, queue, events := r.backend()
	w, err := r.startWorker(st, queue, 0)
	if err != nil {
		return parkedResult{}, err
	}
	defer w.Shutdown()
	inspector := asynq.NewInspectorFromRedisClient(r.redis.Client)
	memBefore, err := r.redis.UsedMemory(ctx)
	if err != nil {
		return parkedResult{}, err
	}

	start := time.Now()
	ids, err := startRuns(ctx, st, queue, n, plan, ws, simOptions(plan))
	if err != nil {
		return parkedResult{}, err
	}
	err = events.waitCount(ctx, jobs.EscalationEvent{}.Kind(), n, time.Minute+time.Duration(n)*100*time.Millisecond,
		[]string{jobs.RunFailedEvent{}.Kind(), jobs.SandboxErrorEvent{}.Kind()}, progress("parked", n))
	if err != nil {
		return parkedResult{}, err
	}
	parkTime := time.Since(start)

	busy, err := busyWhileParked(ctx, inspector)
	if err != nil {
		return parkedResult{}, err
	}
	escIDs, err := checkParked(ctx, st, ids)
	if err != nil {
		return parkedResult{}, err
	}
	compacted, err := waitCompacted(ctx, r.redis.Client, parkTime)
	if err != nil {
		return parkedResult{}, err
	}
	bytes, err := redisBytesPerRun(ctx, r.redis.Client, ids)
	if err != nil {
		return parkedResult{}, err
	}
	memAfter, err := r.redis.UsedMemory(ctx)
	if err != nil {
		return parkedResult{}, err
	}

	resumeAll, err := resumeAll(ctx, st, queue, events, ids, escIDs)
	if err != nil {
		return parkedResult{}, err
	}
	res := parkedResult{runs: len(ids), busy: busy, bytesPerRun: bytes.total(), resumeAll: resumeAll}
	res.note = fmt.Sprintf("%d runs of examples/plans/ambiguous_task.md parked through the real path (start task, step "+
		"task, the sim agent as a process, the heuristic brain, the escalation opening) by one worker (concurrency %d, "+
		"poll 20 ms) in %.1f s (%.0f runs/s). Busy slots: asynq's active tasks in both of orch's queues, the most of 5 "+
		"samples over 1 s once the queues were empty. Once parked, the worker's own pass kept them compact (after %.0f s "+
		"of quiet, as it does every run that waits: their document, events and audit trail in one gzip'd value, no "+
		"streams); the last was compacted %.1f s after the last parked. Bytes per run: MEMORY USAGE (SAMPLES 0) of "+
		"the run's keys, on average: its value %.0f, its event stream %.0f, its audit stream %.0f, its share of the "+
		"indexes (every run, their summaries, the runs that wait, the runs to compact) %.0f; INFO used_memory grew by "+
		"%.0f bytes per run (allocator and Redis overhead included).",
		len(ids), workerConcurrency, parkTime.Seconds(), float64(len(ids))/parkTime.Seconds(), store.RestingQuiet.Seconds(),
		compacted.Seconds(), bytes.doc, bytes.events, bytes.audit, bytes.index, float64(memAfter-memBefore)/float64(len(ids)))
	res.resumeNote = fmt.Sprintf("From the first answer to the worker's resume handler committing the last of the %d "+
		"resumptions: escalation.Resolve (choose B) from 8 goroutines, each enqueueing the run's resume task; the control "+
		"queue's 4 workers resume the runs (each answer's commit writes its compact run's log back as streams) while the "+
		"step workers already run the resumed agents.", len(ids))
	return res, nil
}

// waitCompacted waits until the worker has compacted every parked run, and returns how long that took.
func waitCompacted(ctx context.Context, rdb *redis.Client, parking time.Duration) (time.Duration, error) {
	start := time.Now()
	limit := store.RestingQuiet + parking + time.Minute
	for {
		n, err := rdb.ZCard(ctx, restingIndex).Result()
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return time.Since(start), nil
		}
		if time.Since(start) > limit {
			return 0, fmt.Errorf("%d parked runs still not compacted after %s", n, limit)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// busyWhileParked waits until nothing is queued, then reports the most worker slots held in a few samples.
func busyWhileParked(ctx context.Context, inspector *asynq.Inspector) (int, error) {
	for deadline := time.Now().Add(time.Minute); ; {
		n, err := queued(inspector)
		if err != nil {
			return 0, err
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d tasks still queued a minute after every run parked", n)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return 0, err
		}
	}
	most := 0
	for range 5 {
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return 0, err
		}
		busy, err := busySlots(inspector)
		if err != nil {
			return 0, err
		}
		most = max(most, busy)
	}
	return most, nil
}

// checkParked checks that every run waits on the agent's question, and returns the id of each one's escalation.
func checkParked(ctx context.Context, store *store.Store, ids []string) ([]string, error) {
	escIDs := make([]string, len(ids))
	err := parallel(ctx, len(ids), 8, func(i int) error {
		run, err := store.Get(ctx, ids[i])
		if err != nil {
			return err
		}
		e := run.OpenEscalation()
		if run.Status != jobs.RunParked || e == nil || e.Trigger != jobs.TriggerNeedsHelp {
			return fmt.Errorf("run %s is %s, not parked on the agent's question", run.ID, run.Status)
		}
		escIDs[i] = e.ID
		return nil
	})
	return escIDs, err
}

// runKeys are a run's keys as the store lays them out (jobs/store): its value (its JSON document, or its compact form
// while it waits), event stream and audit trail. A compact run has no streams.
func runKeys(id string) []string {
	return []string{"orch:run:{" + id + "}", "orch:run:{" + id + "}:events", "orch:run:{" + id + "}:audit"}
}

// indexes are the store's keys that hold a member per run (jobs/store): every run by creation, their summaries, the
// runs that wait for a person, and those of them still to compact.
var indexes = []string{"orch:runs", "orch:runs:summary", "orch:runs:open", restingIndex}

const restingIndex = "orch:runs:resting"

// runBytes is the Redis memory of the parked runs, per run on average: MEMORY USAGE of each key, exact (SAMPLES 0).
type runBytes struct {
	doc, events, audit float64 // the run's own keys
	index              float64 // its share of the indexes
}

func (b runBytes) total() float64 { return b.doc + b.events + b.audit + b.index }

// redisBytesPerRun measures what the runs' keys take, on average.
func redisBytesPerRun(ctx context.Context, rdb *redis.Client, ids []string) (runBytes, error) {
	var sums [3]int64 // by position in runKeys
	const batch = 500
	for lo := 0; lo < len(ids); lo += batch {
		pipe := rdb.Pipeline()
		var cmds []*redis.IntCmd
		for _, id := range ids[lo:min(lo+batch, len(ids))] {
			for _, k := range runKeys(id) {
				cmds = append(cmds, pipe.MemoryUsage(ctx, k, 0))
			}
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return runBytes{}, err
		}
		for i, c := range cmds {
			v, err := c.Result()
			if errors.Is(err, redis.Nil) && i%3 > 0 {
				continue // no stream: the run is compact
			}
			if errors.Is(err, redis.Nil) {
				return runBytes{}, fmt.Errorf("no key %s: has the store's key layout changed?", c.Args()[2])
			}
			if err != nil {
				return runBytes{}, err
			}
			sums[i%3] += v
		}
	}
	var index int64
	for _, k := range indexes {
		v, err := rdb.MemoryUsage(ctx, k, 0).Result()
		if errors.Is(err, redis.Nil) {
			continue // empty: none left to compact
		}
		if err != nil {
			return runBytes{}, fmt.Errorf("MEMORY USAGE %s: %w", k, err)
		}
		index += v
	}
	n := float64(len(ids))
	return runBytes{doc: float64(sums[0]) / n, events: float64(sums[1]) / n, audit: float64(sums[2]) / n,
		index: float64(index) / n}, nil
}

// resumeAll answers every parked run and returns the time until the last one was resumed by the worker.
func resumeAll(ctx context.Context, store *store.Store, queue *queue.Queue, events *tally, ids, escIDs []string) (time.Duration, error) {
	start := time.Now()
	err := parallel(ctx, len(ids), 8, func(i int) error {
		_, _, err := escalation.Resolve(ctx, store, queue, escalation.Request{RunID: ids[i], EscalationID: escIDs[i],
			Type: jobs.ResolveChoose, Key: "B", By: "bench", Via: "cli"})
		return err
	})
	if err != nil {
		return 0, err
	}
	err = events.waitCount(ctx, jobs.ResumedEvent{}.Kind(), len(ids), time.Minute+time.Duration(len(ids))*50*time.Millisecond,
		nil, progress("resumed", len(ids)))
	if err != nil {
		return 0, err
	}
	return events.lastAt(jobs.ResumedEvent{}.Kind()).Sub(start), nil
}

// progress reports a long wait on stderr.
func progress(what string, n int) func(done int) {
	var last atomic.Int64
	return func(done int) {
		if int64(done) != last.Swap(int64(done)) {
			fmt.Fprintf(os.Stderr, "bench:   %s %d of %d\n", what, done, n)
		}
	}
}
