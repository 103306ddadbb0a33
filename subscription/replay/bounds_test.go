package replay_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/replay"
)

// A replay's request is bounded: the number and the length of its
// eventTypes patterns (200,000 were once accepted), and until not in the
// future beyond a small skew.
func TestStartBoundsTheRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, storeKinds()[0])
	sub := b.newSub(t, nil)
	many := make([]string, 200_000)
	for i := range many {
		many[i] = "order.created"
	}
	tests := []struct {
		name    string
		p       replay.StartParams
		pointer string
	}{
		{"200,000 patterns", replay.StartParams{Since: baseTime(), EventTypes: many}, "/eventTypes"},
		{"one pattern too many", replay.StartParams{Since: baseTime(), EventTypes: many[:replay.EventTypesMax+1]}, "/eventTypes"},
		{"a pattern too long", replay.StartParams{
			Since: baseTime(), EventTypes: []string{"order.created", "order." + strings.Repeat("a", replay.EventTypeMaxBytes)},
		}, "/eventTypes/1"},
		{"until in the future", replay.StartParams{Since: baseTime(), Until: b.clock.Now().Add(replay.UntilSkew + time.Second)}, "/until"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := b.svc.Start(t.Context(), sub.ID, &tt.p)
			var rej *replay.Rejection
			require.ErrorAs(t, err, &rej)
			require.Len(t, rej.Errors, 1)
			require.Equal(t, tt.pointer, rej.Errors[0].Pointer)
		})
	}
	// At the bounds the replay starts.
	b.start(t, sub, func(p *replay.StartParams) {
		p.EventTypes = many[:replay.EventTypesMax]
		p.Until = b.clock.Now().Add(replay.UntilSkew)
	})
}

// Replays running at once are bounded: one per subscription (409) and
// MaxPerClient per client (429); another client is not affected, and a
// replay that ended frees its place.
func TestStartBoundsTheReplaysRunning(t *testing.T) {
	t.Parallel()
	b := setup(t, storeKinds()[0])
	acme, globex := "acme", "globex"
	of := func(client *string) func(s *subscription.Subscription) {
		return func(s *subscription.Subscription) { s.ClientID = client }
	}
	limitOf := func(t *testing.T, err error) int {
		t.Helper()
		var le *replay.LimitError
		require.ErrorAs(t, err, &le)
		return le.Status
	}
	first := b.newSub(t, of(&acme))
	b.start(t, first, nil)
	_, err := b.svc.Start(b.ctx, first.ID, &replay.StartParams{Since: baseTime()})
	require.Equal(t, http.StatusConflict, limitOf(t, err), "a replay of this subscription is already running")

	for range replay.MaxPerClientDefault - 1 {
		b.start(t, b.newSub(t, of(&acme)), nil)
	}
	sixth := b.newSub(t, of(&acme))
	_, err = b.svc.Start(b.ctx, sixth.ID, &replay.StartParams{Since: baseTime()})
	require.Equal(t, http.StatusTooManyRequests, limitOf(t, err), "the client's bound")
	b.start(t, b.newSub(t, of(&globex)), nil) // another client starts
	b.start(t, b.newSub(t, nil), nil)         // and so does the platform

	require.NoError(t, b.worker("w:1", nil).RunOnce(b.ctx)) // every replay ends (no events)
	b.start(t, sixth, nil)
	b.start(t, first, nil)
}

// The worker shares itself between clients: a short replay of one client
// started after a long one of another ends first, a few pages in, instead
// of after the long one's every page.
func TestWorkerTakesTurnsBetweenClients(t *testing.T) {
	t.Parallel()
	b := setup(t, storeKinds()[0])
	specs := make([]eventSpec, 60)
	for i := range specs {
		specs[i] = eventSpec{typ: "order.created", at: time.Duration(i) * time.Second}
	}
	b.storeEvents(t, specs...)
	acme, globex := "acme", "globex"
	long := b.start(t, b.newSub(t, func(s *subscription.Subscription) { s.ClientID = &acme }), nil) // 20 pages of 3
	short := b.start(t, b.newSub(t, func(s *subscription.Subscription) { s.ClientID = &globex }), func(p *replay.StartParams) {
		p.Since = baseTime().Add(57 * time.Second) // the last 3 events: one page
	})

	var mu sync.Mutex
	var pages []string
	w := b.worker("w:1", func(c *replay.WorkerConfig) {
		c.AfterPageFunc = func(r *replay.Replay) {
			mu.Lock()
			defer mu.Unlock()
			pages = append(pages, r.ID+"@"+string(r.Status))
		}
	})
	require.NoError(t, w.RunOnce(b.ctx))
	require.Equal(t, replay.StatusCompleted, b.get(t, long.ID).Status)
	require.Equal(t, replay.StatusCompleted, b.get(t, short.ID).Status)
	require.Equal(t, int64(60), b.get(t, long.ID).Scanned)
	require.Equal(t, int64(3), b.get(t, short.ID).Scanned)

	mu.Lock()
	defer mu.Unlock()
	lastShort, lastLong := -1, -1
	for i, p := range pages {
		switch {
		case strings.HasPrefix(p, short.ID):
			lastShort = i
		case strings.HasPrefix(p, long.ID):
			lastLong = i
		}
	}
	require.Equal(t, 1, lastShort, "the short replay's page came second, in the long one's turns: %v", pages)
	require.Greater(t, lastLong, lastShort, "the short replay ended before the long one: %v", pages)
}
