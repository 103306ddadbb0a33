package stream_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/stream"
)

// The stream's status events carry a circuit's reason, which names the
// last failed send and so its target: the reason is masked for every
// role, as the error is.
func TestMaskedStatusEventMasksReasonAndError(t *testing.T) {
	t.Parallel()
	raw := `Post "http://alice:***@127.0.0.1:9/hooks/p?token=t0ken": dial tcp 127.0.0.1:9: connect: connection refused`
	e := &stream.Event{Type: stream.TypeSubscriptionCircuitOpened, Data: stream.Data{
		Reason: "1 consecutive failed attempts, the last: " + raw, Error: raw,
	}}
	got := e.Masked()
	want := `Post "http://***@127.0.0.1:9/***": dial tcp 127.0.0.1:9: connect: connection refused`
	require.Equal(t, "1 consecutive failed attempts, the last: "+want, got.Data.Reason)
	require.Equal(t, want, got.Data.Error)
	require.Contains(t, e.Data.Reason, "t0ken", "the stored event is not changed")
	plain := &stream.Event{Data: stream.Data{Reason: "a delivery succeeded"}}
	require.Same(t, plain, plain.Masked())
}
