package stream_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/stream"
)

func TestFilterMatch(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	delivered := &stream.Event{
		Type: "dispatch.delivered", Time: at, Subject: "job1",
		Data: stream.Data{EventType: "order.created", Subscription: "billing"},
	}
	accepted := &stream.Event{
		Type: stream.TypeEventAccepted, Time: at, Subject: "ev1",
		Data: stream.Data{EventType: "order.created", Subscriptions: []string{"billing", "crm"}},
	}
	tests := []struct {
		name string
		v    stream.FilterValues
		want [2]bool // delivered, accepted
	}{
		{"empty passes all", stream.FilterValues{}, [2]bool{true, true}},
		{"type prefix", stream.FilterValues{Types: "dispatch.*"}, [2]bool{true, false}},
		{"exact type", stream.FilterValues{Types: "event.accepted, x"}, [2]bool{false, true}},
		{"subscription", stream.FilterValues{Subscriptions: "crm"}, [2]bool{false, true}},
		{"event type pattern", stream.FilterValues{EventTypes: "order.*"}, [2]bool{true, true}},
		{"event type miss", stream.FilterValues{EventTypes: "refund.*"}, [2]bool{false, false}},
		{"jobs", stream.FilterValues{Jobs: "job1"}, [2]bool{true, false}},
		{"lists are ANDed", stream.FilterValues{Types: "dispatch.*", Subscriptions: "crm"}, [2]bool{false, false}},
		{"since drops older", stream.FilterValues{Since: at.Add(time.Second).Format(time.RFC3339Nano)}, [2]bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _, err := stream.NewFilter(&tt.v, "")
			require.NoError(t, err)
			require.Equal(t, tt.want, [2]bool{f.Match(delivered), f.Match(accepted)})
		})
	}
}

func TestNewFilterResumeIDWinsOverSince(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	old := &stream.Event{Type: "dispatch.delivered", Time: since.Add(-time.Hour)}
	f, cur, err := stream.NewFilter(&stream.FilterValues{Since: since.Format(time.RFC3339)}, "")
	require.NoError(t, err)
	require.Equal(t, since, cur.Since)
	require.False(t, f.Match(old))
	const id = "01JAAAAAAAAAAAAAAAAAAAAAAA"
	f, cur, err = stream.NewFilter(&stream.FilterValues{Since: since.Format(time.RFC3339)}, id)
	require.NoError(t, err)
	require.Equal(t, id, cur.AfterID)
	require.True(t, f.Match(old), "a resume id replaces since")
}

func TestNewFilterRefusesBadValues(t *testing.T) {
	t.Parallel()
	_, _, err := stream.NewFilter(&stream.FilterValues{Since: "yesterday"}, "")
	fe, ok := errors.AsType[*stream.FilterError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, "since", fe.Param)
	_, _, err = stream.NewFilter(&stream.FilterValues{}, "not-a-ulid")
	fe, ok = errors.AsType[*stream.FilterError](err)
	require.True(t, ok, "%v", err)
	require.Empty(t, fe.Param)
}

func TestFilterScopeTo(t *testing.T) {
	t.Parallel()
	f, _, err := stream.NewFilter(&stream.FilterValues{Clients: "acme"}, "")
	require.NoError(t, err)
	_, ok := f.ScopeTo("acme")
	require.True(t, ok)
	require.Equal(t, []string{"acme"}, f.Clients())
	f, _, err = stream.NewFilter(&stream.FilterValues{Clients: "acme,globex"}, "")
	require.NoError(t, err)
	other, ok := f.ScopeTo("acme")
	require.False(t, ok)
	require.Equal(t, "globex", other)
	f, _, err = stream.NewFilter(&stream.FilterValues{}, "")
	require.NoError(t, err)
	_, ok = f.ScopeTo("acme")
	require.True(t, ok)
	require.Equal(t, []string{"acme"}, f.Clients(), "an unfiltered scoped stream is narrowed to its client")
}
