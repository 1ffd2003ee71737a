package worker

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/sandbox"
	"github.com/orchrun/orch/telemetry"
)

// startAttempt starts the span of one attempt, under the span of its stage (emitted when the stage is over), linked
// to the span that enqueued the step: the trace follows the run across the queue, processes and restarts.
func startAttempt(ctx context.Context, p queue.Payload, at *attempt) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{trace.WithAttributes(attribute.String("run.id", at.run.ID),
		attribute.String("task.id", at.task.ID), attribute.Int("attempt", at.n), attribute.Bool("rejudge", at.rejudge),
		attribute.String("agent", at.run.Options.Agent))}
	if sc := queue.SpanContext(p); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	ctx = telemetry.StageContext(ctx, at.run.ID, at.task.ID, at.task.Visits)
	return telemetry.Tracer().Start(ctx, "orch.attempt", opts...)
}

func endAttempt(span trace.Span, out *outcome, err error) {
	defer span.End()
	if err != nil {
		span.SetStatus(codes.Error, "interrupted: "+err.Error())
		return
	}
	if out.execErr != nil {
		span.SetStatus(codes.Error, out.execErr.Error())
	}
	span.SetAttributes(attribute.String("status", string(out.interp.Status)), attribute.Int("exit_code", out.said.ExitCode),
		attribute.Int64("input_tokens", out.usage.InputTokens), attribute.Int64("output_tokens", out.usage.OutputTokens),
		attribute.Float64("cost_usd", out.usage.CostUSD))
	if out.decision != nil {
		span.SetAttributes(attribute.String("decision", string(out.decision.Decision)))
	}
}

func endExec(span trace.Span, res sandbox.Result, err error) {
	defer span.End()
	span.SetAttributes(attribute.Int("exit_code", res.ExitCode), attribute.Bool("timed_out", res.TimedOut),
		attribute.Bool("oom_killed", res.OOMKilled), attribute.Int64("duration_ms", res.Duration.Milliseconds()))
	if err != nil && !errors.Is(err, context.Canceled) {
		span.SetStatus(codes.Error, err.Error())
	}
}

func endBrain(span trace.Span, u brain.Usage, verdict, fallback string, err error) {
	defer span.End()
	span.SetAttributes(attribute.String("brain.backend", u.Backend), attribute.String("brain.model", u.Model),
		attribute.Int("brain.calls", u.Calls), attribute.String("brain.verdict", verdict))
	if fallback != "" {
		span.SetAttributes(attribute.String("brain.fallback", fallback))
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
}

func sandboxKind(o jobs.Options) string {
	if o.Sandbox == "" {
		return "local"
	}
	return o.Sandbox
}
