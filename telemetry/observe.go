package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/orchrun/orch/jobs"
)

// Observe emits the spans whose end the committed events record: a stage that did work (from its entry to its
// outcome, waits included), a question to a human (orchestrator.escalation: from asking to the answer), and the run.
// Register it with store.Store.Observe in every process that traces.
func Observe(events []jobs.Event) {
	ctx := context.Background()
	for _, e := range events {
		switch b := e.Body.(type) {
		case jobs.StageCompletedEvent:
			stageEnded(ctx, e, b.StageHop, "")
		case jobs.StageFailedEvent:
			stageEnded(ctx, e, b.StageHop, b.Note)
		case jobs.ResolutionEvent:
			wait := seconds(b.WaitSeconds)
			ctx := StageContext(ctx, e.RunID, e.TaskID, b.Visit)
			_, span := Tracer().Start(ctx, "orchestrator.escalation", trace.WithTimestamp(e.Time.Add(-wait)),
				trace.WithAttributes(attribute.String("run.id", e.RunID), attribute.String("task.id", e.TaskID),
					attribute.String("escalation.id", b.EscalationID),
					attribute.String("escalation.trigger", b.Trigger.String()),
					attribute.String("escalation.question", b.Question),
					attribute.Float64("escalation.wait_seconds", wait.Seconds()),
					attribute.String("escalation.response", b.Summary),
					attribute.String("escalation.resolution", string(b.Resolution)),
					attribute.String("escalation.by", b.By), attribute.String("escalation.via", b.Via)))
			span.End(trace.WithTimestamp(e.Time))
		case jobs.RunCompletedEvent:
			runEnded(ctx, e, "completed", b.DurationMS, "")
		case jobs.RunFailedEvent:
			runEnded(ctx, e, "failed", b.DurationMS, b.Reason)
		case jobs.RunAbortedEvent:
			runEnded(ctx, e, "aborted", b.DurationMS, b.Reason)
		}
	}
}

// stageEnded ends the span of a stage that did work; start, exit and conditional nodes pass in no time and have
// none. failure is the note of a failed stage.
func stageEnded(ctx context.Context, e jobs.Event, hop jobs.StageHop, failure string) {
	if hop.Visit == 0 {
		return
	}
	_, span := stageSpan(ctx, e.RunID, e.TaskID, hop.Visit, time.UnixMilli(hop.EnteredMS))
	span.SetAttributes(attribute.String("run.id", e.RunID), attribute.String("task.id", e.TaskID),
		attribute.String("stage.handler", hop.Handler), attribute.String("stage.status", hop.Status),
		attribute.String("stage.next", hop.Next), attribute.Int("stage.visit", hop.Visit))
	if _, failed := e.Body.(jobs.StageFailedEvent); failed {
		span.SetStatus(codes.Error, failure)
	}
	span.End(trace.WithTimestamp(e.Time))
}

// runEnded ends the run's span: it started durationMS before the event.
func runEnded(ctx context.Context, e jobs.Event, status string, durationMS int64, reason string) {
	span := runSpan(ctx, e.RunID, e.Time.Add(-millis(float64(durationMS))))
	span.SetAttributes(attribute.String("run.id", e.RunID), attribute.String("run.status", status))
	if reason != "" {
		span.SetAttributes(attribute.String("run.reason", reason))
	}
	if status != "completed" {
		span.SetStatus(codes.Error, reason)
	}
	span.End(trace.WithTimestamp(e.Time))
}
