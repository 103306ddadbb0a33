package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	gpubsub "cloud.google.com/go/pubsub/v2"           //nolint:depguard // the end-to-end test reads back, from an in-process broker, what the gateway published
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb" //nolint:depguard // (see above)
	"cloud.google.com/go/pubsub/v2/pstest"            //nolint:depguard // (see above)
	"github.com/stretchr/testify/require"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestDestinationPubSubEndToEnd: a subscription with a pubsub destination
// whose endpoint is Pub/Sub's in-process fake (pstest, on 127.0.0.1)
// delivers through the product: events of two message groups arrive, each
// group in ingest order, every message with the ordering key = the job's
// message group ({subscription code}:{messagegroup}), the stored
// CloudEvent as its data and §15's attributes (content-type, the job id
// and attempt, the subscription's headers); the job shows the pubsub://
// targetUrl, no status code and the publish's message id;
// ?destinationType=pubsub lists it and no other kind.
func TestDestinationPubSubEndToEnd(t *testing.T) {
	t.Parallel()
	const project, topic = "hooklane-e2e", "orders"
	srv := pstest.NewServerWithAddress("127.0.0.1:0")
	t.Cleanup(func() { _ = srv.Close() })
	client, err := gpubsub.NewClient(t.Context(), project, option.WithEndpoint(srv.Addr), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	topicName := "projects/" + project + "/topics/" + topic
	_, err = client.TopicAdminClient.CreateTopic(t.Context(), &pb.Topic{Name: topicName})
	require.NoError(t, err)
	subName := "projects/" + project + "/subscriptions/" + topic
	_, err = client.SubscriptionAdminClient.CreateSubscription(t.Context(), &pb.Subscription{
		Name: subName, Topic: topicName, EnableMessageOrdering: true, AckDeadlineSeconds: 60,
	})
	require.NoError(t, err)
	got := make(chan *gpubsub.Message, 64)
	rctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = client.Subscriber(subName).Receive(rctx, func(_ context.Context, m *gpubsub.Message) {
			m.Ack()
			got <- m
		})
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})

	gw := startGateway(t, nil)
	status, _, _ := gw.do(t, "POST", "/api/event-types", "application/json", `{"code":"shop.order.created","name":"Order created"}`, nil)
	require.Equal(t, http.StatusCreated, status)
	status, _, sub := gw.do(t, "POST", "/api/subscriptions", "application/json", fmt.Sprintf(
		`{"code":"ps","mode":"NEXT_ON_ERROR","headers":{"X-Team":"orders"},"eventTypes":[{"eventTypeCode":"shop.order.created"}],
		  "destination":{"type":"pubsub","project":%q,"topic":%q,"endpoint":%q}}`, project, topic, srv.Addr), nil)
	require.Equal(t, http.StatusCreated, status, "%v", sub)
	require.Equal(t, "pubsub://"+project+"/"+topic, sub["targetUrl"])
	require.Equal(t, "pubsub", sub["destination"].(map[string]any)["type"])

	groups := []string{"order-a", "order-b"}
	const perGroup = 6
	jobIDs := postGroupedEvents(t, gw, groups, perGroup)

	last := map[string]int{}
	count := map[string]int{}
	var someJob string
	deadline := time.After(60 * time.Second)
	for range perGroup * len(groups) {
		var m *gpubsub.Message
		select {
		case m = <-got:
		case <-deadline:
			require.FailNow(t, "messages missing", "%v of %d arrived", count, perGroup*len(groups))
		}
		var ce struct {
			ID           string `json:"id"`
			MessageGroup string `json:"messagegroup"`
			Data         struct {
				N int `json:"n"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(m.Data, &ce), "the data is the stored CloudEvent: %s", m.Data)
		require.Equal(t, "ps:"+ce.MessageGroup, m.OrderingKey, "the ordering key is the job's message group")
		require.Equal(t, "application/cloudevents+json", m.Attributes["content-type"])
		require.Equal(t, "1", m.Attributes["hooklane-attempt"])
		id := m.Attributes["hooklane-job-id"]
		require.True(t, jobIDs[id], "the message names its job: %q", id)
		someJob = id
		team := ""
		for k, v := range m.Attributes {
			if strings.EqualFold(k, "x-team") {
				team = v
			}
		}
		require.Equal(t, "orders", team, "the subscription's headers go along as attributes: %v", m.Attributes)
		for k := range m.Attributes {
			require.False(t, strings.HasPrefix(k, "ce-"), "structured mode carries no ce- attributes: %s", k)
		}
		prev, seen := last[m.OrderingKey]
		require.True(t, !seen || prev < ce.Data.N, "%s after %d in group %s", ce.ID, prev, m.OrderingKey)
		last[m.OrderingKey] = ce.Data.N
		count[m.OrderingKey]++
	}
	require.Equal(t, map[string]int{"ps:order-a": perGroup, "ps:order-b": perGroup}, count)

	job := gw.waitJob(t, someJob, "COMPLETED")
	require.Equal(t, "pubsub://"+project+"/"+topic, job["targetUrl"])
	attempt := job["attempts"].([]any)[0].(map[string]any)
	require.Nil(t, attempt["statusCode"], "a broker attempt has no HTTP status")
	require.NotEmpty(t, attempt["responseBody"], "the publish's message id is recorded")

	for kind, want := range map[string]int{"pubsub": 1, "kafka": 0, "webhook": 0} {
		status, _, page := gw.do(t, "GET", "/api/subscriptions?destinationType="+kind, "", "", nil)
		require.Equal(t, http.StatusOK, status, "%v", page)
		require.Len(t, page["items"], want, kind)
	}
}

// postGroupedEvents posts perGroup shop.order.created events to each of
// groups, interleaved (event i in groups[i%len(groups)], its data {"n": i}),
// each answered 201 with one dispatch job, and returns the jobs' ids.
func postGroupedEvents(t *testing.T, gw *gateway, groups []string, perGroup int) map[string]bool {
	t.Helper()
	jobIDs := map[string]bool{}
	for i := range perGroup * len(groups) {
		g := groups[i%len(groups)]
		status, _, ev := gw.do(t, "POST", "/api/events", "application/cloudevents+json", fmt.Sprintf(
			`{"specversion":"1.0","id":"e-%d","source":"/shop","type":"shop.order.created","messagegroup":%q,"data":{"n":%d}}`, i, g, i), nil)
		require.Equal(t, http.StatusCreated, status, "%v", ev)
		for _, j := range ev["dispatchJobs"].([]any) {
			jobIDs[j.(map[string]any)["id"].(string)] = true
		}
	}
	require.Len(t, jobIDs, perGroup*len(groups))
	return jobIDs
}
