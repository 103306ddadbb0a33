// Package sqsqueue is the Amazon SQS FIFO adapter of the [queue.Queue] port.
//
// Each [queue.OutMessage] becomes one SQS message whose MessageGroupId is the
// message's Group and whose MessageDeduplicationId is its DedupID, so SQS
// itself provides the port's guarantees: order and one-in-flight per group,
// visibility timeouts, at-least-once redelivery and the 5-minute dedup
// window. Create the queue with [CreateQueue] (high-throughput FIFO).
//
// SQS works in whole seconds: visibility timeouts and long-poll waits are
// rounded up to the next second, and a long poll waits at most 20 s.
//
// SQS accepts group and dedup ids of at most 128 printable ASCII characters.
// A DedupID outside that is replaced by its SHA-256 (same id, same hash, so
// dedup still works). A Group outside that is replaced by its SHA-256 too,
// and the original travels in the message attribute [GroupAttribute], from
// which Receive restores it.
//
// SQS message bodies are text (UTF-8 of the XML character range). A body
// outside that travels base64-encoded, flagged by the message attribute
// [EncodingAttribute], and Receive decodes it, so any bytes round-trip. SQS
// refuses an empty body.
//
// Unlike real SQS, the queue may be any SQS-compatible server (LocalStack,
// fauxqs) through Config.Endpoint.
package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/hooklane/hooklane/queue"
)

// MaxWait is the longest long-poll wait SQS supports; longer
// ReceiveParams.Wait values are capped to it.
const MaxWait = 20 * time.Second

// MaxVisibility is the longest visibility timeout SQS accepts (12 hours).
const MaxVisibility = 12 * time.Hour

// RegionDefault is the region used when Config.Region is empty, an Endpoint
// override is set and the AWS configuration chain names no region (local
// SQS-compatible servers ignore it, but the SDK requires one).
const RegionDefault = "us-east-1"

// Config configures a Queue.
type Config struct {
	// QueueURL is the URL of the FIFO queue. Required.
	QueueURL string
	// Endpoint overrides the SQS endpoint, e.g. http://127.0.0.1:4566 for
	// LocalStack or fauxqs. Empty uses AWS. Ignored when Client is set.
	Endpoint string
	// Region is the AWS region. Empty uses the standard AWS configuration
	// chain (AWS_REGION, shared config), then RegionDefault when Endpoint
	// is set. Ignored when Client is set.
	Region string
	// Client is the SQS client to use. Nil builds one from the standard AWS
	// configuration chain (credentials, region) with Endpoint and Region.
	Client *sqs.Client
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
	// OnCallFunc, when set, is called with the operation name
	// (SendMessageBatch, ReceiveMessage, DeleteMessageBatch, …) of every
	// HTTP request the queue makes to SQS, retries included, to count round
	// trips. It must be fast and safe for concurrent use.
	OnCallFunc func(operation string)
}

// Queue is a [queue.Queue] on an Amazon SQS FIFO queue. It is safe for
// concurrent use.
type Queue struct {
	client   *sqs.Client
	queueURL string
	logger   *slog.Logger
	// callOpts are applied to every request (the OnCallFunc counter).
	callOpts []func(*sqs.Options)
}

// New returns a Queue for cfg. It makes no request; use Ping to check the
// queue exists.
func New(ctx context.Context, cfg Config) (*Queue, error) {
	if cfg.QueueURL == "" {
		return nil, errors.New("new sqs queue: QueueURL is required")
	}
	client := cfg.Client
	if client == nil {
		var err error
		client, err = newClient(ctx, cfg.Endpoint, cfg.Region)
		if err != nil {
			return nil, fmt.Errorf("new sqs queue: %w", err)
		}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Queue{
		client:   client,
		queueURL: cfg.QueueURL,
		logger:   logger.With("component", "sqsqueue"),
		callOpts: countCalls(cfg.OnCallFunc),
	}, nil
}

// countCalls returns the request options that call onCall once per HTTP
// attempt of every operation, or none when onCall is nil. The middleware
// sits at the end of the finalize step, after the SDK's retry loop, so a
// retried call counts each of its round trips.
func countCalls(onCall func(operation string)) []func(*sqs.Options) {
	if onCall == nil {
		return nil
	}
	mw := middleware.FinalizeMiddlewareFunc("HooklaneCountCalls", func(
		ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler,
	) (middleware.FinalizeOutput, middleware.Metadata, error) {
		onCall(middleware.GetOperationName(ctx))
		return next.HandleFinalize(ctx, in)
	})
	return []func(*sqs.Options){func(o *sqs.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Finalize.Add(mw, middleware.After)
		})
	}}
}

// newClient builds an SQS client from the standard AWS configuration chain.
func newClient(ctx context.Context, endpoint, region string) (*sqs.Client, error) {
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	if awsCfg.Region == "" {
		if endpoint == "" {
			return nil, errors.New("load aws config: no region configured (set Region or AWS_REGION)")
		}
		awsCfg.Region = RegionDefault
	}
	return sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}), nil
}

// SendBatch implements [queue.Queue] with one SendMessageBatch call.
func (q *Queue) SendBatch(ctx context.Context, msgs []queue.OutMessage) ([]queue.SendResult, error) {
	if len(msgs) > queue.MaxBatch {
		return nil, fmt.Errorf("send batch: %d messages, more than %d", len(msgs), queue.MaxBatch)
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	entries := make([]types.SendMessageBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		if m.Group == "" || m.DedupID == "" {
			return nil, fmt.Errorf("send batch: entry %d: Group and DedupID are required", i)
		}
		if err := queue.CheckAttributes(m.Attributes); err != nil {
			return nil, fmt.Errorf("send batch: entry %d: %w", i, err)
		}
		group, attrs := q.groupID(ctx, m.Group)
		body, attrs := encodeBody(m.Body, attrs)
		attrs = encodeAttributes(m.Attributes, attrs)
		entries[i] = types.SendMessageBatchRequestEntry{
			Id:                     aws.String(strconv.Itoa(i)),
			MessageBody:            aws.String(body),
			MessageGroupId:         aws.String(group),
			MessageDeduplicationId: aws.String(q.dedupID(ctx, m.DedupID)),
			MessageAttributes:      attrs,
		}
	}
	out, err := q.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{
		QueueUrl: aws.String(q.queueURL),
		Entries:  entries,
	}, q.callOpts...)
	if err != nil {
		return nil, fmt.Errorf("send batch: %w", translate(ctx, err, false))
	}

	results := make([]queue.SendResult, len(msgs))
	done := make([]bool, len(msgs))
	for _, s := range out.Successful {
		if i, ok := entryIndex(s.Id, len(msgs)); ok {
			done[i] = true
		}
	}
	for _, f := range out.Failed {
		if i, ok := entryIndex(f.Id, len(msgs)); ok {
			done[i] = true
			results[i].Err = &EntryError{
				Code:        aws.ToString(f.Code),
				Message:     aws.ToString(f.Message),
				SenderFault: f.SenderFault,
			}
		}
	}
	for i := range results {
		if !done[i] {
			results[i].Err = errors.New("send batch: no result for entry " + strconv.Itoa(i))
		}
	}
	return results, nil
}

// entryIndex parses a batch entry id back into its index.
func entryIndex(id *string, n int) (int, bool) {
	i, err := strconv.Atoi(aws.ToString(id))
	return i, err == nil && i >= 0 && i < n
}

// EntryError is the error of one rejected SendBatch or DeleteBatch entry.
type EntryError struct {
	// Code is the SQS error code, e.g. InvalidParameterValue.
	Code string
	// Message is SQS's explanation.
	Message string
	// SenderFault is true when the request was at fault, false when SQS was
	// (and a retry may succeed).
	SenderFault bool
}

// Error returns the code and message.
func (e *EntryError) Error() string {
	return "batch entry: " + e.Code + ": " + e.Message
}

// Receive implements [queue.Queue] with one ReceiveMessage call.
func (q *Queue) Receive(ctx context.Context, p queue.ReceiveParams) ([]queue.Message, error) {
	if p.Max < 1 || p.Max > queue.MaxBatch {
		return nil, fmt.Errorf("receive: Max %d outside 1..%d", p.Max, queue.MaxBatch)
	}
	if p.Wait < 0 || p.Visibility < 0 || p.Visibility > MaxVisibility {
		return nil, fmt.Errorf("receive: Wait %s or Visibility %s out of range", p.Wait, p.Visibility)
	}
	// A cancelled ctx fails even when no wait would have let the SDK notice.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("receive: %w", err)
	}
	in := &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(q.queueURL),
		MaxNumberOfMessages: int32(p.Max),
		WaitTimeSeconds:     ceilSeconds(min(p.Wait, MaxWait)),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{
			types.MessageSystemAttributeNameApproximateReceiveCount,
			types.MessageSystemAttributeNameMessageGroupId,
		},
		// All: the adapter's own attributes and the caller's.
		MessageAttributeNames: []string{"All"},
	}
	if p.Visibility > 0 {
		in.VisibilityTimeout = ceilSeconds(p.Visibility)
	}
	out, err := q.client.ReceiveMessage(ctx, in, q.callOpts...)
	if err != nil {
		return nil, fmt.Errorf("receive: %w", translate(ctx, err, false))
	}
	msgs := make([]queue.Message, 0, len(out.Messages))
	for _, m := range out.Messages {
		msg, err := toMessage(m)
		if err != nil {
			return nil, fmt.Errorf("receive: %w", err)
		}
		msgs = append(msgs, msg)
	}
	return msgs, nil
}

// toMessage converts a received SQS message.
func toMessage(m types.Message) (queue.Message, error) {
	count, err := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	if err != nil {
		return queue.Message{}, fmt.Errorf("parse ApproximateReceiveCount of message %s: %w", aws.ToString(m.MessageId), err)
	}
	group := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
	if a, ok := m.MessageAttributes[GroupAttribute]; ok && a.StringValue != nil {
		group = *a.StringValue
	}
	body, err := decodeBody(aws.ToString(m.Body), m.MessageAttributes)
	if err != nil {
		return queue.Message{}, fmt.Errorf("convert message %s: %w", aws.ToString(m.MessageId), err)
	}
	return queue.Message{
		ID:            aws.ToString(m.MessageId),
		Group:         group,
		Body:          body,
		ReceiptHandle: aws.ToString(m.ReceiptHandle),
		ReceiveCount:  count,
		Attributes:    decodeAttributes(m.MessageAttributes),
	}, nil
}

// Delete implements [queue.Queue] with DeleteMessage.
func (q *Queue) Delete(ctx context.Context, receiptHandle string) error {
	_, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{
		QueueUrl:      aws.String(q.queueURL),
		ReceiptHandle: aws.String(receiptHandle),
	}, q.callOpts...)
	if err != nil {
		return fmt.Errorf("delete message: %w", translate(ctx, err, true))
	}
	return nil
}

// DeleteBatch implements [queue.Queue] with one DeleteMessageBatch call. An
// entry SQS rejects for its handle (ReceiptHandleIsInvalid and the like) is
// queue.ErrInvalidReceipt, an [EntryError] in its chain.
func (q *Queue) DeleteBatch(ctx context.Context, receiptHandles []string) ([]error, error) {
	if len(receiptHandles) > queue.MaxBatch {
		return nil, fmt.Errorf("delete batch: %d handles, more than %d", len(receiptHandles), queue.MaxBatch)
	}
	if len(receiptHandles) == 0 {
		return nil, nil
	}
	entries := make([]types.DeleteMessageBatchRequestEntry, len(receiptHandles))
	for i, h := range receiptHandles {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h)}
	}
	out, err := q.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{
		QueueUrl: aws.String(q.queueURL),
		Entries:  entries,
	}, q.callOpts...)
	if err != nil {
		return nil, fmt.Errorf("delete batch: %w", translate(ctx, err, false))
	}
	results := make([]error, len(receiptHandles))
	done := make([]bool, len(receiptHandles))
	for _, s := range out.Successful {
		if i, ok := entryIndex(s.Id, len(receiptHandles)); ok {
			done[i] = true
		}
	}
	for _, f := range out.Failed {
		if i, ok := entryIndex(f.Id, len(receiptHandles)); ok {
			done[i] = true
			results[i] = entryReceiptError(&EntryError{
				Code:        aws.ToString(f.Code),
				Message:     aws.ToString(f.Message),
				SenderFault: f.SenderFault,
			})
		}
	}
	for i := range results {
		if !done[i] {
			results[i] = errors.New("delete batch: no result for entry " + strconv.Itoa(i))
		}
	}
	return results, nil
}

// ChangeVisibility implements [queue.Queue] with ChangeMessageVisibility; d
// is rounded up to whole seconds and may be at most MaxVisibility.
func (q *Queue) ChangeVisibility(ctx context.Context, receiptHandle string, d time.Duration) error {
	if d < 0 || d > MaxVisibility {
		return fmt.Errorf("change visibility: %s outside 0..%s", d, MaxVisibility)
	}
	_, err := q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(q.queueURL),
		ReceiptHandle:     aws.String(receiptHandle),
		VisibilityTimeout: ceilSeconds(d),
	}, q.callOpts...)
	if err != nil {
		return fmt.Errorf("change visibility: %w", translate(ctx, err, true))
	}
	return nil
}

// Ping implements [queue.Queue] with GetQueueAttributes; a missing queue is
// queue.ErrNotFound.
func (q *Queue) Ping(ctx context.Context) error {
	_, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	}, q.callOpts...)
	if err != nil {
		return fmt.Errorf("ping queue: %w", translate(ctx, err, false))
	}
	return nil
}

// ceilSeconds converts d to whole seconds, rounding up, as SQS wants them.
func ceilSeconds(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	s := (d + time.Second - 1) / time.Second
	return int32(min(s, MaxVisibility/time.Second))
}
