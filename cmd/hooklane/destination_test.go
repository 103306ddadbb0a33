package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server" //nolint:depguard // the end-to-end test reads back, from an in-process broker, what the gateway published
	natsgo "github.com/nats-io/nats.go"        //nolint:depguard // (see above)
	"github.com/nats-io/nats.go/jetstream"     //nolint:depguard // (see above)
	amqp "github.com/rabbitmq/amqp091-go"      //nolint:depguard // (see above)
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake" //nolint:depguard // (see above)
	"github.com/twmb/franz-go/pkg/kgo"   //nolint:depguard // (see above)
)

// newKafka starts franz-go's in-process Kafka cluster on 127.0.0.1 with
// topics of three partitions.
func newKafka(t *testing.T, topics ...string) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topics...))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// readKafka reads n records of topic from the start.
func readKafka(t *testing.T, seed, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "%d of %d records of %s before the deadline", len(out), n, topic)
		out = append(out, fs.Records()...)
	}
	return out
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// TestDestinationKafkaEndToEnd: a subscription with a kafka destination
// delivers through the product to kfake — the stored CloudEvent in
// structured mode, the record key the job's message group, the job id and
// attempt as headers; the three ordering modes keep each group's order;
// the job shows the destination's targetUrl, no status code and the
// broker's answer; ?destinationType= lists by kind.
func TestDestinationKafkaEndToEnd(t *testing.T) {
	t.Parallel()
	modes := []string{"IMMEDIATE", "NEXT_ON_ERROR", "BLOCK_ON_ERROR"}
	var topics []string
	for _, m := range modes {
		topics = append(topics, "orders-"+strings.ToLower(m))
	}
	seed := newKafka(t, topics...)
	gw := startGateway(t, nil)
	status, _, _ := gw.do(t, "POST", "/api/event-types", "application/json", `{"code":"shop.order.created","name":"Order created"}`, nil)
	require.Equal(t, http.StatusCreated, status)
	for i, m := range modes {
		status, _, sub := gw.do(t, "POST", "/api/subscriptions", "application/json", fmt.Sprintf(
			`{"code":"k-%s","mode":%q,"eventTypes":[{"eventTypeCode":"shop.order.*"}],
			  "destination":{"type":"kafka","brokers":[%q],"topic":%q}}`, strings.ToLower(m), m, seed, topics[i]), nil)
		require.Equal(t, http.StatusCreated, status, "%v", sub)
		require.Equal(t, "kafka://"+seed+"/"+topics[i], sub["targetUrl"])
		require.Equal(t, "kafka", sub["destination"].(map[string]any)["type"])
	}

	const groups, perGroup = 3, 8
	jobIDs := map[string]bool{}
	for i := range groups * perGroup {
		g := i % groups
		status, _, ev := gw.do(t, "POST", "/api/events", "application/cloudevents+json", fmt.Sprintf(
			`{"specversion":"1.0","id":"e-%d","source":"/shop","type":"shop.order.created","subject":"order:%d","data":{"n":%d}}`, i, g, i), nil)
		require.Equal(t, http.StatusCreated, status, "%v", ev)
		for _, j := range ev["dispatchJobs"].([]any) {
			jobIDs[j.(map[string]any)["id"].(string)] = true
		}
	}
	require.Len(t, jobIDs, groups*perGroup*len(modes))

	var someJob string
	for i, m := range modes {
		recs := readKafka(t, seed, topics[i], groups*perGroup)
		require.Len(t, recs, groups*perGroup, m)
		last := map[string]int{}
		for _, r := range recs {
			require.Equal(t, "application/cloudevents+json", header(r, "content-type"))
			require.Equal(t, "1", header(r, "hooklane-attempt"))
			id := header(r, "hooklane-job-id")
			require.True(t, jobIDs[id], "the record names its job: %q", id)
			someJob = id
			var ce struct {
				ID      string `json:"id"`
				Subject string `json:"subject"`
				Data    struct {
					N int `json:"n"`
				} `json:"data"`
			}
			require.NoError(t, json.Unmarshal(r.Value, &ce))
			require.Equal(t, "k-"+strings.ToLower(m)+":"+ce.Subject, string(r.Key), "the record key is the job's message group")
			if m != "IMMEDIATE" {
				// An ordered mode delivers a group one event at a time,
				// in order; the key keeps the group on one partition.
				prev, seen := last[string(r.Key)]
				require.True(t, !seen || prev < ce.Data.N, "%s: %s after %d in group %s", m, ce.ID, prev, r.Key)
			}
			last[string(r.Key)] = ce.Data.N
		}
		require.Len(t, last, groups)
	}

	job := gw.waitJob(t, someJob, "COMPLETED")
	require.True(t, strings.HasPrefix(job["targetUrl"].(string), "kafka://"+seed+"/orders-"), job["targetUrl"])
	attempt := job["attempts"].([]any)[0].(map[string]any)
	require.Nil(t, attempt["statusCode"], "a broker attempt has no HTTP status")
	require.Contains(t, attempt["responseBody"], "partition", "the broker's answer is recorded")

	for kind, want := range map[string]int{"kafka": 3, "nats": 0, "webhook": 0} {
		status, _, page := gw.do(t, "GET", "/api/subscriptions?destinationType="+kind, "", "", nil)
		require.Equal(t, http.StatusOK, status, "%v", page)
		require.Len(t, page["items"], want, kind)
	}
	status, hdr, got := gw.do(t, "GET", "/api/subscriptions?destinationType=carrier-pigeon", "", "", nil)
	requireProblem(t, status, hdr, got, http.StatusUnprocessableEntity, "-")
}

// newNATS starts an in-process nats-server with JetStream on 127.0.0.1
// that requires token.
func newNATS(t *testing.T, token string) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true, Authorization: token,
	})
	require.NoError(t, err)
	go s.Start()
	require.True(t, s.ReadyForConnections(10*time.Second), "nats-server did not start")
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

func natsStream(t *testing.T, nc *natsgo.Conn, subject string) {
	t.Helper()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	_, err = js.CreateStream(t.Context(), jetstream.StreamConfig{
		Name: "S_" + strings.NewReplacer(".", "_", "*", "x", ">", "y").Replace(subject), Subjects: []string{subject}, Storage: jetstream.MemoryStorage,
	})
	require.NoError(t, err)
}

// TestDestinationNATSEndToEnd: a nats destination with a token, dataOnly
// and a header — binary content mode with ce- headers, Nats-Msg-Id the job
// id; the token shown "***" and kept by a PATCH that sends "***" back
// (the next delivery still authenticates), refused when the PATCH moves
// the broker; a subject without a stream fails the attempt (no status
// code, the broker's answer), and the retry delivers once the stream
// exists.
func TestDestinationNATSEndToEnd(t *testing.T) {
	t.Parallel()
	const token = "nats-token-s3cret"
	ns := newNATS(t, token)
	nc, err := natsgo.Connect(ns.ClientURL(), natsgo.Token(token), natsgo.Timeout(5*time.Second))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	natsStream(t, nc, "orders.>")
	inbox, err := nc.SubscribeSync("orders.>")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())

	gw := startGateway(t, nil)
	status, _, _ := gw.do(t, "POST", "/api/event-types", "application/json", `{"code":"shop.order.created","name":"Order created"}`, nil)
	require.Equal(t, http.StatusCreated, status)
	url := ns.ClientURL()
	status, _, sub := gw.do(t, "POST", "/api/subscriptions", "application/json", fmt.Sprintf(
		`{"code":"n","dataOnly":true,"headers":{"X-Team":"orders"},"retry":{"maxAttempts":20,"initialBackoffSeconds":1,"maxBackoffSeconds":1},
		  "eventTypes":[{"eventTypeCode":"shop.order.created"}],
		  "destination":{"type":"nats","url":%q,"subject":"orders.created","token":%q}}`, url, token), nil)
	require.Equal(t, http.StatusCreated, status, "%v", sub)
	id := sub["id"].(string)
	require.Equal(t, "***", sub["destination"].(map[string]any)["token"])
	require.NotContains(t, mustMarshal(t, sub), token)
	require.Equal(t, url+"/orders.created", sub["targetUrl"])

	post := func(n int) string {
		t.Helper()
		status, _, ev := gw.do(t, "POST", "/api/events", "application/cloudevents+json", fmt.Sprintf(
			`{"specversion":"1.0","id":"n-%d","source":"/shop","type":"shop.order.created","data":{"n":%d}}`, n, n), nil)
		require.Equal(t, http.StatusCreated, status, "%v", ev)
		return ev["dispatchJobs"].([]any)[0].(map[string]any)["id"].(string)
	}
	job := post(1)
	msg, err := inbox.NextMsg(30 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "orders.created", msg.Subject)
	require.JSONEq(t, `{"n":1}`, string(msg.Data), "dataOnly: the body is the data")
	require.Equal(t, "application/json", msg.Header.Get("content-type"))
	require.Equal(t, "n-1", msg.Header.Get("ce-id"))
	require.Equal(t, "shop.order.created", msg.Header.Get("ce-type"))
	require.Equal(t, "/shop", msg.Header.Get("ce-source"))
	require.Equal(t, job, msg.Header.Get("Nats-Msg-Id"))
	require.Equal(t, "1", msg.Header.Get("hooklane-attempt"))
	require.Equal(t, "orders", msg.Header.Get("X-Team"))

	// "***" keeps the token: the next delivery still authenticates.
	status, _, got := gw.do(t, "PATCH", "/api/subscriptions/"+id, "application/json", fmt.Sprintf(
		`{"destination":{"type":"nats","url":%q,"subject":"orders.patched","token":"***"}}`, url), nil)
	require.Equal(t, http.StatusOK, status, "%v", got)
	require.Equal(t, "***", got["destination"].(map[string]any)["token"])
	post(2)
	msg, err = inbox.NextMsg(30 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "orders.patched", msg.Subject)

	// Moving the broker needs the token again.
	status, hdr, got := gw.do(t, "PATCH", "/api/subscriptions/"+id, "application/json",
		`{"destination":{"type":"nats","url":"nats://127.0.0.2:4222","subject":"orders.patched","token":"***"}}`, nil)
	requireProblem(t, status, hdr, got, http.StatusUnprocessableEntity, "/destination/token")

	// No stream for the subject: a failed attempt, retried until the
	// stream exists.
	status, _, got = gw.do(t, "PATCH", "/api/subscriptions/"+id, "application/json", fmt.Sprintf(
		`{"destination":{"type":"nats","url":%q,"subject":"late.created","token":"***"}}`, url), nil)
	require.Equal(t, http.StatusOK, status, "%v", got)
	late := post(3)
	var failed map[string]any
	require.Eventually(t, func() bool {
		_, _, failed = gw.do(t, "GET", "/api/dispatch-jobs/"+late, "", "", nil)
		a, _ := failed["attempts"].([]any)
		return len(a) > 0
	}, 30*time.Second, 20*time.Millisecond)
	first := failed["attempts"].([]any)[0].(map[string]any)
	require.Nil(t, first["statusCode"])
	require.NotEmpty(t, first["error"], "the broker's answer")
	require.NotContains(t, first["error"], token)
	natsStream(t, nc, "late.>")
	done := gw.waitJob(t, late, "COMPLETED")
	require.GreaterOrEqual(t, done["attemptCount"], float64(2))
}

// TestDestinationRejectedByTheAPI: §15's 422 pointers through the API.
func TestDestinationRejectedByTheAPI(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil)
	const base = `"code":"c","eventTypes":[{"eventTypeCode":"shop.order.created"}]`
	tests := []struct{ name, fields, pointer string }{
		{"both", `,"target":"https://example.com/h","destination":{"type":"nats","url":"nats://127.0.0.1:4222","subject":"s"}`, "/destination"},
		{"neither", ``, "/destination"},
		{"unknown type", `,"destination":{"type":"pigeon"}`, "/destination/type"},
		{"missing topic", `,"destination":{"type":"kafka","brokers":["127.0.0.1:9092"]}`, "/destination/topic"},
		{"bad broker", `,"destination":{"type":"kafka","brokers":["127.0.0.1"],"topic":"t"}`, "/destination/brokers/0"},
		{"sqs dataOnly", `,"dataOnly":true,"destination":{"type":"sqs","queueUrl":"http://127.0.0.1:4566/000000000000/q","region":"us-east-1"}`, "/dataOnly"},
		{"amqp url scheme", `,"destination":{"type":"rabbitmq","url":"http://127.0.0.1:5672","exchange":""}`, "/destination/url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, hdr, got := gw.do(t, "POST", "/api/subscriptions", "application/json", "{"+base+tt.fields+"}", nil)
			requireProblem(t, status, hdr, got, http.StatusUnprocessableEntity, tt.pointer)
		})
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestDestinationRabbitMQEndToEnd: a rabbitmq destination on the local
// stack's RabbitMQ — the structured event on the queue with message_id
// the job id; a routing key no queue takes is returned (mandatory): a
// failed attempt, retried until the queue exists; the password in the url
// is masked.
func TestDestinationRabbitMQEndToEnd(t *testing.T) {
	t.Parallel()
	amqpURL := cmp.Or(os.Getenv("HOOKLANE_TEST_AMQP_URL"), "amqp://guest:guest@127.0.0.1:5673/")
	conn, err := amqp.Dial(amqpURL)
	require.NoError(t, err, "the local stack's RabbitMQ (make test starts it)")
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	require.NoError(t, err)
	queue := "hooklane-e2e-" + faultSuffix()
	t.Cleanup(func() { _, _ = ch.QueueDelete(queue, false, false, false) })

	gw := startGateway(t, nil)
	status, _, _ := gw.do(t, "POST", "/api/event-types", "application/json", `{"code":"shop.order.created","name":"Order created"}`, nil)
	require.Equal(t, http.StatusCreated, status)
	status, _, sub := gw.do(t, "POST", "/api/subscriptions", "application/json", fmt.Sprintf(
		`{"code":"r","retry":{"maxAttempts":20,"initialBackoffSeconds":1,"maxBackoffSeconds":1},
		  "eventTypes":[{"eventTypeCode":"shop.order.created"}],
		  "destination":{"type":"rabbitmq","url":%q,"exchange":"","routingKey":%q}}`, amqpURL, queue), nil)
	require.Equal(t, http.StatusCreated, status, "%v", sub)
	require.Contains(t, sub["destination"].(map[string]any)["url"], ":***@")
	require.True(t, strings.HasPrefix(sub["targetUrl"].(string), "amqp://"), sub["targetUrl"])

	// No queue yet: the broker returns the message, the attempt fails.
	status, _, ev := gw.do(t, "POST", "/api/events", "application/cloudevents+json",
		`{"specversion":"1.0","id":"r-1","source":"/shop","type":"shop.order.created","data":{"n":1}}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", ev)
	job := ev["dispatchJobs"].([]any)[0].(map[string]any)["id"].(string)
	require.Eventually(t, func() bool {
		_, _, j := gw.do(t, "GET", "/api/dispatch-jobs/"+job, "", "", nil)
		a, _ := j["attempts"].([]any)
		return len(a) > 0 && a[0].(map[string]any)["error"] != nil
	}, 30*time.Second, 20*time.Millisecond)
	_, err = ch.QueueDeclare(queue, false, true, false, false, nil)
	require.NoError(t, err)
	done := gw.waitJob(t, job, "COMPLETED")
	require.GreaterOrEqual(t, done["attemptCount"], float64(2))

	var msg amqp.Delivery
	require.Eventually(t, func() bool {
		var ok bool
		msg, ok, err = ch.Get(queue, true)
		require.NoError(t, err)
		return ok
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, job, msg.MessageId)
	require.Equal(t, "application/cloudevents+json", msg.ContentType)
	var ce map[string]any
	require.NoError(t, json.Unmarshal(msg.Body, &ce))
	require.Equal(t, "r-1", ce["id"])
}

// TestDestinationTransformEndToEnd: a nats destination with an enabled
// transformation (API.md §16) is accepted; the handler reshapes the
// message (renamed fields as an application/json body, a header added),
// cancels a delivery (the job CANCELLED, nothing published) and fails one
// (a thrown error: the job ERROR after one attempt, nothing published).
func TestDestinationTransformEndToEnd(t *testing.T) {
	t.Parallel()
	ns := newNATS(t, "")
	nc, err := natsgo.Connect(ns.ClientURL(), natsgo.Timeout(5*time.Second))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	natsStream(t, nc, "shipments.>")
	inbox, err := nc.SubscribeSync("shipments.>")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())

	gw := startGateway(t, nil)
	status, _, _ := gw.do(t, "POST", "/api/event-types", "application/json", `{"code":"shop.order.created","name":"Order created"}`, nil)
	require.Equal(t, http.StatusCreated, status)
	const code = `function handler(w) {
  var n = w.payload.data.n;
  if (n === 2) { w.cancel = true; return w; }
  if (n === 3) { throw new Error("no shipment for " + n); }
  var h = w.headers;
  h["x-shipment"] = "s-" + n;
  return {payload: {orderNumber: n, eventType: w.eventType}, headers: h};
}`
	status, _, sub := gw.do(t, "POST", "/api/subscriptions", "application/json", fmt.Sprintf(
		`{"code":"tn","headers":{"X-Team":"orders"},"retry":{"maxAttempts":5,"initialBackoffSeconds":1,"maxBackoffSeconds":1},
		  "eventTypes":[{"eventTypeCode":"shop.order.created"}],
		  "destination":{"type":"nats","url":%q,"subject":"shipments.created"},
		  "transformation":{"code":%s}}`, ns.ClientURL(), mustMarshal(t, code)), nil)
	require.Equal(t, http.StatusCreated, status, "%v", sub)

	post := func(n int) string {
		t.Helper()
		status, _, ev := gw.do(t, "POST", "/api/events", "application/cloudevents+json", fmt.Sprintf(
			`{"specversion":"1.0","id":"t-%d","source":"/shop","type":"shop.order.created","data":{"n":%d}}`, n, n), nil)
		require.Equal(t, http.StatusCreated, status, "%v", ev)
		return ev["dispatchJobs"].([]any)[0].(map[string]any)["id"].(string)
	}
	job := post(1)
	msg, err := inbox.NextMsg(30 * time.Second)
	require.NoError(t, err)
	require.JSONEq(t, `{"orderNumber":1,"eventType":"shop.order.created"}`, string(msg.Data))
	require.Equal(t, "application/json", msg.Header.Get("content-type"))
	require.Equal(t, "s-1", msg.Header.Get("x-shipment"))
	require.Equal(t, "orders", msg.Header.Get("x-team"))
	require.Equal(t, job, msg.Header.Get("Nats-Msg-Id"))
	gw.waitJob(t, job, "COMPLETED")

	cancelled := gw.waitJob(t, post(2), "CANCELLED")
	require.Zero(t, cancelled["attemptCount"])
	failed := gw.waitJob(t, post(3), "ERROR")
	require.EqualValues(t, 1, failed["attemptCount"], "not retried")
	require.Contains(t, failed["lastError"], "no shipment for 3")

	// Nothing was published for 2 and 3: the next message is 4's.
	post(4)
	msg, err = inbox.NextMsg(30 * time.Second)
	require.NoError(t, err)
	require.JSONEq(t, `{"orderNumber":4,"eventType":"shop.order.created"}`, string(msg.Data))
}
