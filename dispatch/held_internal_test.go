package dispatch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHeldUntilDoublesUpToLostHeadAfter: a job held by a QUEUED head waits
// as long as the head has waited (so each return doubles the wait), at most
// LostHeadAfter; by a PENDING head, until the head is due.
func TestHeldUntilDoublesUpToLostHeadAfter(t *testing.T) {
	t.Parallel()
	lc := NewLifecycle(LifecycleConfig{LostHeadAfter: 10 * time.Second})
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	head := &Job{Status: StatusQueued, UpdatedAt: now.Add(-time.Second)}
	require.Equal(t, now.Add(time.Second), lc.heldUntil(head, now), "waited 1 s: wait 1 s")
	back := now.Add(time.Second)
	require.Equal(t, back.Add(2*time.Second), lc.heldUntil(head, back), "back after it: waited 2 s, wait 2 s")
	late := now.Add(time.Minute)
	require.Equal(t, late.Add(10*time.Second), lc.heldUntil(head, late), "at most LostHeadAfter")
	head.UpdatedAt = now.Add(time.Second) // another instance's clock ahead
	require.Equal(t, now, lc.heldUntil(head, now))

	due := now.Add(30 * time.Second)
	pending := &Job{Status: StatusPending, NextAttemptAt: &due}
	require.Equal(t, due, lc.heldUntil(pending, now))
	require.Equal(t, now.Add(time.Minute), lc.heldUntil(pending, now.Add(time.Minute)), "due already: at once")
}
