package nats_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination"
	"github.com/hooklane/hooklane/destination/nats"
	"github.com/hooklane/hooklane/destination/transporttest"
)

var _ destination.Type = nats.Type{}

// TestConformance runs the transport suite on an in-process nats-server
// with JetStream, on 127.0.0.1.
func TestConformance(t *testing.T) {
	t.Parallel()
	shared := newServer(t, nil)
	var n atomic.Int64
	features := transporttest.Features{
		Binary:      true,
		AttrPrefix:  "ce-",
		ContentType: "header:content-type",
		JobID:       "header:Nats-Msg-Id",
		MaxBody:     1 << 20,
	}
	transporttest.Run(t, &transporttest.Harness{
		Type:     nats.Type{},
		Features: features,
		NewTarget: func(t *testing.T, _ transporttest.TargetOptions) *transporttest.Target {
			t.Helper()
			subject := fmt.Sprintf("orders.%d", n.Add(1))
			return target(t, shared.ClientURL(), shared.ClientURL(), subject, true)
		},
		NewOutage: func(t *testing.T) *transporttest.Outage {
			t.Helper()
			p := transporttest.NewProxy(t, shared.Addr().String())
			subject := fmt.Sprintf("outage.%d", n.Add(1))
			return &transporttest.Outage{Target: target(t, "nats://"+p.Addr(), shared.ClientURL(), subject, true), Stop: p.Stop, Start: p.Start}
		},
		NewMissing: func(t *testing.T) json.RawMessage {
			t.Helper()
			return raw(shared.ClientURL(), fmt.Sprintf("nostream.%d", n.Add(1)), true, "")
		},
		NewRefused: func(t *testing.T) (json.RawMessage, string) {
			t.Helper()
			s := newServer(t, func(o *server.Options) { o.Username, o.Password = "hooklane", "the-right-one" })
			const wrong = "Wr0ng-Pa55w0rd"
			return raw(s.ClientURL(), "auth", true, wrong), wrong
		},
		AtAddress: func(t *testing.T, addr, secret string) json.RawMessage {
			t.Helper()
			return raw("nats://"+addr, "orders", true, secret)
		},
	})
}

// TestCoreNATS: with "jetstream": false the publish is flushed to the
// server, no stream needed.
func TestCoreNATS(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	nc := connect(t, s.ClientURL())
	sub, err := nc.SubscribeSync("core.orders")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())

	reg := destination.NewRegistry(nats.Type{})
	d, err := reg.Decode(&destination.DecodeParams{Raw: raw(s.ClientURL(), "core.orders", false, "")})
	require.NoError(t, err)
	clients := destination.NewClients(destination.ClientsConfig{})
	t.Cleanup(clients.Close)
	m, err := destination.NewMessage(nats.Type{}.Binding(), &destination.Envelope{Event: []byte(`{"id":"e"}`), JobID: "job-core", Attempt: 1})
	require.NoError(t, err)
	answer, err := clients.Publish(t.Context(), d, m)
	require.NoError(t, err)
	require.Equal(t, "flushed", answer)
	msg, err := sub.NextMsg(10 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "job-core", msg.Header.Get("Nats-Msg-Id"))
}

// TestJetStreamDeduplicates: a retry of a delivered job (same
// Nats-Msg-Id) is acknowledged as a duplicate and stored once.
func TestJetStreamDeduplicates(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	name := createStream(t, s.ClientURL(), "dedup.orders")
	reg := destination.NewRegistry(nats.Type{})
	d, err := reg.Decode(&destination.DecodeParams{Raw: raw(s.ClientURL(), "dedup.orders", true, "")})
	require.NoError(t, err)
	clients := destination.NewClients(destination.ClientsConfig{})
	t.Cleanup(clients.Close)
	for attempt := 1; attempt <= 2; attempt++ {
		m, err := destination.NewMessage(nats.Type{}.Binding(), &destination.Envelope{Event: []byte(`{"id":"e"}`), JobID: "job-dup", Attempt: attempt})
		require.NoError(t, err)
		answer, err := clients.Publish(t.Context(), d, m)
		require.NoError(t, err)
		if attempt == 2 {
			require.Contains(t, answer, "duplicate")
		}
	}
	js, err := jetstream.New(connect(t, s.ClientURL()))
	require.NoError(t, err)
	stream, err := js.Stream(t.Context(), name)
	require.NoError(t, err)
	info, err := stream.Info(t.Context())
	require.NoError(t, err)
	require.Equal(t, uint64(1), info.State.Msgs)
}

func TestDecode(t *testing.T) {
	t.Parallel()
	reg := destination.NewRegistry(nats.Type{})
	tests := []struct {
		raw  string
		want string
	}{
		{`{"type": "nats", "url": "http://h:4222", "subject": "a"}`, "/destination/url"},
		{`{"type": "nats", "url": "nats://h:4222", "subject": "a.*"}`, "/destination/subject"},
		{`{"type": "nats", "url": "nats://h:4222", "subject": "a..b"}`, "/destination/subject"},
		{`{"type": "nats", "url": "nats://h:4222", "subject": "a", "token": "t", "username": "u", "password": "p"}`, "/destination/token"},
		{`{"type": "nats", "url": "nats://h:4222", "subject": "a", "username": "u"}`, "/destination/password"},
		{`{"type": "nats", "url": "nats://h:4222"}`, "/destination/subject"},
	}
	for _, tt := range tests {
		_, err := reg.Decode(&destination.DecodeParams{Raw: json.RawMessage(tt.raw)})
		var ve *destination.ValidationError
		require.ErrorAs(t, err, &ve, tt.raw)
		require.Equal(t, tt.want, ve.Problems[0].Pointer, tt.raw)
	}
	d, err := reg.Decode(&destination.DecodeParams{Raw: json.RawMessage(`{"type": "nats", "url": "tls://nats.example:4222", "subject": "orders.created", "token": "tok"}`)})
	require.NoError(t, err)
	require.Equal(t, "nats://nats.example:4222/orders.created", d.TargetURL())
	require.JSONEq(t, `{"type": "nats", "url": "tls://nats.example:4222", "subject": "orders.created", "jetstream": true, "token": "***"}`, string(d.Masked()))
}

// target creates a stream for subject (through admin) and subscribes to
// it, and returns a destination at url.
func target(t *testing.T, url, admin, subject string, jetStream bool) *transporttest.Target {
	t.Helper()
	if jetStream {
		createStream(t, admin, subject)
	}
	nc := connect(t, admin)
	sub, err := nc.SubscribeSync(subject)
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	return &transporttest.Target{
		Raw: raw(url, subject, jetStream, ""),
		Receive: func(t *testing.T) *transporttest.Received {
			t.Helper()
			msg, err := sub.NextMsg(transporttest.ReceiveDeadline)
			require.NoError(t, err)
			r := &transporttest.Received{Body: msg.Data, Headers: map[string]string{}}
			for k, v := range msg.Header {
				r.Headers[k] = v[0]
			}
			return r
		},
	}
}

// createStream creates a stream of subject and returns its name.
func createStream(t *testing.T, url, subject string) string {
	t.Helper()
	js, err := jetstream.New(connect(t, url))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	name := "S_" + strings.ReplaceAll(subject, ".", "_")
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{
		Name: name, Subjects: []string{subject}, Storage: jetstream.MemoryStorage, Duplicates: time.Minute,
	})
	require.NoError(t, err)
	return name
}

func connect(t *testing.T, url string) *natsgo.Conn {
	t.Helper()
	nc, err := natsgo.Connect(url, natsgo.Timeout(5*time.Second))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

// raw is a nats destination; with a password, as user hooklane.
func raw(url, subject string, jetStream bool, password string) json.RawMessage {
	d := map[string]any{"type": "nats", "url": url, "subject": subject, "jetstream": jetStream}
	if password != "" {
		d["username"], d["password"] = "hooklane", password
	}
	out, err := json.Marshal(d)
	if err != nil {
		panic(err)
	}
	return out
}

// newServer starts a nats-server with JetStream on a free 127.0.0.1
// port, shut down with the test.
func newServer(t *testing.T, edit func(*server.Options)) *server.Server {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true}
	if edit != nil {
		edit(opts)
	}
	s, err := server.NewServer(opts)
	require.NoError(t, err)
	go s.Start()
	require.True(t, s.ReadyForConnections(10*time.Second), "nats-server did not start")
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}
