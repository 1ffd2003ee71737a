package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// errBusy is returned when the backlog is full: the request is refused at once instead of waiting past Slack's
// deadline.
var errBusy = errors.New("orch is busy; try again in a moment")

// pool runs the work that comes after an ack: a fixed number of workers and a bounded backlog, drained on shutdown
// (an ack Slack received is a promise the work will be done).
type pool struct {
	workers int
	jobs    chan func(context.Context)
	log     *slog.Logger
	wg      sync.WaitGroup
	mu      sync.Mutex
	closed  bool
	ctx     context.Context
	cancel  context.CancelFunc
}

func newPool(workers, backlog int, log *slog.Logger) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	return &pool{workers: workers, jobs: make(chan func(context.Context), backlog), log: log, ctx: ctx, cancel: cancel}
}

func (p *pool) start() {
	for range p.workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for job := range p.jobs {
				p.run(job)
			}
		}()
	}
}

func (p *pool) run(job func(context.Context)) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("background job panic", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	ctx, cancel := context.WithTimeout(p.ctx, 2*time.Minute)
	defer cancel()
	job(ctx)
}

// submit queues a job, or returns errBusy when the backlog is full or the pool is shutting down.
func (p *pool) submit(job func(context.Context)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errBusy
	}
	select {
	case p.jobs <- job:
		return nil
	default:
		return errBusy
	}
}

// shutdown stops taking jobs and waits for the queued ones; when ctx ends first, running jobs are cancelled.
func (p *pool) shutdown(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.jobs)
	}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		p.cancel()
		return nil
	case <-ctx.Done():
		p.cancel()
		<-done
		return fmt.Errorf("draining background jobs: %w", ctx.Err())
	}
}
