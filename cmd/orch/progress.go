package main

import (
	"fmt"
	"io"
	"time"

	"github.com/orchrun/orch/jobs"
)

// progress is the line at the bottom of a terminal that says what is running while nothing else is printed: a
// spinner, the task and how long it has run. It is drawn only on a terminal (never into a pipe or a file, where
// the event lines say everything) and only while an agent works: never over a question.
type progress struct {
	out      io.Writer
	activity string
	task     string // the task part of activity
	since    time.Time
	frame    int
	shown    bool
	stop     chan struct{}
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// spin starts the ticker that redraws the line; r.mu guards every draw.
func (r *renderer) spin(out io.Writer) {
	r.progress = &progress{out: out, stop: make(chan struct{})}
	go func() {
		t := time.NewTicker(120 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-r.progress.stop:
				return
			case <-t.C:
				r.mu.Lock()
				r.progress.draw()
				r.mu.Unlock()
			}
		}
	}()
}

// stopSpinning clears the line and stops the ticker.
func (r *renderer) stopSpinning() {
	if r.progress == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress.clear()
	r.progress.activity = ""
	select {
	case <-r.progress.stop:
	default:
		close(r.progress.stop)
	}
}

// track sets what is running from an event: an attempt starts it; anything that ends it or asks a human stops it.
func (p *progress) track(e jobs.Event) {
	switch b := e.Body.(type) {
	case jobs.TaskStartedEvent:
		p.activity = fmt.Sprintf("Task %s: %s", e.TaskID, oneLine(b.Title, 60))
		p.task = p.activity
		p.since = time.Now()
	case jobs.AgentActivityEvent:
		if p.activity != "" && len(b.Calls) > 0 {
			p.activity = p.task + " · " + oneLine(b.Calls[len(b.Calls)-1], 50)
		}
	case jobs.TaskCompletedEvent, jobs.TaskFailedEvent, jobs.EscalationEvent, jobs.RunCompletedEvent,
		jobs.RunFailedEvent, jobs.RunAbortedEvent, jobs.RunPausedEvent, jobs.SandboxErrorEvent:
		p.activity = ""
	}
}

func (p *progress) draw() {
	if p.activity == "" {
		p.clear()
		return
	}
	p.frame = (p.frame + 1) % len(spinnerFrames)
	fmt.Fprintf(p.out, "\r\033[K%s %s — %s", spinnerFrames[p.frame], p.activity, time.Since(p.since).Round(time.Second))
	p.shown = true
}

func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.out, "\r\033[K")
		p.shown = false
	}
}
