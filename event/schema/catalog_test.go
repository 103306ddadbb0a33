package schema_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/store"
)

// fakeBindings is a schema.Bindings over a set of bound codes.
type fakeBindings struct {
	mu    sync.Mutex
	bound map[string]bool
	err   error
}

func (f *fakeBindings) BindsEventType(_ context.Context, code string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bound[code], f.err
}

// racingStore is a SQLite store whose next lose updates fail with
// store.ErrConflict, as when another writer won the revision check.
type racingStore struct {
	*sqlitestore.Store
	lose atomic.Int32
}

func (r *racingStore) EventTypeUpdate(ctx context.Context, t *schema.EventType) error {
	if r.lose.Add(-1) >= 0 {
		return fmt.Errorf("update: %w", store.ErrConflict)
	}
	return r.Store.EventTypeUpdate(ctx, t)
}

type catalogBundle struct {
	catalog  *schema.Catalog
	store    *racingStore
	bindings *fakeBindings
	changes  *atomic.Int32
	now      time.Time
}

func setupCatalog(t *testing.T) *catalogBundle {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "h.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	b := &catalogBundle{
		store: &racingStore{Store: st}, bindings: &fakeBindings{bound: map[string]bool{}},
		changes: &atomic.Int32{}, now: time.Date(2025, 1, 2, 3, 4, 5, 678_901_234, time.UTC),
	}
	b.catalog = schema.NewCatalog(schema.CatalogConfig{
		Store: b.store, Bindings: b.bindings,
		ValidateCodeFunc: func(code string) error {
			if code == "" || code == "bad code" {
				return errors.New("is not a code")
			}
			return nil
		},
		OnChangeFunc: func() { b.changes.Add(1) },
		NowFunc:      func() time.Time { return b.now },
	})
	return b
}

const objectSchema = `{"type":"object","required":["id"],"properties":{"id":{"type":"string"}}}`

// withVersion creates the type "t.x" with one version 1.0 in status.
func (b *catalogBundle) withVersion(t *testing.T, status schema.VersionStatus) {
	t.Helper()
	_, err := b.catalog.Create(t.Context(), &schema.EventTypeSpec{Code: "t.x", Name: "T", Versions: []schema.VersionSpec{
		{Version: "1.0", Schema: json.RawMessage(objectSchema), Status: schema.VersionFinalising},
	}})
	require.NoError(t, err)
	// Walk the lifecycle to the wanted status, one allowed step at a time.
	for _, s := range []schema.VersionStatus{schema.VersionCurrent, schema.VersionDeprecated} {
		if status == schema.VersionFinalising || (status == schema.VersionCurrent && s == schema.VersionDeprecated) {
			break
		}
		_, err := b.catalog.UpdateVersion(t.Context(), "t.x", "1.0", &schema.VersionPatch{Status: &s})
		require.NoError(t, err)
	}
	v, err := b.catalog.GetVersion(t.Context(), "t.x", "1.0")
	require.NoError(t, err)
	require.Equal(t, status, v.Status)
}

//go:fix inline

// requireRejection checks err is a *schema.Rejection with exactly these
// pointers.
func requireRejection(t *testing.T, err error, pointers ...string) *schema.Rejection {
	t.Helper()
	var rej *schema.Rejection
	require.ErrorAs(t, err, &rej)
	got := make([]string, len(rej.Violations))
	for i, v := range rej.Violations {
		got[i] = v.Pointer
	}
	require.Equal(t, pointers, got, "%v", rej.Violations)
	return rej
}

// TestCatalogVersionLifecycle runs every version patch from every status:
// a version moves FINALISING → CURRENT → DEPRECATED only, one step at a
// time; its schema changes only while FINALISING; only FINALISING may be
// deleted.
func TestCatalogVersionLifecycle(t *testing.T) {
	t.Parallel()
	const (
		ok       = "ok"
		conflict = "409"
		invalid  = "422"
	)
	newSchema := json.RawMessage(`{"type":"object"}`)
	tests := []struct {
		name   string
		from   schema.VersionStatus
		status *schema.VersionStatus
		schema json.RawMessage
		want   string
		// wantStatus is the status after the patch (unchanged on refusal).
		wantStatus schema.VersionStatus
	}{
		{"finalising stays finalising", schema.VersionFinalising, new(schema.VersionFinalising), nil, ok, schema.VersionFinalising},
		{"finalising to current", schema.VersionFinalising, new(schema.VersionCurrent), nil, ok, schema.VersionCurrent},
		{"finalising cannot skip current", schema.VersionFinalising, new(schema.VersionDeprecated), nil, conflict, schema.VersionFinalising},
		{"current back to finalising", schema.VersionCurrent, new(schema.VersionFinalising), nil, conflict, schema.VersionCurrent},
		{"current stays current", schema.VersionCurrent, new(schema.VersionCurrent), nil, ok, schema.VersionCurrent},
		{"current to deprecated", schema.VersionCurrent, new(schema.VersionDeprecated), nil, ok, schema.VersionDeprecated},
		{"deprecated back to finalising", schema.VersionDeprecated, new(schema.VersionFinalising), nil, conflict, schema.VersionDeprecated},
		{"deprecated back to current", schema.VersionDeprecated, new(schema.VersionCurrent), nil, conflict, schema.VersionDeprecated},
		{"deprecated stays deprecated", schema.VersionDeprecated, new(schema.VersionDeprecated), nil, ok, schema.VersionDeprecated},
		{"unknown status", schema.VersionFinalising, new(schema.VersionStatus("ARCHIVE")), nil, invalid, schema.VersionFinalising},
		{"schema of finalising", schema.VersionFinalising, nil, newSchema, ok, schema.VersionFinalising},
		{"schema of current", schema.VersionCurrent, nil, newSchema, conflict, schema.VersionCurrent},
		{"schema of deprecated", schema.VersionDeprecated, nil, newSchema, conflict, schema.VersionDeprecated},
		{"schema and promotion together", schema.VersionFinalising, new(schema.VersionCurrent), newSchema, ok, schema.VersionCurrent},
		{"null schema changes nothing", schema.VersionCurrent, nil, json.RawMessage(`null`), ok, schema.VersionCurrent},
		{"schema that does not compile", schema.VersionFinalising, nil, json.RawMessage(`{"type":12}`), invalid, schema.VersionFinalising},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupCatalog(t)
			b.withVersion(t, tt.from)
			before := b.changes.Load()
			b.now = b.now.Add(time.Hour)
			v, err := b.catalog.UpdateVersion(t.Context(), "t.x", "1.0", &schema.VersionPatch{Status: tt.status, Schema: tt.schema})
			switch tt.want {
			case ok:
				require.NoError(t, err)
				require.Equal(t, tt.wantStatus, v.Status)
				require.Equal(t, b.now.Truncate(time.Millisecond), v.UpdatedAt)
				require.Equal(t, before+1, b.changes.Load())
			case conflict:
				var c *schema.Conflict
				require.ErrorAs(t, err, &c)
				require.ErrorIs(t, err, store.ErrConflict)
				require.Equal(t, before, b.changes.Load())
			case invalid:
				var rej *schema.Rejection
				require.ErrorAs(t, err, &rej)
			}
			got, err := b.catalog.GetVersion(t.Context(), "t.x", "1.0")
			require.NoError(t, err)
			require.Equal(t, tt.wantStatus, got.Status)
			if tt.want == ok && len(tt.schema) > 0 && string(tt.schema) != "null" {
				require.JSONEq(t, string(tt.schema), string(got.Schema))
			} else {
				require.JSONEq(t, objectSchema, string(got.Schema))
			}
		})
	}
}

func TestCatalogDeleteVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from schema.VersionStatus
		ok   bool
	}{
		{schema.VersionFinalising, true},
		{schema.VersionCurrent, false},
		{schema.VersionDeprecated, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.from), func(t *testing.T) {
			t.Parallel()
			b := setupCatalog(t)
			b.withVersion(t, tt.from)
			err := b.catalog.DeleteVersion(t.Context(), "t.x", "1.0")
			_, getErr := b.catalog.GetVersion(t.Context(), "t.x", "1.0")
			var nf *schema.NotFoundError
			if tt.ok {
				require.NoError(t, err)
				require.ErrorAs(t, getErr, &nf)
				require.Equal(t, "schema version", nf.What)
				return
			}
			var c *schema.Conflict
			require.ErrorAs(t, err, &c)
			require.Equal(t, "only a FINALISING version can be deleted", c.Detail)
			require.NoError(t, getErr)
		})
	}
}

func TestCatalogNotFound(t *testing.T) {
	t.Parallel()
	b := setupCatalog(t)
	b.withVersion(t, schema.VersionFinalising)
	ctx := t.Context()
	cur := schema.VersionCurrent
	name := "N"
	tests := []struct {
		name string
		call func() error
		what string
	}{
		{"get type", func() error { _, err := b.catalog.Get(ctx, "no.such"); return err }, "event type"},
		{"update type", func() error {
			_, err := b.catalog.Update(ctx, "no.such", &schema.EventTypePatch{Name: &name})
			return err
		}, "event type"},
		{"delete type", func() error { return b.catalog.Delete(ctx, "no.such") }, "event type"},
		{"add version to missing type", func() error {
			_, err := b.catalog.AddVersion(ctx, "no.such", &schema.VersionSpec{Version: "1.0", Schema: json.RawMessage(`{}`)})
			return err
		}, "event type"},
		{"get version of missing type", func() error { _, err := b.catalog.GetVersion(ctx, "no.such", "1.0"); return err }, "event type"},
		{"get missing version", func() error { _, err := b.catalog.GetVersion(ctx, "t.x", "9.9"); return err }, "schema version"},
		{"patch missing version", func() error {
			_, err := b.catalog.UpdateVersion(ctx, "t.x", "9.9", &schema.VersionPatch{Status: &cur})
			return err
		}, "schema version"},
		{"delete missing version", func() error { return b.catalog.DeleteVersion(ctx, "t.x", "9.9") }, "schema version"},
		{"validate against missing version", func() error {
			_, err := b.catalog.ValidateData(ctx, "t.x", "9.9", json.RawMessage(`{}`))
			return err
		}, "schema version"},
	}
	for _, tt := range tests {
		err := tt.call()
		var nf *schema.NotFoundError
		require.ErrorAs(t, err, &nf, tt.name)
		require.Equal(t, tt.what, nf.What, tt.name)
		require.ErrorIs(t, err, store.ErrNotFound, tt.name)
	}
}

func TestCatalogCreate(t *testing.T) {
	t.Parallel()
	good := schema.VersionSpec{Version: "1.0", Schema: json.RawMessage(objectSchema)}
	tests := []struct {
		name     string
		spec     schema.EventTypeSpec
		pointers []string
	}{
		{"valid without versions", schema.EventTypeSpec{Code: "a.b", Name: "A"}, nil},
		{"valid with versions", schema.EventTypeSpec{Code: "a.b", Name: "A", Versions: []schema.VersionSpec{good, {Version: "1.1", Schema: json.RawMessage(`{}`), Status: schema.VersionCurrent}}}, nil},
		{"bad code and no name", schema.EventTypeSpec{Code: "bad code", Name: "  "}, []string{"/code", "/name"}},
		{"version listed twice", schema.EventTypeSpec{Code: "a.b", Name: "A", Versions: []schema.VersionSpec{good, good}}, []string{"/versions/1/version"}},
		{"bad versions", schema.EventTypeSpec{Code: "a.b", Name: "A", Versions: []schema.VersionSpec{
			{Version: "1", Schema: json.RawMessage(`{}`)},
			{Version: "01.0", Schema: json.RawMessage(`{}`)},
			{Version: "1.0.0", Schema: json.RawMessage(`{}`)},
			{Version: "2.0", SchemaType: "AVRO", Schema: json.RawMessage(`{}`)},
			{Version: "3.0", Status: schema.VersionDeprecated, Schema: json.RawMessage(`{}`)},
			{Version: "4.0"},
			{Version: "5.0", Schema: json.RawMessage(`null`)},
			{Version: "6.0", Schema: json.RawMessage(`{"properties":{"a":{"type":"nope"}}}`)},
		}}, []string{
			"/versions/0/version", "/versions/1/version", "/versions/2/version", "/versions/3/schemaType",
			"/versions/4/status", "/versions/5/schema", "/versions/6/schema", "/versions/7/schema/properties/a/type",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupCatalog(t)
			typ, err := b.catalog.Create(t.Context(), &tt.spec)
			if tt.pointers != nil {
				_ = requireRejection(t, err, tt.pointers...)
				require.Zero(t, b.changes.Load())
				return
			}
			require.NoError(t, err)
			require.Equal(t, schema.TypeCurrent, typ.Status)
			require.Equal(t, b.now.Truncate(time.Millisecond), typ.CreatedAt)
			require.Len(t, typ.Versions, len(tt.spec.Versions))
			for _, v := range typ.Versions {
				require.Equal(t, "JSON_SCHEMA", v.SchemaType)
				require.Equal(t, "application/json", v.MimeType)
			}
			if len(typ.Versions) > 0 {
				require.Equal(t, schema.VersionFinalising, typ.Versions[0].Status, "the default status")
			}
			require.Equal(t, int32(1), b.changes.Load())
			_, err = b.catalog.Create(t.Context(), &tt.spec)
			var c *schema.Conflict
			require.ErrorAs(t, err, &c)
			require.Equal(t, `event type "a.b" exists`, c.Detail)
		})
	}
}

func TestCatalogAddVersion(t *testing.T) {
	t.Parallel()
	b := setupCatalog(t)
	b.withVersion(t, schema.VersionFinalising)
	ctx := t.Context()

	_, err := b.catalog.AddVersion(ctx, "t.x", &schema.VersionSpec{Version: "x", Status: schema.VersionDeprecated})
	rej := requireRejection(t, err, "/version", "/status", "/schema")
	require.Equal(t, "the schema version is invalid", rej.Detail)

	_, err = b.catalog.AddVersion(ctx, "t.x", &schema.VersionSpec{Version: "1.0", Schema: json.RawMessage(`{}`)})
	var c *schema.Conflict
	require.ErrorAs(t, err, &c)
	require.Equal(t, "version 1.0 exists", c.Detail)

	v, err := b.catalog.AddVersion(ctx, "t.x", &schema.VersionSpec{Version: "1.1", Schema: json.RawMessage(`{}`), Status: schema.VersionCurrent})
	require.NoError(t, err)
	require.Equal(t, schema.VersionCurrent, v.Status)
	typ, err := b.catalog.Get(ctx, "t.x")
	require.NoError(t, err)
	require.Len(t, typ.Versions, 2)
}

func TestCatalogUpdateAndDeleteType(t *testing.T) {
	t.Parallel()
	b := setupCatalog(t)
	b.withVersion(t, schema.VersionCurrent)
	ctx := t.Context()
	empty, name, desc := " ", "New", "D"
	archive, bogus := schema.TypeArchive, schema.TypeStatus("GONE")

	_, err := b.catalog.Update(ctx, "t.x", &schema.EventTypePatch{Name: &empty})
	_ = requireRejection(t, err, "/name")
	_, err = b.catalog.Update(ctx, "t.x", &schema.EventTypePatch{Status: &bogus})
	_ = requireRejection(t, err, "/status")
	_, err = b.catalog.Update(ctx, "no.such", &schema.EventTypePatch{Status: &bogus})
	_ = requireRejection(t, err, "/status") // the request is checked before the type is read

	typ, err := b.catalog.Update(ctx, "t.x", &schema.EventTypePatch{Name: &name, Description: &desc, Status: &archive})
	require.NoError(t, err)
	require.Equal(t, "New", typ.Name)
	require.Equal(t, "D", typ.Description)
	require.Equal(t, schema.TypeArchive, typ.Status)
	require.Len(t, typ.Versions, 1, "a type patch keeps the versions")

	b.bindings.bound["t.x"] = true
	err = b.catalog.Delete(ctx, "t.x")
	var c *schema.Conflict
	require.ErrorAs(t, err, &c)
	require.Equal(t, `event type "t.x" is bound by a subscription`, c.Detail)

	b.bindings.bound["t.x"], b.bindings.err = false, errors.New("index down")
	require.ErrorContains(t, b.catalog.Delete(ctx, "t.x"), "index down")

	b.bindings.err = nil
	changes := b.changes.Load()
	require.NoError(t, b.catalog.Delete(ctx, "t.x"))
	require.Equal(t, changes+1, b.changes.Load())
	_, err = b.catalog.Get(ctx, "t.x")
	require.ErrorIs(t, err, store.ErrNotFound)
}

// TestCatalogRetriesRacingWrites checks the revision-checked write: a
// change that loses to another writer is read and applied again, up to
// three times, then refused as a conflict to retry.
func TestCatalogRetriesRacingWrites(t *testing.T) {
	t.Parallel()
	b := setupCatalog(t)
	b.withVersion(t, schema.VersionFinalising)
	ctx := t.Context()
	name := "Renamed"

	b.store.lose.Store(2)
	typ, err := b.catalog.Update(ctx, "t.x", &schema.EventTypePatch{Name: &name})
	require.NoError(t, err)
	require.Equal(t, "Renamed", typ.Name)

	b.store.lose.Store(3)
	err = b.catalog.DeleteVersion(ctx, "t.x", "1.0")
	var c *schema.Conflict
	require.ErrorAs(t, err, &c)
	require.Equal(t, "the event type changed concurrently; retry", c.Detail)
	_, err = b.catalog.GetVersion(ctx, "t.x", "1.0")
	require.NoError(t, err, "a refused change writes nothing")
}

func TestCatalogValidateData(t *testing.T) {
	t.Parallel()
	b := setupCatalog(t)
	b.withVersion(t, schema.VersionDeprecated)
	ctx := t.Context()
	changes := b.changes.Load()
	tests := []struct {
		name     string
		data     string
		pointers []string
	}{
		{"valid", `{"id":"x"}`, nil},
		{"missing", ``, []string{"/data"}},
		{"violations", `{"id":1}`, []string{"/data/id"}},
		{"null", `null`, []string{"/data"}},
	}
	for _, tt := range tests {
		v, err := b.catalog.ValidateData(ctx, "t.x", "1.0", json.RawMessage(tt.data))
		if tt.pointers == nil {
			require.NoError(t, err, tt.name)
			require.Equal(t, schema.VersionDeprecated, v.Status, "any status validates")
			continue
		}
		_ = requireRejection(t, err, tt.pointers...)
	}
	require.Equal(t, changes, b.changes.Load(), "validation stores nothing")
}

func TestCatalogList(t *testing.T) {
	t.Parallel()
	b := setupCatalog(t)
	ctx := t.Context()
	for _, code := range []string{"a.one", "a.two", "b.one"} {
		_, err := b.catalog.Create(ctx, &schema.EventTypeSpec{Code: code, Name: code})
		require.NoError(t, err)
	}
	archive := schema.TypeArchive
	_, err := b.catalog.Update(ctx, "a.two", &schema.EventTypePatch{Status: &archive})
	require.NoError(t, err)

	codes := func(status schema.TypeStatus, prefix string) []string {
		all, err := b.catalog.List(ctx, status, prefix)
		require.NoError(t, err)
		var out []string
		for _, t := range all {
			out = append(out, t.Code)
		}
		return out
	}
	require.Equal(t, []string{"a.one", "a.two", "b.one"}, codes("", ""))
	require.Equal(t, []string{"a.one", "a.two"}, codes("", "a."))
	require.Equal(t, []string{"a.one", "b.one"}, codes(schema.TypeCurrent, ""))
}

func TestNewCatalogPanicsWithoutPorts(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() { schema.NewCatalog(schema.CatalogConfig{}) })
}
