package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// otlp.go exports spans over OTLP/HTTP with protobuf bodies, configured by the standard variables, as the OpenTelemetry
// specification documents them (protocol/exporter.md, protocol/otlp.md, version 1.x): OTEL_EXPORTER_OTLP_ENDPOINT (a
// base URL, to which v1/traces is added) or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the URL as is); _HEADERS (key=value
// pairs, comma-separated, values percent-decoded); _TIMEOUT (milliseconds, default 10 s); _COMPRESSION (gzip or
// none); _CERTIFICATE, _CLIENT_CERTIFICATE and _CLIENT_KEY (PEM files) — each with its TRACES_ variant, which wins.
// A body is an ExportTraceServiceRequest; 429, 502, 503 and 504 are retried, after Retry-After when the collector
// sends one, until the timeout. It is orch's own rather than the OTLP exporter module's because that module links gRPC
// (its collector package holds the gRPC service) for an HTTP exporter: about 90 packages of the binary.

// exportTimeout is the default bound of one export, retries included.
const exportTimeout = 10 * time.Second

// httpExporter is an sdktrace.SpanExporter that posts to one OTLP/HTTP endpoint.
type httpExporter struct {
	url     string
	headers map[string]string
	gzip    bool
	timeout time.Duration
	client  *http.Client
}

// newHTTPExporter reads the exporter's configuration from env.
func newHTTPExporter(env func(string) string) (*httpExporter, error) {
	// get is the traces variable when it is set, else the general one.
	get := func(traces, general string) string {
		if v := strings.TrimSpace(env(traces)); v != "" {
			return v
		}
		return strings.TrimSpace(env(general))
	}
	e := &httpExporter{timeout: exportTimeout, headers: map[string]string{}}
	if u := strings.TrimSpace(env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); u != "" {
		e.url = u
	} else if base := strings.TrimSpace(env("OTEL_EXPORTER_OTLP_ENDPOINT")); base != "" {
		e.url = strings.TrimRight(base, "/") + "/v1/traces"
	} else {
		e.url = "http://localhost:4318/v1/traces"
	}
	u, err := url.Parse(e.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL may hold a password: the error names neither it nor the URL.
		return nil, errors.New("the OTLP traces endpoint is not an http(s) URL with a host")
	}
	if h := get("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"); h != "" {
		for _, pair := range strings.Split(h, ",") {
			k, v, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, errors.New("OTEL_EXPORTER_OTLP_HEADERS: each header is key=value, separated by commas")
			}
			if dv, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
				v = dv
			}
			e.headers[k] = strings.TrimSpace(v)
		}
	}
	if t := get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"); t != "" {
		ms, err := strconv.Atoi(t)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT=%q: a positive number of milliseconds", t)
		}
		e.timeout = time.Duration(ms) * time.Millisecond
	}
	switch c := strings.ToLower(get("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION")); c {
	case "", "none":
	case "gzip":
		e.gzip = true
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_COMPRESSION=%q: gzip or none", c)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if ca := get("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %s holds no PEM certificate", ca)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if cert, key := get("OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"), get("OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", "OTEL_EXPORTER_OTLP_CLIENT_KEY"); cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY: %w", err)
		}
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		tr.TLSClientConfig.Certificates = []tls.Certificate{pair}
	}
	e.client = &http.Client{Transport: tr}
	return e, nil
}

// ExportSpans sends spans in one request, retrying what the specification calls retryable until e.timeout.
func (e *httpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := encodeSpans(spans)
	if err != nil {
		return fmt.Errorf("otlp: encoding %d spans: %w", len(spans), err)
	}
	if e.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(body)
		zw.Close()
		body = b.Bytes()
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	wait := 100 * time.Millisecond
	for {
		retry, after, err := e.post(ctx, body)
		if err == nil || !retry {
			return err
		}
		if after <= 0 {
			after, wait = wait, min(2*wait, 5*time.Second)
		}
		t := time.NewTimer(after)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (and then %v)", err, ctx.Err())
		case <-t.C:
		}
	}
}

// post sends one request: whether a failure may be retried, and after how long the collector asked.
func (e *httpExporter) post(ctx context.Context, body []byte) (retry bool, after time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, err
	}
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	res, err := e.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which may hold a password
		}
		return true, 0, fmt.Errorf("otlp: exporting spans: %w", err)
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
	if res.StatusCode/100 == 2 {
		return false, 0, nil
	}
	err = fmt.Errorf("otlp: the collector answered %s", res.Status)
	switch res.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(res.Header.Get("Retry-After")); perr == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return true, after, err
	}
	if len(msg) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "text/") {
		err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(msg)))
	}
	return false, 0, err
}

// Shutdown has nothing to release: requests are made and finished within ExportSpans.
func (e *httpExporter) Shutdown(context.Context) error { return nil }

// encodeSpans is an ExportTraceServiceRequest holding spans, grouped by resource and then by instrumentation scope:
// its only field, resource_spans, is number 1, repeated.
func encodeSpans(spans []sdktrace.ReadOnlySpan) ([]byte, error) {
	type resourceKey struct {
		attrs  attribute.Distinct
		schema string
	}
	type scopeKey struct {
		name, version, schema string
		attrs                 attribute.Distinct
	}
	type group struct {
		rs     *tracepb.ResourceSpans
		scopes map[scopeKey]*tracepb.ScopeSpans
	}
	var groups []*group
	byResource := map[resourceKey]*group{}
	for _, s := range spans {
		res := s.Resource()
		rk := resourceKey{res.Equivalent(), res.SchemaURL()}
		g := byResource[rk]
		if g == nil {
			g = &group{rs: &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: keyValues(res.Attributes())},
				SchemaUrl: res.SchemaURL()}, scopes: map[scopeKey]*tracepb.ScopeSpans{}}
			byResource[rk] = g
			groups = append(groups, g)
		}
		is := s.InstrumentationScope()
		sk := scopeKey{is.Name, is.Version, is.SchemaURL, is.Attributes.Equivalent()}
		ss := g.scopes[sk]
		if ss == nil {
			ss = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: is.Name, Version: is.Version,
				Attributes: keyValues(is.Attributes.ToSlice())}, SchemaUrl: is.SchemaURL}
			g.scopes[sk] = ss
			g.rs.ScopeSpans = append(g.rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, span(s))
	}
	var out []byte
	for _, g := range groups {
		b, err := proto.Marshal(g.rs)
		if err != nil {
			return nil, err
		}
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, b)
	}
	return out, nil
}

func span(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Flags:                  spanFlags(sc, s.Parent()),
		Name:                   s.Name(),
		Kind:                   tracepb.Span_SpanKind(spanKind(s.SpanKind())),
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             keyValues(s.Attributes()),
		DroppedAttributesCount: uint32(s.DroppedAttributes()),
		DroppedEventsCount:     uint32(s.DroppedEvents()),
		DroppedLinksCount:      uint32(s.DroppedLinks()),
	}
	if parent := s.Parent(); parent.SpanID().IsValid() {
		psid := parent.SpanID()
		p.ParentSpanId = psid[:]
	}
	for _, ev := range s.Events() {
		p.Events = append(p.Events, &tracepb.Span_Event{TimeUnixNano: unixNano(ev.Time), Name: ev.Name,
			Attributes: keyValues(ev.Attributes), DroppedAttributesCount: uint32(ev.DroppedAttributeCount)})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		p.Links = append(p.Links, &tracepb.Span_Link{TraceId: ltid[:], SpanId: lsid[:],
			TraceState: l.SpanContext.TraceState().String(), Attributes: keyValues(l.Attributes),
			DroppedAttributesCount: uint32(l.DroppedAttributeCount), Flags: spanFlags(l.SpanContext, l.SpanContext)})
	}
	st := s.Status()
	p.Status = &tracepb.Status{Message: st.Description}
	switch st.Code {
	case codes.Ok:
		p.Status.Code = tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		p.Status.Code = tracepb.Status_STATUS_CODE_ERROR
	}
	return p
}

// spanFlags are the W3C trace flags in the low byte, and whether the parent's context is known and whether it is
// remote (bits 8 and 9 of Span.flags, as the proto documents them).
func spanFlags(sc, parent trace.SpanContext) uint32 {
	f := uint32(sc.TraceFlags()) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if parent.IsRemote() {
		f |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return f
}

// spanKind maps the API's kinds to the proto's: unspecified is 0 there, internal is 1 here and there.
func spanKind(k trace.SpanKind) int32 {
	switch k {
	case trace.SpanKindInternal:
		return int32(tracepb.Span_SPAN_KIND_INTERNAL)
	case trace.SpanKindServer:
		return int32(tracepb.Span_SPAN_KIND_SERVER)
	case trace.SpanKindClient:
		return int32(tracepb.Span_SPAN_KIND_CLIENT)
	case trace.SpanKindProducer:
		return int32(tracepb.Span_SPAN_KIND_PRODUCER)
	case trace.SpanKindConsumer:
		return int32(tracepb.Span_SPAN_KIND_CONSUMER)
	}
	return int32(tracepb.Span_SPAN_KIND_UNSPECIFIED)
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

func keyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BYTESLICE:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}}
	case attribute.BOOLSLICE:
		return array(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return array(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return array(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return array(v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		return array(v.AsSlice(), func(x attribute.Value) attribute.Value { return x })
	case attribute.MAP:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{
			Values: keyValues(v.AsMap())}}}
	}
	return &commonpb.AnyValue{}
}

func array[T any](xs []T, value func(T) attribute.Value) *commonpb.AnyValue {
	vals := make([]*commonpb.AnyValue, len(xs))
	for i, x := range xs {
		vals[i] = anyValue(value(x))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vals}}}
}
