package dispatch_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/queue"
)

func TestMessageCarriesTraceParent(t *testing.T) {
	t.Parallel()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	j := &dispatch.Job{ID: "job-1", Subscription: "orders", Version: 3, TraceParent: tp}
	m := dispatch.Message(j, nil)
	require.Equal(t, map[string]string{dispatch.AttributeTraceParent: tp}, m.Attributes)
	require.NoError(t, queue.CheckAttributes(m.Attributes))
	require.Equal(t, "job-1-3", m.DedupID)

	j.TraceParent = ""
	require.Nil(t, dispatch.Message(j, nil).Attributes, "tracing off: no attributes")
}

func TestJobJSONHidesTraceParent(t *testing.T) {
	t.Parallel()
	j := dispatch.Job{ID: "job-1", TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	b, err := json.Marshal(j)
	require.NoError(t, err)
	var fields map[string]any
	require.NoError(t, json.Unmarshal(b, &fields))
	require.NotContains(t, fields, "traceParent")
	require.Equal(t, "job-1", fields["id"])
}
