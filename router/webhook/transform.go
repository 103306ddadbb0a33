package webhook

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

	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/subscription/transform"
)

// CancelledByTransformation is the reason in the status history of a job
// whose transformation cancelled it (API.md §16).
const CancelledByTransformation = "the subscription's transformation cancelled the delivery"

// errTransformCancelled is a delivery its transformation cancelled: nothing
// is sent.
var errTransformCancelled = errors.New(CancelledByTransformation)

// errTransformRun is an engine that could not run a transformation (ctx
// ended while it waited for a runtime): not the handler's failure.
var errTransformRun = errors.New("run transformation")

// TransformError is a transformation that failed at delivery (API.md §16):
// a run error (a throw, a timeout, an invalid or too large result), code
// that does not compile, or a url or method the request cannot take. The
// attempt fails, is not retried, and does not count toward the circuit.
type TransformError struct {
	// Kind classifies the failure: one of transform.Kinds (KindCompile for
	// code that no longer compiles, KindInvalidResult for a url or method
	// the request cannot take).
	Kind transform.Kind
	// Message is what went wrong.
	Message string
	// Line and Column are the 1-based position in the source, 0 when
	// unknown.
	Line, Column int
}

// Error is the job's lastError: "transformation: line 3, column 5: …".
func (e *TransformError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("transformation: line %d, column %d: %s", e.Line, e.Column, e.Message)
	}
	return "transformation: " + e.Message
}

// transformed is what a delivery's transformation decided for its request.
type transformed struct {
	method, url string
	// headers is the complete set of custom headers.
	headers map[string]string
	// body and contentType replace the rendered ones when changed.
	body        []byte
	contentType string
	changed     bool
}

// TransformRun is one run of a delivery's transformation, as
// Config.OnTransformFunc is told of it.
type TransformRun struct {
	// Failure is the kind of a failed run (one of transform.Kinds), empty
	// when the handler returned a result the request can take.
	Failure transform.Kind
	// Cancelled reports that the handler cancelled the delivery.
	Cancelled bool
	// Duration is how long the delivery spent in the transformation: the
	// wait for a runtime, the run, and the checks of its result.
	Duration time.Duration
}

// transform runs the transformation of d's subscription, when it has one
// that is on and the transport has an engine, on the request it would send
// (body, the rendered body). ok is false when there is nothing to run.
// errTransformCancelled is a cancelled delivery, a *TransformError a failed
// transformation, errTransformRun the engine's (ctx ended while it waited
// for a runtime). Each run is a span (a child of the attempt's) and is
// reported to Config.OnTransformFunc; an errTransformRun is not a run and is
// not reported.
func (t *Transport) transform(ctx context.Context, d *router.Delivery, body []byte) (res transformed, ok bool, err error) {
	sub := d.Subscription
	if t.cfg.Transform == nil || sub == nil || !sub.Transformation.On() {
		return transformed{}, false, nil
	}
	ctx, span := startTransformSpan(ctx)
	start := t.cfg.NowFunc()
	res, err = t.runTransform(ctx, d, body)
	run := TransformRun{Duration: t.cfg.NowFunc().Sub(start)}
	if te, failed := errors.AsType[*TransformError](err); failed {
		run.Failure = te.Kind
	}
	run.Cancelled = errors.Is(err, errTransformCancelled)
	endTransformSpan(span, run, err)
	if t.cfg.OnTransformFunc != nil && !errors.Is(err, errTransformRun) {
		t.cfg.OnTransformFunc(run)
	}
	return res, true, err
}

// runTransform compiles (or takes from the cache) and runs d's
// transformation, and checks the request it chose.
func (t *Transport) runTransform(ctx context.Context, d *router.Delivery, body []byte) (transformed, error) {
	sub := d.Subscription
	code := sub.Transformation.Code
	version := transform.SourceVersion(code)
	if sub.Version > 0 {
		version = strconv.FormatInt(sub.Version, 10)
	}
	prog, err := t.programs.Program(transform.CacheKey{SubscriptionID: sub.ID, Version: version}, code)
	if err != nil {
		if ce, isCompile := errors.AsType[*transform.CompileError](err); isCompile {
			return transformed{}, &TransformError{Kind: transform.KindCompile, Message: ce.Message, Line: ce.Line, Column: ce.Column}
		}
		return transformed{}, &TransformError{Kind: transform.KindCompile, Message: err.Error()}
	}
	j := d.Job
	headers := make(map[string]string, len(j.Headers))
	for k, v := range j.Headers {
		headers[strings.ToLower(k)] = v
	}
	in := transform.Input{
		Method: http.MethodPost, URL: j.TargetURL, Headers: headers, Payload: payloadJSON(d, body),
		Attempt: d.Attempt,
	}
	if d.Event != nil {
		in.EventType, in.EventID = d.Event.Event.Type, d.Event.ID
	}
	out, err := t.cfg.Transform.Run(ctx, prog, in)
	if err != nil {
		if re, isRun := errors.AsType[*transform.RunError](err); isRun {
			return transformed{}, &TransformError{
				Kind: re.Kind, Message: string(re.Kind) + ": " + re.Message, Line: re.Line, Column: re.Column,
			}
		}
		return transformed{}, fmt.Errorf("%w: %w", errTransformRun, err)
	}
	if out.Cancel {
		return transformed{}, errTransformCancelled
	}
	if err := checkTransformed(&out, j.TargetURL, sub.Auth != nil || sub.TLS != nil); err != nil {
		return transformed{}, err
	}
	res := transformed{method: out.Method, url: out.URL, headers: out.Headers, changed: out.PayloadChanged}
	if out.PayloadChanged {
		res.body, res.contentType = out.Body(), out.ContentType()
	} else if ct, set := out.Headers["content-type"]; set {
		res.contentType = ct
	}
	return res, nil
}

// checkTransformed checks the request a transformation chose: POST, PUT or
// PATCH to an http or https URL, on target's scheme, host and port when the
// subscription has auth or tls (a credential never goes to another host).
// The addresses are checked where the request connects (the SSRF-safe
// dialer).
func checkTransformed(out *transform.Output, target string, credentialed bool) error {
	switch out.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return &TransformError{Kind: transform.KindInvalidResult, Message: fmt.Sprintf("invalid_result: method %q is not POST, PUT or PATCH", out.Method)}
	}
	u, err := url.Parse(out.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return &TransformError{Kind: transform.KindInvalidResult, Message: fmt.Sprintf("invalid_result: url %q is not an http or https URL", out.URL)}
	}
	if credentialed && !transform.SameOrigin(target, out.URL) {
		return &TransformError{Kind: transform.KindInvalidResult, Message: fmt.Sprintf(
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
