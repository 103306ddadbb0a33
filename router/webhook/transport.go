package webhook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dgraph-io/ristretto/v2"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/transformrun"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/transform"
)

// Config configures a Transport.
type Config struct {
	// AllowPrivateTargets lets deliveries reach loopback and private
	// addresses. Default false: development and tests only.
	AllowPrivateTargets bool
	// UserAgent is sent on every delivery.
	UserAgent string
	// MaxIdleConnsPerHost bounds kept-alive connections per target. Default 64.
	MaxIdleConnsPerHost int
	// TLSClients bounds the HTTP transports kept for distinct TLS
	// configurations (mutual TLS, private CAs; API.md §14); past it the
	// least recently used is closed. Default TLSClientsDefault (256).
	TLSClients int
	// TLSClientIdle is how long the transport of a TLS configuration is
	// kept unused before it is closed. Default TLSClientIdleDefault (10m).
	TLSClientIdle time.Duration
	// OAuth2Tokens bounds the cached OAuth 2.0 access tokens. Default
	// OAuth2TokensDefault (4096).
	OAuth2Tokens int
	// NowFunc is the clock of signatures, attempt timings and token
	// lifetimes; nil is time.Now.
	NowFunc func() time.Time
	// Transform runs subscriptions' transformations (API.md §16); nil
	// turns them off: deliveries are sent as §6 renders them.
	Transform *transform.Engine
	// OnTransformFunc, when set, is told of every transformation run of a
	// delivery (its outcome and duration): the metrics' hook. It must not
	// block.
	OnTransformFunc func(TransformRun)
}

// Transport delivers jobs as signed HTTP webhooks (API.md §6): it renders
// the request (the structured CloudEvent, or the data alone with ce-*
// headers), signs it with Standard Webhooks headers, authenticates it as
// the subscription's (or TASK job's) auth and tls say (API.md §14: bearer,
// basic, OAuth 2.0 client credentials with cached tokens, mutual TLS),
// sends it over an SSRF-safe dialer without following redirects, and
// classifies the answer into a transport-neutral dispatch.Outcome. It
// implements router.Transport.
type Transport struct {
	cfg Config
	// clients holds the shared HTTP client and one per TLS configuration.
	clients *clients
	// tokens caches OAuth 2.0 access tokens.
	tokens *tokens
	// bodies caches the structured body of recent events by event id: an
	// event is rendered once for all its subscriptions' jobs and their
	// retries (events are immutable once stored).
	bodies *ristretto.Cache[string, []byte]
	// transforms runs the subscriptions' transformations.
	transforms *transformrun.Runner
}

// Sizing of the rendered-body cache, in bytes of body.
const (
	bodyCacheMaxBytes = 32 << 20
	bodyCacheCounters = 100_000
	bodyCacheBuffer   = 64
)

// New returns a Transport with its own HTTP clients: no redirects
// followed, no proxy, SSRF-safe dialing (targets and OAuth 2.0 token
// endpoints alike) unless AllowPrivateTargets.
func New(cfg Config) *Transport {
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if cfg.MaxIdleConnsPerHost <= 0 {
		cfg.MaxIdleConnsPerHost = 64
	}
	cfg.TLSClients = cmp.Or(max(cfg.TLSClients, 0), TLSClientsDefault)
	cfg.TLSClientIdle = cmp.Or(max(cfg.TLSClientIdle, 0), TLSClientIdleDefault)
	cfg.OAuth2Tokens = cmp.Or(max(cfg.OAuth2Tokens, 0), OAuth2TokensDefault)
	dial := NewDialContext(cfg.AllowPrivateTargets, 10*time.Second)
	base := newHTTPClient(dial, nil, 1024, cfg.MaxIdleConnsPerHost)
	newTLSClient := func(tlsCfg *tls.Config) *http.Client {
		return newHTTPClient(dial, tlsCfg, tlsMaxIdleConns, cfg.MaxIdleConnsPerHost)
	}
	bodies, err := ristretto.NewCache(&ristretto.Config[string, []byte]{
		NumCounters: bodyCacheCounters, MaxCost: bodyCacheMaxBytes, BufferItems: bodyCacheBuffer,
		IgnoreInternalCost: true,
	})
	if err != nil {
		// Only an invalid constant configuration makes ristretto fail.
		panic(fmt.Sprintf("webhook: create body cache: %v", err))
	}
	return &Transport{
		cfg: cfg, bodies: bodies,
		transforms: transformrun.New(transformrun.Config{
			Engine: cfg.Transform, NowFunc: cfg.NowFunc, OnRunFunc: cfg.OnTransformFunc,
		}),
		clients: newClients(base, newTLSClient, cfg.TLSClients, cfg.TLSClientIdle, cfg.NowFunc),
		tokens:  newTokens(cfg.OAuth2Tokens, cfg.NowFunc),
	}
}

// Close cancels token requests under way and releases idle connections,
// the cached tokens and the body cache.
func (t *Transport) Close() {
	t.tokens.close()
	t.clients.close()
	t.bodies.Close()
}

// Deliver sends one attempt and returns its outcome. Every failure is in
// the outcome: a job that cannot be signed or rendered, or whose TLS
// configuration does not parse, is a permanent failure with nothing sent;
// a token endpoint that fails is a retryable failed attempt, and so is a
// 401 from a target authenticated by OAuth 2.0, whose token is then
// dropped so that the retry gets a new one (API.md §14). A subscription's
// transformation (API.md §16) that cancels the delivery sends nothing and
// cancels the job; one that fails is a failed attempt, not retried and not
// counted toward the circuit (a Permanent error, as a 4xx).
func (t *Transport) Deliver(ctx context.Context, d *router.Delivery) dispatch.Outcome {
	ran := t.cfg.NowFunc()
	req, err := t.Request(ctx, d)
	if err != nil {
		if out, ok := transformrun.FailedOutcome(err, ran, t.cfg.NowFunc()); ok {
			return out
		}
		return dispatch.Outcome{Err: dispatch.Permanent(err)}
	}
	ep := endpointOf(d)
	client, err := t.clients.get(ep.tls)
	if err != nil {
		return dispatch.Outcome{Err: dispatch.Permanent(err)}
	}
	timeout := time.Duration(max(d.Job.TimeoutSeconds, 1)) * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req = req.WithContext(ctx)
	start := t.cfg.NowFunc()
	token, err := t.authorize(ctx, req, ep)
	if err != nil {
		if errors.Is(err, ErrPrivateTarget) {
			err = dispatch.Permanent(err)
		}
		return attempt(start, t.cfg.NowFunc(), 0, "", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		err = fmt.Errorf("send: %w", err)
		if errors.Is(err, ErrPrivateTarget) {
			err = dispatch.Permanent(err)
		}
		return attempt(start, t.cfg.NowFunc(), 0, "", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, dispatch.ResponseBodyLimit))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // drain a little to reuse the connection
	now := t.cfg.NowFunc()
	outcome := classify(resp.StatusCode, resp.Header, now)
	if resp.StatusCode == http.StatusUnauthorized && token != "" {
		// The target refused the cached token (revoked, rotated keys):
		// forget it, and retry with a new one.
		t.tokens.drop(ep.tokenKey, token)
		outcome = &StatusError{Code: resp.StatusCode}
	}
	return attempt(start, now, resp.StatusCode, string(body), outcome)
}

// attempt is the outcome of a request sent at start and ended at end.
func attempt(start, end time.Time, code int, body string, err error) dispatch.Outcome {
	return dispatch.Outcome{
		Attempted: true,
		Err:       err,
		Attempt: dispatch.Attempt{
			StartedAt: start, DurationMs: end.Sub(start).Milliseconds(), StatusCode: code, ResponseBody: body,
		},
	}
}

// keys returns the HMAC keys a delivery is signed with, newest first: the
// subscription's unexpired secrets, or a TASK job's own.
func (t *Transport) keys(d *router.Delivery) ([][]byte, error) {
	if d.Subscription == nil {
		key, err := subscription.SecretKey(d.Job.Secret)
		if err != nil {
			return nil, fmt.Errorf("task job secret: %w", err)
		}
		return [][]byte{key}, nil
	}
	now := t.cfg.NowFunc()
	var keys [][]byte
	for _, s := range d.Subscription.Secrets {
		if s.ExpiresAt != nil && !s.ExpiresAt.After(now) {
			continue
		}
		if key, err := subscription.SecretKey(s.Value); err == nil {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("subscription has no valid signing secret")
	}
	return keys, nil
}

// Request renders the signed HTTP request of a delivery (API.md §6), as
// the subscription's transformation, when on, reshapes it (API.md §16): a
// cancelled delivery is an error matching transformrun.ErrCancelled, a
// failed transformation a *TransformError.
func (t *Transport) Request(ctx context.Context, d *router.Delivery) (*http.Request, error) {
	j := d.Job
	keys, err := t.keys(d)
	if err != nil {
		return nil, err
	}
	body, header, err := t.renderBody(d)
	if err != nil {
		return nil, err
	}
	method, target, custom := http.MethodPost, j.TargetURL, j.Headers
	tr, ok, err := t.transforms.Apply(ctx, d, transformrun.Request{
		URL: j.TargetURL, Body: body, Credentialed: d.Subscription != nil && (d.Subscription.Auth != nil || d.Subscription.TLS != nil),
	})
	if err != nil {
		return nil, err
	}
	if ok {
		method, target, custom = tr.Method, tr.URL, tr.Headers
		if tr.Changed {
			body = tr.Body
		}
		if tr.ContentType != "" {
			header.Set("Content-Type", tr.ContentType)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(custom)) {
		req.Header.Set(k, custom[k])
	}
	maps.Copy(req.Header, header)
	ts := t.cfg.NowFunc()
	req.Header.Set("webhook-id", j.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set("webhook-signature", Sign(keys, j.ID, ts, body))
	req.Header.Set("hooklane-attempt", strconv.Itoa(d.Attempt))
	if j.Subscription != "" {
		req.Header.Set("hooklane-subscription", j.Subscription)
	}
	req.Header.Set("User-Agent", t.cfg.UserAgent)
	if d.Event != nil {
		for _, name := range []string{cloudevent.ExtTraceParent, cloudevent.ExtTraceState} {
			if v := d.Event.Event.Ext(name); v != "" {
				req.Header.Set(name, v)
			}
		}
	}
	setTraceParent(ctx, req.Header)
	return req, nil
}

// contentTypeStructured is the content type of a structured-mode
// CloudEvent body.
const contentTypeStructured = "application/cloudevents+json"

// renderBody returns the body and content headers of a delivery.
func (t *Transport) renderBody(d *router.Delivery) ([]byte, http.Header, error) {
	h := http.Header{}
	if d.Event == nil {
		h.Set("Content-Type", "application/json")
		body := d.Job.Payload
		if body == nil {
			body = []byte("null")
		}
		return body, h, nil
	}
	ev := &d.Event.Event
	if !d.Job.DataOnly {
		h.Set("Content-Type", contentTypeStructured)
		if body, ok := t.bodies.Get(d.Event.ID); ok {
			return body, h, nil
		}
		body, err := ev.MarshalJSON()
		if err != nil {
			return nil, nil, fmt.Errorf("encode event: %w", err)
		}
		t.bodies.Set(d.Event.ID, body, int64(len(body)))
		return body, h, nil
	}
	// Binary mode: the data alone, the attributes as ce-* headers.
	var body []byte
	switch {
	case ev.DataBase64 != nil:
		body = ev.DataBase64
	case ev.Data != nil:
		body = ev.Data
		if ev.DataContentType != "" && !isJSONType(ev.DataContentType) {
			// Text data is stored as a JSON string; send the text itself.
			var s string
			if err := jsonUnmarshalString(ev.Data, &s); err == nil {
				body = []byte(s)
			}
		}
	}
	h.Set("Content-Type", ev.DataContentType)
	if ev.DataContentType == "" {
		h.Set("Content-Type", "application/json")
	}
	set := func(name, v string) {
		if v != "" {
			h.Set("ce-"+name, cloudevent.HeaderValue(v))
		}
	}
	set("specversion", ev.SpecVersion)
	set("id", ev.ID)
	set("source", ev.Source)
	set("type", ev.Type)
	set("subject", ev.Subject)
	set("dataschema", ev.DataSchema)
	if !ev.Time.IsZero() {
		set("time", cloudevent.FormatTime(ev.Time))
	}
	for _, k := range slices.Sorted(maps.Keys(ev.Extensions)) {
		set(k, ev.Ext(k))
	}
	return body, h, nil
}

func isJSONType(ct string) bool {
	return ct == "application/json" || strings.HasSuffix(ct, "+json") || strings.HasPrefix(ct, "application/json;")
}

func jsonUnmarshalString(raw []byte, s *string) error {
	if err := json.Unmarshal(raw, s); err != nil {
		return fmt.Errorf("decode text data: %w", err)
	}
	return nil
}
