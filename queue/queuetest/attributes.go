package queuetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/queue"
)

// testAttributesRoundTrip requires a message's attributes to arrive as sent,
// also on redelivery, and a message without attributes to arrive without.
func testAttributesRoundTrip(t *testing.T, s *suite) {
	q := s.newQueue(t)
	attrs := map[string]string{
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"tracestate":  "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
		"x_note-1.2":  "tab\tand ünïcode",
	}
	with := msg("a", 0)
	with.Attributes = attrs
	send(t, q, with, msg("b", 0))

	got := map[string]queue.Message{}
	for len(got) < 2 {
		for _, m := range s.receiveSome(t, q, queue.MaxBatch, longVisibility) {
			got[string(m.Body)] = m
		}
	}
	require.Equal(t, attrs, got["a-0"].Attributes)
	require.Empty(t, got["b-0"].Attributes)

	// Redelivered, the message still carries them.
	require.NoError(t, q.ChangeVisibility(t.Context(), got["a-0"].ReceiptHandle, 0))
	deleteAll(t, q, []queue.Message{got["b-0"]})
	again := s.receiveSome(t, q, queue.MaxBatch, longVisibility)
	require.Equal(t, "a-0", string(again[0].Body))
	require.Equal(t, 2, again[0].ReceiveCount)
	require.Equal(t, attrs, again[0].Attributes)
}

// testAttributesInvalid requires an entry whose attributes fail
// queue.CheckAttributes to be refused, as the entry's error or the call's,
// and never to be enqueued.
func testAttributesInvalid(t *testing.T, s *suite) {
	tooMany := make(map[string]string, queue.MaxAttributes+1)
	for i := range queue.MaxAttributes + 1 {
		tooMany[fmt.Sprintf("a%d", i)] = "v"
	}
	tests := []struct {
		name  string
		attrs map[string]string
	}{
		{"reserved name", map[string]string{"Hooklane.Group": "g"}},
		{"aws name", map[string]string{"aws.trace": "x"}},
		{"empty value", map[string]string{"traceparent": ""}},
		{"space in name", map[string]string{"trace parent": "x"}},
		{"control character", map[string]string{"k": "a\nb"}},
		{"value too long", map[string]string{"k": strings.Repeat("x", queue.MaxAttributeValueLen+1)}},
		{"too many", tooMany},
	}
	q := s.newQueue(t)
	for _, tt := range tests {
		m := msg("bad", 0)
		m.DedupID = tt.name
		m.Attributes = tt.attrs
		res, err := q.SendBatch(t.Context(), []queue.OutMessage{m})
		if err == nil {
			require.Len(t, res, 1)
			require.Error(t, res[0].Err, tt.name)
		}
	}
	s.expectNone(t, q, s.f.pollWait())
}
