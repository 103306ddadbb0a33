package transporttest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination"
)

// testStructured: the default content mode carries the stored event as
// the body, the content type application/cloudevents+json, the job id and
// attempt, the subscription's headers and the attempt's traceparent
// (§15's "Message format" and "Delivery metadata").
func testStructured(t *testing.T, h *Harness) {
	b := setup(t, h, destination.ClientsConfig{})
	target := h.NewTarget(t, TargetOptions{})
	d := b.decode(t, target.Raw)
	ev := event("ev-structured", "hello")
	b.publish(t, d, &destination.Envelope{
		Event: ev, Headers: map[string]string{"x-team": "orders"},
		JobID: "job-structured", Attempt: 3, Group: "sub:order:1", TraceParent: TraceParent,
	})

	r := target.Receive(t)
	require.JSONEq(t, string(ev), string(r.Body))
	require.Equal(t, string(ev), string(r.Body), "the body is the stored event as it is")
	if h.Features.ContentType != "" {
		ct, ok := where(t, r, h.Features.ContentType)
		require.True(t, ok, "content type at %s", h.Features.ContentType)
		require.Equal(t, "application/cloudevents+json", ct)
	}
	id, ok := where(t, r, h.Features.JobID)
	require.True(t, ok, "job id at %s", h.Features.JobID)
	require.Equal(t, "job-structured", id)
	require.Equal(t, "3", r.Headers["hooklane-attempt"])
	require.Equal(t, "orders", r.Headers["x-team"], "the subscription's headers go along")
	require.Equal(t, TraceParent, r.Headers["traceparent"], "the attempt's traceparent travels as a header")
	for k := range r.Headers {
		require.False(t, h.Features.AttrPrefix != "" && strings.HasPrefix(k, h.Features.AttrPrefix),
			"structured mode carries no %s attribute headers: %s", h.Features.AttrPrefix, k)
	}
}

// testDataOnly: binary content mode carries data as the body, its
// datacontenttype as the content type, every other attribute as a header
// named after the binding; a structured-only type refuses dataOnly at
// /dataOnly.
func testDataOnly(t *testing.T, h *Harness) {
	b := setup(t, h, destination.ClientsConfig{})
	target := h.NewTarget(t, TargetOptions{})
	if !h.Features.Binary {
		_, err := b.tr.Decode(&destination.DecodeParams{Raw: target.Raw, DataOnly: true})
		var ve *destination.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "/dataOnly", ve.Problems[0].Pointer)
		return
	}
	d, err := b.tr.Decode(&destination.DecodeParams{Raw: target.Raw, DataOnly: true})
	require.NoError(t, err)
	ev := event("ev-binary", "bin")
	b.publish(t, d, message(ev, "job-binary", "", true))

	r := target.Receive(t)
	require.JSONEq(t, `{"orderId": "ev-binary", "payload": "bin"}`, string(r.Body))
	if h.Features.ContentType != "" {
		ct, _ := where(t, r, h.Features.ContentType)
		require.Equal(t, "application/json", ct, "datacontenttype travels as the content type")
	}
	p := h.Features.AttrPrefix
	want := map[string]string{
		p + "specversion":     "1.0",
		p + "id":              "ev-binary",
		p + "source":          eventSource,
		p + "type":            eventType,
		p + "subject":         "order:12345",
		p + "time":            eventTime,
		p + "traceparent":     eventTraceParent,
		p + "comexamplelevel": "3",
	}
	for k, v := range want {
		require.Equal(t, v, r.Headers[k], "attribute header %s", k)
	}
	require.NotContains(t, r.Headers, p+"datacontenttype", "datacontenttype is the content type, not an attribute header")
	require.NotContains(t, r.Headers, p+"data")
	id, _ := where(t, r, h.Features.JobID)
	require.Equal(t, "job-binary", id)
	require.Equal(t, TraceParent, r.Headers["traceparent"])
}

// testMessageGroup: the job's messageGroup becomes the broker's group
// (record key, ordering key, MessageGroupId), one group stays on one
// partition, and a group's messages arrive in publish order.
func testMessageGroup(t *testing.T, h *Harness) {
	b := setup(t, h, destination.ClientsConfig{})
	target := h.NewTarget(t, TargetOptions{Ordered: true})
	d := b.decode(t, target.Raw)
	groups := []string{"sub:order:a", "sub:order:b", "sub:order:c"}
	const perGroup = 4
	for i := range perGroup {
		for _, g := range groups {
			job := fmt.Sprintf("job-%s-%d", g, i)
			b.publish(t, d, message(event(job, g), job, g, false))
		}
	}
	next := map[string]int{}
	partition := map[string]string{}
	for range perGroup * len(groups) {
		r := target.Receive(t)
		g, ok := where(t, r, h.Features.Group)
		require.True(t, ok, "group at %s", h.Features.Group)
		id, _ := where(t, r, h.Features.JobID)
		require.Equal(t, fmt.Sprintf("job-%s-%d", g, next[g]), id, "group %s in publish order", g)
		next[g]++
		if h.Features.Partition != "" {
			p, _ := where(t, r, h.Features.Partition)
			if prev, seen := partition[g]; seen {
				require.Equal(t, prev, p, "one group, one partition")
			}
			partition[g] = p
		}
	}
	for _, g := range groups {
		require.Equal(t, perGroup, next[g], "group %s", g)
	}
}

// testLargeEvent: an event close to the broker's limit (1 MiB by
// default) goes through whole.
func testLargeEvent(t *testing.T, h *Harness) {
	b := setup(t, h, destination.ClientsConfig{})
	target := h.NewTarget(t, TargetOptions{})
	d := b.decode(t, target.Raw)
	limit := h.Features.MaxBody
	if limit <= 0 {
		limit = 1 << 20
	}
	ev := event("ev-large", strings.Repeat("x", limit-8<<10))
	b.publish(t, d, message(ev, "job-large", "sub:large", false))
	r := target.Receive(t)
	require.Len(t, r.Body, len(ev))
	require.Equal(t, string(ev), string(r.Body))
}

// testConcurrent: deliveries share one client; every one arrives once
// (run with the race detector).
func testConcurrent(t *testing.T, h *Harness) {
	b := setup(t, h, destination.ClientsConfig{})
	target := h.NewTarget(t, TargetOptions{})
	const workers, each = 16, 4
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			// Each worker decodes its own copy: equal configurations
			// share one client.
			d, err := b.tr.Decode(&destination.DecodeParams{Raw: target.Raw})
			if err != nil {
				errs <- err
				return
			}
			for i := range each {
				job := fmt.Sprintf("job-c-%d-%d", w, i)
				_, err := b.tr.Deliver(t.Context(), d, &destination.Envelope{Event: event(job, "c"), JobID: job, Attempt: 1})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 1, b.tr.Clients(), "one client per configuration")
	seen := map[string]bool{}
	for range workers * each {
		r := target.Receive(t)
		var ev struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &ev))
		require.False(t, seen[ev.ID], "duplicate %s", ev.ID)
		seen[ev.ID] = true
	}
	require.Len(t, seen, workers*each)
}
