package subscription_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination"
	"github.com/hooklane/hooklane/destination/kafka"
	"github.com/hooklane/hooklane/destination/nats"
	"github.com/hooklane/hooklane/destination/rabbitmq"
	"github.com/hooklane/hooklane/destination/sqs"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/storage/secretbox"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/subscription"
)

// destBundle is a Service with the destination registry, on a store that
// seals secrets, with a switchable address check.
type destBundle struct {
	svc    *subscription.Service
	store  *sqlitestore.Store
	public *atomic.Bool
	hosts  chan string
}

func setupDestinations(t *testing.T) *destBundle {
	t.Helper()
	box, err := secretbox.New(bytes.Repeat([]byte{7}, secretbox.KeySize))
	require.NoError(t, err)
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "d.db"), Box: box})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	b := &destBundle{store: st, public: &atomic.Bool{}, hosts: make(chan string, 64)}
	b.public.Store(true)
	b.svc = subscription.NewService(subscription.ServiceConfig{
		Store: st, Jobs: &fakeJobs{}, NewIDFunc: idgen.New(nil).New,
		PublicHostFunc: func(_ context.Context, host string) (bool, error) {
			select {
			case b.hosts <- host:
			default:
			}
			return b.public.Load(), nil
		},
		Destinations: destination.NewRegistry(sqs.Type{}, kafka.Type{}, rabbitmq.Type{}, nats.Type{}),
		NowFunc:      func() time.Time { return time.Date(2026, 1, 24, 14, 0, 0, 0, time.UTC) },
	})
	return b
}

// newDestSub is a subscription created as the API decodes a request body:
// the defaults, then the body's members.
func newDestSub(t *testing.T, body string) *subscription.Subscription {
	t.Helper()
	s := &subscription.Subscription{}
	s.ApplyDefaults()
	require.NoError(t, json.Unmarshal([]byte(body), s))
	return s
}

// answer is the subscription as the API shows it.
func answer(t *testing.T, s *subscription.Subscription) map[string]any {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// patch applies a merge patch body as the API does.
func (b *destBundle) patch(t *testing.T, id, body string) (*subscription.Subscription, error) {
	t.Helper()
	return b.svc.Patch(t.Context(), id, func(s *subscription.Subscription) error {
		return json.Unmarshal([]byte(body), s)
	})
}

const kafkaWithSASL = `{"code":"k","eventTypes":[{"eventTypeCode":"shop.order.created"}],
	"destination":{"type":"kafka","brokers":["kafka.example:9092"],"topic":"orders",
	"sasl":{"mechanism":"PLAIN","username":"gw","password":"sasl-secret-1"}}}`

func TestDestinationCreateStoresMasksAndSeals(t *testing.T) {
	t.Parallel()
	b := setupDestinations(t)
	sub := newDestSub(t, kafkaWithSASL)
	_, err := b.svc.Create(t.Context(), sub, nil)
	require.NoError(t, err)
	require.Equal(t, "kafka.example", <-b.hosts, "the broker's host passes the target check")

	got := answer(t, sub)
	dest := got["destination"].(map[string]any)
	require.Equal(t, "kafka", dest["type"])
	require.Equal(t, destination.Mask, dest["sasl"].(map[string]any)["password"], "answers never show the secret")
	require.Equal(t, "kafka://kafka.example:9092/orders", got["targetUrl"])
	require.Empty(t, got["target"])
	require.NotContains(t, mustJSON(t, got), "sasl-secret-1")

	// The job's target is the destination's targetUrl: its scheme routes
	// it to the broker transport.
	require.Equal(t, "kafka://kafka.example:9092/orders", sub.JobSettings().Target)

	stored, err := b.store.SubscriptionGetByID(t.Context(), sub.ID)
	require.NoError(t, err)
	require.Contains(t, string(stored.Destination), "sasl-secret-1", "the store gives the secret back in clear to the gateway")
	require.NotContains(t, mustJSON(t, answer(t, stored)), "sasl-secret-1", "a subscription read from the store is never shown with it")

	for _, read := range []func() (*subscription.Subscription, error){
		func() (*subscription.Subscription, error) { return b.svc.Get(t.Context(), sub.ID) },
		func() (*subscription.Subscription, error) { return b.svc.Pause(t.Context(), sub.ID) },
	} {
		s, err := read()
		require.NoError(t, err)
		require.Equal(t, destination.Mask, answer(t, s)["destination"].(map[string]any)["sasl"].(map[string]any)["password"])
	}
}

func TestDestinationSealedAtRest(t *testing.T) {
	t.Parallel()
	sub := newDestSub(t, kafkaWithSASL)
	sub.Destination = json.RawMessage(`{"type":"kafka","brokers":["k:9092"],"topic":"t","sasl":{"mechanism":"PLAIN","username":"u","password":"p-secret"}}`)
	box, err := secretbox.New(bytes.Repeat([]byte{3}, secretbox.KeySize))
	require.NoError(t, err)
	sealed, err := sub.MapSecrets(box.Seal)
	require.NoError(t, err)
	require.NotContains(t, string(sealed.Destination), "p-secret")
	require.Equal(t, "kafka", sealed.DestinationType(), "the type stays readable")
	opened, err := sealed.MapSecrets(box.Open)
	require.NoError(t, err)
	require.JSONEq(t, string(sub.Destination), string(opened.Destination))

	_, err = sealed.MapSecrets((*secretbox.Box)(nil).Open)
	require.ErrorIs(t, err, secretbox.ErrNoKey, "a sealed destination does not open without the key")
}

func TestDestinationRejections(t *testing.T) {
	t.Parallel()
	const binding = `"code":"c","eventTypes":[{"eventTypeCode":"shop.order.created"}]`
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"both target and destination", `"target":"https://example.com/h","destination":{"type":"nats","url":"nats://n.example:4222","subject":"s"}`, []string{"/destination"}},
		{"neither", ``, []string{"/target", "/destination"}},
		{"unknown type", `"destination":{"type":"carrier-pigeon"}`, []string{"/destination/type"}},
		{"no type", `"destination":{"topic":"x"}`, []string{"/destination/type"}},
		{"missing field", `"destination":{"type":"kafka","brokers":["k.example:9092"]}`, []string{"/destination/topic"}},
		{"bad broker", `"destination":{"type":"kafka","brokers":["no-port"],"topic":"t"}`, []string{"/destination/brokers/0"}},
		{"wrong url scheme", `"destination":{"type":"rabbitmq","url":"http://r.example","exchange":""}`, []string{"/destination/url"}},
		{"sqs is structured only", `"dataOnly":true,"destination":{"type":"sqs","queueUrl":"https://sqs.example/1/q","region":"us-east-1"}`, []string{"/dataOnly"}},
		{"mask at create", `"destination":{"type":"kafka","brokers":["k.example:9092"],"topic":"t","sasl":{"mechanism":"PLAIN","username":"u","password":"***"}}`, []string{"/destination/sasl/password"}},
		{"pull with destination", `"delivery":"pull","destination":{"type":"nats","url":"nats://n.example:4222","subject":"s"}`, []string{"/destination"}},
		{"auth with destination", `"auth":{"type":"bearer","token":"t"},"destination":{"type":"nats","url":"nats://n.example:4222","subject":"s"}`, []string{"/auth"}},
		{"not an object", `"destination":"kafka"`, []string{"/destination"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupDestinations(t)
			s := &subscription.Subscription{}
			s.ApplyDefaults()
			require.NoError(t, json.Unmarshal([]byte("{"+binding+maybeComma(tt.body)+tt.body+"}"), s))
			_, err := b.svc.Create(t.Context(), s, nil)
			rej := requireRejection(t, err)
			require.Equal(t, tt.want, pointers(rej), "%v", rej.Errors)
		})
	}
}

func TestDestinationPrivateBrokerRefused(t *testing.T) {
	t.Parallel()
	b := setupDestinations(t)
	b.public.Store(false)
	s := newDestSub(t, `{"code":"n","eventTypes":[{"eventTypeCode":"a.b"}],
		"destination":{"type":"kafka","brokers":["a.example:9092","b.example:9092"],"topic":"t"}}`)
	_, err := b.svc.Create(t.Context(), s, nil)
	rej := requireRejection(t, err)
	require.Equal(t, []string{"/destination/brokers/0", "/destination/brokers/1"}, pointers(rej))
}

func TestDestinationPatchSecrets(t *testing.T) {
	t.Parallel()
	b := setupDestinations(t)
	sub := newDestSub(t, kafkaWithSASL)
	_, err := b.svc.Create(t.Context(), sub, nil)
	require.NoError(t, err)

	// "***" sent back keeps the stored secret.
	next, err := b.patch(t, sub.ID, `{"destination":{"type":"kafka","brokers":["kafka.example:9092"],"topic":"orders2",
		"sasl":{"mechanism":"PLAIN","username":"gw","password":"***"}}}`)
	require.NoError(t, err)
	require.Equal(t, "kafka://kafka.example:9092/orders2", next.TargetURL)
	stored, err := b.store.SubscriptionGetByID(t.Context(), sub.ID)
	require.NoError(t, err)
	require.Contains(t, string(stored.Destination), `"password":"sasl-secret-1"`)
	require.Contains(t, string(stored.Destination), `"orders2"`)

	// A PATCH without destination keeps it as stored.
	_, err = b.patch(t, sub.ID, `{"name":"renamed"}`)
	require.NoError(t, err)
	stored, err = b.store.SubscriptionGetByID(t.Context(), sub.ID)
	require.NoError(t, err)
	require.Contains(t, string(stored.Destination), `"password":"sasl-secret-1"`)

	// A new broker address with "***": the secret must be given again.
	_, err = b.patch(t, sub.ID, `{"destination":{"type":"kafka","brokers":["elsewhere.example:9092"],"topic":"orders2",
		"sasl":{"mechanism":"PLAIN","username":"gw","password":"***"}}}`)
	rej := requireRejection(t, err)
	require.Equal(t, []string{"/destination/sasl/password"}, pointers(rej))
	stored, err = b.store.SubscriptionGetByID(t.Context(), sub.ID)
	require.NoError(t, err)
	require.Contains(t, string(stored.Destination), "kafka.example:9092", "nothing was stored")

	// Given again, the move is allowed.
	_, err = b.patch(t, sub.ID, `{"destination":{"type":"kafka","brokers":["elsewhere.example:9092"],"topic":"orders2",
		"sasl":{"mechanism":"PLAIN","username":"gw","password":"sasl-secret-2"}}}`)
	require.NoError(t, err)

	// A PATCH that makes the destination break a rule of its type is
	// refused at the pointer of the subscription's member.
	_, err = b.patch(t, sub.ID, `{"headers":{"bad header":"x"}}`)
	_ = requireRejection(t, err)

	// Back to an HTTP target: destination null, target given.
	next, err = b.patch(t, sub.ID, `{"destination":null,"target":"https://example.com/h"}`)
	require.NoError(t, err)
	require.Nil(t, next.Destination)
	require.Empty(t, next.TargetURL)
	require.Equal(t, "https://example.com/h", next.JobSettings().Target)
}

func TestDestinationTypeFilter(t *testing.T) {
	t.Parallel()
	b := setupDestinations(t)
	for _, body := range []string{
		kafkaWithSASL,
		`{"code":"n","eventTypes":[{"eventTypeCode":"a.b"}],"destination":{"type":"nats","url":"nats://n.example:4222","subject":"s"}}`,
		`{"code":"w","eventTypes":[{"eventTypeCode":"a.b"}],"target":"https://example.com/h"}`,
		`{"code":"p","eventTypes":[{"eventTypeCode":"a.b"}],"delivery":"pull"}`,
	} {
		_, err := b.svc.Create(t.Context(), newDestSub(t, body), nil)
		require.NoError(t, err)
	}
	codes := func(kind string) []string {
		subs, err := b.svc.ListReceiving(t.Context(), &subscription.ListParams{DestinationType: kind})
		require.NoError(t, err)
		var out []string
		for _, s := range subs {
			out = append(out, s.Code)
		}
		return out
	}
	require.Equal(t, []string{"k"}, codes("kafka"))
	require.Equal(t, []string{"n"}, codes("nats"))
	require.Equal(t, []string{"w"}, codes("webhook"))
	require.Empty(t, codes("sqs"))
	require.Len(t, codes(""), 4)
	_, err := b.svc.ListReceiving(t.Context(), &subscription.ListParams{DestinationType: "pigeon"})
	_ = requireRejection(t, err)
}

func requireRejection(t *testing.T, err error) *subscription.Rejection {
	t.Helper()
	rej, ok := errors.AsType[*subscription.Rejection](err)
	require.True(t, ok, "want a *Rejection, got %v", err)
	return rej
}

func pointers(rej *subscription.Rejection) []string {
	out := make([]string, len(rej.Errors))
	for i, e := range rej.Errors {
		out[i] = e.Pointer
	}
	return out
}

func maybeComma(body string) string {
	if body == "" {
		return ""
	}
	return ","
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestDestinationWithTransformation: a destination takes an enabled
// transformation (API.md §16: the broker transport runs it); its code is
// still checked.
func TestDestinationWithTransformation(t *testing.T) {
	t.Parallel()
	b := setupDestinations(t)
	const dest = `"destination":{"type":"nats","url":"nats://n.example:4222","subject":"s"}`
	s := newDestSub(t, `{"code":"tr","eventTypes":[{"eventTypeCode":"a.b"}],`+dest+`,
		"transformation":{"code":"function handler(w) { return w; }"}}`)
	_, err := b.svc.Create(t.Context(), s, nil)
	require.NoError(t, err)
	require.True(t, s.Transformation.On())
	got, err := b.svc.Get(t.Context(), s.ID)
	require.NoError(t, err)
	require.True(t, got.Transformation.On(), "stored enabled")

	bad := newDestSub(t, `{"code":"tr2","eventTypes":[{"eventTypeCode":"a.b"}],`+dest+`,
		"transformation":{"code":"function nothing() {}"}}`)
	_, err = b.svc.Create(t.Context(), bad, nil)
	require.Equal(t, []string{"/transformation/code"}, pointers(requireRejection(t, err)))
}
