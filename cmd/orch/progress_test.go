package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/orchrun/orch/jobs"
)

// On a terminal the spinner line shows the running task, is wiped before every event line, and is never drawn over
// a question; into a pipe there is no spinner at all.
func TestProgressLine(t *testing.T) {
	var out bytes.Buffer
	r := newRenderer(&out, false)
	r.progress = &progress{out: &out, stop: make(chan struct{})} // driven by hand instead of the ticker
	r.event(jobs.NewEvent("r-1", "1.1", jobs.TaskStartedEvent{Title: "Build the cache", Attempt: 1, MaxAttempts: 3}))
	if !strings.Contains(out.String(), "Task 1.1: Build the cache — 0s") {
		t.Fatalf("no progress line after the task started: %q", out.String())
	}
	r.progress.draw()
	out.Reset()
	r.event(jobs.NewEvent("r-1", "1.1", jobs.EscalationEvent{Question: "Which cache?", Trigger: jobs.TriggerNeedsHelp}))
	s := out.String()
	if !strings.HasPrefix(s, "\r\033[K[") || !strings.Contains(s, "NEEDS HUMAN INPUT") {
		t.Fatalf("the line was not wiped before the question: %q", s)
	}
	out.Reset()
	r.progress.draw()
	if out.Len() != 0 {
		t.Fatalf("a progress line was drawn over the question: %q", out.String())
	}
	r.stopSpinning()

	var pipe bytes.Buffer
	plain := newRenderer(&pipe, false)
	plain.event(jobs.NewEvent("r-1", "1.1", jobs.TaskStartedEvent{Title: "Build", Attempt: 1, MaxAttempts: 3}))
	if strings.Contains(pipe.String(), "\033") {
		t.Fatalf("escape codes in plain output: %q", pipe.String())
	}
}
