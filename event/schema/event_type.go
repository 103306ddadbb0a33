// Package schema holds event types, their versioned JSON Schemas and the
// lifecycle of both, and validates event data against them.
package schema

import (
	"context"
	"encoding/json"
	"time"
)

// TypeStatus is an event type's state.
type TypeStatus string

// Event type statuses.
const (
	// TypeCurrent accepts events.
	TypeCurrent TypeStatus = "CURRENT"
	// TypeArchive rejects new events.
	TypeArchive TypeStatus = "ARCHIVE"
)

// VersionStatus is a schema version's state: FINALISING → CURRENT →
// DEPRECATED.
type VersionStatus string

// Version statuses.
const (
	VersionFinalising VersionStatus = "FINALISING"
	VersionCurrent    VersionStatus = "CURRENT"
	VersionDeprecated VersionStatus = "DEPRECATED"
)

// EventType is a kind of event producers publish, with its schema versions.
type EventType struct {
	Code        string     `json:"code"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Status      TypeStatus `json:"status"`
	Versions    []Version  `json:"versions"`
	CreatedAt   time.Time  `json:"createdAt"`
	UpdatedAt   time.Time  `json:"updatedAt"`
	// Revision counts the writes of the type; the store refuses an update
	// whose expected revision is not the stored one.
	Revision int64 `json:"-"`
}

// Version is one schema version of an event type.
type Version struct {
	Version    string          `json:"version"`
	SchemaType string          `json:"schemaType"`
	MimeType   string          `json:"mimeType"`
	Schema     json.RawMessage `json:"schema,omitempty"`
	Status     VersionStatus   `json:"status"`
	CreatedAt  time.Time       `json:"createdAt"`
	UpdatedAt  time.Time       `json:"updatedAt"`
}

// Store is the storage port for event types.
type Store interface {
	// EventTypeInsert stores a new type; store.ErrConflict when the code
	// exists.
	EventTypeInsert(ctx context.Context, t *EventType) error
	// EventTypeGet returns one type by code.
	EventTypeGet(ctx context.Context, code string) (*EventType, error)
	// EventTypeList returns one page ordered by code.
	EventTypeList(ctx context.Context, p *ListParams) (*Page, error)
	// EventTypeUpdate replaces the stored type when its revision equals
	// t.Revision, then sets t.Revision to the new one (old + 1);
	// store.ErrConflict otherwise.
	EventTypeUpdate(ctx context.Context, t *EventType) error
	// EventTypeDelete removes a type.
	EventTypeDelete(ctx context.Context, code string) error
	// EventTypeGeneration returns a number that grows on every write of any
	// event type, so instances notice changes made elsewhere.
	EventTypeGeneration(ctx context.Context) (int64, error)
}

// ListParams filters and pages EventTypeList.
type ListParams struct {
	Status TypeStatus
	// Prefix keeps codes that start with it.
	Prefix string
	Limit  int
	Cursor string
}

// Page is one page of event types.
type Page struct {
	EventTypes []*EventType
	NextCursor string
}
