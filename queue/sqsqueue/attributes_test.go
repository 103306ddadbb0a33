package sqsqueue_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/queue/sqsqueue"
)

// logBuffer collects a logger's text output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p) //nolint:wrapcheck // bytes.Buffer never fails
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// checkQueue creates a queue named name with attrs through the plain SQS
// API (deleted when t ends) and runs Check on it, returning the result and
// what Check logged.
func checkQueue(t *testing.T, name string, attrs map[string]string) (*sqsqueue.Attributes, string, error) {
	t.Helper()
	client := testClient()
	out, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	require.NoError(t, err, "create a queue at %s (is the stack running? localstack/stack.sh start)", testEndpoint())
	url := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { deleteQueue(t, client, url) })
	logs := &logBuffer{}
	q, err := sqsqueue.New(t.Context(), sqsqueue.Config{
		QueueURL: url, Client: client,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	require.NoError(t, err)
	a, err := q.Check(t.Context())
	return a, logs.String(), err
}

// TestCheckDefaultFIFOQueue: a FIFO queue created with nothing but
// FifoQueue=true passes, its defaults are read, and the log says what the
// gateway assumes of them.
func TestCheckDefaultFIFOQueue(t *testing.T) {
	t.Parallel()
	a, logs, err := checkQueue(t, uniqueName("hooklane-default"), map[string]string{"FifoQueue": "true"})
	require.NoError(t, err)
	require.Equal(t, &sqsqueue.Attributes{
		FIFO: true, DeduplicationScope: "queue", FifoThroughputLimit: "perQueue",
		VisibilityTimeout: 30 * time.Second, Retention: 4 * 24 * time.Hour,
	}, a)
	require.False(t, a.HighThroughput())
	require.Contains(t, logs, "sqs fifo queue checked")
	require.Contains(t, logs, "deduplication_scope=queue")
	require.Contains(t, logs, "visibility timeout (the lease), so the queue's default is unused")
	require.Contains(t, logs, "standard FIFO throughput mode")
	require.NotContains(t, logs, "level=WARN")
}

// TestCheckRecommendedQueue: the queue CreateQueue makes (high-throughput
// FIFO, 120 s visibility, redrive after 10 receives) is read as such.
func TestCheckRecommendedQueue(t *testing.T) {
	t.Parallel()
	dlq := uniqueName("hooklane-check-dlq")
	b := setup(t, sqsqueue.CreateQueueParams{DLQName: dlq})
	a, err := b.queue.Check(t.Context())
	require.NoError(t, err)
	require.True(t, a.FIFO)
	require.True(t, a.HighThroughput())
	require.False(t, a.ContentBasedDeduplication)
	require.Equal(t, sqsqueue.VisibilityTimeoutDefault, a.VisibilityTimeout)
	require.Equal(t, sqsqueue.MaxReceiveCountDefault, a.MaxReceiveCount)
	require.True(t, strings.HasSuffix(a.DeadLetterTargetARN, ":"+dlq), a.DeadLetterTargetARN)
}

// TestCheckRefusesStandardQueue: a standard (non-FIFO) queue is refused
// with ErrNotFIFO and a message that says how to create a fit one.
func TestCheckRefusesStandardQueue(t *testing.T) {
	t.Parallel()
	name := strings.TrimSuffix(uniqueName("hooklane-standard"), ".fifo")
	_, _, err := checkQueue(t, name, nil)
	require.ErrorIs(t, err, sqsqueue.ErrNotFIFO)
	require.Contains(t, err.Error(), "FifoQueue=true")
	require.Contains(t, err.Error(), name)
}

// TestCheckWarnsOfDelayAndEarlyRedrive: a queue-wide delay and a redrive
// after two receives (the count written as a JSON number, as SQS does) are
// read and warned about.
func TestCheckWarnsOfDelayAndEarlyRedrive(t *testing.T) {
	t.Parallel()
	client := testClient()
	dlqName := uniqueName("hooklane-check-dlq")
	out, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(dlqName), Attributes: map[string]string{"FifoQueue": "true"}})
	require.NoError(t, err)
	dlqURL := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { deleteQueue(t, client, dlqURL) })
	arn := "arn:aws:sqs:us-east-1:000000000000:" + dlqName
	a, logs, err := checkQueue(t, uniqueName("hooklane-check"), map[string]string{
		"FifoQueue": "true", "DelaySeconds": "3",
		"RedrivePolicy": `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":2}`,
	})
	require.NoError(t, err)
	require.Equal(t, 3*time.Second, a.Delay)
	require.Equal(t, 2, a.MaxReceiveCount)
	require.Equal(t, arn, a.DeadLetterTargetARN)
	require.Contains(t, logs, `level=WARN msg="sqs queue delays every message`)
	require.Contains(t, logs, `level=WARN msg="sqs queue redrives a message to its dead-letter queue after few receives`)
}

// TestCheckMissingQueue: a queue that does not exist is queue.ErrNotFound.
func TestCheckMissingQueue(t *testing.T) {
	t.Parallel()
	q, err := sqsqueue.New(t.Context(), sqsqueue.Config{
		QueueURL: testEndpoint() + "/000000000000/" + uniqueName("hooklane-missing"), Client: testClient(),
	})
	require.NoError(t, err)
	_, err = q.Check(t.Context())
	require.ErrorIs(t, err, queue.ErrNotFound)
}
