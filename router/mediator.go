package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hooklane/hooklane/cloudevent"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/eventlog"
	"github.com/hooklane/hooklane/ingest"
)

// MediatorConfig configures a Mediator.
type MediatorConfig struct {
	// AllowPrivateTargets lets deliveries reach loopback and private
	// addresses. Default false: development and tests only.
	AllowPrivateTargets bool
	// UserAgent is sent on every delivery.
	UserAgent string
	// MaxIdleConnsPerHost bounds kept-alive connections per target. Default 64.
	MaxIdleConnsPerHost int
	NowFunc             func() time.Time
}

// Mediator performs the HTTP side of one delivery: it renders the request,
// signs it, sends it and classifies the answer.
type Mediator struct {
	cfg    MediatorConfig
	client *http.Client
}

// NewMediator returns a Mediator with its own HTTP client: no redirects
// followed, SSRF-safe dialing unless AllowPrivateTargets.
func NewMediator(cfg MediatorConfig) *Mediator {
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if cfg.MaxIdleConnsPerHost <= 0 {
		cfg.MaxIdleConnsPerHost = 64
	}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would bypass the SSRF guard on the resolved address
		DialContext:           NewDialContext(cfg.AllowPrivateTargets, 10*time.Second),
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   cfg.MaxIdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &Mediator{cfg: cfg, client: &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

// Close releases idle connections.
func (m *Mediator) Close() { m.client.CloseIdleConnections() }

// Delivery is one attempt to deliver a job.
type Delivery struct {
	Job *dispatch.Job
	// Event is the job's event; nil for a TASK job.
	Event *eventlog.Event
	// Keys are the HMAC keys to sign with, newest first.
	Keys [][]byte
	// Attempt is the attempt number (1-based).
	Attempt int
}

// Result is what happened on one attempt.
type Result struct {
	StatusCode   int
	Duration     time.Duration
	ResponseBody string
	// Err is nil on success; see Permanent and RetryAfter.
	Err error
}

// Deliver sends one attempt and returns its result. It never returns an
// error of its own: every failure is in Result.Err.
func (m *Mediator) Deliver(ctx context.Context, d *Delivery) Result {
	req, err := m.Request(ctx, d)
	if err != nil {
		return Result{Err: Permanent(err)}
	}
	timeout := time.Duration(max(d.Job.TimeoutSeconds, 1)) * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req = req.WithContext(ctx)
	start := m.cfg.NowFunc()
	resp, err := m.client.Do(req)
	if err != nil {
		res := Result{Duration: m.cfg.NowFunc().Sub(start), Err: fmt.Errorf("send: %w", err)}
		if errors.Is(err, ErrPrivateTarget) {
			res.Err = Permanent(res.Err)
		}
		return res
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, dispatch.ResponseBodyLimit))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // drain a little to reuse the connection
	now := m.cfg.NowFunc()
	return Result{
		StatusCode:   resp.StatusCode,
		Duration:     now.Sub(start),
		ResponseBody: string(body),
		Err:          classify(resp.StatusCode, resp.Header, now),
	}
}

// Request renders the signed HTTP request of a delivery (API.md §6).
func (m *Mediator) Request(ctx context.Context, d *Delivery) (*http.Request, error) {
	j := d.Job
	body, header, err := renderBody(d)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.TargetURL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(j.Headers)) {
		req.Header.Set(k, j.Headers[k])
	}
	maps.Copy(req.Header, header)
	ts := m.cfg.NowFunc()
	req.Header.Set("webhook-id", j.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set("webhook-signature", Sign(d.Keys, j.ID, ts, body))
	req.Header.Set("hooklane-attempt", strconv.Itoa(d.Attempt))
	if j.Subscription != "" {
		req.Header.Set("hooklane-subscription", j.Subscription)
	}
	req.Header.Set("User-Agent", m.cfg.UserAgent)
	if d.Event != nil {
		for _, name := range []string{cloudevent.ExtTraceParent, cloudevent.ExtTraceState} {
			if v := d.Event.Event.Ext(name); v != "" {
				req.Header.Set(name, v)
			}
		}
	}
	return req, nil
}

// renderBody returns the body and content headers of a delivery.
func renderBody(d *Delivery) ([]byte, http.Header, error) {
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
		body, err := ev.MarshalJSON()
		if err != nil {
			return nil, nil, fmt.Errorf("encode event: %w", err)
		}
		h.Set("Content-Type", ingest.ContentTypeStructured)
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
			h.Set("ce-"+name, v)
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
	return ct == "application/json" || bytes.HasSuffix([]byte(ct), []byte("+json")) ||
		bytes.HasPrefix([]byte(ct), []byte("application/json;"))
}

func jsonUnmarshalString(raw []byte, s *string) error {
	if err := json.Unmarshal(raw, s); err != nil {
		return fmt.Errorf("decode text data: %w", err)
	}
	return nil
}
