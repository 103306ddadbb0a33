package transporttest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination"
)

// Test values every message carries.
const (
	// TraceParent is the attempt's traceparent the suite sends.
	TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	// eventTraceParent is the stored event's traceparent extension.
	eventTraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	eventTime        = "2026-01-24T14:00:00.123Z"
	eventType        = "com.example.order.created"
	eventSource      = "/orders"
)

// storedEvent is a CloudEvent with its keys in the order the gateway
// stores them (the specification attributes, the extensions by name, then
// data), so that a transport that renders the stored event again (the
// webhook) sends the same bytes as one that passes them on.
type storedEvent struct {
	SpecVersion     string      `json:"specversion"`
	ID              string      `json:"id"`
	Source          string      `json:"source"`
	Type            string      `json:"type"`
	Subject         string      `json:"subject"`
	Time            string      `json:"time"`
	DataContentType string      `json:"datacontenttype"`
	ComExampleLevel json.Number `json:"comexamplelevel"`
	TraceParent     string      `json:"traceparent"`
	Data            eventData   `json:"data"`
}

type eventData struct {
	OrderID string `json:"orderId"`
	Payload string `json:"payload"`
}

// event returns a stored CloudEvent with id and a data object holding
// payload.
func event(id, payload string) []byte {
	out, err := json.Marshal(storedEvent{
		SpecVersion: "1.0", ID: id, Source: eventSource, Type: eventType, Subject: "order:12345",
		Time: eventTime, DataContentType: "application/json", ComExampleLevel: json.Number("3"),
		TraceParent: eventTraceParent, Data: eventData{OrderID: id, Payload: payload},
	})
	if err != nil {
		panic(err)
	}
	return out
}

// message builds the envelope of job jobID, attempt 1, for group.
func message(ev []byte, jobID, group string, dataOnly bool) *destination.Envelope {
	return &destination.Envelope{
		Event:       ev,
		DataOnly:    dataOnly,
		Headers:     map[string]string{"x-team": "orders"},
		JobID:       jobID,
		Attempt:     1,
		Group:       group,
		TraceParent: TraceParent,
	}
}

// publish delivers env to d and requires success and an answer.
func (b *bundle) publish(t *testing.T, d any, env *destination.Envelope) string {
	t.Helper()
	answer, err := b.tr.Deliver(t.Context(), d, env)
	require.NoError(t, err)
	require.NotEmpty(t, answer, "the broker's answer")
	return answer
}

// publishFails delivers env to d with a bound and requires a
// *PublishError, retryable unless permanent says otherwise, which it
// returns.
func (b *bundle) publishFails(t *testing.T, d any, env *destination.Envelope, bound time.Duration, permanent bool) *destination.PublishError {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	_, err := b.tr.Deliver(ctx, d, env)
	require.Error(t, err)
	pe, ok := errorsAs(err)
	require.True(t, ok, "a *destination.PublishError, got %T: %v", err, err)
	if permanent {
		require.True(t, pe.Permanent, "a refusal no retry can fix (§6: a 4xx): %v", err)
		return pe
	}
	require.False(t, pe.Permanent, "§15: a failed publish is retryable: %v", err)
	require.False(t, destination.IsPermanent(err))
	return pe
}

func errorsAs(err error) (*destination.PublishError, bool) {
	pe, ok := err.(*destination.PublishError) //nolint:errorlint // Transport.Deliver returns it unwrapped, and the suite checks that
	return pe, ok
}

// requireNoSecret checks that secret appears in none of texts.
func requireNoSecret(t *testing.T, secret string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		require.NotContains(t, s, secret, "a secret in an error text or a log line")
	}
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if err != nil {
		return n, fmt.Errorf("write log: %w", err)
	}
	return n, nil
}

func (b *bundle) logText() string {
	return b.logs.String()
}

// BlackHole listens on 127.0.0.1, accepts every connection, reads what it
// is sent and never answers: a broker that hangs. It stops with the
// test.
func BlackHole(t *testing.T) string {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(io.Discard, c) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// Proxy forwards TCP connections from a 127.0.0.1 port of its own to a
// broker, and can be stopped (every connection cut, new ones refused) and
// started again on the same port: a broker outage for brokers that
// cannot be restarted in the test. It stops with the test.
type Proxy struct {
	upstream string
	addr     string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// NewProxy starts a proxy to upstream ("127.0.0.1:port").
func NewProxy(t *testing.T, upstream string) *Proxy {
	t.Helper()
	p := &Proxy{upstream: upstream, conns: map[net.Conn]bool{}}
	p.listen(t, "127.0.0.1:0")
	p.addr = p.ln.Addr().String()
	t.Cleanup(func() { p.Stop(t) })
	return p
}

// Addr is the proxy's address, host:port.
func (p *Proxy) Addr() string { return p.addr }

// Stop closes the listener and every connection.
func (p *Proxy) Stop(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// Start listens again on the proxy's address.
func (p *Proxy) Start(t *testing.T) {
	t.Helper()
	p.listen(t, p.addr)
}

func (p *Proxy) listen(t *testing.T, addr string) {
	t.Helper()
	var ln net.Listener
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for {
		ln, err = (&net.ListenConfig{}).Listen(t.Context(), "tcp", addr)
		if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "address already in use") {
			break
		}
		// The port of a just-closed listener can linger for a moment.
		<-time.After(50 * time.Millisecond)
	}
	require.NoError(t, err)
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() { p.accept(ln) })
}

func (p *Proxy) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		up, err := (&net.Dialer{}).DialContext(ctx, "tcp", p.upstream)
		cancel()
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, up) {
			return
		}
		p.wg.Go(func() { p.pipe(c, up) })
		p.wg.Go(func() { p.pipe(up, c) })
	}
}

// track records a pair of connections, unless the proxy stopped.
func (p *Proxy) track(c, up net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		_ = c.Close()
		_ = up.Close()
		return false
	}
	p.conns[c], p.conns[up] = true, true
	return true
}

func (p *Proxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// contextWithTimeout is t.Context() bounded by d.
func contextWithTimeout(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	t.Helper()
	return context.WithTimeout(t.Context(), d)
}

// closedAddr returns a 127.0.0.1 address where nothing listens: a
// connection to it is refused.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
