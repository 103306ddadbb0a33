package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"
)

// TestDestinationSQSEndToEnd: a subscription with an sqs destination on a
// FIFO queue of the local stack's emulator delivers through the product:
// events of two message groups arrive, each group in ingest order, every
// message with MessageGroupId = the job's message group ({subscription
// code}:{messagegroup}), MessageDeduplicationId = the job id, the stored
// CloudEvent as its body and §15's message attributes (hooklane-job-id,
// hooklane-attempt, the subscription's header); the job shows the sqs://
// targetUrl and no status code; dataOnly on an sqs destination is 422 at
// /dataOnly.
func TestDestinationSQSEndToEnd(t *testing.T) {
	t.Parallel()
	_, endpoint := stackEnv()
	client := sqsClient(endpoint)
	name := "hooklane-dest-" + faultSuffix() + ".fifo"
	out, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{
		QueueName: aws.String(name), Attributes: map[string]string{"FifoQueue": "true"},
	})
	require.NoError(t, err, "create a FIFO queue on %s (start the local stack: bash localstack/stack.sh start)", endpoint)
	queueURL := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { _, _ = client.DeleteQueue(t.Context(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}) })

	gw := startGateway(t, nil)
	status, _, _ := gw.do(t, "POST", "/api/event-types", "application/json", `{"code":"shop.order.created","name":"Order created"}`, nil)
	require.Equal(t, http.StatusCreated, status)
	dest := fmt.Sprintf(`{"type":"sqs","queueUrl":%q,"region":"us-east-1","endpoint":%q,"accessKeyId":"test","secretAccessKey":"test"}`, queueURL, endpoint)
	status, _, bad := gw.do(t, "POST", "/api/subscriptions", "application/json",
		`{"code":"sq-binary","dataOnly":true,"eventTypes":[{"eventTypeCode":"shop.order.created"}],"destination":`+dest+`}`, nil)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", bad)
	require.Contains(t, fmt.Sprint(bad["errors"]), "/dataOnly")
	status, _, sub := gw.do(t, "POST", "/api/subscriptions", "application/json",
		`{"code":"sq","mode":"NEXT_ON_ERROR","headers":{"X-Team":"orders"},"eventTypes":[{"eventTypeCode":"shop.order.created"}],"destination":`+dest+`}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", sub)
	require.Equal(t, "sqs://"+name, sub["targetUrl"])
	require.Equal(t, "***", sub["destination"].(map[string]any)["secretAccessKey"])

	groups := []string{"order-a", "order-b"}
	const perGroup = 5
	jobIDs := postGroupedEvents(t, gw, groups, perGroup)

	last := map[string]int{}
	count := map[string]int{}
	var someJob string
	deadline := time.Now().Add(60 * time.Second)
	for total := 0; total < perGroup*len(groups); {
		require.True(t, time.Now().Before(deadline), "messages missing: %v of %d arrived", count, perGroup*len(groups))
		got, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
			QueueUrl: out.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		require.NoError(t, err)
		for _, m := range got.Messages {
			var ce struct {
				ID           string `json:"id"`
				MessageGroup string `json:"messagegroup"`
				Data         struct {
					N int `json:"n"`
				} `json:"data"`
			}
			require.NoError(t, json.Unmarshal([]byte(aws.ToString(m.Body)), &ce), "the body is the stored CloudEvent: %s", aws.ToString(m.Body))
			group := m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]
			require.Equal(t, "sq:"+ce.MessageGroup, group, "MessageGroupId is the job's message group")
			id := attr(m.MessageAttributes, "hooklane-job-id")
			require.True(t, jobIDs[id], "the message names its job: %q", id)
			require.Equal(t, id, m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageDeduplicationId)], "MessageDeduplicationId is the job id")
			require.Equal(t, "1", attr(m.MessageAttributes, "hooklane-attempt"))
			require.Equal(t, "orders", attr(m.MessageAttributes, "X-Team"), "the subscription's headers go along as message attributes")
			prev, seen := last[group]
			require.True(t, !seen || prev < ce.Data.N, "%s after %d in group %s", ce.ID, prev, group)
			last[group] = ce.Data.N
			count[group]++
			total++
			someJob = id
			_, err := client.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: out.QueueUrl, ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
	}
	require.Equal(t, map[string]int{"sq:order-a": perGroup, "sq:order-b": perGroup}, count)

	job := gw.waitJob(t, someJob, "COMPLETED")
	require.Equal(t, "sqs://"+name, job["targetUrl"])
	attempt := job["attempts"].([]any)[0].(map[string]any)
	require.Nil(t, attempt["statusCode"], "a broker attempt has no HTTP status")
	require.NotEmpty(t, attempt["responseBody"], "SendMessage's answer is recorded")
}

// attr returns a message attribute's string value by name, whatever the
// case of the name.
func attr(attrs map[string]sqstypes.MessageAttributeValue, name string) string {
	for k, v := range attrs {
		if http.CanonicalHeaderKey(k) == http.CanonicalHeaderKey(name) {
			return aws.ToString(v.StringValue)
		}
	}
	return ""
}
