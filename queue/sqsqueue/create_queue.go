package sqsqueue

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// VisibilityTimeoutDefault is the queue's default visibility timeout set by
// CreateQueue: long enough for a webhook delivery with its timeout, short
// enough that a crashed consumer's message comes back soon.
const VisibilityTimeoutDefault = 120 * time.Second

// MaxReceiveCountDefault is how many receives CreateQueue allows before SQS
// moves a message to the dead-letter queue. Hooklane's store, not the DLQ, is
// the source of truth, so this only parks messages that keep failing to be
// processed at all.
const MaxReceiveCountDefault = 10

// CreateQueueParams are the optional arguments of CreateQueue.
type CreateQueueParams struct {
	// DLQName is the name of a FIFO dead-letter queue (ending in .fifo) to
	// create alongside and redrive to; empty creates no DLQ.
	DLQName string
	// MaxReceiveCount is how many receives move a message to the DLQ;
	// 0 means MaxReceiveCountDefault. Ignored without DLQName.
	MaxReceiveCount int
	// VisibilityTimeout is the queue's default visibility timeout, rounded
	// up to whole seconds; 0 means VisibilityTimeoutDefault.
	VisibilityTimeout time.Duration
}

// CreateQueue creates the FIFO queue name (which must end in .fifo) in
// high-throughput mode and returns its URL; with p.DLQName it first creates
// that FIFO dead-letter queue and sets the redrive policy. Creating a queue
// that already exists with the same attributes returns its URL.
//
// The attributes are those of localstack/init/ready.d/01-create-queues.sh:
// FifoQueue, no content-based deduplication (Hooklane always sends a
// MessageDeduplicationId), DeduplicationScope=messageGroup and
// FifoThroughputLimit=perMessageGroupId. The last two select SQS's
// high-throughput FIFO mode: a standard FIFO queue caps at 300 API calls per
// second per action (3,000 messages per second with batches of 10), shared
// by all message groups, which a busy gateway exceeds; in high-throughput
// mode the limit applies per message group instead.
func CreateQueue(ctx context.Context, client *sqs.Client, name string, p CreateQueueParams) (string, error) {
	if !strings.HasSuffix(name, ".fifo") {
		return "", fmt.Errorf("create queue %s: a FIFO queue name must end in .fifo", name)
	}
	if p.MaxReceiveCount < 0 || p.VisibilityTimeout < 0 || p.VisibilityTimeout > MaxVisibility {
		return "", fmt.Errorf("create queue %s: MaxReceiveCount %d or VisibilityTimeout %s out of range",
			name, p.MaxReceiveCount, p.VisibilityTimeout)
	}
	attrs := fifoAttributes(p.VisibilityTimeout)
	if p.DLQName != "" {
		if !strings.HasSuffix(p.DLQName, ".fifo") {
			return "", fmt.Errorf("create queue %s: dead-letter queue %s must end in .fifo", name, p.DLQName)
		}
		dlqURL, err := createQueue(ctx, client, p.DLQName, fifoAttributes(p.VisibilityTimeout))
		if err != nil {
			return "", fmt.Errorf("create queue %s: %w", name, err)
		}
		arn, err := queueARN(ctx, client, dlqURL)
		if err != nil {
			return "", fmt.Errorf("create queue %s: %w", name, err)
		}
		policy, err := json.Marshal(map[string]string{
			"deadLetterTargetArn": arn,
			"maxReceiveCount":     strconv.Itoa(cmp.Or(p.MaxReceiveCount, MaxReceiveCountDefault)),
		})
		if err != nil {
			return "", fmt.Errorf("create queue %s: encode redrive policy: %w", name, err)
		}
		attrs[string(types.QueueAttributeNameRedrivePolicy)] = string(policy)
	}
	url, err := createQueue(ctx, client, name, attrs)
	if err != nil {
		return "", err
	}
	return url, nil
}

// fifoAttributes are the attributes of a high-throughput FIFO queue.
func fifoAttributes(visibility time.Duration) map[string]string {
	if visibility <= 0 {
		visibility = VisibilityTimeoutDefault
	}
	return map[string]string{
		string(types.QueueAttributeNameFifoQueue):                 "true",
		string(types.QueueAttributeNameContentBasedDeduplication): "false",
		string(types.QueueAttributeNameDeduplicationScope):        "messageGroup",
		string(types.QueueAttributeNameFifoThroughputLimit):       "perMessageGroupId",
		string(types.QueueAttributeNameVisibilityTimeout):         strconv.Itoa(int(ceilSeconds(visibility))),
	}
}

// createQueue makes one CreateQueue call.
func createQueue(ctx context.Context, client *sqs.Client, name string, attrs map[string]string) (string, error) {
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String(name),
		Attributes: attrs,
	})
	if err != nil {
		return "", fmt.Errorf("create queue %s: %w", name, translate(ctx, err, false))
	}
	return aws.ToString(out.QueueUrl), nil
}

// queueARN looks up the ARN of the queue at url.
func queueARN(ctx context.Context, client *sqs.Client, url string) (string, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", fmt.Errorf("get arn of queue %s: %w", url, translate(ctx, err, false))
	}
	arn := out.Attributes[string(types.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", fmt.Errorf("get arn of queue %s: no QueueArn attribute", url)
	}
	return arn, nil
}
