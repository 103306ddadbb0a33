package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/router/pull"
	"github.com/hooklane/hooklane/storage/pipelinetest"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/replay"
)

// testServer is an api.Server over a real SQLite store in t.TempDir() and an
// in-process queue, served by httptest on 127.0.0.1. Everything it starts
// stops in t.Cleanup.
type testServer struct {
	// URL is the base URL, e.g. http://127.0.0.1:41234.
	URL      string
	Store    *sqlitestore.Store
	Queue    *memqueue.Queue
	Registry *schema.Registry
	Subs     *subscription.Cache
	IDs      *idgen.Generator
	// Config is the configuration the server was built with, after cfg ran.
	Config api.Config
}

// serverConfig is what a test may change before its server is built: the
// server's configuration, and the knobs of the services the wiring builds
// behind it (cmd/hooklane builds them from the same settings).
type serverConfig struct {
	api.Config
	// DB is the store behind Config.Store, with every port.
	DB *sqlitestore.Store
	// AllowPrivateTargets skips the subscriptions' target address check
	// (true unless a test says otherwise, so httptest receivers can be
	// targets).
	AllowPrivateTargets bool
	// PoolChangedFunc is the pool service's change hook.
	PoolChangedFunc func(id string)
	// Registry is the schema registry the event type catalog invalidates.
	Registry interface{ Invalidate() }
}

// newTestServer builds the server the way cmd/hooklane wires it: the
// default dispatch pool exists, authentication is off and private targets
// are allowed (so httptest receivers can be targets). cfg, when not nil,
// edits the configuration before the server and its services are built;
// its Store, Queue, Ingest, Subscriptions and Registry fields are already
// set.
func newTestServer(t testing.TB, cfg func(*serverConfig)) *testServer {
	t.Helper()
	p := pipelinetest.New(t, pipelinetest.Config{DefaultPool: true})
	st, q, ids, subs, registry, jobs, svc := p.Store, p.Queue, p.IDs, p.Subs, p.Registry, p.Jobs, p.Ingest
	c := serverConfig{
		Config: api.Config{
			Store: st, Queue: q, Ingest: svc, Jobs: jobs,
			Pull:          pull.New(pull.Config{Store: st, Lifecycle: jobs}),
			Limits:        ingest.Limits{MaxEventBytes: 256 << 10, MaxRequestBytes: 4 << 20, MaxBatch: 100},
			Subscriptions: subs, IDs: ids, Version: "test",
			// As serve wires it: every route of the engine has its service.
			Replays: replay.NewService(replay.ServiceConfig{Store: st, Subscriptions: subGetter{st}, IDs: ids, Retention: 168 * time.Hour}),
		},
		DB: st, AllowPrivateTargets: true, Registry: registry,
	}
	if cfg != nil {
		cfg(&c)
	}
	// The same fields, one for one: a field added on either side fails
	// this conversion until the other follows.
	c.Services = api.Services(*p.Services(&pipelinetest.ServicesConfig{
		AllowPrivateTargets: c.AllowPrivateTargets, PoolChangedFunc: c.PoolChangedFunc,
		RegistryInvalidateFunc: c.Registry.Invalidate, NowFunc: c.NowFunc, Replays: c.Replays,
	}))
	srv := httptest.NewServer(api.New(c.Config).Handler())
	t.Cleanup(srv.Close)
	return &testServer{URL: srv.URL, Store: st, Queue: q, Registry: registry, Subs: subs, IDs: ids, Config: c.Config}
}

// do sends a request and returns the response (its body already read and
// closed, but readable again from resp.Body) and the body decoded as a JSON
// object (nil when the body is empty or not an object). body is sent raw
// when it is a string or []byte, as JSON otherwise, and nothing when nil.
// The content type is application/json unless headers, given as name,
// value pairs, set another.
func (s *testServer) do(t testing.TB, method, path string, body any, headers ...string) (*http.Response, map[string]any) {
	t.Helper()
	require.Zero(t, len(headers)%2, "headers must be name, value pairs")
	resp, out, err := s.send(t.Context(), method, path, body, headers...)
	require.NoError(t, err)
	return resp, out
}

// send is do without assertions, for goroutines other than the test's
// (require may stop only the test's own goroutine): it returns the error.
func (s *testServer) send(ctx context.Context, method, path string, body any, headers ...string) (*http.Response, map[string]any, error) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return nil, nil, fmt.Errorf("encode body: %w", err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, r)
	if err != nil {
		return nil, nil, fmt.Errorf("build request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("read answer: %w", err)
	}
	if err := resp.Body.Close(); err != nil {
		return nil, nil, fmt.Errorf("close answer: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	var out map[string]any
	if len(bytes.TrimSpace(raw)) > 0 && bytes.TrimSpace(raw)[0] == '{' {
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, nil, fmt.Errorf("decode answer %s: %w", raw, err)
		}
	}
	return resp, out, nil
}
