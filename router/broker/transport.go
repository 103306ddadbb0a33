package broker

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hooklane/hooklane/destination"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/transformrun"
	"github.com/hooklane/hooklane/subscription/transform"
)

// Config configures a Transport.
type Config struct {
	// Registry decodes the subscriptions' stored destinations. Required.
	Registry *destination.Registry
	// Clients publishes, one client per destination configuration, shared
	// with nothing else; the caller runs its Run loop and closes it.
	// Required.
	Clients *destination.Clients
	// Logger logs nothing per attempt (the outcome is the record); nil
	// discards.
	Logger *slog.Logger
	// NowFunc is the clock of the attempt's timing; nil is time.Now.
	NowFunc func() time.Time
	// Transform runs subscriptions' transformations (API.md §16); nil
	// turns them off: messages are published as §15 builds them.
	Transform *transform.Engine
	// OnTransformFunc, when set, is told of every transformation run of a
	// delivery (its outcome and duration): the metrics' hook. It must not
	// block.
	OnTransformFunc func(transformrun.Run)
}

// Transport is the router.Transport of the destinations. It is safe for
// concurrent use.
type Transport struct {
	cfg Config
	// transforms runs the subscriptions' transformations.
	transforms *transformrun.Runner
}

var _ router.Transport = (*Transport)(nil)

// New returns a Transport. It panics without a Registry or Clients: that
// is a wiring mistake.
func New(cfg Config) *Transport {
	if cfg.Registry == nil || cfg.Clients == nil {
		panic("broker: New needs a Registry and Clients")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	return &Transport{cfg: cfg, transforms: transformrun.New(transformrun.Config{
		Engine: cfg.Transform, NowFunc: cfg.NowFunc, OnRunFunc: cfg.OnTransformFunc,
	})}
}

// Register adds t to ts under the scheme of every registered type's
// targetUrl: the type's name ("kafka://…"), or the scheme a type names
// with a TargetScheme method (rabbitmq: "amqp://…", API.md §15).
func (t *Transport) Register(ts router.Transports) {
	for _, name := range t.cfg.Registry.Names() {
		ts[Scheme(t.cfg.Registry, name)] = t
	}
}

// Scheme is the scheme of the targetUrl of a registered type's
// destinations: its TargetScheme when it has one, else its name.
func Scheme(reg *destination.Registry, name string) string {
	typ, ok := reg.Type(name)
	if s, has := typ.(interface{ TargetScheme() string }); ok && has {
		return s.TargetScheme()
	}
	return name
}

// Deliver publishes one attempt of d's job to its subscription's current
// destination, bounded by the job's timeout. The subscription's
// transformation, when on, runs first (API.md §16; the handler gets no
// url): a changed payload replaces the message body (the data in binary
// mode) and its content type, its headers are the message's custom
// headers; one that cancels the delivery publishes nothing and cancels
// the job; one that fails, or sets a url or another method (a webhook's),
// is a failed attempt, not retried and not counted toward the circuit.
func (t *Transport) Deliver(ctx context.Context, d *router.Delivery) dispatch.Outcome {
	sub, job := d.Subscription, d.Job
	if sub == nil || d.Event == nil || !sub.HasDestination() {
		// A TASK job, or a job whose subscription moved to an HTTP target
		// after the router read its target: nothing to publish.
		return dispatch.Outcome{Err: dispatch.Permanent(errors.New("the job's subscription has no destination"))}
	}
	dest, err := t.cfg.Registry.Load(sub.Destination)
	if err != nil {
		return dispatch.Outcome{Err: dispatch.Permanent(fmt.Errorf("load destination: %w", err))}
	}
	body, err := d.Event.Event.MarshalJSON()
	if err != nil {
		return dispatch.Outcome{Err: dispatch.Permanent(fmt.Errorf("encode event: %w", err))}
	}
	span := trace.SpanFromContext(ctx)
	startSpan(span, dest, job)
	env := &destination.Envelope{
		Event: body, DataOnly: job.DataOnly, Headers: job.Headers, JobID: job.ID, Attempt: d.Attempt,
		Group: job.MessageGroup, TraceParent: traceParent(span.SpanContext()),
	}
	ran := t.cfg.NowFunc()
	tr, ok, err := t.transforms.Apply(ctx, d, transformrun.Request{Body: body})
	if err != nil {
		if out, isTransform := transformrun.FailedOutcome(err, ran, t.cfg.NowFunc()); isTransform {
			return out
		}
		return dispatch.Outcome{Err: dispatch.Permanent(err)}
	}
	if ok {
		applyTransformed(env, &tr)
	}
	m, err := destination.NewMessage(dest.Type.Binding(), env)
	if err != nil {
		return dispatch.Outcome{Err: dispatch.Permanent(fmt.Errorf("build message: %w", err))}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(max(job.TimeoutSeconds, 1))*time.Second)
	defer cancel()
	start := t.cfg.NowFunc()
	answer, err := t.cfg.Clients.Publish(ctx, dest, m)
	end := t.cfg.NowFunc()
	out := dispatch.Outcome{
		Attempted: true,
		Attempt:   dispatch.Attempt{StartedAt: start, DurationMs: end.Sub(start).Milliseconds(), ResponseBody: answer},
	}
	if err != nil {
		out.Err = err
		if destination.IsPermanent(err) {
			out.Err = dispatch.Permanent(err)
		}
		return out
	}
	if span.IsRecording() && answer != "" {
		span.SetAttributes(attribute.String("hooklane.broker.answer", answer))
	}
	return out
}

// applyTransformed puts a transformation's result into the message's
// envelope: its headers are the custom headers (a content-type among them
// is the message's content type, not a header of its own), a changed
// payload the body.
func applyTransformed(env *destination.Envelope, tr *transformrun.Result) {
	headers := make(map[string]string, len(tr.Headers))
	for k, v := range tr.Headers {
		if k != "content-type" {
			headers[k] = v
		}
	}
	env.Headers = headers
	env.ReplaceBody, env.Body, env.ContentType = tr.Changed, tr.Body, tr.ContentType
}

// messagingSystem is the semantic conventions' messaging.system of each
// type; a type not listed is named as it is.
func messagingSystem(typ string) string {
	switch typ {
	case "sqs":
		return "aws_sqs"
	case "pubsub":
		return "gcp_pubsub"
	}
	return typ
}

// startSpan names the router's attempt span for the broker and adds the
// messaging semantic conventions: "send <destination>", the system, the
// destination's name, the operation, the message id (the job id, which
// consumers deduplicate on) and the broker's host. Nothing secret: the
// targetUrl holds none.
func startSpan(span trace.Span, dest *destination.Destination, job *dispatch.Job) {
	if !span.IsRecording() {
		return
	}
	name, host := "", ""
	if u, err := url.Parse(dest.TargetURL()); err == nil {
		name, host = strings.TrimPrefix(u.Path, "/"), u.Hostname()
		if name == "" {
			name = u.Host // sqs://<queue name>
		}
	}
	span.SetName("send " + name)
	attrs := []attribute.KeyValue{
		attribute.String("messaging.system", messagingSystem(dest.Type.Name())),
		attribute.String("messaging.operation.type", "send"),
		attribute.String("messaging.operation.name", "publish"),
		attribute.String("messaging.destination.name", name),
		attribute.String("messaging.message.id", job.ID),
		attribute.String("hooklane.destination.type", dest.Type.Name()),
	}
	if host != "" && dest.Type.Name() != "sqs" && dest.Type.Name() != "pubsub" {
		attrs = append(attrs, attribute.String("server.address", host))
	}
	if job.MessageGroup != "" {
		attrs = append(attrs, attribute.String("messaging.message.group", job.MessageGroup))
	}
	span.SetAttributes(attrs...)
}

// traceParent is the W3C traceparent of sc (version 00), "" when sc is not
// valid (tracing off: the event's own traceparent travels then).
func traceParent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	return "00-" + hex.EncodeToString(tid[:]) + "-" + hex.EncodeToString(sid[:]) + "-" + hex.EncodeToString([]byte{byte(sc.TraceFlags())})
}
