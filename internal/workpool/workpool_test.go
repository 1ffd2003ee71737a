package workpool

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

func TestBusyWhenTheBacklogIsFull(t *testing.T) {
	p := New(1, 1, slog.New(slog.DiscardHandler))
	release := make(chan struct{})
	started := make(chan struct{})
	p.Start()
	if err := p.Submit(func(context.Context) { close(started); <-release }); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := p.Submit(func(context.Context) {}); err != nil {
		t.Fatalf("the backlog's one place: %v", err)
	}
	if err := p.Submit(func(context.Context) {}); !errors.Is(err, ErrBusy) {
		t.Fatalf("a job beyond the backlog: %v, want ErrBusy", err)
	}
	close(release)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Submit(func(context.Context) {}); !errors.Is(err, ErrBusy) {
		t.Fatalf("a job after shutdown: %v, want ErrBusy", err)
	}
}

// Shutdown runs what was accepted, survives a job that panics, and cancels what runs past its deadline.
func TestShutdownDrainsThenCancels(t *testing.T) {
	p := New(2, 8, slog.New(slog.DiscardHandler))
	p.Start()
	var ran atomic.Int32
	if err := p.Submit(func(context.Context) { panic("a bad job") }); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := p.Submit(func(context.Context) { ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	cancelled := make(chan struct{})
	if err := p.Submit(func(ctx context.Context) { <-ctx.Done(); close(cancelled) }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want the deadline's error (one job waits for its context)", err)
	}
	<-cancelled
	if ran.Load() != 3 {
		t.Fatalf("%d of 3 accepted jobs ran", ran.Load())
	}
}
