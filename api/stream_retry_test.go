package api_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sse "github.com/tmaxmax/go-sse"

	"github.com/hooklane/hooklane/stream"
)

// TestStreamSendsNoRetryOnlyBlock: API.md §7 — a block that carries only
// "retry:" must not reach clients. go-sse delivers such a block to the
// application as a message with no data; the stream must never cause one,
// on the first connection or after a reconnection.
func TestStreamSendsNoRetryOnlyBlock(t *testing.T) {
	t.Parallel()
	b := setupStream(t, stream.HubConfig{}, nil)
	var (
		mu  sync.Mutex
		got []sse.Event
	)
	arrived := make(chan struct{}, 64)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.ts.URL+"/api/stream", nil)
	require.NoError(t, err)
	conn := (&sse.Client{HTTPClient: &http.Client{}}).NewConnection(req)
	conn.SubscribeToAll(func(e sse.Event) {
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
		arrived <- struct{}{}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = conn.Connect()
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	b.waitClients(t, 1)
	e := b.newEvent(stream.TypeDispatchQueued, "job-1", stream.Data{JobID: "job-1", Status: "QUEUED"})
	b.write(t, e)
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("no message arrived")
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 1, "only the status event reaches the application: %+v", got)
	require.Equal(t, stream.TypeDispatchQueued, got[0].Type)
	require.Equal(t, e.ID, got[0].LastEventID)
	require.NotEmpty(t, got[0].Data)
}
