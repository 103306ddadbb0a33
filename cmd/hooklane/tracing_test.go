package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace receiver on 127.0.0.1 that decodes
// every export request and keeps its spans with their resource's
// service.name.
type otlpReceiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	o := &otlpReceiver{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		o.mu.Lock()
		for _, rs := range req.GetResourceSpans() {
			service := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					o.spans = append(o.spans, s)
					o.services = append(o.services, service)
				}
			}
		}
		o.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

// byName returns the spans received so far named name.
func (o *otlpReceiver) byName(name string) []*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range o.spans {
		if s.GetName() == name {
			out = append(out, s)
		}
	}
	return out
}

// TestTracingOTLPEndToEnd runs the gateway with OTEL_EXPORTER_OTLP_ENDPOINT
// pointing at a real OTLP/HTTP receiver, posts an event carrying a
// traceparent header to a loopback subscription, and checks what the
// receiver decoded: the ingest SERVER span continuing the producer's trace,
// the delivery CLIENT span as its child, and the delivered traceparent
// naming the delivery span as parent.
func TestTracingOTLPEndToEnd(t *testing.T) {
	t.Parallel()
	otlp := newOTLPReceiver(t)
	recv := newReceiver(t)
	gw := startGateway(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.srv.URL})
	gw.setup(t, recv.srv.URL+"/hook", "")
	const producerTrace, producerSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	status, _, _ := gw.do(t, "POST", "/api/events", "application/cloudevents+json",
		`{"specversion":"1.0","id":"t-1","source":"/shop","type":"shop.order.created","data":{},"tracestate":"congo=t61rcWkgMzE"}`,
		map[string]string{"traceparent": "00-" + producerTrace + "-" + producerSpan + "-01"})
	require.Equal(t, http.StatusCreated, status)
	got := recv.waitFor(t, 1)

	// The batch span processor exports every few seconds.
	require.Eventually(t, func() bool {
		return len(otlp.byName("POST /api/events")) == 1 && len(otlp.byName("deliver")) == 1
	}, 30*time.Second, 50*time.Millisecond, "the OTLP receiver never got the ingest and delivery spans")
	server, deliver := otlp.byName("POST /api/events")[0], otlp.byName("deliver")[0]
	require.Equal(t, tracepb.Span_SPAN_KIND_SERVER, server.GetKind())
	require.Equal(t, producerTrace, hex.EncodeToString(server.GetTraceId()))
	require.Equal(t, producerSpan, hex.EncodeToString(server.GetParentSpanId()))
	require.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, deliver.GetKind())
	require.Equal(t, producerTrace, hex.EncodeToString(deliver.GetTraceId()))
	require.Equal(t, server.GetSpanId(), deliver.GetParentSpanId(), "the delivery is a child of the ingest span")
	for _, name := range []string{"ingest.validate", "ingest.match", "ingest.store"} {
		require.Len(t, otlp.byName(name), 1, name)
		require.Equal(t, server.GetSpanId(), otlp.byName(name)[0].GetParentSpanId(), name)
	}

	tp := strings.Split(got[0].header.Get("traceparent"), "-")
	require.Len(t, tp, 4, "delivered traceparent %q", got[0].header.Get("traceparent"))
	require.Equal(t, producerTrace, tp[1])
	require.Equal(t, hex.EncodeToString(deliver.GetSpanId()), tp[2], "the delivered traceparent names the delivery span as parent")
	require.Equal(t, "congo=t61rcWkgMzE", got[0].header.Get("tracestate"), "tracestate passes unchanged")

	otlp.mu.Lock()
	defer otlp.mu.Unlock()
	for _, s := range otlp.services {
		require.Equal(t, "hooklane", s)
	}
}

func TestTracingConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want TracingConfig
	}{
		{"unset", nil, TracingConfig{}},
		{
			"endpoint",
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/"},
			TracingConfig{Enabled: true, Endpoint: "http://127.0.0.1:4318/v1/traces"},
		},
		{
			"traces endpoint wins",
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:4318/custom"},
			TracingConfig{Enabled: true, Endpoint: "http://b:4318/custom"},
		},
		{
			"sdk disabled",
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_SDK_DISABLED": "TRUE"},
			TracingConfig{Endpoint: "http://a:4318/v1/traces"},
		},
		{
			"exporter none",
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_TRACES_EXPORTER": "none"},
			TracingConfig{Endpoint: "http://a:4318/v1/traces"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tracingConfig(func(k string) string { return tt.env[k] }))
		})
	}
}

func TestLogLinesCarryTraceIDs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := slog.New(withTraceIDs(slog.NewJSONHandler(&buf, nil))).With("component", "test")
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	ctx := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	logger.InfoContext(ctx, "with span")
	logger.InfoContext(context.Background(), "without span")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	require.Contains(t, lines[0], `"trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331"`)
	require.Contains(t, lines[0], `"component":"test"`)
	require.NotContains(t, lines[1], "trace_id")
}
