// Package api is the HTTP server of the gateway: routing, authentication,
// problem+json errors and the handlers of every endpoint of API.md.
package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/api/metrics"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/ingest/task"
	"github.com/hooklane/hooklane/router/pull"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/replay"
	"github.com/hooklane/hooklane/subscription/transform"
	"github.com/hooklane/hooklane/tenant"
)

// adminBodyLimit bounds the body of every request but ingest (which has its
// own limits): schemas are the largest admin documents.
const adminBodyLimit = 4 << 20

// Config configures the Server.
type Config struct {
	Store Store
	// Services are the domain services the handlers call, built by the
	// wiring (cmd/hooklane).
	Services Services
	Queue    Pinger
	Ingest   *ingest.Service
	// Jobs is the job lifecycle: every job move an operator asks for.
	Jobs Jobs
	// Pull serves pull workers (API.md §10).
	Pull *pull.Service
	// Replays starts and reads replays (API.md §13); without it the replay
	// routes answer 500, as the other routes without their service.
	Replays *replay.Service
	// Transform runs transformations for the test endpoint (API.md §16),
	// built once by the wiring; nil builds one with the defaults.
	Transform *transform.Engine
	Limits    ingest.Limits
	// Subscriptions is the matching cache to invalidate on subscription
	// writes and to read the index from.
	Subscriptions *subscription.Cache
	// Keys are the API keys; empty means authentication is off.
	Keys *KeySet
	// TrustedProxies are the proxies (HOOKLANE_TRUSTED_PROXIES) whose
	// X-Forwarded-For and X-Real-IP headers name the client in the access
	// log; a request from any other address is logged with its own. Empty
	// trusts none: a client can then not choose the address it is logged
	// under.
	TrustedProxies []netip.Prefix
	// Metrics is served at /metrics and fed with HTTP request counts. Nil
	// uses a fresh metrics.New (served, but fed by nothing else).
	Metrics *metrics.Metrics
	// MetricsOnOwnListener leaves /metrics off this server (404): the
	// metrics are served on a listener of their own
	// (HOOKLANE_METRICS_LISTEN). They are still fed.
	MetricsOnOwnListener bool
	Stream               StreamConfig // Stream configures the status stream (api/stream.go).
	IDs                  *idgen.Generator
	// UI is the operator dashboard (package ui), served at /ui/ when set;
	// /ui redirects there. It is a static file server: nil serves none.
	UI      http.Handler
	Version string
	Logger  *slog.Logger
	NowFunc func() time.Time
}

// Services are the domain services behind the handlers: a handler
// decodes, authorizes, calls one of them, and encodes. A nil service leaves
// its routes answering 500 (a Server built for other routes only, as some
// tests do).
type Services struct {
	// EventTypes is the event type catalog (API.md §2).
	EventTypes *schema.Catalog
	// Subscriptions is the subscription service (API.md §3).
	Subscriptions *subscription.Service
	// Pools is the dispatch pool service (API.md §4).
	Pools *pool.Service
	// Tasks creates TASK jobs (API.md §5).
	Tasks *task.Service
	// Clients is the client (tenant) service (API.md §11).
	Clients *tenant.Service
	// Owners tells which client owns an object: the client scope's
	// lookups (API.md §11).
	Owners *tenant.Owners
}

// Server serves the API.
type Server struct {
	cfg    Config
	engine *gin.Engine
	// catalog is the event type catalog (API.md §2).
	catalog *schema.Catalog
	// subscriptions is the subscription service (API.md §3).
	subscriptions *subscription.Service
	pools         *pool.Service
	tasks         *task.Service
	// clients is the client service (API.md §11).
	clients *tenant.Service
	owners  *tenant.Owners
}

// New returns a Server with every route registered.
func New(cfg Config) *Server {
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New(metrics.Config{NowFunc: cfg.NowFunc})
	}
	cfg.Logger = slog.New(WithRequestID(cfg.Logger.Handler())).With("component", "api")
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.ContextWithFallback = true
	// gin trusts every proxy unless told otherwise.
	proxies := make([]string, len(cfg.TrustedProxies))
	for i, p := range cfg.TrustedProxies {
		proxies[i] = p.String()
	}
	if len(proxies) == 0 {
		proxies = nil
	}
	if err := e.SetTrustedProxies(proxies); err != nil {
		panic(fmt.Sprintf("api: trusted proxies %v: %v", proxies, err)) // netip.Prefix strings always parse
	}
	if cfg.Transform == nil {
		cfg.Transform = transform.New(transform.Config{MaxResultBytes: cfg.Limits.MaxEventBytes})
	}
	svc := cfg.Services
	s := &Server{
		cfg: cfg, engine: e, catalog: svc.EventTypes, subscriptions: svc.Subscriptions, pools: svc.Pools,
		tasks: svc.Tasks, clients: svc.Clients, owners: svc.Owners,
	}

	// Order: the request id first (so every later log line carries it),
	// then the access log and metrics, then panic recovery, so a panic is
	// logged and counted as the 500 it becomes; then, without API keys, the
	// loopback-only guard (api/guard.go).
	e.Use(s.requestID, s.logRequests, s.recoverPanics, s.localOnly)
	// Every /api/* request needs a key (API.md conventions), also one that
	// matches no route: without a key the answer is 401, not a map of the
	// routes that exist.
	anyKey := s.auth(RoleProducer, RoleWorker, RoleViewer)
	e.NoRoute(func(c *gin.Context) {
		if strings.HasPrefix(c.Request.URL.Path, "/api/") {
			if anyKey(c); c.IsAborted() {
				return
			}
		}
		writeProblem(c, newProblem(http.StatusNotFound, "no such route: "+c.Request.URL.Path))
	})
	e.NoMethod(func(c *gin.Context) {
		if strings.HasPrefix(c.Request.URL.Path, "/api/") {
			if anyKey(c); c.IsAborted() {
				return
			}
		}
		writeProblem(c, newProblem(http.StatusMethodNotAllowed, c.Request.Method+" is not allowed on "+c.Request.URL.Path))
	})
	s.routes()
	return s
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.engine }
