package pubsub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	gpubsub "cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/stretchr/testify/require"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/hooklane/hooklane/destination"
	"github.com/hooklane/hooklane/destination/pubsub"
	"github.com/hooklane/hooklane/destination/transporttest"
)

var _ destination.Type = pubsub.Type{}

const project = "hooklane-test"

// TestConformance runs the transport suite on Pub/Sub's in-process fake
// (pstest), on 127.0.0.1.
func TestConformance(t *testing.T) {
	t.Parallel()
	srv := pstest.NewServerWithAddress("127.0.0.1:0")
	t.Cleanup(func() { _ = srv.Close() })
	admin := newClient(t, srv.Addr)
	var n atomic.Int64
	transporttest.Run(t, &transporttest.Harness{
		Type: pubsub.Type{},
		Features: transporttest.Features{
			Binary:        true,
			AttrPrefix:    "ce-",
			ContentType:   "header:content-type",
			JobID:         "header:hooklane-job-id",
			Group:         "property:orderingKey",
			MaxBody:       1 << 20,
			NoCredentials: true,
		},
		NewTarget: func(t *testing.T, o transporttest.TargetOptions) *transporttest.Target {
			t.Helper()
			return target(t, admin, srv.Addr, fmt.Sprintf("topic-%d", n.Add(1)), o.Ordered)
		},
		NewOutage: func(t *testing.T) *transporttest.Outage {
			t.Helper()
			p := transporttest.NewProxy(t, srv.Addr)
			return &transporttest.Outage{Target: target(t, admin, p.Addr(), fmt.Sprintf("outage-%d", n.Add(1)), false), Stop: p.Stop, Start: p.Start}
		},
		NewMissing: func(t *testing.T) json.RawMessage {
			t.Helper()
			return raw(srv.Addr, fmt.Sprintf("missing-%d", n.Add(1)), "")
		},
		AtAddress: func(t *testing.T, addr, secret string) json.RawMessage {
			t.Helper()
			return raw(addr, "topic", fmt.Sprintf(`{"type": "service_account", "private_key": %q}`, secret))
		},
	})
}

func TestDecode(t *testing.T) {
	t.Parallel()
	reg := destination.NewRegistry(pubsub.Type{})
	for raw, want := range map[string]string{
		`{"type": "pubsub", "project": "Bad_Project", "topic": "orders"}`:                       "/destination/project",
		`{"type": "pubsub", "project": "acme-prod", "topic": "goog-orders"}`:                    "/destination/topic",
		`{"type": "pubsub", "project": "acme-prod", "topic": "orders", "endpoint": "h"}`:        "/destination/endpoint",
		`{"type": "pubsub", "project": "acme-prod", "topic": "orders", "credentialsJson": "x"}`: "/destination/credentialsJson",
		`{"type": "pubsub", "topic": "orders"}`:                                                 "/destination/project",
	} {
		_, err := reg.Decode(&destination.DecodeParams{Raw: json.RawMessage(raw)})
		var ve *destination.ValidationError
		require.ErrorAs(t, err, &ve, raw)
		require.Equal(t, want, ve.Problems[0].Pointer, raw)
	}
	d, err := reg.Decode(&destination.DecodeParams{Raw: json.RawMessage(`{"type": "pubsub", "project": "acme-prod", "topic": "orders", "credentialsJson": "{\"type\": \"service_account\"}"}`)})
	require.NoError(t, err)
	require.Equal(t, "pubsub://acme-prod/orders", d.TargetURL())
	require.JSONEq(t, `{"type": "pubsub", "project": "acme-prod", "topic": "orders", "credentialsJson": "***"}`, string(d.Masked()))
	require.Empty(t, d.Config.Addresses(), "Google's endpoint is public")
}

// target creates a topic and a subscription of it (with message ordering
// when ordered) and returns a destination reaching it through endpoint.
func target(t *testing.T, admin *gpubsub.Client, endpoint, topic string, ordered bool) *transporttest.Target {
	t.Helper()
	ctx := t.Context()
	topicName := "projects/" + project + "/topics/" + topic
	_, err := admin.TopicAdminClient.CreateTopic(ctx, &pb.Topic{Name: topicName})
	require.NoError(t, err)
	subName := "projects/" + project + "/subscriptions/" + topic
	_, err = admin.SubscriptionAdminClient.CreateSubscription(ctx, &pb.Subscription{Name: subName, Topic: topicName, EnableMessageOrdering: ordered, AckDeadlineSeconds: 60})
	require.NoError(t, err)
	got := make(chan *transporttest.Received, 256)
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = admin.Subscriber(subName).Receive(rctx, func(_ context.Context, m *gpubsub.Message) {
			m.Ack()
			got <- &transporttest.Received{Body: m.Data, Headers: m.Attributes, Properties: map[string]string{"orderingKey": m.OrderingKey}}
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return &transporttest.Target{
		Raw: raw(endpoint, topic, ""),
		Receive: func(t *testing.T) *transporttest.Received {
			t.Helper()
			select {
			case r := <-got:
				return r
			case <-time.After(transporttest.ReceiveDeadline):
				require.FailNow(t, "no message before the deadline")
				return nil
			}
		},
	}
}

func raw(endpoint, topic, credentials string) json.RawMessage {
	d := map[string]any{"type": "pubsub", "project": project, "topic": topic, "endpoint": endpoint}
	if credentials != "" {
		d["credentialsJson"] = credentials
	}
	out, err := json.Marshal(d)
	if err != nil {
		panic(err)
	}
	return out
}

func newClient(t *testing.T, addr string) *gpubsub.Client {
	t.Helper()
	c, err := gpubsub.NewClient(t.Context(), project, option.WithEndpoint(addr), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
