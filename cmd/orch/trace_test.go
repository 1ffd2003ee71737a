package main

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/orchrun/orch/telemetry"
)

// otlpSink is an OTLP/HTTP trace receiver on loopback: it keeps every span it is sent.
type otlpSink struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			s.spans = append(s.spans, ss.Spans...)
		}
	}
	s.mu.Unlock()
	data, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(data)
}

func attr(s *tracepb.Span, key string) any {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			switch v := kv.Value.Value.(type) {
			case *commonpb.AnyValue_StringValue:
				return v.StringValue
			case *commonpb.AnyValue_DoubleValue:
				return v.DoubleValue
			case *commonpb.AnyValue_IntValue:
				return v.IntValue
			}
		}
	}
	return nil
}

// A run with an escalation, traced to an OTLP endpoint: one trace for the run, the wait for the human as its own
// span under the task's stage, the attempts beside it with their sandbox and brain spans.
func TestTraceOfARunWithAnEscalation(t *testing.T) {
	t.Parallel()
	sink := &otlpSink{}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	dir := workdir(t)
	r := orchEnv(t, dir, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL}, bytes.NewBufferString("B\n"),
		"run", "--agent", "sim", "examples/plans/ambiguous_task.md")
	must(t, r, 0)
	id := runID(t, r)
	want := telemetry.RunTraceID(id)

	sink.mu.Lock()
	defer sink.mu.Unlock()
	byName := map[string][]*tracepb.Span{}
	for _, s := range sink.spans {
		if !bytes.Equal(s.TraceId, want[:]) {
			t.Fatalf("span %s is in trace %s, not the run's %s", s.Name, hex.EncodeToString(s.TraceId), want)
		}
		byName[s.Name] = append(byName[s.Name], s)
	}
	counts := map[string]int{"orch.run": 1, "orch.stage": 1, "orch.attempt": 2, "orch.sandbox.exec": 2, "orchestrator.escalation": 1}
	for name, n := range counts {
		if len(byName[name]) != n {
			t.Fatalf("%d %s spans, want %d (spans: %v)", len(byName[name]), name, n, names(sink.spans))
		}
	}
	if len(byName["orch.brain.interpret"]) < 2 {
		t.Fatalf("brain spans: %v", names(sink.spans))
	}
	run, stage, esc := byName["orch.run"][0], byName["orch.stage"][0], byName["orchestrator.escalation"][0]
	if len(run.ParentSpanId) != 0 || !bytes.Equal(stage.ParentSpanId, run.SpanId) || !bytes.Equal(esc.ParentSpanId, stage.SpanId) {
		t.Fatal("the escalation is not under the stage, or the stage not under the run")
	}
	for _, a := range byName["orch.attempt"] {
		if !bytes.Equal(a.ParentSpanId, stage.SpanId) {
			t.Fatal("an attempt is not under its stage")
		}
	}
	if attr(esc, "task.id") != "1.1" || attr(esc, "escalation.question") == nil || attr(esc, "escalation.wait_seconds") == nil ||
		attr(esc, "escalation.response") != "chose B) In-memory (fast, local only)" {
		t.Fatalf("escalation span attributes: %v", esc.Attributes)
	}
	if esc.EndTimeUnixNano <= esc.StartTimeUnixNano || run.StartTimeUnixNano > stage.StartTimeUnixNano || run.EndTimeUnixNano < stage.EndTimeUnixNano {
		t.Fatal("span times do not nest")
	}
}

func names(spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// Without an endpoint, tracing is not set up at all.
func TestTracingOffByDefault(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	if telemetry.Enabled(get) {
		t.Fatal("enabled with no endpoint")
	}
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://collector:4318"
	if !telemetry.Enabled(get) {
		t.Fatal("not enabled with an endpoint")
	}
	env["OTEL_SDK_DISABLED"] = "true"
	if telemetry.Enabled(get) {
		t.Fatal("enabled although OTEL_SDK_DISABLED=true")
	}
}
