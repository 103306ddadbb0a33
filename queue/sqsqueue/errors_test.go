package sqsqueue

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/queue"
)

func TestTranslate(t *testing.T) {
	t.Parallel()
	apiErr := func(code, msg string) error {
		return &smithy.OperationError{
			ServiceID: "SQS", OperationName: "Op",
			Err: &smithy.GenericAPIError{Code: code, Message: msg},
		}
	}
	tests := []struct {
		name    string
		err     error
		receipt bool
		want    error
	}{
		{"queue missing (JSON)", apiErr("QueueDoesNotExist", ""), false, queue.ErrNotFound},
		{"queue missing (query)", apiErr("AWS.SimpleQueueService.NonExistentQueue", ""), true, queue.ErrNotFound},
		{"malformed handle", apiErr("ReceiptHandleIsInvalid", ""), true, queue.ErrInvalidReceipt},
		{"not in flight", apiErr("MessageNotInflight", ""), true, queue.ErrInvalidReceipt},
		{"expired handle", apiErr("InvalidParameterValue",
			"Value x for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired."), true, queue.ErrInvalidReceipt},
		{"other invalid parameter", apiErr("InvalidParameterValue", "MaxNumberOfMessages"), true, nil},
		{"handle code on a non-handle call", apiErr("ReceiptHandleIsInvalid", ""), false, nil},
		{"throttled", apiErr("ThrottlingException", ""), false, nil},
		{"not an API error", errors.New("dial tcp: refused"), false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := translate(t.Context(), tt.err, tt.receipt)
			require.ErrorIs(t, got, tt.err, "the original must stay in the chain")
			for _, sentinel := range []error{queue.ErrNotFound, queue.ErrInvalidReceipt} {
				require.Equal(t, errors.Is(sentinel, tt.want), errors.Is(got, sentinel), "errors.Is(%v, %v)", got, sentinel)
			}
		})
	}

	t.Run("cancelled ctx", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		got := translate(ctx, apiErr("RequestCanceled", ""), false)
		require.ErrorIs(t, got, context.Canceled)
	})
}
