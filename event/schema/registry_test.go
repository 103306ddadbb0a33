package schema_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/store"
)

// memStore is a RegistryStore over a map, counting reads.
type memStore struct {
	mu    sync.Mutex
	types map[string]*schema.EventType
	gen   int64
	gets  int
}

func (m *memStore) EventTypeGet(_ context.Context, code string) (*schema.EventType, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	t, ok := m.types[code]
	if !ok {
		return nil, store.ErrNotFound
	}
	c := *t
	return &c, nil
}

func (m *memStore) EventTypeGeneration(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gen, nil
}

const orderSchema = `{"type":"object","required":["amount","currency"],"additionalProperties":false,
	"properties":{"amount":{"type":"number","minimum":0},"currency":{"enum":["EUR","USD"]},
	"email":{"type":"string","format":"email"},"at":{"type":"string","format":"date-time"},
	"lines":{"type":"array","items":{"type":"object","required":["sku"],"properties":{"sku":{"type":"string"},"a/b~c":{"type":"integer"}}}}}}`

func orderType() *schema.EventType {
	return &schema.EventType{Code: "shop.order.created", Name: "Order", Status: schema.TypeCurrent, Versions: []schema.Version{
		{Version: "1.0", Status: schema.VersionCurrent, Schema: json.RawMessage(orderSchema)},
		{Version: "0.9", Status: schema.VersionDeprecated, Schema: json.RawMessage(`{"type":"object"}`)},
		{Version: "2.0", Status: schema.VersionFinalising, Schema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","required":["id"]}`)},
	}}
}

func event(typ, dataversion, data string) *cloudevent.Event {
	ev := &cloudevent.Event{SpecVersion: "1.0", ID: "1", Source: "/s", Type: typ}
	if data != "" {
		ev.Data = json.RawMessage(data)
	}
	if dataversion != "" {
		ev.Extensions = map[string]any{cloudevent.ExtDataVersion: dataversion}
	}
	return ev
}

func TestRegistryValidate(t *testing.T) {
	t.Parallel()
	st := &memStore{types: map[string]*schema.EventType{
		"shop.order.created": orderType(),
		"shop.any":           {Code: "shop.any", Status: schema.TypeCurrent},
		"shop.old":           {Code: "shop.old", Status: schema.TypeArchive},
	}}
	type v = schema.Violation
	for _, tc := range []struct {
		name           string
		ev             *cloudevent.Event
		wantVersion    string
		wantDeprecated bool
		want           []v // nil when accepted
	}{
		{name: "valid", ev: event("shop.order.created", "", `{"amount":10,"currency":"EUR","email":"a@example.com"}`), wantVersion: "1.0"},
		{
			name: "missing required", ev: event("shop.order.created", "", `{"amount":10}`),
			want: []v{{Pointer: "/data", Message: "missing required property 'currency'"}},
		},
		{
			name: "two missing required are two entries", ev: event("shop.order.created", "", `{}`),
			want: []v{{Pointer: "/data", Message: "missing required property 'amount'"}, {Pointer: "/data", Message: "missing required property 'currency'"}},
		},
		{
			name: "wrong type", ev: event("shop.order.created", "", `{"amount":"10","currency":"EUR"}`),
			want: []v{{Pointer: "/data/amount", Message: "got string, want number"}},
		},
		{
			name: "enum", ev: event("shop.order.created", "", `{"amount":1,"currency":"GBP"}`),
			want: []v{{Pointer: "/data/currency", Message: "value must be one of 'EUR', 'USD'"}},
		},
		{
			name: "format", ev: event("shop.order.created", "", `{"amount":1,"currency":"EUR","email":"nope","at":"yesterday"}`),
			want: []v{{Pointer: "/data/at", Message: "'yesterday' is not valid date-time: less than 20 characters long"}, {Pointer: "/data/email", Message: "'nope' is not valid email: missing @"}},
		},
		{
			name: "additionalProperties", ev: event("shop.order.created", "", `{"amount":1,"currency":"EUR","x":1,"y":2}`),
			want: []v{{Pointer: "/data/x", Message: "property 'x' is not allowed (additionalProperties is false)"}, {Pointer: "/data/y", Message: "property 'y' is not allowed (additionalProperties is false)"}},
		},
		{
			name: "nested array and escaped pointer", ev: event("shop.order.created", "", `{"amount":-1,"currency":"EUR","lines":[{"sku":"A"},{"a/b~c":1.5}]}`),
			want: []v{{Pointer: "/data/amount", Message: "minimum: got -1, want 0"}, {Pointer: "/data/lines/1", Message: "missing required property 'sku'"}, {Pointer: "/data/lines/1/a~1b~0c", Message: "got number, want integer"}},
		},
		{
			name: "no data is null", ev: event("shop.order.created", "", ""),
			want: []v{{Pointer: "/data", Message: "got null, want object"}},
		},
		{
			name: "binary data against a schema", ev: &cloudevent.Event{SpecVersion: "1.0", ID: "1", Source: "/s", Type: "shop.order.created", DataBase64: []byte{1}},
			want: []v{{Pointer: "/data_base64", Message: "data must be JSON for this event type"}},
		},
		{name: "DEPRECATED named", ev: event("shop.order.created", "0.9", `{}`), wantVersion: "0.9", wantDeprecated: true},
		{
			name: "FINALISING named uses its draft-07 schema", ev: event("shop.order.created", "2.0", `{}`),
			want: []v{{Pointer: "/data", Message: "missing required property 'id'"}},
		},
		{
			name: "unknown version", ev: event("shop.order.created", "1.1", `{}`),
			want: []v{{Pointer: "/dataversion", Message: `unknown schema version "1.1"`}},
		},
		{name: "no versions takes anything", ev: event("shop.any", "", `[1,"x"]`)},
		{name: "ARCHIVE type", ev: event("shop.old", "", `{}`), want: []v{{Pointer: "/type", Message: "event type is ARCHIVE"}}},
		{name: "unknown type", ev: event("shop.nope", "", `{}`), want: []v{{Pointer: "/type", Message: "is not a registered event type"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := schema.NewRegistry(schema.RegistryConfig{Store: st})
			res, err := r.Validate(t.Context(), tc.ev)
			if tc.want == nil {
				require.NoError(t, err)
				require.Equal(t, schema.Resolution{Version: tc.wantVersion, Deprecated: tc.wantDeprecated}, res)
				return
			}
			var rej *schema.Rejection
			require.ErrorAs(t, err, &rej, "%v", err)
			require.Equal(t, tc.want, rej.Violations)
			require.NotEmpty(t, rej.Detail)
		})
	}
}

func TestRegistryAllowUnknownTypes(t *testing.T) {
	t.Parallel()
	st := &memStore{types: map[string]*schema.EventType{"shop.old": {Code: "shop.old", Status: schema.TypeArchive}}}
	r := schema.NewRegistry(schema.RegistryConfig{Store: st, AllowUnknownTypes: true})
	res, err := r.Validate(t.Context(), event("shop.nope", "7.0", `"anything"`))
	require.NoError(t, err)
	require.Equal(t, schema.Resolution{}, res)
	// Known types keep their rules.
	_, err = r.Validate(t.Context(), event("shop.old", "", `{}`))
	var rej *schema.Rejection
	require.ErrorAs(t, err, &rej)
}

func TestRegistryCachesUntilInvalidate(t *testing.T) {
	t.Parallel()
	st := &memStore{types: map[string]*schema.EventType{"shop.order.created": orderType()}}
	now := time.Unix(1_700_000_000, 0)
	r := schema.NewRegistry(schema.RegistryConfig{Store: st, NowFunc: func() time.Time { return now }})
	for range 3 {
		_, err := r.Validate(t.Context(), event("shop.order.created", "", `{"amount":1,"currency":"EUR"}`))
		require.NoError(t, err)
	}
	require.Equal(t, 1, st.gets)
	r.Invalidate()
	_, err := r.Validate(t.Context(), event("shop.order.created", "", `{"amount":1,"currency":"EUR"}`))
	require.NoError(t, err)
	require.Equal(t, 2, st.gets)
}

// TestRegistryCrossInstance runs two registries (two gateway instances) over
// one SQLite store: a change written through one is seen by the other once
// its refresh interval has passed, and at once by the writer, which
// invalidates.
func TestRegistryCrossInstance(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(t.TempDir(), "h.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	typ := orderType()
	typ.CreatedAt, typ.UpdatedAt = time.Now().UTC(), time.Now().UTC()
	typ.Versions[2].Schema = json.RawMessage(`{"type":"object"}`)
	require.NoError(t, st.EventTypeInsert(ctx, typ))

	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	a := schema.NewRegistry(schema.RegistryConfig{Store: st, NowFunc: clock})
	b := schema.NewRegistry(schema.RegistryConfig{Store: st, NowFunc: clock})
	finalising := event("shop.order.created", "2.0", `{"n":1}`)
	for _, r := range []*schema.Registry{a, b} {
		_, err := r.Validate(ctx, finalising)
		require.NoError(t, err)
	}

	// Instance a changes the FINALISING schema and invalidates its own cache.
	cur, err := st.EventTypeGet(ctx, "shop.order.created")
	require.NoError(t, err)
	cur.Versions[2].Schema = json.RawMessage(`{"type":"object","required":["id"]}`)
	require.NoError(t, st.EventTypeUpdate(ctx, cur))
	a.Invalidate()

	var rej *schema.Rejection
	_, err = a.Validate(ctx, finalising)
	require.ErrorAs(t, err, &rej, "the writer applies the change at once")
	_, err = b.Validate(ctx, finalising)
	require.NoError(t, err, "b still uses its cached compiled schema within the interval")
	advance(schema.RefreshIntervalDefault - time.Millisecond)
	_, err = b.Validate(ctx, finalising)
	require.NoError(t, err)
	advance(time.Millisecond)
	_, err = b.Validate(ctx, finalising)
	require.ErrorAs(t, err, &rej, "b sees the change once the refresh interval passed")
	require.Equal(t, []schema.Violation{{Pointer: "/data", Message: "missing required property 'id'"}}, rej.Violations)

	// Archiving the type and deleting it travel the same way.
	cur, err = st.EventTypeGet(ctx, "shop.order.created")
	require.NoError(t, err)
	cur.Status = schema.TypeArchive
	require.NoError(t, st.EventTypeUpdate(ctx, cur))
	advance(schema.RefreshIntervalDefault)
	_, err = b.Validate(ctx, event("shop.order.created", "", `{"amount":1,"currency":"EUR"}`))
	require.ErrorAs(t, err, &rej)
	require.Equal(t, "/type", rej.Violations[0].Pointer)
	require.NoError(t, st.EventTypeDelete(ctx, "shop.order.created"))
	advance(schema.RefreshIntervalDefault)
	_, err = b.Validate(ctx, event("shop.order.created", "", `{}`))
	require.ErrorAs(t, err, &rej)
	require.Equal(t, []schema.Violation{{Pointer: "/type", Message: "is not a registered event type"}}, rej.Violations)
}

// TestRegistryBoundsUnknownCodes checks that the codes producers make up
// cannot grow the cache without limit: past 10,000 unknown codes, a new one
// is read from the store each time instead of remembered.
func TestRegistryBoundsUnknownCodes(t *testing.T) {
	t.Parallel()
	st := &memStore{types: map[string]*schema.EventType{}}
	now := time.Unix(1_700_000_000, 0)
	r := schema.NewRegistry(schema.RegistryConfig{Store: st, AllowUnknownTypes: true, NowFunc: func() time.Time { return now }})
	for i := range 10_000 {
		_, err := r.Validate(t.Context(), event(fmt.Sprintf("made.up%d", i), "", `{}`))
		require.NoError(t, err)
	}
	require.Equal(t, 10_000, st.gets)
	_, err := r.Validate(t.Context(), event("made.up0", "", `{}`))
	require.NoError(t, err)
	require.Equal(t, 10_000, st.gets, "remembered")
	for range 2 {
		_, err = r.Validate(t.Context(), event("made.up.more", "", `{}`))
		require.NoError(t, err)
	}
	require.Equal(t, 10_002, st.gets, "not remembered past the bound")
	r.Invalidate()
	for range 2 {
		_, err = r.Validate(t.Context(), event("made.up.more", "", `{}`))
		require.NoError(t, err)
	}
	require.Equal(t, 10_003, st.gets, "the bound resets with the cache")
}
