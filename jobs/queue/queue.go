// Package queue is orch's use of asynq: its task types and payloads, the enqueuer that gives every task a
// deterministic id, and the adapter that reads asynq's leases to find steps whose worker died.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Task types on the queue.
const (
	TypeStart   = "orch:start"   // a new run: move it from queued to running and enqueue its first step
	TypeStep    = "orch:step"    // one attempt of the current task of a run
	TypeResume  = "orch:resume"  // apply a human's resolution and continue the run
	TypeTimeout = "orch:timeout" // a question's time ran out
)

// Queues. Control work (starts, resumes) has its own queue and its own workers, so a click is never stuck behind
// agents that run for half an hour. Steps is the default step queue; each configured team has one more (teams.go).
const (
	Steps   = "orch-steps"
	Control = "orch-control"
)

// Payload is the body of every orch task.
type Payload struct {
	RunID        string `json:"run_id"`
	Seq          int64  `json:"seq,omitempty"`
	EscalationID string `json:"escalation_id,omitempty"`
	N            int    `json:"n,omitempty"` // which timeout of the escalation (1, 2, …)
	// Trace is the W3C traceparent of the span that enqueued the task, when there was one: the handler's span links
	// to it, so a trace follows the run across the queue.
	Trace string `json:"trace,omitempty"`
}

// SpanContext is the span that enqueued the task (invalid when none).
func SpanContext(p Payload) trace.SpanContext {
	if p.Trace == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": p.Trace})
	return trace.SpanContextFromContext(ctx)
}

// DecodePayload reads a task's payload.
func DecodePayload(t *asynq.Task) (Payload, error) {
	var p Payload
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return p, fmt.Errorf("decoding %s payload: %w", t.Type(), err)
	}
	if p.RunID == "" {
		return p, fmt.Errorf("decoding %s payload: no run id", t.Type())
	}
	return p, nil
}

// How a step is bounded on the queue.
const (
	// stepTimeout bounds one step when the run sets no agent timeout.
	stepTimeout = 35 * time.Minute
	// stepMargin is orch's time around the agent in a step (brain calls, Redis): a step's bound is the agent's
	// timeout plus this.
	stepMargin = 5 * time.Minute
	// stepMaxRetry is how often asynq retries a step whose handler failed for infrastructure reasons (Redis, sandbox
	// start). Agent failures are not handler failures.
	stepMaxRetry = 3
)

// Queue enqueues orch's tasks. Every task has a deterministic id so that enqueueing the same work twice is harmless.
type Queue struct {
	client    *asynq.Client
	inspector *asynq.Inspector
	rdb       redis.UniversalClient // for what asynq's API does not tell: ExpiredSteps
	// teams maps each configured team to its step queue, weights each step queue to its weight (WithTeams); nil: every
	// step goes to Steps.
	teams   map[string]string
	weights map[string]int
	// here applies, in this process, the answers queued through this queue and its copies (ResumeHere).
	here *atomic.Pointer[func(runID, escID string)]
}

// New returns a queue on rdb.
func New(rdb redis.UniversalClient) *Queue {
	return &Queue{client: asynq.NewClientFromRedisClient(rdb), inspector: asynq.NewInspectorFromRedisClient(rdb),
		rdb: rdb, here: new(atomic.Pointer[func(runID, escID string)])}
}

// ResumeHere has fn apply the answers queued through q (Resume) in this process, as soon as each is queued: a worker
// in the process that took the answer (orch serve, run, web, mcp) goes on without waiting for its control queue's
// next poll. fn must return at once. The queued task stays the way every answer is applied for sure: it applies the
// answer wherever fn did not (fn left it, failed, or its process died), and finds it applied otherwise. The returned
// func unregisters fn, unless another took its place.
func (q *Queue) ResumeHere(fn func(runID, escID string)) (stop func()) {
	p := &fn
	q.here.Store(p)
	return func() { q.here.CompareAndSwap(p, nil) }
}

// Start enqueues a run's start.
func (q *Queue) Start(ctx context.Context, runID string) error {
	return q.enqueue(ctx, TypeStart, Payload{RunID: runID}, "start:"+runID,
		asynq.Queue(Control), asynq.MaxRetry(10), asynq.Timeout(time.Minute))
}

// Step enqueues step seq of a run of team (Run.Team; "" for none) whose agent may run for agentTimeout (0: the
// configured step timeout applies), on the team's step queue (StepQueue).
func (q *Queue) Step(ctx context.Context, team, runID string, seq int64, agentTimeout time.Duration) error {
	return q.StepAt(ctx, team, runID, seq, agentTimeout, time.Time{})
}

// StepAt is Step, not before at (a retry's backoff); a zero or past at is at once.
func (q *Queue) StepAt(ctx context.Context, team, runID string, seq int64, agentTimeout time.Duration, at time.Time) error {
	opts := q.stepOptions(team, agentTimeout)
	if time.Until(at) > 0 {
		opts = append(opts, asynq.ProcessAt(at))
	}
	return q.enqueue(ctx, TypeStep, Payload{RunID: runID, Seq: seq}, fmt.Sprintf("step:%s:%d", runID, seq), opts...)
}

// stepOptions are a step's queue (its team's), retries and time limit: the agent's timeout plus orch's margin, or
// the configured step timeout.
func (q *Queue) stepOptions(team string, agentTimeout time.Duration) []asynq.Option {
	timeout := stepTimeout
	if agentTimeout > 0 {
		timeout = agentTimeout + stepMargin
	}
	return []asynq.Option{asynq.Queue(q.StepQueue(team)), asynq.MaxRetry(stepMaxRetry), asynq.Timeout(timeout)}
}

// Rescue enqueues step seq of a run again, after the worker of its delivery (dead) died: under the dead delivery's id
// with ":rescue" after it, so that finding the same dead delivery twice enqueues one rescue (and a rescue that dies is
// rescued in turn). The dead delivery stays with asynq until its lease is recovered, and then finds the step done or
// the rescue's attempt running.
// It reports whether the rescue was enqueued now (false: an earlier pass did).
func (q *Queue) Rescue(ctx context.Context, dead, team, runID string, seq int64, agentTimeout time.Duration) (bool, error) {
	return q.enqueueNew(ctx, TypeStep, Payload{RunID: runID, Seq: seq}, dead+":rescue", q.stepOptions(team, agentTimeout)...)
}

// StepLater enqueues step seq of a run again at at, under an id of its own (the step's own is still active while it
// asks): a step that cannot start yet looks again later without holding a worker. suffix makes the id unique.
func (q *Queue) StepLater(ctx context.Context, team, runID string, seq int64, agentTimeout time.Duration, at time.Time, suffix string) error {
	opts := q.stepOptions(team, agentTimeout)
	if time.Until(at) > 0 {
		opts = append(opts, asynq.ProcessAt(at))
	}
	return q.enqueue(ctx, TypeStep, Payload{RunID: runID, Seq: seq}, fmt.Sprintf("step:%s:%d:later-%s", runID, seq, suffix), opts...)
}

// Resume enqueues the continuation of a run after escalation escID was resolved. The completed task is kept for a day
// so that its id keeps a second resume of the same escalation out. A worker of this process that asked for it
// (ResumeHere) is told at once.
func (q *Queue) Resume(ctx context.Context, runID, escID string) error {
	err := q.enqueue(ctx, TypeResume, Payload{RunID: runID, EscalationID: escID}, "resume:"+runID+":"+escID,
		asynq.Queue(Control), asynq.MaxRetry(10), asynq.Timeout(time.Minute), asynq.Retention(24*time.Hour))
	if fn := q.here.Load(); err == nil && fn != nil {
		(*fn)(runID, escID)
	}
	return err
}

// CancelTimeout takes the n-th timeout of an escalation off the queue, when it is still waiting there: the question
// was answered first. A timer that already fired, or fires meanwhile, finds the question answered and does nothing.
func (q *Queue) CancelTimeout(ctx context.Context, runID, escID string, n int) error {
	err := q.inspector.DeleteTask(Control, fmt.Sprintf("timeout:%s:%s:%d", runID, escID, n))
	if err != nil && !errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound) {
		return fmt.Errorf("cancelling the timer of question %s of run %s: %w", escID, runID, err)
	}
	return nil
}

// Timeout schedules the n-th timeout of an escalation at the given time. Scheduling it again is harmless.
func (q *Queue) Timeout(ctx context.Context, runID, escID string, n int, at time.Time) error {
	return q.enqueue(ctx, TypeTimeout, Payload{RunID: runID, EscalationID: escID, N: n},
		fmt.Sprintf("timeout:%s:%s:%d", runID, escID, n), asynq.Queue(Control), asynq.ProcessAt(at),
		asynq.MaxRetry(10), asynq.Timeout(time.Minute), asynq.Retention(24*time.Hour))
}

func (q *Queue) enqueue(ctx context.Context, typ string, p Payload, id string, opts ...asynq.Option) error {
	_, err := q.enqueueNew(ctx, typ, p, id, opts...)
	return err
}

// enqueueNew is enqueue, and reports whether the task was enqueued now (false: it was there already).
func (q *Queue) enqueueNew(ctx context.Context, typ string, p Payload, id string, opts ...asynq.Option) (bool, error) {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		carrier := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, carrier)
		p.Trace = carrier["traceparent"]
	}
	data, err := json.Marshal(p)
	if err != nil {
		return false, err
	}
	opts = append(opts, asynq.TaskID(id))
	task := asynq.NewTask(typ, data)
	_, err = q.client.EnqueueContext(ctx, task, opts...)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		// Already pending, scheduled, retrying or running: at most once is what we want. But an archived task (its
		// retries ran out) would hold the id forever and leave the run stuck: whoever enqueues it again means it.
		name := queueOf(opts)
		info, ierr := q.inspector.GetTaskInfo(name, id)
		if ierr != nil || info.State != asynq.TaskStateArchived {
			return false, nil
		}
		if derr := q.inspector.DeleteTask(name, id); derr != nil {
			return false, fmt.Errorf("re-enqueueing %s for run %s: %w", typ, p.RunID, derr)
		}
		_, err = q.client.EnqueueContext(ctx, task, opts...)
	}
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return false, fmt.Errorf("enqueueing %s for run %s: %w", typ, p.RunID, err)
	}
	return err == nil, nil
}

// queueOf is the queue named by opts (asynq's "default" when none is).
func queueOf(opts []asynq.Option) string {
	name := "default"
	for _, o := range opts {
		if o.Type() == asynq.QueueOpt {
			name = o.Value().(string)
		}
	}
	return name
}

// Size is how many tasks a queue holds (pending, active, scheduled, retrying, archived); 0 when it is unknown.
func (q *Queue) Size(queue string) int {
	info, err := q.inspector.GetQueueInfo(queue)
	if err != nil {
		return 0
	}
	return info.Size
}

// Sweep deletes from the queues the tasks of runs that are over, whatever state asynq keeps them in (pending,
// scheduled, retrying after an interruption, archived): a run that ended leaves nothing queued behind. over reports
// whether a run is over, or unknown; a task whose run it cannot judge (an error) is kept. Active tasks are left to
// their worker. It returns how many tasks it deleted.
func (q *Queue) Sweep(ctx context.Context, over func(ctx context.Context, runID string) (bool, error)) (int, error) {
	n := 0
	judged := map[string]bool{}
	names, err := q.StepQueues()
	if err != nil {
		return 0, err
	}
	for _, name := range append(names, Control) {
		for _, list := range []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){
			q.inspector.ListPendingTasks, q.inspector.ListScheduledTasks, q.inspector.ListRetryTasks,
			q.inspector.ListArchivedTasks} {
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			tasks, err := list(name, asynq.PageSize(sweepPage))
			if errors.Is(err, asynq.ErrQueueNotFound) {
				continue
			}
			if err != nil {
				return n, fmt.Errorf("listing the %s queue: %w", name, err)
			}
			for _, t := range tasks {
				var p Payload
				if json.Unmarshal(t.Payload, &p) != nil || p.RunID == "" {
					continue
				}
				done, seen := judged[p.RunID]
				if !seen {
					if done, err = over(ctx, p.RunID); err != nil {
						continue
					}
					judged[p.RunID] = done
				}
				if !done {
					continue
				}
				if err := q.inspector.DeleteTask(name, t.ID); err == nil {
					n++
				}
			}
		}
	}
	return n, nil
}

// sweepPage bounds the tasks of each state a sweep looks at: a sweep every minute catches up with a backlog.
const sweepPage = 1000
