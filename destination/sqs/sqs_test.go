package sqs_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination"
	"github.com/hooklane/hooklane/destination/sqs"
	"github.com/hooklane/hooklane/destination/transporttest"
)

var _ destination.Type = sqs.Type{}

// endpoint is the SQS server of the local stack (localstack/stack.sh).
func endpoint() string {
	return cmp.Or(os.Getenv("HOOKLANE_TEST_SQS_ENDPOINT"), "http://127.0.0.1:4566")
}

// TestConformance runs the transport suite on the local stack's SQS
// server (fauxqs, 127.0.0.1), each test on queues of its own.
func TestConformance(t *testing.T) {
	t.Parallel()
	admin := newClient(endpoint())
	prefix := fmt.Sprintf("dest-%d", time.Now().UnixNano())
	var mu sync.Mutex
	n := 0
	name := func(fifo bool) string {
		mu.Lock()
		defer mu.Unlock()
		n++
		if fifo {
			return fmt.Sprintf("%s-%d.fifo", prefix, n)
		}
		return fmt.Sprintf("%s-%d", prefix, n)
	}
	transporttest.Run(t, &transporttest.Harness{
		Type: sqs.Type{},
		Features: transporttest.Features{
			JobID:         "header:hooklane-job-id",
			Group:         "property:MessageGroupId",
			MaxBody:       1 << 20,
			NoCredentials: true,
		},
		NewTarget: func(t *testing.T, o transporttest.TargetOptions) *transporttest.Target {
			t.Helper()
			return target(t, admin, endpoint(), name(o.Ordered))
		},
		NewOutage: func(t *testing.T) *transporttest.Outage {
			t.Helper()
			p := transporttest.NewProxy(t, strings.TrimPrefix(endpoint(), "http://"))
			return &transporttest.Outage{Target: target(t, admin, "http://"+p.Addr(), name(false)), Stop: p.Stop, Start: p.Start}
		},
		NewMissing: func(t *testing.T) json.RawMessage {
			t.Helper()
			return raw(endpoint(), endpoint()+"/000000000000/"+name(false), "")
		},
		AtAddress: func(t *testing.T, addr, secret string) json.RawMessage {
			t.Helper()
			return raw("http://"+addr, "http://"+addr+"/000000000000/orders", secret)
		},
	})
}

func TestDecode(t *testing.T) {
	t.Parallel()
	reg := destination.NewRegistry(sqs.Type{})
	const ok = `"queueUrl": "https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo", "region": "eu-west-1"`
	tests := []struct {
		raw      string
		dataOnly bool
		headers  map[string]string
		want     string
	}{
		{`{"type": "sqs", "region": "eu-west-1"}`, false, nil, "/destination/queueUrl"},
		{`{"type": "sqs", "queueUrl": "ftp://h/q", "region": "r"}`, false, nil, "/destination/queueUrl"},
		{`{"type": "sqs", ` + ok + `, "accessKeyId": "AKIA"}`, false, nil, "/destination/secretAccessKey"},
		{`{"type": "sqs", ` + ok + `}`, true, nil, "/dataOnly"},
		{`{"type": "sqs", ` + ok + `}`, false, map[string]string{"AWS.trace": "x"}, "/headers/AWS.trace"},
		{`{"type": "sqs", ` + ok + `}`, false, map[string]string{"a": "", "b": "", "c": "", "d": "", "e": "", "f": "", "g": "", "h": "", "i": ""}, "/headers"},
	}
	for _, tt := range tests {
		_, err := reg.Decode(&destination.DecodeParams{Raw: json.RawMessage(tt.raw), DataOnly: tt.dataOnly, Headers: tt.headers})
		var ve *destination.ValidationError
		require.ErrorAs(t, err, &ve, tt.raw)
		require.Equal(t, tt.want, ve.Problems[0].Pointer, tt.raw)
	}
	d, err := reg.Decode(&destination.DecodeParams{Raw: json.RawMessage(`{"type": "sqs", ` + ok + `, "accessKeyId": "AKIA", "secretAccessKey": "s3cret"}`)})
	require.NoError(t, err)
	require.Equal(t, "sqs://orders.fifo", d.TargetURL())
	require.Contains(t, string(d.Masked()), `"secretAccessKey":"***"`)
}

// target creates a queue (FIFO when name ends .fifo) and returns a
// destination reaching it through endpoint.
func target(t *testing.T, admin *awssqs.Client, endpoint, name string) *transporttest.Target {
	t.Helper()
	in := &awssqs.CreateQueueInput{QueueName: aws.String(name)}
	if strings.HasSuffix(name, ".fifo") {
		in.Attributes = map[string]string{"FifoQueue": "true"}
	}
	out, err := admin.CreateQueue(t.Context(), in)
	require.NoError(t, err)
	queueURL := aws.ToString(out.QueueUrl)
	t.Cleanup(func() {
		_, _ = admin.DeleteQueue(t.Context(), &awssqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
	})
	var mu sync.Mutex
	var pending []types.Message
	return &transporttest.Target{
		Raw: raw(endpoint, queueURL, ""),
		Receive: func(t *testing.T) *transporttest.Received {
			t.Helper()
			mu.Lock()
			defer mu.Unlock()
			deadline := time.Now().Add(transporttest.ReceiveDeadline)
			for len(pending) == 0 {
				require.True(t, time.Now().Before(deadline), "no message before the deadline")
				got, err := admin.ReceiveMessage(t.Context(), &awssqs.ReceiveMessageInput{
					QueueUrl: out.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
					MessageAttributeNames:       []string{"All"},
					MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
				})
				require.NoError(t, err)
				for _, m := range got.Messages {
					_, err := admin.DeleteMessage(t.Context(), &awssqs.DeleteMessageInput{QueueUrl: out.QueueUrl, ReceiptHandle: m.ReceiptHandle})
					require.NoError(t, err)
				}
				pending = append(pending, got.Messages...)
			}
			m := pending[0]
			pending = pending[1:]
			r := &transporttest.Received{Body: []byte(aws.ToString(m.Body)), Headers: map[string]string{}, Properties: map[string]string{}}
			for k, v := range m.MessageAttributes {
				r.Headers[k] = aws.ToString(v.StringValue)
			}
			if g, ok := m.Attributes["MessageGroupId"]; ok {
				r.Properties["MessageGroupId"] = g
			}
			return r
		},
	}
}

func raw(endpoint, queueURL, secret string) json.RawMessage {
	d := map[string]any{"type": "sqs", "queueUrl": queueURL, "region": "us-east-1", "endpoint": endpoint, "accessKeyId": "test", "secretAccessKey": cmp.Or(secret, "test")}
	out, err := json.Marshal(d)
	if err != nil {
		panic(err)
	}
	return out
}

func newClient(endpoint string) *awssqs.Client {
	return awssqs.New(awssqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}
