package main

import (
	"fmt"
	"io"
	"time"

	"github.com/orchrun/orch/internal/safetext"
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
	d := e.Describe()
	switch d.Moment {
	case jobs.MomentBegin:
		p.activity = safetext.OneLine(d.String(), 70)
		p.task = p.activity
		p.since = time.Now()
	case jobs.MomentWork:
		if p.activity != "" {
			p.activity = p.task + " " + safetext.OneLine(d.String(), 60)
		}
	case jobs.MomentStop, jobs.MomentAsk, jobs.MomentPause, jobs.MomentEnd:
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
