package store

import (
	"context"
	"errors"
	"testing"
)

// TestHandoffTakenWaitsForTheAnswer: once the writer took the write, a
// caller whose context ends still gets the commit's answer.
func TestHandoffTakenWaitsForTheAnswer(t *testing.T) {
	t.Parallel()
	var h Handoff
	ctx, cancel := context.WithCancel(context.Background())
	if err := h.Take(ctx); err != nil {
		t.Fatalf("take: %v", err)
	}
	cancel()
	done := make(chan error, 1)
	answer := errors.New("the commit's answer")
	done <- answer
	if err := h.Await(ctx, done); !errors.Is(err, answer) {
		t.Fatalf("await = %v, want the commit's answer", err)
	}
}

// TestHandoffAbandonedIsNeverTaken: a caller whose context ends before the
// writer took the write gets the context's error, and the writer then
// refuses to run it; a writer that finds the caller's context ended
// abandons the write itself.
func TestHandoffAbandonedIsNeverTaken(t *testing.T) {
	t.Parallel()
	var h Handoff
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.Await(ctx, make(chan error)); !errors.Is(err, context.Canceled) {
		t.Fatalf("await = %v, want context.Canceled", err)
	}
	if err := h.Take(context.Background()); err == nil {
		t.Fatal("the writer took a write its caller abandoned")
	}

	var ended Handoff
	if err := ended.Take(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("take with an ended context = %v, want context.Canceled", err)
	}
	if err := ended.Take(context.Background()); err == nil {
		t.Fatal("a write abandoned by the writer was taken later")
	}
}
