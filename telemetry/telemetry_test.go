package telemetry

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/orchrun/orch/jobs"
)

// Spans emitted by different processes at different times land in one tree: a live attempt under the stage span
// written later, the stage and the question under the run span written last.
func TestDerivedSpansFormOneTree(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(IDs{}))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	defer otel.SetTracerProvider(prev)

	start := time.Now().Add(-time.Minute)
	_, attempt := Tracer().Start(StageContext(context.Background(), "r-1", "1.1", 1), "orch.attempt")
	attempt.End()
	Observe([]jobs.Event{
		{RunID: "r-1", TaskID: "1.1", Time: start.Add(40 * time.Second),
			Body: jobs.ResolutionEvent{WaitSeconds: 30, Visit: 1, Question: "Which cache?", Summary: "chose B"}},
		{RunID: "r-1", TaskID: "1.1", Time: start.Add(50 * time.Second),
			Body: jobs.StageCompletedEvent{StageHop: jobs.StageHop{Visit: 1, EnteredMS: start.UnixMilli(), Handler: "codergen", Status: "success"}}},
		{RunID: "r-1", TaskID: "start", Time: start, Body: jobs.StageCompletedEvent{StageHop: jobs.StageHop{Handler: "start"}}},
		{RunID: "r-1", Time: start.Add(time.Minute), Body: jobs.RunCompletedEvent{DurationMS: 60000}},
		{RunID: "r-2", Time: start.Add(time.Minute), Body: jobs.RunCompletedEvent{DurationMS: 1}},
	})
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() == RunTraceID("r-1") {
			byName[s.Name()] = s
		}
	}
	if len(rec.Ended()) != 5 || len(byName) != 4 {
		t.Fatalf("%d spans, %d in run r-1's trace (the start node has no span; run r-2 has its own trace)", len(rec.Ended()), len(byName))
	}
	run, stage, esc, att := byName["orch.run"], byName["orch.stage"], byName["orchestrator.escalation"], byName["orch.attempt"]
	if run.Parent().IsValid() || stage.Parent().SpanID() != run.SpanContext().SpanID() ||
		esc.Parent().SpanID() != stage.SpanContext().SpanID() || att.Parent().SpanID() != stage.SpanContext().SpanID() {
		t.Fatal("the spans do not form run → stage → {attempt, escalation}")
	}
	if got := esc.EndTime().Sub(esc.StartTime()); got != 30*time.Second {
		t.Fatalf("the escalation span lasts %v, want the 30 s wait", got)
	}
	if !run.StartTime().Equal(start) {
		t.Fatalf("run span starts %v, want %v", run.StartTime(), start)
	}
}

func TestRunTraceIDsDiffer(t *testing.T) {
	first, again, other := RunTraceID("r-1"), RunTraceID("r-1"), RunTraceID("r-2")
	if first != again || first == other || !first.IsValid() {
		t.Fatal("a run's trace id must be stable, its own, and valid")
	}
}
