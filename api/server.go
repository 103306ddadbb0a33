// Package api is the HTTP server of the gateway: routing, authentication,
// problem+json errors and the handlers of every endpoint of API.md.
package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/api/metrics"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/ingest/task"
	"github.com/hooklane/hooklane/router/pull"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/replay"
	"github.com/hooklane/hooklane/subscription/transform"
	"github.com/hooklane/hooklane/tenant"
)

// adminBodyLimit bounds the body of every request but ingest (which has its
// own limits): schemas are the largest admin documents.
const adminBodyLimit = 4 << 20

// Store is what the handlers read from the store themselves: the stored
// events, jobs and status history they show, and the subscription a job
// belongs to. Every write goes through a service (Services, Jobs).
type Store interface {
	EventGetByID(ctx context.Context, id string) (*event.Event, error)
	EventList(ctx context.Context, p *event.ListParams) (*event.Page, error)
	JobGetByID(ctx context.Context, id string) (*dispatch.Job, error)
	JobListByEvent(ctx context.Context, eventID string) ([]*dispatch.Job, error)
	JobList(ctx context.Context, p *dispatch.JobListParams) (*dispatch.JobPage, error)
	SubscriptionGetByID(ctx context.Context, id string) (*subscription.Subscription, error)
	stream.Reader
	StatusEventListBySubject(ctx context.Context, subject string) ([]stream.Event, error)
	Ping(ctx context.Context) error
}

// Jobs is what the API needs of the job lifecycle (*dispatch.Lifecycle):
// the moves operators ask for and the creation of TASK jobs.
type Jobs interface {
	Create(ctx context.Context, jobs []*dispatch.Job) error
	Retry(ctx context.Context, id string) (*dispatch.Job, error)
	RetryMany(ctx context.Context, p *dispatch.JobListParams) (int, error)
	Cancel(ctx context.Context, id, reason string) (*dispatch.Job, error)
	CancelSubscription(ctx context.Context, subscriptionID, reason string) (int, error)
	ReleaseSubscription(ctx context.Context, subscriptionID string) (int, error)
	ResetCircuit(ctx context.Context, subscriptionID, code string) error
}

// Pinger reports whether a dependency is reachable.
type Pinger interface {
	Ping(ctx context.Context) error
}

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

// Route is one registered route: its method and its path template
// ("/api/events/:id").
type Route struct {
	Method, Path string
}

// Routes returns every registered route, for documentation checks.
func (s *Server) Routes() []Route {
	rs := s.engine.Routes()
	out := make([]Route, len(rs))
	for i, r := range rs {
		out[i] = Route{Method: r.Method, Path: r.Path}
	}
	return out
}

func (s *Server) routes() {
	e := s.engine
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	if !s.cfg.MetricsOnOwnListener {
		e.GET("/metrics", gin.WrapH(s.cfg.Metrics.Handler()))
	}
	if s.cfg.UI != nil {
		// The dashboard is a static site over the public API, not an API
		// operation, so openapi.json does not list it (routesOf builds the
		// server without it).
		e.GET("/ui", func(c *gin.Context) { c.Redirect(http.StatusMovedPermanently, "/ui/") })
		ui := gin.WrapH(http.StripPrefix("/ui", s.cfg.UI))
		e.GET("/ui/*path", ui)
		e.HEAD("/ui/*path", ui)
	}

	a := e.Group("/api")
	a.GET("/openapi.json", s.auth(RoleProducer, RoleWorker, RoleViewer), s.openAPI)
	a.POST("/events", s.auth(RoleProducer), s.h(s.postEvents))
	a.GET("/events", s.auth(RoleProducer, RoleViewer), s.h(s.listEvents))
	a.GET("/events/:id", s.auth(RoleProducer, RoleViewer), s.h(s.getEvent))

	a.POST("/event-types", s.auth(), s.h(s.createEventType))
	a.GET("/event-types", s.auth(RoleViewer), s.h(s.listEventTypes))
	a.GET("/event-types/:code", s.auth(RoleViewer), s.h(s.getEventType))
	a.PATCH("/event-types/:code", s.auth(), s.h(s.patchEventType))
	a.DELETE("/event-types/:code", s.auth(), s.h(s.deleteEventType))
	a.POST("/event-types/:code/versions", s.auth(), s.h(s.createVersion))
	a.GET("/event-types/:code/versions/:version", s.auth(RoleViewer), s.h(s.getVersion))
	a.PATCH("/event-types/:code/versions/:version", s.auth(), s.h(s.patchVersion))
	a.DELETE("/event-types/:code/versions/:version", s.auth(), s.h(s.deleteVersion))

	a.POST("/subscriptions", s.auth(), s.h(s.createSubscription))
	a.GET("/subscriptions", s.auth(RoleViewer), s.h(s.listSubscriptions))
	a.GET("/subscriptions/:id", s.auth(RoleViewer), s.h(s.getSubscription))
	a.PATCH("/subscriptions/:id", s.auth(), s.h(s.patchSubscription))
	a.DELETE("/subscriptions/:id", s.auth(), s.h(s.deleteSubscription))
	a.POST("/subscriptions/:id/pause", s.auth(), s.h(s.pauseSubscription))
	a.POST("/subscriptions/:id/resume", s.auth(), s.h(s.resumeSubscription))
	a.POST("/subscriptions/:id/rotate-secret", s.auth(), s.h(s.rotateSecret))
	a.GET("/subscriptions/:id/secret", s.auth(RoleViewer), s.h(s.getSecret))
	a.GET("/subscriptions/:id/health", s.auth(RoleViewer), s.h(s.getSubscriptionHealth))
	a.POST("/subscriptions/:id/replay", s.auth(), s.h(s.startReplay))
	a.GET("/subscriptions/:id/replays", s.auth(RoleViewer), s.h(s.listReplays))
	a.POST("/subscriptions/:id/transformation/test", s.auth(), s.h(s.testTransformation))
	a.GET("/replays/:id", s.auth(RoleViewer), s.h(s.getReplay))

	a.POST("/dispatch-pools", s.auth(), s.h(s.createPool))
	a.GET("/dispatch-pools", s.auth(RoleViewer), s.h(s.listPools))
	a.GET("/dispatch-pools/:id", s.auth(RoleViewer), s.h(s.getPool))
	a.PATCH("/dispatch-pools/:id", s.auth(), s.h(s.patchPool))
	a.DELETE("/dispatch-pools/:id", s.auth(), s.h(s.deletePool))

	a.POST("/dispatch-jobs", s.auth(RoleProducer), s.h(s.createTaskJob))
	a.GET("/dispatch-jobs", s.auth(RoleProducer, RoleViewer, RoleWorker), s.h(s.listJobs))
	a.POST("/dispatch-jobs/retry", s.auth(), s.h(s.bulkRetry))
	a.GET("/dispatch-jobs/:id", s.auth(RoleProducer, RoleViewer, RoleWorker), s.h(s.getJob))
	a.POST("/dispatch-jobs/:id/retry", s.auth(), s.h(s.retryJob))
	a.POST("/dispatch-jobs/:id/cancel", s.auth(), s.h(s.cancelJob))

	a.GET("/subscriptions/:id/jobs/next", s.auth(RoleWorker), s.h(s.claimJobs))
	a.POST("/dispatch-jobs/:id/complete", s.auth(RoleWorker), s.h(s.completeJob))
	a.POST("/dispatch-jobs/:id/fail", s.auth(RoleWorker), s.h(s.failJob))
	a.POST("/dispatch-jobs/:id/heartbeat", s.auth(RoleWorker), s.h(s.heartbeatJob))
	a.GET("/workers", s.auth(RoleWorker, RoleViewer), s.h(s.listWorkers))

	a.GET("/auth/whoami", s.auth(RoleProducer, RoleWorker, RoleViewer), s.h(s.whoami))
	a.POST("/event-types/:code/versions/:version/validate", s.auth(RoleProducer, RoleViewer), s.h(s.validateData))

	a.GET("/stream", s.auth(RoleViewer), s.h(s.streamSSE))
	a.GET("/stream/ws", s.auth(RoleViewer), s.h(s.streamWS))
	s.clientRoutes(a)
}

// h adapts a handler that returns an error: the error becomes the answer,
// rendered as problem+json in this one place.
func (s *Server) h(fn func(c *gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		err := fn(c)
		if err == nil {
			return
		}
		p, internal := toProblem(err)
		if internal {
			s.cfg.Logger.ErrorContext(c.Request.Context(), "request failed", "method", c.Request.Method, "path", c.FullPath(), "error", err)
		} else if p.Status == http.StatusServiceUnavailable {
			s.cfg.Logger.WarnContext(c.Request.Context(), "store unavailable", "path", c.FullPath(), "error", err)
		}
		writeProblem(c, p)
	}
}

func (s *Server) recoverPanics(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			s.cfg.Logger.ErrorContext(c.Request.Context(), "handler panicked", "path", c.Request.URL.Path, "panic", r)
			if !c.Writer.Written() {
				writeProblem(c, newProblem(http.StatusInternalServerError, "internal error"))
			}
			c.Abort()
		}
	}()
	c.Next()
}

// logRequests writes the access log line of every request (with the name
// of the API key that authenticated it, never the key) and counts it in
// the HTTP metrics by route template. Probes and scrapes log at debug.
func (s *Server) logRequests(c *gin.Context) {
	start := s.cfg.NowFunc()
	c.Next()
	d := s.cfg.NowFunc().Sub(start)
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	status := c.Writer.Status()
	s.cfg.Metrics.ObserveHTTP(c.Request.Method, route, status, d)
	if route == "/api/dispatch-jobs" && c.Request.Method == http.MethodPost && status == http.StatusCreated {
		s.cfg.Metrics.ObserveTaskJobCreated()
	}
	level := slog.LevelInfo
	if !strings.HasPrefix(route, "/api/") {
		level = slog.LevelDebug
	}
	attrs := []slog.Attr{
		slog.String("method", c.Request.Method), slog.String("path", c.Request.URL.Path), slog.String("route", route),
		slog.Int("status", status), slog.Int64("duration_ms", d.Milliseconds()), slog.String("remote_addr", c.ClientIP()),
	}
	if name := c.GetString(ctxKeyName); name != "" {
		attrs = append(attrs, slog.String("api_key", name))
	}
	s.cfg.Logger.LogAttrs(c.Request.Context(), level, "request", attrs...)
}

func (s *Server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok", "version": s.cfg.Version})
}

func (s *Server) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 3*time.Second)
	defer cancel()
	checks := gin.H{}
	ready := true
	for name, p := range map[string]Pinger{"store": s.cfg.Store, "queue": s.cfg.Queue} {
		if p == nil {
			continue
		}
		if err := p.Ping(ctx); err != nil {
			checks[name] = "unavailable: " + err.Error()
			ready = false
			continue
		}
		checks[name] = "ok"
	}
	if !ready {
		c.Header("Retry-After", "5")
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "unavailable", "checks": checks})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready", "checks": checks})
}
