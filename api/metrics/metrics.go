// Package metrics holds the gateway's Prometheus metrics: one registry per
// Metrics value (never the global default registry), fed by the hook fields
// of the components (ingest.Config.OnIngestFunc, router.Config.OnAttemptFunc,
// the pollers' On...Func fields) and by an instrumented queue.
//
// Label values come from closed sets (labels.go): event types only when
// registered (else "other"), pool codes, outcome words, status classes,
// route templates, the standard HTTP methods and status codes; never job
// ids, event ids, URLs or anything else a client chooses. The labels an
// administrator defines (event types, pool codes) are capped per process.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/subscription"
)

// Namespace prefixes every metric name.
const Namespace = "hooklane"

// OtherType is the event type label of events whose type is not registered.
const OtherType = "other"

// Tunables of the event type label cache.
const (
	// TypeCacheTTLDefault is how long a type's registered/unregistered answer
	// is reused: a type registered meanwhile gets its own label within it.
	TypeCacheTTLDefault = time.Minute
	// typeCacheMax bounds the cache; it is cleared when full, so a flood of
	// made-up types costs lookups, never memory.
	typeCacheMax = 4096
)

// CacheStatser is the subscription cache as metrics reads it.
type CacheStatser interface {
	Stats() subscription.CacheStats
}

// Gauge is a value another component moves up and down, such as the number
// of connected stream clients.
type Gauge interface {
	Inc()
	Dec()
	Set(v float64)
}

// Config configures Metrics.
type Config struct {
	// TypeKnownFunc reports whether an event type is registered. Nil labels
	// every event type "other".
	TypeKnownFunc func(ctx context.Context, code string) (bool, error)
	// TypeCacheTTL is how long TypeKnownFunc's answers are kept. Default
	// TypeCacheTTLDefault.
	TypeCacheTTL time.Duration
	// PoolCodeFunc names the pool of a job from its pool id ("" is the
	// default pool). Nil labels by "default" for "" and "custom" otherwise.
	PoolCodeFunc func(id string) string
	// Cache is the subscription cache whose hits and misses are exported.
	// Nil exports none.
	Cache CacheStatser
	// StreamClientsFunc, when set, is read at each scrape as the number of
	// connected stream clients (stream.Hub.Clients). Nil leaves the gauge to
	// be moved through StreamClients.
	StreamClientsFunc func() int
	// NowFunc is the clock for end-to-end latency. Default time.Now.
	NowFunc func() time.Time
}

// Metrics is the gateway's metric set and its registry. Every method is
// safe for concurrent use.
type Metrics struct {
	cfg Config
	reg *prometheus.Registry

	ingested         *prometheus.CounterVec
	jobsCreated      *prometheus.CounterVec
	deliveries       *prometheus.CounterVec
	deliveryDuration *prometheus.HistogramVec
	endToEnd         *prometheus.HistogramVec
	queueErrors      *prometheus.CounterVec
	pollerMoves      *prometheus.CounterVec
	streamClients    Gauge
	httpRequests     *prometheus.CounterVec
	httpDuration     *prometheus.HistogramVec

	typesMu sync.Mutex
	types   map[string]typeEntry

	// typeLabels and poolLabels cap the distinct event type and pool
	// labels (labels.go).
	typeLabels *labelSet
	poolLabels *labelSet
	// destinationLabels caps the destination labels (labels.go).
	destinationLabels *labelSet

	// clients are the per-client counters (clients.go).
	clients clientCounters
}

type typeEntry struct {
	known bool
	at    time.Time
}

// New returns Metrics registered on a fresh registry, with the Go runtime
// and process collectors.
func New(cfg Config) *Metrics {
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if cfg.TypeCacheTTL <= 0 {
		cfg.TypeCacheTTL = TypeCacheTTLDefault
	}
	// Deliveries are bounded by the 300 s maximum timeout; end to end
	// includes retry waits (hours).
	deliveryBuckets := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	endToEndBuckets := []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400}
	m := &Metrics{
		cfg: cfg, reg: prometheus.NewRegistry(), types: make(map[string]typeEntry),
		typeLabels: newLabelSet(TypeLabelMax), poolLabels: newLabelSet(PoolLabelMax), destinationLabels: newLabelSet(DestinationLabelMax),
	}
	m.ingested = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "events_ingested_total",
		Help: "Events that reached validation, by event type (\"other\" when unregistered) and outcome: accepted, duplicate, rejected, failed.",
	}, []string{"type", "outcome"})
	m.jobsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "dispatch_jobs_created_total",
		Help: "Dispatch jobs created, by kind: EVENT (fan-out of an ingested event) or TASK (POST /api/dispatch-jobs).",
	}, []string{"kind"})
	m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "deliveries_total",
		Help: "Delivery attempts, by pool code, outcome (completed, retry, error, cancelled), receiver status class (2xx..5xx, or none for network errors, timeouts and broker attempts) and destination (webhook or the destination type).",
	}, []string{"pool", "outcome", "status_class", "destination"})
	m.deliveryDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "delivery_duration_seconds",
		Help: "Duration of one delivery attempt (request sent to answer read, or publish to acknowledgement), by pool code and destination (webhook or the destination type).", Buckets: deliveryBuckets,
	}, []string{"pool", "destination"})
	m.endToEnd = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "delivery_end_to_end_seconds",
		Help: "Time from the job's creation (the event's receipt) to the successful answer of its webhook, retries included, by pool code.", Buckets: endToEndBuckets,
	}, []string{"pool"})
	m.queueErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "queue_errors_total",
		Help: "Queue operations that failed, by operation: send (messages not sent), receive, delete.",
	}, []string{"operation"})
	m.pollerMoves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "poller_moved_jobs_total",
		Help: "Jobs moved by the safety-net pollers, by poller: pending (PENDING to QUEUED, push jobs), stale_queued, expired_lease, fanout (jobs of recovered fan-outs).",
	}, []string{"poller"})
	clientsOpts := prometheus.GaugeOpts{
		Namespace: Namespace, Name: "stream_clients",
		Help: "Status stream (SSE) clients connected to this process.",
	}
	var clients prometheus.Collector
	if cfg.StreamClientsFunc != nil {
		clients = prometheus.NewGaugeFunc(clientsOpts, func() float64 { return float64(cfg.StreamClientsFunc()) })
		m.streamClients = noGauge{}
	} else {
		g := prometheus.NewGauge(clientsOpts)
		clients, m.streamClients = g, g
	}
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "http_requests_total",
		Help: "HTTP requests served, by method, route template and status code.",
	}, []string{"method", "route", "code"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "http_request_duration_seconds",
		Help: "Duration of HTTP requests, by method and route template.", Buckets: prometheus.DefBuckets,
	}, []string{"method", "route"})
	// Every queue operation's error series exists from the start, at 0, so
	// that rate() and alerts on it see 0 rather than no data.
	for _, op := range []string{"send", "receive", "delete"} {
		m.queueErrors.WithLabelValues(op)
	}
	m.reg.MustRegister(m.ingested, m.jobsCreated, m.deliveries, m.deliveryDuration, m.endToEnd,
		m.queueErrors, m.pollerMoves, clients, m.httpRequests, m.httpDuration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cfg.Cache != nil {
		m.registerCache(cfg.Cache)
	}
	return m
}

func (m *Metrics) registerCache(c CacheStatser) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: Namespace, Name: "subscription_cache_hits_total",
			Help: "Lookups of an event type's candidate subscriptions answered from the cache.",
		}, func() float64 { return float64(c.Stats().Hits) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: Namespace, Name: "subscription_cache_misses_total",
			Help: "Lookups of an event type's candidate subscriptions that had to be computed.",
		}, func() float64 { return float64(c.Stats().Misses) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "subscription_cache_hit_ratio",
			Help: "Hits over lookups of the subscription cache since start (0 before the first lookup).",
		}, func() float64 {
			st := c.Stats()
			if st.Hits+st.Misses == 0 {
				return 0
			}
			return float64(st.Hits) / float64(st.Hits+st.Misses)
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "subscription_cache_subscriptions",
			Help: "Subscriptions in the current matching index.",
		}, func() float64 { return float64(c.Stats().Subscriptions) }),
	)
}

// Registry returns the registry, for tests and extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// StreamClients is the gauge a status stream hub moves as clients connect
// (Inc) and leave (Dec). With Config.StreamClientsFunc set, the gauge is
// read from that function and moves here are ignored.
func (m *Metrics) StreamClients() Gauge { return m.streamClients } //nolint:ireturn // a Prometheus gauge, or noGauge when the hub's count is read instead

// noGauge ignores moves: the gauge is read from StreamClientsFunc.
type noGauge struct{}

func (noGauge) Inc()          {}
func (noGauge) Dec()          {}
func (noGauge) Set(_ float64) {}

// ObserveIngest counts one event of an ingest request with its outcome and
// the jobs it created. It fits ingest.Config.OnIngestFunc.
func (m *Metrics) ObserveIngest(ctx context.Context, eventType, outcome string, jobs int) {
	m.ingested.WithLabelValues(m.typeLabel(ctx, eventType), outcome).Inc()
	if jobs > 0 {
		m.jobsCreated.WithLabelValues(string(dispatch.KindEvent)).Add(float64(jobs))
	}
}

// ObserveTaskJobCreated counts one TASK job created through the API.
func (m *Metrics) ObserveTaskJobCreated() {
	m.jobsCreated.WithLabelValues(string(dispatch.KindTask)).Inc()
}

// ObserveAttempt records one recorded delivery attempt of job j, whose
// status is already the one the attempt led to. It fits
// router.Config.OnAttemptFunc.
func (m *Metrics) ObserveAttempt(j *dispatch.Job, o dispatch.Outcome) {
	pool, dest := m.poolLabel(j.DispatchPoolID), m.destinationLabel(j.TargetURL)
	m.deliveries.WithLabelValues(pool, attemptOutcome(j.Status), StatusClass(o.Attempt.StatusCode), dest).Inc()
	m.deliveryDuration.WithLabelValues(pool, dest).Observe((time.Duration(o.Attempt.DurationMs) * time.Millisecond).Seconds())
	if j.Status == dispatch.StatusCompleted && !j.CreatedAt.IsZero() {
		m.endToEnd.WithLabelValues(pool).Observe(max(m.cfg.NowFunc().Sub(j.CreatedAt), 0).Seconds())
	}
}

// ObservePollerMoves counts n jobs moved by the named poller. Its shape
// fits the pollers' On...Func hooks once the poller name is bound.
func (m *Metrics) ObservePollerMoves(poller string, n int) {
	if n > 0 {
		m.pollerMoves.WithLabelValues(poller).Add(float64(n))
	}
}

// ObserveQueueError counts n failed queue operations of one kind (send,
// receive, delete).
func (m *Metrics) ObserveQueueError(operation string, n int) {
	if n > 0 {
		m.queueErrors.WithLabelValues(operation).Add(float64(n))
	}
}

// ObserveHTTP counts one served HTTP request. route is the route template
// ("/api/events/:id"), or "unmatched" for a request no route matched: the
// caller must pass one of a closed set. The method and the code are
// bounded here (MethodLabel, CodeLabel), whatever the client sent.
func (m *Metrics) ObserveHTTP(method, route string, code int, d time.Duration) {
	method = MethodLabel(method)
	m.httpRequests.WithLabelValues(method, route, CodeLabel(code)).Inc()
	m.httpDuration.WithLabelValues(method, route).Observe(d.Seconds())
}

// StatusClass is the status class label of a receiver's answer: "2xx" to
// "5xx", "1xx" for the odd informational code, "none" when there was no
// answer (network error, timeout, refused target).
func StatusClass(code int) string {
	if code < 100 || code > 599 {
		return "none"
	}
	return strconv.Itoa(code/100) + "xx"
}

func attemptOutcome(s dispatch.Status) string {
	switch s {
	case dispatch.StatusCompleted:
		return "completed"
	case dispatch.StatusPending, dispatch.StatusQueued:
		return "retry"
	case dispatch.StatusCancelled:
		return "cancelled"
	case dispatch.StatusError:
		return "error"
	default:
		return "other"
	}
}

func (m *Metrics) poolLabel(id string) string {
	if m.cfg.PoolCodeFunc != nil {
		return m.poolLabels.label(m.cfg.PoolCodeFunc(id))
	}
	if id == "" {
		return pool.DefaultPoolCode
	}
	return "custom"
}

// typeLabel returns code when it is a registered event type, else
// OtherType. Answers are cached for TypeCacheTTL; a failed lookup labels
// "other" and is not cached.
func (m *Metrics) typeLabel(ctx context.Context, code string) string {
	if m.cfg.TypeKnownFunc == nil || code == "" {
		return OtherType
	}
	now := m.cfg.NowFunc()
	m.typesMu.Lock()
	e, ok := m.types[code]
	m.typesMu.Unlock()
	if !ok || now.Sub(e.at) >= m.cfg.TypeCacheTTL {
		known, err := m.cfg.TypeKnownFunc(ctx, code)
		if err != nil {
			return OtherType
		}
		e = typeEntry{known: known, at: now}
		m.typesMu.Lock()
		if len(m.types) >= typeCacheMax {
			clear(m.types)
		}
		m.types[code] = e
		m.typesMu.Unlock()
	}
	if e.known {
		return m.typeLabels.label(code)
	}
	return OtherType
}
