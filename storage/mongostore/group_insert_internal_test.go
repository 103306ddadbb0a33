package mongostore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	testWait = 60 * time.Second
	testTick = time.Millisecond
)

// TestGroupInserterSharesInserts: concurrent callers' documents are all
// inserted, each exactly once, in fewer commands than callers while an
// insert is running; a lone caller inserts at once.
func TestGroupInserterSharesInserts(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	var mu sync.Mutex
	seen := map[int]int{}
	release := make(chan struct{})
	first := make(chan struct{})
	var once sync.Once
	g := &groupInserter{insert: func(_ context.Context, docs []any) error {
		if calls.Add(1) == 1 {
			once.Do(func() { close(first) })
			<-release // hold the first insert while the others arrive
		}
		mu.Lock()
		defer mu.Unlock()
		for _, d := range docs {
			seen[d.(int)]++
		}
		return nil
	}}
	ctx := context.Background()
	const callers = 50
	var wg sync.WaitGroup
	wg.Go(func() { require.NoError(t, g.Insert(ctx, []any{0})) })
	<-first
	for i := 1; i < callers; i++ {
		wg.Go(func() { require.NoError(t, g.Insert(ctx, []any{i})) })
	}
	// Wait until every caller is queued behind the running insert.
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.pending) == callers-1
	}, testWait, testTick)
	close(release)
	wg.Wait()
	require.Len(t, seen, callers)
	for i := range callers {
		require.Equal(t, 1, seen[i], "document %d", i)
	}
	require.EqualValues(t, 2, calls.Load(), "the 49 waiting callers shared one insert")

	// The shared insert's leader hands out the outcome before it gives up
	// the lead: wait for that, or the next caller could find it running.
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return !g.running
	}, testWait, testTick)
	require.NoError(t, g.Insert(ctx, []any{callers}))
	require.EqualValues(t, 3, calls.Load(), "a lone caller inserts at once")
	g.mu.Lock()
	defer g.mu.Unlock()
	require.False(t, g.running)
}

// TestGroupInserterReportsTheSharedOutcome: every caller of a failed
// insert gets its error; a leader whose caller gives up still finishes
// its insert, and the next insert carries the others' documents.
func TestGroupInserterReportsTheSharedOutcome(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	var calls atomic.Int64
	g := &groupInserter{insert: func(ctx context.Context, _ []any) error {
		n := calls.Add(1)
		started <- struct{}{}
		<-release
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if n == 2 {
			return boom
		}
		return nil
	}}
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	// The leader's outcome has a channel of its own: it and the
	// followers' outcomes are sent from different goroutines, in no
	// fixed order.
	leaderErr := make(chan error, 1)
	errs := make(chan error, 2)
	go func() { leaderErr <- g.Insert(leaderCtx, []any{1}) }()
	<-started
	go func() { errs <- g.Insert(context.Background(), []any{2}) }()
	go func() { errs <- g.Insert(context.Background(), []any{3}) }()
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.pending) == 2
	}, testWait, testTick)
	cancelLeader()
	close(release)
	require.NoError(t, <-leaderErr, "the leader's insert was not cancelled with its caller")
	require.ErrorIs(t, <-errs, boom)
	require.ErrorIs(t, <-errs, boom)
	require.EqualValues(t, 2, calls.Load())
}
