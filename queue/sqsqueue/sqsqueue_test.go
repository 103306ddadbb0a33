package sqsqueue_test

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/queue/queuetest"
	"github.com/hooklane/hooklane/queue/sqsqueue"
)

var _ queue.Queue = (*sqsqueue.Queue)(nil)

// No goleak here: the package starts no goroutines, and the SDK's HTTP
// transport keeps idle-connection goroutines alive past the tests.

// features are where SQS FIFO (and fauxqs, the local server) differ from the
// strictest queue.
var features = queuetest.Features{ //nolint:gochecknoglobals // read-only test fixture
	DedupWindow:           5 * time.Minute,
	VisibilityGranularity: time.Second,
	MaxWait:               sqsqueue.MaxWait,
	// One ReceiveMessage may return several messages of one group.
	GroupBatch: true,
	// SQS accepts a Delete with a superseded handle ("the request succeeds,
	// but the message will not be deleted").
	LaxReceipts: true,
	// fauxqs ignores unknown handles on DeleteMessage, where SQS answers
	// ReceiptHandleIsInvalid; TestTranslate covers the adapter's mapping of
	// that answer.
	LaxMalformedDelete: true,
}

// testEndpoint is the SQS-compatible server the tests use; localstack/stack.sh
// starts one at the default.
func testEndpoint() string {
	return cmp.Or(os.Getenv("HOOKLANE_TEST_SQS_ENDPOINT"), "http://127.0.0.1:4566")
}

// testClient returns a client for the test server with static dummy
// credentials.
func testClient() *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(testEndpoint()),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

// uniqueName returns a fresh queue name with prefix; FIFO names end in .fifo.
func uniqueName(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b) + ".fifo"
}

// testLogger sends the adapter's logs to t.Log.
func testLogger(t testing.TB) *slog.Logger {
	t.Helper()
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// testBundle is what a test gets from setup.
type testBundle struct {
	client *sqs.Client
	url    string
	queue  *sqsqueue.Queue
}

// setup creates a fresh FIFO queue (with p) and deletes it when tb ends.
func setup(tb testing.TB, p sqsqueue.CreateQueueParams) *testBundle {
	tb.Helper()
	client := testClient()
	url, err := sqsqueue.CreateQueue(tb.Context(), client, uniqueName("hooklane-test"), p)
	require.NoError(tb, err, "create a queue at %s (is the stack running? localstack/stack.sh start)", testEndpoint())
	tb.Cleanup(func() { deleteQueue(tb, client, url) })
	if p.DLQName != "" {
		dlqURL := queueURL(tb, client, p.DLQName)
		tb.Cleanup(func() { deleteQueue(tb, client, dlqURL) })
	}
	q, err := sqsqueue.New(tb.Context(), sqsqueue.Config{QueueURL: url, Client: client, Logger: testLogger(tb)})
	require.NoError(tb, err)
	return &testBundle{client: client, url: url, queue: q}
}

func deleteQueue(tb testing.TB, client *sqs.Client, url string) {
	tb.Helper()
	// tb.Context is already cancelled when cleanups run.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	require.NoError(tb, err)
}

func queueURL(tb testing.TB, client *sqs.Client, name string) string {
	tb.Helper()
	out, err := client.GetQueueUrl(tb.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	require.NoError(tb, err)
	return aws.ToString(out.QueueUrl)
}

func queueAttributes(tb testing.TB, client *sqs.Client, url string) map[string]string {
	tb.Helper()
	out, err := client.GetQueueAttributes(tb.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	require.NoError(tb, err)
	return out.Attributes
}

func TestConformance(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, features, func(t *testing.T) queue.Queue {
		t.Helper()
		return setup(t, sqsqueue.CreateQueueParams{}).queue
	})
}

func BenchmarkQueue(b *testing.B) {
	queuetest.Benchmark(b, func(b *testing.B) queue.Queue {
		b.Helper()
		return setup(b, sqsqueue.CreateQueueParams{}).queue
	})
}

func TestNewRequiresQueueURL(t *testing.T) {
	t.Parallel()
	_, err := sqsqueue.New(t.Context(), sqsqueue.Config{Client: testClient()})
	require.ErrorContains(t, err, "QueueURL is required")
}

// TestNewFromEnvironment builds the client through the standard AWS
// configuration chain, as production does. Not parallel: it sets the
// environment.
func TestNewFromEnvironment(t *testing.T) {
	b := setup(t, sqsqueue.CreateQueueParams{})
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)

	q, err := sqsqueue.New(t.Context(), sqsqueue.Config{QueueURL: b.url, Endpoint: testEndpoint()})
	require.NoError(t, err)
	require.NoError(t, q.Ping(t.Context()))

	// Without an endpoint override and with no region anywhere, New says so.
	_, err = sqsqueue.New(t.Context(), sqsqueue.Config{QueueURL: b.url})
	require.ErrorContains(t, err, "no region configured")

	q, err = sqsqueue.New(t.Context(), sqsqueue.Config{QueueURL: b.url, Endpoint: testEndpoint(), Region: "eu-west-1"})
	require.NoError(t, err)
	require.NoError(t, q.Ping(t.Context()))
}

func TestMissingQueueIsNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t, sqsqueue.CreateQueueParams{})
	// A URL in the same account as a real queue, naming one never created.
	missing := b.url[:strings.LastIndex(b.url, "/")+1] + uniqueName("hooklane-test-missing")
	q, err := sqsqueue.New(t.Context(), sqsqueue.Config{QueueURL: missing, Client: b.client})
	require.NoError(t, err)

	ctx := t.Context()
	require.ErrorIs(t, q.Ping(ctx), queue.ErrNotFound)
	_, err = q.SendBatch(ctx, []queue.OutMessage{{Group: "g", DedupID: "d", Body: []byte("x")}})
	require.ErrorIs(t, err, queue.ErrNotFound)
	_, err = q.Receive(ctx, queue.ReceiveParams{Max: 1})
	require.ErrorIs(t, err, queue.ErrNotFound)
	require.ErrorIs(t, q.Delete(ctx, "handle"), queue.ErrNotFound)
	require.ErrorIs(t, q.ChangeVisibility(ctx, "handle", time.Second), queue.ErrNotFound)
	require.NoError(t, b.queue.Ping(ctx))
}

func TestInvalidArguments(t *testing.T) {
	t.Parallel()
	b := setup(t, sqsqueue.CreateQueueParams{})
	ctx := t.Context()

	_, err := b.queue.SendBatch(ctx, []queue.OutMessage{{Group: "", DedupID: "d"}})
	require.ErrorContains(t, err, "Group and DedupID are required")
	_, err = b.queue.SendBatch(ctx, []queue.OutMessage{{Group: "g", DedupID: ""}})
	require.ErrorContains(t, err, "Group and DedupID are required")

	res, err := b.queue.SendBatch(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, res)

	for _, p := range []queue.ReceiveParams{
		{Max: 0},
		{Max: queue.MaxBatch + 1},
		{Max: 1, Wait: -time.Second},
		{Max: 1, Visibility: sqsqueue.MaxVisibility + time.Second},
	} {
		_, err := b.queue.Receive(ctx, p)
		require.Error(t, err, "%+v", p)
	}
	require.Error(t, b.queue.ChangeVisibility(ctx, "h", -time.Second))
	require.Error(t, b.queue.ChangeVisibility(ctx, "h", sqsqueue.MaxVisibility+time.Second))
}

// TestUnfitIDsRoundTrip sends a group and dedup id SQS cannot take as they
// are (too long, non-ASCII, spaces): dedup still works and Receive returns
// the original group.
func TestUnfitIDsRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t, sqsqueue.CreateQueueParams{})
	group := "tenant ünïcode/" + strings.Repeat("g", 200)
	dedup := strings.Repeat("d", 129)
	out := []queue.OutMessage{
		{Group: group, DedupID: dedup, Body: []byte("first")},
		{Group: group, DedupID: dedup, Body: []byte("duplicate")},
		{Group: group, DedupID: dedup + " other", Body: []byte("second")},
	}
	res, err := b.queue.SendBatch(t.Context(), out)
	require.NoError(t, err)
	require.Len(t, res, len(out))
	for i, r := range res {
		require.NoError(t, r.Err, "entry %d", i)
	}

	var got []string
	for len(got) < 2 {
		msgs, err := b.queue.Receive(t.Context(), queue.ReceiveParams{Max: queue.MaxBatch, Wait: 5 * time.Second})
		require.NoError(t, err)
		require.NotEmpty(t, msgs, "messages went missing; got %v", got)
		for _, m := range msgs {
			require.Equal(t, group, m.Group)
			got = append(got, string(m.Body))
			require.NoError(t, b.queue.Delete(t.Context(), m.ReceiptHandle))
		}
	}
	require.Equal(t, []string{"first", "second"}, got)
	msgs, err := b.queue.Receive(t.Context(), queue.ReceiveParams{Max: queue.MaxBatch})
	require.NoError(t, err)
	require.Empty(t, msgs)
}

// TestBodiesRoundTrip sends bodies SQS cannot take as text next to ones it
// can; every one comes back byte for byte.
func TestBodiesRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t, sqsqueue.CreateQueueParams{})
	bodies := [][]byte{
		[]byte(`{"jobId":"01J","eventId":"e1"}`),
		make([]byte, 512), // NUL bytes
		{0xff, 0xfe, 'x'}, // not UTF-8
		[]byte("tab\tnew line\n ünïcode 🚀"),
		[]byte("\uFFFE"),
	}
	out := make([]queue.OutMessage, len(bodies))
	for i, body := range bodies {
		out[i] = queue.OutMessage{Group: "g", DedupID: strconv.Itoa(i), Body: body}
	}
	res, err := b.queue.SendBatch(t.Context(), out)
	require.NoError(t, err)
	for i, r := range res {
		require.NoError(t, r.Err, "entry %d", i)
	}
	var got [][]byte
	for len(got) < len(bodies) {
		msgs, err := b.queue.Receive(t.Context(), queue.ReceiveParams{Max: queue.MaxBatch, Wait: 5 * time.Second})
		require.NoError(t, err)
		require.NotEmpty(t, msgs, "messages went missing; got %d", len(got))
		for _, m := range msgs {
			got = append(got, m.Body)
			require.NoError(t, b.queue.Delete(t.Context(), m.ReceiptHandle))
		}
	}
	require.Equal(t, bodies, got)
}

// TestSendBatchEntryFailure checks that an entry SQS rejects fails alone,
// as an *EntryError, while the rest of the batch is sent.
func TestSendBatchEntryFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, sqsqueue.CreateQueueParams{})
	_, err := b.client.SetQueueAttributes(t.Context(), &sqs.SetQueueAttributesInput{
		QueueUrl:   aws.String(b.url),
		Attributes: map[string]string{"MaximumMessageSize": "1024"},
	})
	require.NoError(t, err)

	res, err := b.queue.SendBatch(t.Context(), []queue.OutMessage{
		{Group: "g", DedupID: "small", Body: []byte("fits")},
		{Group: "g", DedupID: "large", Body: []byte(strings.Repeat("x", 2048))},
	})
	require.NoError(t, err)
	require.Len(t, res, 2)
	require.NoError(t, res[0].Err)
	var entryErr *sqsqueue.EntryError
	require.ErrorAs(t, res[1].Err, &entryErr)
	require.Equal(t, "InvalidParameterValue", entryErr.Code)
	require.True(t, entryErr.SenderFault)

	msgs, err := b.queue.Receive(t.Context(), queue.ReceiveParams{Max: queue.MaxBatch, Wait: 5 * time.Second})
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, "fits", string(msgs[0].Body))
}

func TestCreateQueueAttributes(t *testing.T) {
	t.Parallel()
	dlqName := uniqueName("hooklane-test-dlq")
	b := setup(t, sqsqueue.CreateQueueParams{DLQName: dlqName})
	attrs := queueAttributes(t, b.client, b.url)
	require.Equal(t, "true", attrs["FifoQueue"])
	require.Equal(t, "false", attrs["ContentBasedDeduplication"])
	require.Equal(t, "messageGroup", attrs["DeduplicationScope"])
	require.Equal(t, "perMessageGroupId", attrs["FifoThroughputLimit"])
	require.Equal(t, "120", attrs["VisibilityTimeout"])

	dlqAttrs := queueAttributes(t, b.client, queueURL(t, b.client, dlqName))
	require.Equal(t, "true", dlqAttrs["FifoQueue"])
	var policy struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     any    `json:"maxReceiveCount"`
	}
	require.NoError(t, json.Unmarshal([]byte(attrs["RedrivePolicy"]), &policy))
	require.Equal(t, dlqAttrs["QueueArn"], policy.DeadLetterTargetArn)
	require.Equal(t, "10", toString(policy.MaxReceiveCount))

	// Creating it again with the same attributes is fine and returns the URL.
	name := b.url[strings.LastIndex(b.url, "/")+1:]
	again, err := sqsqueue.CreateQueue(t.Context(), b.client, name, sqsqueue.CreateQueueParams{DLQName: dlqName})
	require.NoError(t, err)
	require.Equal(t, b.url, again)

	_, err = sqsqueue.CreateQueue(t.Context(), b.client, "not-fifo", sqsqueue.CreateQueueParams{})
	require.ErrorContains(t, err, "must end in .fifo")
	_, err = sqsqueue.CreateQueue(t.Context(), b.client, "x.fifo", sqsqueue.CreateQueueParams{DLQName: "dlq"})
	require.ErrorContains(t, err, "must end in .fifo")
}

// toString renders a JSON number or string (SQS and emulators differ).
func toString(v any) string {
	b, _ := json.Marshal(v) //nolint:errchkjson // v is a decoded JSON value (a number or a string), which always encodes
	return strings.Trim(string(b), `"`)
}

// TestDeadLetterRedrive checks that a message received MaxReceiveCount times
// and not deleted moves to the DLQ.
func TestDeadLetterRedrive(t *testing.T) {
	t.Parallel()
	dlqName := uniqueName("hooklane-test-dlq")
	b := setup(t, sqsqueue.CreateQueueParams{DLQName: dlqName, MaxReceiveCount: 1})
	dlq, err := sqsqueue.New(t.Context(), sqsqueue.Config{QueueURL: queueURL(t, b.client, dlqName), Client: b.client})
	require.NoError(t, err)

	ctx := t.Context()
	res, err := b.queue.SendBatch(ctx, []queue.OutMessage{{Group: "g", DedupID: "d", Body: []byte("poison")}})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)

	msgs, err := b.queue.Receive(ctx, queue.ReceiveParams{Max: 1, Wait: 5 * time.Second, Visibility: time.Minute})
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.NoError(t, b.queue.ChangeVisibility(ctx, msgs[0].ReceiptHandle, 0))

	// The next receive finds the receive count exhausted and moves it.
	msgs, err = b.queue.Receive(ctx, queue.ReceiveParams{Max: 1, Wait: time.Second})
	require.NoError(t, err)
	require.Empty(t, msgs)
	dead, err := dlq.Receive(ctx, queue.ReceiveParams{Max: 1, Wait: 5 * time.Second})
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Equal(t, "poison", string(dead[0].Body))
	require.Equal(t, "g", dead[0].Group)
}
