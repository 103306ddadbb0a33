package stream

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCloudEventAcceptedCarriesSubscriptions: API.md §7 says event.accepted
// carries data.subscriptions, the codes it matched — an empty list when it
// matched none; other types leave the member out.
func TestCloudEventAcceptedCarriesSubscriptions(t *testing.T) {
	t.Parallel()
	data := func(e Event) map[string]any {
		b, err := e.CloudEvent()
		require.NoError(t, err)
		var ce struct {
			Data map[string]any `json:"data"`
		}
		require.NoError(t, json.Unmarshal(b, &ce))
		return ce.Data
	}
	accepted := Event{ID: "01JD0000000000000000000000", Type: TypeEventAccepted, Subject: "ev", Time: time.Now()}
	require.Equal(t, []any{}, data(accepted)["subscriptions"])
	accepted.Data.Subscriptions = []string{"orders"}
	require.Equal(t, []any{"orders"}, data(accepted)["subscriptions"])
	queued := Event{ID: "01JD0000000000000000000001", Type: TypeDispatchQueued, Subject: "job", Time: time.Now()}
	require.NotContains(t, data(queued), "subscriptions")
}
