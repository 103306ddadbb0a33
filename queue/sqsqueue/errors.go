package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"

	"github.com/hooklane/hooklane/queue"
)

// translate maps an SQS error to the port's sentinels, keeping the original
// in the chain: a missing queue is queue.ErrNotFound and, for calls that take
// a receipt handle (receipt true), a malformed, stale or spent handle is
// queue.ErrInvalidReceipt. A call aborted by ctx reports ctx's error.
func translate(ctx context.Context, err error, receipt bool) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("%w: %w", ctxErr, err)
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return err
	}
	switch apiErr.ErrorCode() {
	case "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue":
		return fmt.Errorf("%w: %w", queue.ErrNotFound, err)
	case "ReceiptHandleIsInvalid", "MessageNotInflight",
		"InvalidReceiptHandle", "AWS.SimpleQueueService.MessageNotInflight":
		if receipt {
			return fmt.Errorf("%w: %w", queue.ErrInvalidReceipt, err)
		}
	case "InvalidParameterValue":
		// Real SQS reports an expired handle as "Value ... for parameter
		// ReceiptHandle is invalid. Reason: The receipt handle has expired."
		if receipt && strings.Contains(strings.ToLower(apiErr.ErrorMessage()), "receipthandle") {
			return fmt.Errorf("%w: %w", queue.ErrInvalidReceipt, err)
		}
	}
	return err
}
