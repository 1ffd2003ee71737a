// Package workpool runs the work that comes after an ack (Slack's requests, GitHub's deliveries): a fixed number of
// workers and a bounded backlog, drained on shutdown, for an ack the sender received is a promise that the work will
// be done.
package workpool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// ErrBusy is Submit's answer when the backlog is full or the pool is shutting down: the request is refused at once
// instead of waiting past its sender's deadline.
var ErrBusy = errors.New("orch is busy; try again in a moment")

// JobTimeout bounds one job.
const JobTimeout = 2 * time.Minute

// Pool runs jobs on a few workers. Make it with New, then Start it.
type Pool struct {
	workers int
	jobs    chan func(context.Context)
	log     *slog.Logger
	wg      sync.WaitGroup
	mu      sync.Mutex
	closed  bool
	ctx     context.Context
	cancel  context.CancelFunc
}

// New is a pool of workers with room for backlog jobs waiting; a job that panics is logged to log.
func New(workers, backlog int, log *slog.Logger) *Pool {
	ctx, cancel := context.WithCancel(context.Background())
	return &Pool{workers: workers, jobs: make(chan func(context.Context), backlog), log: log, ctx: ctx, cancel: cancel}
}

// Start starts the workers.
func (p *Pool) Start() {
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

func (p *Pool) run(job func(context.Context)) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("background job panic", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	ctx, cancel := context.WithTimeout(p.ctx, JobTimeout)
	defer cancel()
	job(ctx)
}

// Submit queues a job, or returns ErrBusy when the backlog is full or the pool is shutting down.
func (p *Pool) Submit(job func(context.Context)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrBusy
	}
	select {
	case p.jobs <- job:
		return nil
	default:
		return ErrBusy
	}
}

// Shutdown stops taking jobs and waits for the queued ones; when ctx ends first, running jobs are cancelled.
func (p *Pool) Shutdown(ctx context.Context) error {
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
