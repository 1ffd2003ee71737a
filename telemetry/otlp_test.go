package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP receiver on loopback that answers each request with the next status of its script (the
// last repeating), decoding what it accepts as an ExportTraceServiceRequest, gzip or not.
type collector struct {
	mu       sync.Mutex
	statuses []int
	calls    int
	headers  []http.Header
	reqs     []*coltrace.ExportTraceServiceRequest
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	status := c.statuses[min(c.calls, len(c.statuses)-1)]
	c.calls++
	c.headers = append(c.headers, r.Header.Clone())
	if status != http.StatusOK {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "try later", status)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, "bad gzip", http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, _ := io.ReadAll(body)
	var req coltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(data, &req) != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	c.reqs = append(c.reqs, &req)
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Write(out)
}

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// A span with a parent, attributes of every kind, an event, a link and an error status arrives whole, gzipped, with
// the configured headers, after the collector asked twice to try later.
func TestHTTPExporterSendsWhatTheSpanHolds(t *testing.T) {
	col := &collector{statuses: []int{503, 429, 200}}
	srv := httptest.NewServer(col)
	defer srv.Close()
	exp, err := newHTTPExporter(envOf("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL+"/",
		"OTEL_EXPORTER_OTLP_HEADERS", "x-team=orch,authorization=Bearer%20t0k", "OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tr := tp.Tracer("test")
	ctx, parent := tr.Start(context.Background(), "run")
	link := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{9}, TraceFlags: trace.FlagsSampled})
	_, child := tr.Start(ctx, "attempt", trace.WithSpanKind(trace.SpanKindClient), trace.WithLinks(trace.Link{SpanContext: link}),
		trace.WithAttributes(attribute.String("task", "1.2"), attribute.Int("attempt", 2), attribute.Float64("cost", 0.25),
			attribute.Bool("retry", true), attribute.StringSlice("tools", []string{"Bash", "Edit"})))
	child.AddEvent("escalated", trace.WithAttributes(attribute.String("trigger", "loop")))
	child.SetStatus(codes.Error, "agent failed")
	child.End()
	parent.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	col.mu.Lock()
	defer col.mu.Unlock()
	if col.calls < 4 || len(col.reqs) != 2 {
		t.Fatalf("calls %d, accepted %d: want the first export retried twice, then both spans accepted", col.calls, len(col.reqs))
	}
	if h := col.headers[0]; h.Get("x-team") != "orch" || h.Get("Authorization") != "Bearer t0k" {
		t.Errorf("headers %v, want x-team and the decoded authorization", h)
	}
	got := col.reqs[0].ResourceSpans[0].ScopeSpans[0]
	if got.Scope.Name != "test" || len(got.Spans) != 1 {
		t.Fatalf("scope %q with %d spans", got.Scope.Name, len(got.Spans))
	}
	s := got.Spans[0]
	psc := parent.SpanContext()
	pid := psc.SpanID()
	if s.Name != "attempt" || s.Kind != tracepb.Span_SPAN_KIND_CLIENT || !bytes.Equal(s.ParentSpanId, pid[:]) {
		t.Errorf("span %q kind %v parent %x, want attempt, client, %x", s.Name, s.Kind, s.ParentSpanId, pid)
	}
	attrs := map[string]string{}
	for _, kv := range s.Attributes {
		attrs[kv.Key] = kv.Value.String()
	}
	for k, want := range map[string]string{"task": "1.2", "attempt": "2", "cost": "0.25", "retry": "true", "tools": "Edit"} {
		if !strings.Contains(attrs[k], want) {
			t.Errorf("attribute %s = %s, want it to hold %s", k, attrs[k], want)
		}
	}
	if len(s.Events) != 1 || s.Events[0].Name != "escalated" || len(s.Links) != 1 || s.Links[0].TraceId[0] != 9 {
		t.Errorf("events %v links %v", s.Events, s.Links)
	}
	if s.Status.Code != tracepb.Status_STATUS_CODE_ERROR || s.Status.Message != "agent failed" {
		t.Errorf("status %v", s.Status)
	}
	if s.StartTimeUnixNano == 0 || s.EndTimeUnixNano < s.StartTimeUnixNano {
		t.Errorf("times %d..%d", s.StartTimeUnixNano, s.EndTimeUnixNano)
	}
	if len(col.reqs[1].ResourceSpans[0].ScopeSpans[0].Spans[0].ParentSpanId) != 0 {
		t.Errorf("the root span has a parent")
	}
}

// A request the collector refuses as such is not retried; one it keeps asking to try later is given up at the
// timeout.
func TestHTTPExporterGivesUp(t *testing.T) {
	for _, tt := range []struct {
		status int
		calls  func(int) bool
	}{
		{http.StatusBadRequest, func(n int) bool { return n == 1 }},
		{http.StatusServiceUnavailable, func(n int) bool { return n >= 2 }},
	} {
		col := &collector{statuses: []int{tt.status}}
		srv := httptest.NewServer(col)
		exp, err := newHTTPExporter(envOf("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", srv.URL+"/v1/traces", "OTEL_EXPORTER_OTLP_TIMEOUT", "2000"))
		if err != nil {
			t.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider()
		_, sp := tp.Tracer("t").Start(context.Background(), "x")
		sp.End()
		ro := sp.(sdktrace.ReadOnlySpan)
		start := time.Now()
		if err := exp.ExportSpans(context.Background(), []sdktrace.ReadOnlySpan{ro}); err == nil {
			t.Errorf("status %d: no error", tt.status)
		}
		col.mu.Lock()
		if !tt.calls(col.calls) {
			t.Errorf("status %d: %d calls", tt.status, col.calls)
		}
		col.mu.Unlock()
		if time.Since(start) > time.Minute {
			t.Errorf("status %d: the export did not end near its timeout", tt.status)
		}
		srv.Close()
	}
}

// The configuration's errors say what is wrong without the endpoint's password.
func TestHTTPExporterConfiguration(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want string
	}{
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://u:s3cret@host"}, "http(s) URL"},
		{[]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://u:s3cret@[::1/v1/traces"}, "http(s) URL"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"}, "gzip or none"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TIMEOUT", "soon"}, "milliseconds"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_HEADERS", "novalue"}, "key=value"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://127.0.0.1:1", "OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent.pem"}, "CERTIFICATE"},
	} {
		_, err := newHTTPExporter(envOf(tt.env...))
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%v: %v, want an error about %q without the password", tt.env, err, tt.want)
		}
	}
	e, err := newHTTPExporter(envOf("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:4318/custom"))
	if err != nil || e.url != "http://b:4318/custom" {
		t.Errorf("the traces endpoint is taken as is over the base: %v %v", e, err)
	}
}
