package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// otlpSink is a loopback OTLP/HTTP receiver for `bench --tracing`: it
// accepts every export and discards it, counting requests and bytes, so the
// gateway pays the whole cost of tracing (spans, batching, protobuf
// encoding, the HTTP export) and the collector side costs next to nothing.
type otlpSink struct {
	srv      *http.Server
	url      string
	requests atomic.Int64
	bytes    atomic.Int64
}

// startOTLPSink listens on 127.0.0.1 and serves until stop.
func startOTLPSink(ctx context.Context) (*otlpSink, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the OTLP sink: %w", err)
	}
	s := &otlpSink{url: "http://" + ln.Addr().String() + "/v1/traces"}
	s.srv = &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, 64<<20))
			s.requests.Add(1)
			s.bytes.Add(n)
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.WriteHeader(http.StatusOK)
		}),
	}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// stop closes the sink, waiting up to 5 s for exports in progress (also
// when ctx is already cancelled: the gateway's last export comes then).
func (s *otlpSink) stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("stop the OTLP sink: %w", err)
	}
	return nil
}
