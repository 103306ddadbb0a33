// Package worker is a Go client for pull subscriptions (API.md §10): it
// claims due jobs, runs a handler on each with automatic lease heartbeats,
// and reports the outcome.
package worker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event/cloudevent"
)

// Client defaults.
const (
	DefaultWait              = 20 * time.Second
	DefaultHeartbeatInterval = 30 * time.Second
	DefaultMinBackoff        = 200 * time.Millisecond
	DefaultMaxBackoff        = 30 * time.Second
	// reportTimeout bounds a complete/fail call, also after Run's context
	// ended (the outcome of a finished handler is always reported).
	reportTimeout = 10 * time.Second
)

// Job is a claimed job with its event.
type Job struct {
	dispatch.Job
	// Event is the CloudEvent of an EVENT job; nil for a TASK job.
	Event *cloudevent.Event
}

// UnmarshalJSON reads a claimed job of the API: the job and its "event".
func (j *Job) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &j.Job); err != nil {
		return fmt.Errorf("decode job: %w", err)
	}
	var ev struct {
		Event *cloudevent.Event `json:"event"`
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		return fmt.Errorf("decode job event: %w", err)
	}
	j.Event = ev.Event
	return nil
}

// Handler processes one job; a nil error completes it, any other fails it
// with the error's message (the gateway schedules the retry).
type Handler func(ctx context.Context, j *Job) error

// Client claims and reports the jobs of one pull subscription. Set the
// exported fields before Run; a Client runs one Run at a time.
type Client struct {
	// BaseURL is the gateway's address, e.g. http://127.0.0.1:8080.
	BaseURL string
	// SubscriptionID is the id of the pull subscription.
	SubscriptionID string
	// WorkerID identifies this worker; default "{hostname}:{pid}".
	WorkerID string
	// APIKey, when set, is sent as a Bearer token (a worker or admin key).
	APIKey string
	// Max is the most jobs claimed at once (default 1).
	Max int
	// Wait is the long-poll wait of a claim (default 20 s; 30 s at most).
	Wait time.Duration
	// Tags narrows the claim to jobs whose event type or an extension value
	// equals one of them.
	Tags []string
	// HeartbeatInterval is the lease extension period while a handler runs
	// (default 30 s; keep it well under the gateway's HOOKLANE_LEASE).
	HeartbeatInterval time.Duration
	// MinBackoff and MaxBackoff bound the wait after a failed claim, doubled
	// on each consecutive failure.
	MinBackoff, MaxBackoff time.Duration
	HTTPClient             *http.Client
	Logger                 *slog.Logger
}

// StatusError is an unexpected answer of the gateway.
type StatusError struct {
	Status int
	Body   string
}

// Error implements error.
func (e *StatusError) Error() string { return fmt.Sprintf("gateway answered %d: %s", e.Status, e.Body) }

func (c *Client) workerID() string {
	if c.WorkerID != "" {
		return c.WorkerID
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", cmp.Or(host, "worker"), os.Getpid())
}

func (c *Client) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// Run claims and handles jobs until ctx ends, then returns nil once the
// handler in progress has finished and its outcome is reported. Jobs
// claimed but not yet started when ctx ends are left to their lease (the
// gateway hands them to another worker when it expires). Claim errors are
// logged and retried with exponential backoff.
func (c *Client) Run(ctx context.Context, handler Handler) error {
	if c.BaseURL == "" || c.SubscriptionID == "" {
		return errors.New("run worker: BaseURL and SubscriptionID are required")
	}
	minB, maxB := cmp.Or(c.MinBackoff, DefaultMinBackoff), cmp.Or(c.MaxBackoff, DefaultMaxBackoff)
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		jobs, err := c.Claim(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			backoff = min(max(backoff*2, minB), maxB)
			c.logger().WarnContext(ctx, "claim failed", "error", err, "retry_in", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			continue
		}
		backoff = 0
		for _, j := range jobs {
			if ctx.Err() != nil {
				break
			}
			c.process(ctx, j, handler)
		}
	}
	return nil //nolint:nilerr // a claim cut short by ctx is the normal stop: Run returns nil when ctx ends (its contract above)
}

// Claim asks for up to Max due jobs, long-polling up to Wait; it returns no
// jobs when none became due.
func (c *Client) Claim(ctx context.Context) ([]*Job, error) {
	q := url.Values{"worker_id": {c.workerID()}, "max": {strconv.Itoa(cmp.Or(c.Max, 1))}}
	q.Set("wait", cmp.Or(c.Wait, DefaultWait).String())
	if len(c.Tags) > 0 {
		q.Set("tags", strings.Join(c.Tags, ","))
	}
	var out struct {
		Items []*Job `json:"items"`
	}
	status, err := c.call(ctx, http.MethodGet, "/api/subscriptions/"+url.PathEscape(c.SubscriptionID)+"/jobs/next?"+q.Encode(), nil, &out)
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	if status == http.StatusNoContent {
		return nil, nil
	}
	return out.Items, nil
}

// process runs the handler on one job with heartbeats, then reports.
func (c *Client) process(ctx context.Context, j *Job, handler Handler) {
	hctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { c.heartbeat(hctx, j.ID) })
	start := time.Now()
	err := runHandler(hctx, handler, j)
	elapsed := time.Since(start).Milliseconds()
	stop()
	wg.Wait()

	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
	defer cancel()
	body := map[string]any{"workerId": c.workerID(), "executionTimeMs": elapsed}
	verb := "complete"
	if err != nil {
		verb = "fail"
		body["errorMessage"] = err.Error()
	}
	if _, rerr := c.call(rctx, http.MethodPost, "/api/dispatch-jobs/"+url.PathEscape(j.ID)+"/"+verb, body, nil); rerr != nil {
		c.logger().WarnContext(ctx, "report failed", "job_id", j.ID, "outcome", verb, "error", rerr)
	}
}

// runHandler runs handler, turning a panic into an error so the job fails
// instead of the worker dying.
func runHandler(ctx context.Context, handler Handler, j *Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return handler(ctx, j)
}

// heartbeat extends the job's lease every HeartbeatInterval until ctx ends.
func (c *Client) heartbeat(ctx context.Context, id string) {
	t := time.NewTicker(cmp.Or(c.HeartbeatInterval, DefaultHeartbeatInterval))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := c.call(ctx, http.MethodPost, "/api/dispatch-jobs/"+url.PathEscape(id)+"/heartbeat",
				map[string]any{"workerId": c.workerID()}, nil); err != nil && ctx.Err() == nil {
				c.logger().WarnContext(ctx, "heartbeat failed", "job_id", id, "error", err)
			}
		}
	}
}

// call sends one request; a 2xx answer is decoded into out (when not nil).
func (c *Client) call(ctx context.Context, method, path string, in, out any) (int, error) {
	var r io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, fmt.Errorf("encode request: %w", err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, r)
	if err != nil {
		return 0, fmt.Errorf("build request: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("send request: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, &StatusError{Status: resp.StatusCode, Body: string(bytes.TrimSpace(body))}
	}
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.Unmarshal(body, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode answer: %w", err)
		}
	}
	return resp.StatusCode, nil
}
