package stream

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHubHoldCapsStreamsPerOwner(t *testing.T) {
	t.Parallel()
	h := NewHub(HubConfig{})
	r1, ok := h.Hold("token:a", 2)
	require.True(t, ok)
	r2, ok := h.Hold("token:a", 2)
	require.True(t, ok)
	_, ok = h.Hold("token:a", 2)
	require.False(t, ok, "a third stream of the owner is refused")
	rb, ok := h.Hold("token:b", 2)
	require.True(t, ok, "another owner has its own count")
	require.Equal(t, 2, h.Held("token:a"))

	r1()
	r1() // idempotent: gives back one stream, not two
	require.Equal(t, 1, h.Held("token:a"))
	r3, ok := h.Hold("token:a", 2)
	require.True(t, ok, "a stream given back makes room")
	r2()
	r3()
	rb()
	require.Zero(t, h.Held("token:a"))
	require.Empty(t, h.held, "owners without streams are forgotten")

	_, ok = h.Hold("token:c", 0)
	require.True(t, ok, "no limit")
}

// pageRecorder is a Reader over a memStore that records the largest page
// asked for.
type pageRecorder struct {
	*memStore
	largest int
	reads   int
}

func (p *pageRecorder) StatusEventListAfter(ctx context.Context, lp *ListAfterParams) ([]Event, error) {
	p.largest = max(p.largest, lp.Limit)
	p.reads++
	return p.memStore.StatusEventListAfter(ctx, lp)
}

// A replay holds one page of ReplayBatchDefault events at a time, whatever
// the history it covers: it writes a page out before it reads the next.
func TestReplayReadsInBoundedPages(t *testing.T) {
	t.Parallel()
	st := &memStore{}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 1000
	for i := range n {
		st.commit(ev(start.Add(time.Duration(i)*time.Millisecond), 1, TypeDispatchQueued, "job"))
	}
	rec := &pageRecorder{memStore: st}
	sent := 0
	err := Replay(context.Background(), rec, &ReplayParams{Cursor: Cursor{Since: start}, UpTo: idAt(start.Add(time.Hour), 0)},
		func(*Event) error {
			sent++
			// Written before the next page is read: never more than one
			// page ahead of the writes.
			require.LessOrEqual(t, rec.reads*ReplayBatchDefault-sent, ReplayBatchDefault)
			return nil
		})
	require.NoError(t, err)
	require.Equal(t, n, sent)
	require.Equal(t, 100, rec.largest, "a replay holds at most 100 events at a time (it read pages of 500)")
}
