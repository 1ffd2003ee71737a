// Package telemetry traces runs with OpenTelemetry. A run lasts hours, parks, and moves between processes, so no
// process can hold its span open: every run gets a trace id derived from its id, its run and stage spans get span ids
// derived from the run, node and visit, and those spans are emitted once they are over, from the committed events
// that say so, with their real start and end times. Live spans — an attempt, the sandbox exec, the brain's calls —
// are children of the stage span that is still to come, so every process that touches a run, before or after any
// restart, adds to the same trace. Without an OTLP endpoint nothing is set up and every span is the global no-op.
package telemetry

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of orch's spans.
const Name = "github.com/orchrun/orch"

// Tracer is orch's tracer: the global provider's, so that it is a no-op until Setup installs one.
func Tracer() trace.Tracer { return otel.Tracer(Name) }

// Enabled reports whether OTLP export is configured in env (OTEL_EXPORTER_OTLP_ENDPOINT or its traces variant) and
// not disabled (OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER=none).
func Enabled(env func(string) string) bool {
	if strings.EqualFold(env("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(env("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return env("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs a tracer provider that exports to the OTLP/HTTP endpoint the standard OTEL_EXPORTER_OTLP_* variables
// name, and W3C trace-context propagation. The returned function flushes and stops it.
func Setup(ctx context.Context, service string) (func(context.Context) error, error) {
	exp, err := newHTTPExporter(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	host, _ := os.Hostname()
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName(service), semconv.ServiceInstanceID(host)))
	if err != nil {
		res = resource.Default()
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(IDs{}), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return tp.Shutdown, nil
}

// IDs generates span and trace ids: random ones, except where the context asks for a derived one (a run's or a
// stage's span, emitted after the fact with the id its children already point at).
type IDs struct{}

type fixedKey struct{}

type fixed struct {
	trace trace.TraceID
	span  trace.SpanID
}

// NewIDs implements sdktrace.IDGenerator for root spans.
func (IDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if f, ok := ctx.Value(fixedKey{}).(fixed); ok {
		return f.trace, f.span
	}
	var t trace.TraceID
	var s trace.SpanID
	rand.Read(t[:])
	rand.Read(s[:])
	return t, s
}

// NewSpanID implements sdktrace.IDGenerator for child spans.
func (IDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if f, ok := ctx.Value(fixedKey{}).(fixed); ok {
		return f.span
	}
	var s trace.SpanID
	rand.Read(s[:])
	return s
}

func derive(parts ...string) [32]byte {
	return sha256.Sum256([]byte(strings.Join(parts, "\x00")))
}

// RunTraceID is the trace of a run.
func RunTraceID(runID string) trace.TraceID {
	var t trace.TraceID
	h := derive("trace", runID)
	copy(t[:], h[:16])
	return t
}

func runSpanID(runID string) trace.SpanID {
	var s trace.SpanID
	h := derive("run", runID)
	copy(s[:], h[:8])
	return s
}

func stageSpanID(runID, node string, visit int) trace.SpanID {
	var s trace.SpanID
	h := derive("stage", runID, node, fmt.Sprint(visit))
	copy(s[:], h[:8])
	return s
}

func remote(ctx context.Context, t trace.TraceID, s trace.SpanID) context.Context {
	return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: t, SpanID: s, TraceFlags: trace.FlagsSampled, Remote: true}))
}

// StageContext is ctx with the span of a run's stage (its node, on its visit-th entry) as the parent: what an
// attempt's span hangs under.
func StageContext(ctx context.Context, runID, node string, visit int) context.Context {
	return remote(ctx, RunTraceID(runID), stageSpanID(runID, node, visit))
}

// stageSpan starts the span of a stage that is over, with its derived id, under its run's span.
func stageSpan(ctx context.Context, runID, node string, visit int, start time.Time) (context.Context, trace.Span) {
	ctx = remote(ctx, RunTraceID(runID), runSpanID(runID))
	ctx = context.WithValue(ctx, fixedKey{}, fixed{span: stageSpanID(runID, node, visit)})
	ctx, span := Tracer().Start(ctx, "orch.stage", trace.WithTimestamp(start))
	return context.WithValue(ctx, fixedKey{}, nil), span
}

// runSpan starts a run's span, the root of its trace, with its derived ids.
func runSpan(ctx context.Context, runID string, start time.Time) trace.Span {
	ctx = context.WithValue(ctx, fixedKey{}, fixed{trace: RunTraceID(runID), span: runSpanID(runID)})
	_, span := Tracer().Start(ctx, "orch.run", trace.WithTimestamp(start), trace.WithNewRoot())
	return span
}

// seconds turns a float of seconds into a duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// millis turns a float of milliseconds into a duration.
func millis(ms float64) time.Duration { return time.Duration(ms) * time.Millisecond }
