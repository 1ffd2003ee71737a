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
// Register it with jobs.Store.Observe in every process that traces.
func Observe(events []jobs.Event) {
	ctx := context.Background()
	for _, e := range events {
		switch e.Type {
		case jobs.EventStageCompleted, jobs.EventStageFailed:
			visit := e.Int("visit")
			if visit == 0 {
				continue // start, exit and conditional nodes pass in no time
			}
			_, span := stageSpan(ctx, e.RunID, e.TaskID, visit, time.UnixMilli(int64(e.Float("entered_ms"))))
			span.SetAttributes(attribute.String("run.id", e.RunID), attribute.String("task.id", e.TaskID),
				attribute.String("stage.handler", e.String("handler")), attribute.String("stage.status", e.String("status")),
				attribute.String("stage.next", e.String("next")), attribute.Int("stage.visit", visit))
			if e.Type == jobs.EventStageFailed {
				span.SetStatus(codes.Error, e.String("note"))
			}
			span.End(trace.WithTimestamp(e.Time))
		case jobs.EventResolution:
			wait := seconds(e.Float("wait_seconds"))
			ctx := StageContext(ctx, e.RunID, e.TaskID, e.Int("visit"))
			_, span := Tracer().Start(ctx, "orchestrator.escalation", trace.WithTimestamp(e.Time.Add(-wait)),
				trace.WithAttributes(attribute.String("run.id", e.RunID), attribute.String("task.id", e.TaskID),
					attribute.String("escalation.id", e.String("escalation_id")),
					attribute.String("escalation.trigger", e.String("trigger")),
					attribute.String("escalation.question", e.String("question")),
					attribute.Float64("escalation.wait_seconds", wait.Seconds()),
					attribute.String("escalation.response", e.String("summary")),
					attribute.String("escalation.resolution", e.String("resolution")),
					attribute.String("escalation.by", e.String("by")), attribute.String("escalation.via", e.String("via"))))
			span.End(trace.WithTimestamp(e.Time))
		case jobs.EventRunCompleted, jobs.EventRunFailed, jobs.EventRunAborted:
			span := runSpan(ctx, e.RunID, e.Time.Add(-millis(e.Float("duration_ms"))))
			status := map[string]string{jobs.EventRunCompleted: "completed", jobs.EventRunFailed: "failed",
				jobs.EventRunAborted: "aborted"}[e.Type]
			span.SetAttributes(attribute.String("run.id", e.RunID), attribute.String("run.status", status))
			if reason := e.String("reason"); reason != "" {
				span.SetAttributes(attribute.String("run.reason", reason))
			}
			if e.Type != jobs.EventRunCompleted {
				span.SetStatus(codes.Error, e.String("reason"))
			}
			span.End(trace.WithTimestamp(e.Time))
		}
	}
}
