package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"

	"github.com/hooklane/hooklane/destination"
	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/destination/transporttest"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/subscription"
)

// conformanceToken is the bearer token the receivers that check
// credentials accept.
const conformanceToken = "the-right-token"

// TestConformance runs the transport suite on the webhook, against
// httptest receivers on 127.0.0.1 that verify the Standard Webhooks
// signature of every request (a bad one is answered 400, which fails the
// delivery) and hand the suite what arrived.
func TestConformance(t *testing.T) {
	t.Parallel()
	transporttest.Run(t, &transporttest.Harness{
		NewTransport: func(t *testing.T, cfg destination.ClientsConfig) transporttest.Transport {
			t.Helper()
			return newConformanceTransport(t, cfg)
		},
		Features: transporttest.Features{
			Binary:      true,
			AttrPrefix:  "ce-",
			ContentType: "header:content-type",
			JobID:       "header:webhook-id",
			// No Group: §6 sends the job's message group nowhere (the
			// event's own messagegroup travels inside the event, or as
			// ce-messagegroup); order over HTTP is the router's ordering
			// modes, tested in package router.
			MaxBody: 1 << 20,
			// §6: a 401, 403 or 404 is a 4xx, which ends the job at once.
			RefusalPermanent: true,
			// The webhook's secrets (auth, §14) are the subscription's,
			// masked by package subscription and the API.
			MaskedElsewhere: true,
		},
		NewTarget: func(t *testing.T, _ transporttest.TargetOptions) *transporttest.Target {
			t.Helper()
			r := newReceiver(t, "")
			return &transporttest.Target{Raw: webhookRaw(r.srv.URL+"/hook", ""), Receive: r.receive}
		},
		NewOutage: func(t *testing.T) *transporttest.Outage {
			t.Helper()
			r := newReceiver(t, "")
			p := transporttest.NewProxy(t, strings.TrimPrefix(r.srv.URL, "http://"))
			return &transporttest.Outage{
				Target: &transporttest.Target{Raw: webhookRaw("http://"+p.Addr()+"/hook", ""), Receive: r.receive},
				Stop:   p.Stop, Start: p.Start,
			}
		},
		NewMissing: func(t *testing.T) json.RawMessage {
			t.Helper()
			r := newReceiver(t, "")
			return webhookRaw(r.srv.URL+"/no-such-hook", "")
		},
		NewRefused: func(t *testing.T) (json.RawMessage, string) {
			t.Helper()
			r := newReceiver(t, conformanceToken)
			const wrong = "Wr0ng-T0ken-Value"
			return webhookRaw(r.srv.URL+"/hook", wrong), wrong
		},
		AtAddress: func(t *testing.T, addr, secret string) json.RawMessage {
			t.Helper()
			return webhookRaw("http://"+addr+"/hook", secret)
		},
	})
}

// TestConformanceForbidden: a receiver that answers 403 to the
// credentials fails the delivery, permanently (§6: a 4xx), and the token
// shows in no error.
func TestConformanceForbidden(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, conformanceToken)
	r.refuse = http.StatusForbidden
	tr := newConformanceTransport(t, destination.ClientsConfig{PublishTimeout: 5 * time.Second})
	const wrong = "Wr0ng-T0ken-403"
	d, err := tr.Decode(&destination.DecodeParams{Raw: webhookRaw(r.srv.URL+"/hook", wrong)})
	require.NoError(t, err)
	_, err = tr.Deliver(t.Context(), d, &destination.Envelope{
		Event: []byte(`{"specversion":"1.0","id":"e-403","source":"/s","type":"t","data":{}}`), JobID: "job-403", Attempt: 1,
	})
	var pe *destination.PublishError
	require.ErrorAs(t, err, &pe)
	require.True(t, pe.Permanent, "a 403 is not retried: %v", pe)
	require.Contains(t, pe.Text, "403")
	require.NotContains(t, pe.Error(), wrong)
}

// webhookRaw is the harness's destination of a webhook: the target URL
// and, when token is set, bearer auth.
func webhookRaw(url, token string) json.RawMessage {
	d := webhookDest{URL: url}
	if token != "" {
		d.Auth = &endpoint.Auth{Type: endpoint.AuthBearer, Token: token}
	}
	raw, err := json.Marshal(d)
	if err != nil {
		panic(err)
	}
	return raw
}

// webhookDest is what the webhook adapter decodes: a subscription's
// target and auth, and dataOnly.
type webhookDest struct {
	URL      string         `json:"url"`
	Auth     *endpoint.Auth `json:"auth,omitempty"`
	dataOnly bool
}

// conformanceTransport is the suite's adapter of the webhook: it turns
// an envelope into the router's Delivery (a job, its event as stored, its
// subscription with a signing secret) and the Outcome into an answer or a
// *destination.PublishError.
type conformanceTransport struct {
	tr      *Transport
	secret  string
	timeout time.Duration
}

func newConformanceTransport(t *testing.T, cfg destination.ClientsConfig) *conformanceTransport {
	t.Helper()
	// The webhook logs nothing per attempt: the outcome is the record, so
	// cfg.Logger stays empty and the suite's log checks hold trivially.
	tr := New(Config{AllowPrivateTargets: true, UserAgent: "hooklane/conformance"})
	t.Cleanup(tr.Close)
	return &conformanceTransport{tr: tr, secret: receiverSecret, timeout: cfg.PublishTimeout}
}

func (c *conformanceTransport) Decode(p *destination.DecodeParams) (any, error) {
	var d webhookDest
	if err := json.Unmarshal(p.Raw, &d); err != nil {
		return nil, fmt.Errorf("decode webhook destination: %w", err)
	}
	d.dataOnly = p.DataOnly
	return &d, nil
}

func (c *conformanceTransport) Deliver(ctx context.Context, dest any, env *destination.Envelope) (string, error) {
	d, ok := dest.(*webhookDest)
	if !ok {
		return "", fmt.Errorf("not a webhook destination: %T", dest)
	}
	var ce cloudevent.Event
	if err := json.Unmarshal(env.Event, &ce); err != nil {
		return "", fmt.Errorf("decode event: %w", err)
	}
	if env.TraceParent != "" {
		// The router's attempt span, as tracing on makes it (§6).
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": env.TraceParent})
	}
	out := c.tr.Deliver(ctx, &router.Delivery{
		Job: &dispatch.Job{
			ID: env.JobID, Kind: dispatch.KindEvent, Code: ce.Type, Subscription: "conformance",
			TargetURL: d.URL, TimeoutSeconds: max(int(c.timeout/time.Second), 1),
			Headers: env.Headers, DataOnly: d.dataOnly, MessageGroup: env.Group,
		},
		Event: &event.Event{ID: "stored-" + ce.ID, Event: ce},
		Subscription: &subscription.Subscription{
			ID: "conformance", Code: "conformance", Auth: d.Auth,
			Secrets: []subscription.Secret{{Value: c.secret}},
		},
		Attempt: env.Attempt,
	})
	if out.Err == nil {
		if !out.Attempted {
			return "", errors.New("success without an attempt")
		}
		return fmt.Sprintf("%d %s", out.Attempt.StatusCode, out.Attempt.ResponseBody), nil
	}
	var ne net.Error
	return "", &destination.PublishError{
		Type: "webhook", Text: out.Err.Error(), Permanent: dispatch.IsPermanent(out.Err),
		Timeout: errors.Is(out.Err, context.DeadlineExceeded) || (errors.As(out.Err, &ne) && ne.Timeout()),
	}
}

// Clients is the webhook's HTTP clients: the shared one and one per TLS
// configuration.
func (c *conformanceTransport) Clients() int { return 1 + c.tr.clients.byKey.Len() }

// receiverSecret signs every conformance delivery.
var receiverSecret = subscription.NewSecret() //nolint:gochecknoglobals // test-only: one signing secret for every receiver of the suite

// receiver is an httptest server on 127.0.0.1 that verifies each
// request's signature and queues what it received.
type receiver struct {
	srv    *httptest.Server
	got    chan *transporttest.Received
	token  string
	refuse int
}

// newReceiver starts a receiver; with token set, a request without
// "Bearer <token>" is refused (401, or r.refuse).
func newReceiver(t *testing.T, token string) *receiver {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(receiverSecret)
	require.NoError(t, err)
	r := &receiver{got: make(chan *transporttest.Received, 128), token: token, refuse: http.StatusUnauthorized}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(io.LimitReader(req.Body, 4<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if req.URL.Path != "/hook" {
			http.NotFound(w, req)
			return
		}
		if r.token != "" && req.Header.Get("Authorization") != "Bearer "+r.token {
			w.WriteHeader(r.refuse)
			return
		}
		if err := wh.Verify(body, req.Header); err != nil {
			http.Error(w, "signature: "+err.Error(), http.StatusBadRequest)
			return
		}
		got := &transporttest.Received{Body: body, Headers: map[string]string{}, Properties: map[string]string{}}
		for k, v := range req.Header {
			got.Headers[strings.ToLower(k)] = v[0]
		}
		select {
		case r.got <- got:
			_, _ = io.WriteString(w, "ok")
		default:
			http.Error(w, "receiver full", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// receive waits for the next request.
func (r *receiver) receive(t *testing.T) *transporttest.Received {
	t.Helper()
	select {
	case got := <-r.got:
		require.Equal(t, "conformance", got.Headers["hooklane-subscription"])
		require.NotEmpty(t, got.Headers["webhook-timestamp"])
		require.Equal(t, "hooklane/conformance", got.Headers["user-agent"])
		return got
	case <-time.After(transporttest.ReceiveDeadline):
		require.FailNow(t, "no request arrived", "within %s", transporttest.ReceiveDeadline)
		return nil
	}
}
