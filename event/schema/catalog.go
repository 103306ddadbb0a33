package schema

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/hooklane/hooklane/store"
)

// versionPattern is MAJOR.MINOR, each at most six digits without leading
// zeros.
var versionPattern = regexp.MustCompile(`^(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})$`)

// updateAttempts bounds the read-change-write rounds of one change whose
// revision-checked write keeps losing to other writers. Admin writes are
// rare, so three losses in a row mean a hot loop elsewhere: the caller is
// told to retry rather than spun here.
const updateAttempts = 3

// Schema and media types a version may have (API.md §2).
const (
	// SchemaTypeJSONSchema is the only schema language, and the default.
	SchemaTypeJSONSchema = "JSON_SCHEMA"
	// MimeTypeDefault is the media type of a version that names none.
	MimeTypeDefault = "application/json"
)

// CatalogStore is what the Catalog needs of the store.
type CatalogStore interface {
	EventTypeInsert(ctx context.Context, t *EventType) error
	EventTypeGet(ctx context.Context, code string) (*EventType, error)
	EventTypeList(ctx context.Context, p *ListParams) (*Page, error)
	EventTypeUpdate(ctx context.Context, t *EventType) error
	EventTypeDelete(ctx context.Context, code string) error
}

// Bindings tells whether subscriptions bind an event type
// (*subscription.Cache in production).
type Bindings interface {
	// BindsEventType reports whether any subscription, ACTIVE or PAUSED,
	// binds code exactly or by a pattern that matches it.
	BindsEventType(ctx context.Context, code string) (bool, error)
}

// CatalogConfig configures a Catalog.
type CatalogConfig struct {
	// Store holds the event types. Required.
	Store CatalogStore
	// Bindings refuses the delete of a bound type. Required.
	Bindings Bindings
	// ValidateCodeFunc checks the syntax of a new event type's code; its
	// error's text is the message at /code. Required. In production it is
	// event.ValidateTypeCode: the code grammar lives with the
	// binding patterns built on it, and this package must not import the
	// subscription domain.
	ValidateCodeFunc func(code string) error
	// OnChangeFunc is called after every stored change, so this instance
	// sees it at once (the Registry's Invalidate in production; other
	// instances notice within their refresh interval). Nil calls nothing.
	OnChangeFunc func()
	// NowFunc is the clock; nil is time.Now. Timestamps are kept in UTC
	// to the millisecond.
	NowFunc func() time.Time
}

// Catalog is the lifecycle of event types and their schema versions
// (API.md §2): what may be created, changed and deleted, and when.
//
// A version is created FINALISING (the default) or CURRENT and moves
// FINALISING → CURRENT → DEPRECATED, never back and never skipping
// CURRENT. Its schema may change only while it is FINALISING, and only a
// FINALISING version may be deleted. An event type is CURRENT or ARCHIVE
// and may move either way; it may be deleted only while no subscription
// binds it.
//
// Every change is a read, a change and a revision-checked write of the
// whole type, retried when another writer raced; it is safe for concurrent
// use, also across instances sharing the store.
//
// Errors: a *Rejection for a request that breaks a rule of its own (422,
// pointers into the request body), a *NotFoundError, a *Conflict for a
// request the current state refuses (409), anything else for store
// failures.
type Catalog struct {
	cfg CatalogConfig
}

// NewCatalog returns a Catalog. It panics when a required field is
// missing: that is a wiring mistake.
func NewCatalog(cfg CatalogConfig) *Catalog {
	if cfg.Store == nil || cfg.Bindings == nil || cfg.ValidateCodeFunc == nil {
		panic("schema: NewCatalog needs a Store, Bindings and a ValidateCodeFunc")
	}
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if cfg.OnChangeFunc == nil {
		cfg.OnChangeFunc = func() {}
	}
	return &Catalog{cfg: cfg}
}

// EventTypeSpec is a new event type as a client writes it.
type EventTypeSpec struct {
	Code        string        `json:"code"`
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Versions    []VersionSpec `json:"versions"`
}

// VersionSpec is a new schema version as a client writes it. SchemaType
// defaults to JSON_SCHEMA (the only one), MimeType to application/json
// and Status to FINALISING.
type VersionSpec struct {
	Version    string          `json:"version"`
	SchemaType string          `json:"schemaType"`
	MimeType   string          `json:"mimeType"`
	Schema     json.RawMessage `json:"schema"`
	Status     VersionStatus   `json:"status"`
}

// EventTypePatch is a change to an event type; nil members stay.
type EventTypePatch struct {
	Name        *string     `json:"name"`
	Description *string     `json:"description"`
	Status      *TypeStatus `json:"status"`
}

// VersionPatch is a change to a schema version; nil (or JSON null)
// members stay.
type VersionPatch struct {
	Status *VersionStatus  `json:"status"`
	Schema json.RawMessage `json:"schema"`
}

func (c *Catalog) now() time.Time { return c.cfg.NowFunc().UTC().Truncate(time.Millisecond) }

// Create validates and stores a new CURRENT event type with the versions
// spec lists. Every problem of the spec is reported at once, as a
// *Rejection; a code that exists is a *Conflict.
func (c *Catalog) Create(ctx context.Context, spec *EventTypeSpec) (*EventType, error) {
	var errs []Violation
	if err := c.cfg.ValidateCodeFunc(spec.Code); err != nil {
		errs = append(errs, Violation{Pointer: "/code", Message: err.Error()})
	}
	if strings.TrimSpace(spec.Name) == "" {
		errs = append(errs, Violation{Pointer: "/name", Message: "is required"})
	}
	now := c.now()
	t := &EventType{
		Code: spec.Code, Name: spec.Name, Description: spec.Description, Status: TypeCurrent,
		Versions: []Version{}, CreatedAt: now, UpdatedAt: now,
	}
	seen := map[string]bool{}
	for i, vs := range spec.Versions {
		prefix := fmt.Sprintf("/versions/%d", i)
		v, verrs := newVersion(vs, prefix, now)
		errs = append(errs, verrs...)
		if seen[v.Version] {
			errs = append(errs, Violation{Pointer: prefix + "/version", Message: "is listed twice"})
		}
		seen[v.Version] = true
		t.Versions = append(t.Versions, v)
	}
	if len(errs) > 0 {
		return nil, &Rejection{Detail: "the event type is invalid", Violations: errs}
	}
	if err := c.cfg.Store.EventTypeInsert(ctx, t); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, &Conflict{Detail: fmt.Sprintf("event type %q exists", spec.Code)}
		}
		return nil, fmt.Errorf("insert event type %s: %w", spec.Code, err)
	}
	c.cfg.OnChangeFunc()
	return t, nil
}

// newVersion validates a version spec, reporting problems at pointers
// below prefix, and builds the version.
func newVersion(in VersionSpec, prefix string, now time.Time) (Version, []Violation) {
	var errs []Violation
	if !versionPattern.MatchString(in.Version) {
		errs = append(errs, Violation{Pointer: prefix + "/version", Message: `must be MAJOR.MINOR, e.g. "1.0"`})
	}
	if in.SchemaType == "" {
		in.SchemaType = SchemaTypeJSONSchema
	}
	if in.SchemaType != SchemaTypeJSONSchema {
		errs = append(errs, Violation{Pointer: prefix + "/schemaType", Message: `must be "JSON_SCHEMA"`})
	}
	if in.MimeType == "" {
		in.MimeType = MimeTypeDefault
	}
	switch in.Status {
	case "":
		in.Status = VersionFinalising
	case VersionFinalising, VersionCurrent:
	default:
		errs = append(errs, Violation{Pointer: prefix + "/status", Message: "a new version must be FINALISING or CURRENT"})
	}
	if len(in.Schema) == 0 || string(in.Schema) == "null" {
		errs = append(errs, Violation{Pointer: prefix + "/schema", Message: "is required"})
	} else if _, err := Compile("check", "0.0", in.Schema); err != nil {
		errs = append(errs, compileViolation(prefix+"/schema", err))
	}
	return Version{
		Version: in.Version, SchemaType: in.SchemaType, MimeType: in.MimeType, Schema: in.Schema,
		Status: in.Status, CreatedAt: now, UpdatedAt: now,
	}, errs
}

// compileViolation locates a schema compile error below the pointer of
// the schema member.
func compileViolation(at string, err error) Violation {
	if ce, ok := errors.AsType[*CompileError](err); ok {
		return Violation{Pointer: at + ce.Pointer, Message: "does not compile as JSON Schema: " + ce.Message}
	}
	return Violation{Pointer: at, Message: "does not compile as JSON Schema: " + err.Error()}
}

// List returns every event type with the status (any when "") whose code
// starts with prefix, ordered by code. Types are few (one per kind of
// business event), so they are read whole and the caller pages them.
func (c *Catalog) List(ctx context.Context, status TypeStatus, prefix string) ([]*EventType, error) {
	var all []*EventType
	p := &ListParams{Status: status, Prefix: prefix, Limit: listPageSize}
	for {
		pg, err := c.cfg.Store.EventTypeList(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("list event types: %w", err)
		}
		all = append(all, pg.EventTypes...)
		if pg.NextCursor == "" || pg.NextCursor == p.Cursor {
			return all, nil
		}
		p.Cursor = pg.NextCursor
	}
}

// listPageSize is the page List reads the store by (the store's largest).
const listPageSize = 500

// Get returns the event type with code, or a *NotFoundError.
func (c *Catalog) Get(ctx context.Context, code string) (*EventType, error) {
	t, err := c.cfg.Store.EventTypeGet(ctx, code)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &NotFoundError{What: "event type"}
	}
	if err != nil {
		return nil, fmt.Errorf("get event type %s: %w", code, err)
	}
	return t, nil
}

// GetVersion returns one version of an event type, or a *NotFoundError
// naming the event type or the version.
func (c *Catalog) GetVersion(ctx context.Context, code, version string) (*Version, error) {
	t, err := c.Get(ctx, code)
	if err != nil {
		return nil, err
	}
	v, _ := findVersion(t, version)
	if v == nil {
		return nil, &NotFoundError{What: "schema version"}
	}
	return v, nil
}

func findVersion(t *EventType, version string) (*Version, int) {
	for i := range t.Versions {
		if t.Versions[i].Version == version {
			return &t.Versions[i], i
		}
	}
	return nil, -1
}

// update reads the type, applies edit and writes it back with the
// revision check, retrying when another writer raced. An error of edit
// ends it unchanged.
func (c *Catalog) update(ctx context.Context, code string, edit func(t *EventType, now time.Time) error) (*EventType, error) {
	for range updateAttempts {
		t, err := c.Get(ctx, code)
		if err != nil {
			return nil, err
		}
		now := c.now()
		if err := edit(t, now); err != nil {
			return nil, err
		}
		t.UpdatedAt = now
		err = c.cfg.Store.EventTypeUpdate(ctx, t)
		if err == nil {
			c.cfg.OnChangeFunc()
			return t, nil
		}
		if errors.Is(err, store.ErrNotFound) {
			return nil, &NotFoundError{What: "event type"}
		}
		if !errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("update event type %s: %w", code, err)
		}
	}
	return nil, &Conflict{Detail: "the event type changed concurrently; retry"}
}

// Update changes an event type's name, description or status (CURRENT and
// ARCHIVE, either way).
func (c *Catalog) Update(ctx context.Context, code string, patch *EventTypePatch) (*EventType, error) {
	if patch.Name != nil && strings.TrimSpace(*patch.Name) == "" {
		return nil, reject("name must not be empty", "/name", "must not be empty")
	}
	if patch.Status != nil && *patch.Status != TypeCurrent && *patch.Status != TypeArchive {
		return nil, reject("status must be CURRENT or ARCHIVE", "/status", "must be CURRENT or ARCHIVE")
	}
	return c.update(ctx, code, func(t *EventType, _ time.Time) error {
		if patch.Name != nil {
			t.Name = *patch.Name
		}
		if patch.Description != nil {
			t.Description = *patch.Description
		}
		if patch.Status != nil {
			t.Status = *patch.Status
		}
		return nil
	})
}

// Delete removes an event type that no subscription binds (by its code or
// a pattern matching it); a bound type is a *Conflict.
func (c *Catalog) Delete(ctx context.Context, code string) error {
	if _, err := c.Get(ctx, code); err != nil {
		return err
	}
	bound, err := c.cfg.Bindings.BindsEventType(ctx, code)
	if err != nil {
		return fmt.Errorf("check bindings of event type %s: %w", code, err)
	}
	if bound {
		return &Conflict{Detail: fmt.Sprintf("event type %q is bound by a subscription", code)}
	}
	if err := c.cfg.Store.EventTypeDelete(ctx, code); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return &NotFoundError{What: "event type"}
		}
		return fmt.Errorf("delete event type %s: %w", code, err)
	}
	c.cfg.OnChangeFunc()
	return nil
}

// AddVersion validates a new schema version (MAJOR.MINOR, FINALISING or
// CURRENT, a schema that compiles) and adds it to the event type; a
// version that exists is a *Conflict.
func (c *Catalog) AddVersion(ctx context.Context, code string, spec *VersionSpec) (*Version, error) {
	v, errs := newVersion(*spec, "", c.now())
	if len(errs) > 0 {
		return nil, &Rejection{Detail: "the schema version is invalid", Violations: errs}
	}
	if _, err := c.update(ctx, code, func(t *EventType, _ time.Time) error {
		if existing, _ := findVersion(t, v.Version); existing != nil {
			return &Conflict{Detail: fmt.Sprintf("version %s exists", v.Version)}
		}
		t.Versions = append(t.Versions, v)
		return nil
	}); err != nil {
		return nil, err
	}
	return &v, nil
}

// nextStatus is the one status each version status may move to.
func nextStatus(s VersionStatus) VersionStatus {
	switch s {
	case VersionFinalising:
		return VersionCurrent
	case VersionCurrent:
		return VersionDeprecated
	case VersionDeprecated:
		return "" // the end of the line
	}
	return ""
}

// UpdateVersion changes a version's schema (only while it is FINALISING)
// or moves its status one step along FINALISING → CURRENT → DEPRECATED.
// Asking for the status it has changes nothing; any other move, and a
// schema change of a version past FINALISING, is a *Conflict.
func (c *Catalog) UpdateVersion(ctx context.Context, code, version string, patch *VersionPatch) (*Version, error) {
	// FINALISING is a status, so asking for it is a move that is not
	// allowed (409), not a malformed request.
	if patch.Status != nil && !slices.Contains([]VersionStatus{VersionFinalising, VersionCurrent, VersionDeprecated}, *patch.Status) {
		return nil, reject("status must be CURRENT or DEPRECATED", "/status", "must be CURRENT or DEPRECATED")
	}
	newSchema := patch.Schema
	if string(newSchema) == "null" {
		newSchema = nil
	}
	if len(newSchema) > 0 {
		if _, err := Compile("check", "0.0", newSchema); err != nil {
			return nil, &Rejection{Detail: "the schema does not compile", Violations: []Violation{compileViolation("/schema", err)}}
		}
	}
	var out Version
	if _, err := c.update(ctx, code, func(t *EventType, now time.Time) error {
		v, _ := findVersion(t, version)
		if v == nil {
			return &NotFoundError{What: "schema version"}
		}
		if len(newSchema) > 0 {
			if v.Status != VersionFinalising {
				return &Conflict{Detail: "the schema of a " + string(v.Status) + " version cannot change"}
			}
			v.Schema = newSchema
		}
		if patch.Status != nil && *patch.Status != v.Status {
			if nextStatus(v.Status) != *patch.Status {
				return &Conflict{Detail: fmt.Sprintf("a version moves FINALISING → CURRENT → DEPRECATED; %s → %s is not allowed", v.Status, *patch.Status)}
			}
			v.Status = *patch.Status
		}
		v.UpdatedAt = now
		out = *v
		return nil
	}); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteVersion removes a FINALISING version; deleting one that has been
// CURRENT is a *Conflict (events may name it).
func (c *Catalog) DeleteVersion(ctx context.Context, code, version string) error {
	_, err := c.update(ctx, code, func(t *EventType, _ time.Time) error {
		v, i := findVersion(t, version)
		if v == nil {
			return &NotFoundError{What: "schema version"}
		}
		if v.Status != VersionFinalising {
			return &Conflict{Detail: "only a FINALISING version can be deleted"}
		}
		t.Versions = slices.Delete(t.Versions, i, i+1)
		return nil
	})
	return err
}

// ValidateData validates data, a well-formed JSON value, against one
// version's schema, whatever the version's status, and stores nothing. It
// returns the version when the data is valid and a *Rejection with one
// violation per problem, pointing below /data exactly as ingest (API.md §1
// step 4) would, when it is not. Missing data (nil) is a *Rejection too.
func (c *Catalog) ValidateData(ctx context.Context, code, version string, data json.RawMessage) (*Version, error) {
	v, err := c.GetVersion(ctx, code, version)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, reject("data is required", "/data", "is required")
	}
	sch, err := Compile(code, v.Version, v.Schema)
	if err != nil {
		var ce *CompileError
		if !errors.As(err, &ce) {
			return nil, fmt.Errorf("compile schema %s %s: %w", code, v.Version, err)
		}
		// Stored before a rule of Compile existed: no data can pass it,
		// as at ingest (the Registry answers its events 422 too).
		return nil, &Rejection{
			Detail:     "the schema of " + code + " " + v.Version + " does not compile; the event type's owner must fix it",
			Violations: []Violation{{Pointer: "/data", Message: "cannot be validated: the schema does not compile: " + ce.Error()}},
			Err:        err,
		}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decode data to validate against %s %s: %w", code, v.Version, err)
	}
	// ValidateInstance refuses numbers the validator cannot take and turns
	// a panic of the validator into a rejection: bad data is a 422 here,
	// exactly as at ingest, never a 500.
	if err := ValidateInstance(sch, inst); err != nil {
		return nil, err
	}
	return v, nil
}
