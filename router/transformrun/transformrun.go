package transformrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/subscription/transform"
)

// CancelledReason is the reason in the status history of a job whose
// transformation cancelled it (API.md §16).
const CancelledReason = "the subscription's transformation cancelled the delivery"

// ErrCancelled is a delivery its transformation cancelled: nothing is sent.
var ErrCancelled = errors.New(CancelledReason)

// ErrNotRun is an engine that could not run a transformation (ctx ended
// while it waited for a runtime): not the handler's failure.
var ErrNotRun = errors.New("run transformation")

// Error is a transformation that failed at delivery (API.md §16): a run
// error (a throw, a timeout, an invalid or too large result), code that
// does not compile, or a url or method the delivery cannot take. The
// attempt fails, is not retried, and does not count toward the circuit.
type Error struct {
	// Kind classifies the failure: one of transform.Kinds (KindCompile for
	// code that no longer compiles, KindInvalidResult for a url or method
	// the delivery cannot take).
	Kind transform.Kind
	// Message is what went wrong.
	Message string
	// Line and Column are the 1-based position in the source, 0 when
	// unknown.
	Line, Column int
}

// Error is the job's lastError: "transformation: line 3, column 5: …".
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("transformation: line %d, column %d: %s", e.Line, e.Column, e.Message)
	}
	return "transformation: " + e.Message
}

// Run is one run of a delivery's transformation, as the metrics hook is
// told of it.
type Run struct {
	// Failure is the kind of a failed run (one of transform.Kinds), empty
	// when the handler returned a result the delivery can take.
	Failure transform.Kind
	// Cancelled reports that the handler cancelled the delivery.
	Cancelled bool
	// Duration is how long the delivery spent in the transformation: the
	// wait for a runtime, the run, and the checks of its result.
	Duration time.Duration
}

// Request is the delivery a transformation is run on, as its transport
// renders it.
type Request struct {
	// URL is the webhook's target; "" for a destination (API.md §15): the
	// handler gets no url, may not set one, and may not change the method.
	URL string
	// Body is the rendered structured body (the CloudEvent, or a TASK job's
	// payload): the handler's payload, or the source of its data with
	// dataOnly.
	Body []byte
	// Credentialed reports a subscription with auth or tls (API.md §14):
	// only the url's path and query may change.
	Credentialed bool
}

// Result is what a delivery's transformation decided.
type Result struct {
	// Method and URL are the webhook request's; URL is "" for a
	// destination and Method POST.
	Method, URL string
	// Headers is the complete set of custom headers to send, names
	// lower-case.
	Headers map[string]string
	// Body replaces the rendered body when Changed; ContentType, when not
	// empty, replaces the rendered content type (a changed payload's, or a
	// content-type header the handler set).
	Body        []byte
	ContentType string
	Changed     bool
}

// Config configures a Runner.
type Config struct {
	// Engine runs the transformations; nil turns them off: [Runner.Apply]
	// runs nothing.
	Engine *transform.Engine
	// NowFunc is the clock of a run's duration; nil is time.Now.
	NowFunc func() time.Time
	// OnRunFunc, when set, is told of every run (its outcome and
	// duration): the metrics' hook. It must not block.
	OnRunFunc func(Run)
}

// Runner runs the transformations of deliveries, with a cache of the
// compiled programs. It is safe for concurrent use.
type Runner struct {
	cfg      Config
	programs *transform.Cache
}

// New returns a Runner.
func New(cfg Config) *Runner {
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	return &Runner{cfg: cfg, programs: transform.NewCache(0)}
}

// Apply runs the transformation of d's subscription, when it has one that
// is on and the Runner has an engine, on req. ok is false when there is
// nothing to run. ErrCancelled is a cancelled delivery, an *Error a failed
// transformation, ErrNotRun the engine's (ctx ended while it waited for a
// runtime). Each run is a span (a child of the attempt's) and is reported
// to OnRunFunc; an ErrNotRun is not a run and is not reported.
func (r *Runner) Apply(ctx context.Context, d *router.Delivery, req Request) (res Result, ok bool, err error) {
	sub := d.Subscription
	if r == nil || r.cfg.Engine == nil || sub == nil || !sub.Transformation.On() {
		return Result{}, false, nil
	}
	ctx, span := startSpan(ctx)
	start := r.cfg.NowFunc()
	res, err = r.run(ctx, d, req)
	run := Run{Duration: r.cfg.NowFunc().Sub(start)}
	if te, failed := errors.AsType[*Error](err); failed {
		run.Failure = te.Kind
	}
	run.Cancelled = errors.Is(err, ErrCancelled)
	endSpan(span, run, err)
	if r.cfg.OnRunFunc != nil && !errors.Is(err, ErrNotRun) {
		r.cfg.OnRunFunc(run)
	}
	return res, true, err
}

// run compiles (or takes from the cache) and runs d's transformation, and
// checks the delivery it chose.
func (r *Runner) run(ctx context.Context, d *router.Delivery, req Request) (Result, error) {
	sub := d.Subscription
	code := sub.Transformation.Code
	var version string
	if sub.Version > 0 {
		version = strconv.FormatInt(sub.Version, 10)
	} else {
		version = transform.SourceVersion(code)
	}
	prog, err := r.programs.Program(transform.CacheKey{SubscriptionID: sub.ID, Version: version}, code)
	if err != nil {
		if ce, isCompile := errors.AsType[*transform.CompileError](err); isCompile {
			return Result{}, &Error{Kind: transform.KindCompile, Message: ce.Message, Line: ce.Line, Column: ce.Column}
		}
		return Result{}, &Error{Kind: transform.KindCompile, Message: err.Error()}
	}
	j := d.Job
	headers := make(map[string]string, len(j.Headers))
	for k, v := range j.Headers {
		headers[strings.ToLower(k)] = v
	}
	in := transform.Input{
		Method: http.MethodPost, URL: req.URL, Headers: headers, Payload: payloadJSON(d, req.Body),
		Attempt: d.Attempt,
	}
	if d.Event != nil {
		in.EventType, in.EventID = d.Event.Event.Type, d.Event.ID
	}
	out, err := r.cfg.Engine.Run(ctx, prog, in)
	if err != nil {
		if re, isRun := errors.AsType[*transform.RunError](err); isRun {
			return Result{}, &Error{
				Kind: re.Kind, Message: string(re.Kind) + ": " + re.Message, Line: re.Line, Column: re.Column,
			}
		}
		return Result{}, fmt.Errorf("%w: %w", ErrNotRun, err)
	}
	if out.Cancel {
		return Result{}, ErrCancelled
	}
	if err := Check(&out, req); err != nil {
		return Result{}, err
	}
	res := Result{Method: out.Method, URL: out.URL, Headers: out.Headers, Changed: out.PayloadChanged}
	if out.PayloadChanged {
		res.Body, res.ContentType = out.Body(), out.ContentType()
	} else if ct, set := out.Headers["content-type"]; set {
		res.ContentType = ct
	}
	return res, nil
}

// Check checks the delivery a transformation chose, as every delivery
// does after a run that did not cancel; the API's test endpoint runs it too,
// so a result that would fail at delivery does not test "ok". A refusal is
// an *Error of KindInvalidResult. A webhook: POST, PUT
// or PATCH to an http or https URL, on the target's scheme, host and port
// when the subscription has auth or tls (a credential never goes to
// another host); the addresses are checked where the request connects
// (the SSRF-safe dialer). A destination: no url (the engine refuses one
// when the input has none) and the method left POST — url and method are
// a webhook's (API.md §16), and a result that asks for another is refused
// rather than silently published as it is not.
func Check(out *transform.Output, req Request) error {
	if req.URL == "" {
		if out.URL != "" || out.Method != http.MethodPost { // the engine refuses a url already
			return &Error{Kind: transform.KindInvalidResult, Message: fmt.Sprintf(
				"invalid_result: method %q cannot be set: the subscription delivers to a destination (url and method apply to an HTTP target only)", out.Method)}
		}
		return nil
	}
	switch out.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return &Error{Kind: transform.KindInvalidResult, Message: fmt.Sprintf("invalid_result: method %q is not POST, PUT or PATCH", out.Method)}
	}
	u, err := url.Parse(out.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.User != nil && !transform.SameOrigin(req.URL, out.URL)) {
		return &Error{Kind: transform.KindInvalidResult, Message: fmt.Sprintf("invalid_result: url %q is not an http or https URL", out.URL)}
	}
	if req.Credentialed && !transform.SameOrigin(req.URL, out.URL) {
		return &Error{Kind: transform.KindInvalidResult, Message: fmt.Sprintf(
			"invalid_result: url %q: with auth or tls only the path and query may change", out.URL)}
	}
	return nil
}

// payloadJSON is the handler's payload: the structured CloudEvent (the
// rendered body), or the data alone as JSON with dataOnly (binary data as
// its base64 JSON string, no data as null).
func payloadJSON(d *router.Delivery, body []byte) json.RawMessage {
	if d.Event == nil || !d.Job.DataOnly {
		return body
	}
	ev := &d.Event.Event
	switch {
	case ev.Data != nil:
		return ev.Data
	case ev.DataBase64 != nil:
		b, err := json.Marshal(ev.DataBase64)
		if err == nil {
			return b
		}
	}
	return json.RawMessage("null")
}

// FailedOutcome is the outcome of a delivery whose Apply returned err, and
// true, when err is the transformation's: ErrCancelled cancels the job with
// no attempt; an *Error is a failed attempt (started at start, ended at
// end), permanent — not retried and not counted toward the circuit, as a
// 4xx; ErrNotRun a retryable failed attempt (the engine's, not the
// handler's). Any other err is not the transformation's: false.
func FailedOutcome(err error, start, end time.Time) (dispatch.Outcome, bool) {
	attempt := func(err error) dispatch.Outcome {
		return dispatch.Outcome{
			Attempted: true, Err: err,
			Attempt: dispatch.Attempt{StartedAt: start, DurationMs: end.Sub(start).Milliseconds()},
		}
	}
	switch {
	case errors.Is(err, ErrCancelled):
		return dispatch.Outcome{Cancelled: CancelledReason}, true
	case errors.Is(err, ErrNotRun):
		return attempt(err), true
	}
	if _, ok := errors.AsType[*Error](err); ok {
		return attempt(dispatch.Permanent(err)), true
	}
	return dispatch.Outcome{}, false
}
