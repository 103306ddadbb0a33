package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/schema"
	"github.com/hooklane/hooklane/subscription"
)

var versionPattern = regexp.MustCompile(`^(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})$`)

// versionInput is the body of a version create or patch.
type versionInput struct {
	Version    string               `json:"version"`
	SchemaType string               `json:"schemaType"`
	MimeType   string               `json:"mimeType"`
	Schema     json.RawMessage      `json:"schema"`
	Status     schema.VersionStatus `json:"status"`
}

type eventTypeInput struct {
	Code        string         `json:"code"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Versions    []versionInput `json:"versions"`
}

// newVersion validates a version input at pointer prefix and builds it.
func (s *Server) newVersion(in versionInput, prefix string) (schema.Version, []FieldError) {
	var errs []FieldError
	if !versionPattern.MatchString(in.Version) {
		errs = append(errs, FieldError{Pointer: prefix + "/version", Message: `must be MAJOR.MINOR, e.g. "1.0"`})
	}
	if in.SchemaType == "" {
		in.SchemaType = "JSON_SCHEMA"
	}
	if in.SchemaType != "JSON_SCHEMA" {
		errs = append(errs, FieldError{Pointer: prefix + "/schemaType", Message: `must be "JSON_SCHEMA"`})
	}
	if in.MimeType == "" {
		in.MimeType = "application/json"
	}
	switch in.Status {
	case "":
		in.Status = schema.VersionFinalising
	case schema.VersionFinalising, schema.VersionCurrent:
	default:
		errs = append(errs, FieldError{Pointer: prefix + "/status", Message: "a new version must be FINALISING or CURRENT"})
	}
	if len(in.Schema) == 0 || string(in.Schema) == "null" {
		errs = append(errs, FieldError{Pointer: prefix + "/schema", Message: "is required"})
	} else if _, err := schema.Compile("check", "0.0", in.Schema); err != nil {
		errs = append(errs, schemaError(prefix+"/schema", err))
	}
	now := s.now()
	return schema.Version{
		Version: in.Version, SchemaType: in.SchemaType, MimeType: in.MimeType, Schema: in.Schema,
		Status: in.Status, CreatedAt: now, UpdatedAt: now,
	}, errs
}

// schemaError locates a schema compile error below the pointer of the
// schema member.
func schemaError(at string, err error) FieldError {
	if ce, ok := errors.AsType[*schema.CompileError](err); ok {
		return FieldError{Pointer: at + ce.Pointer, Message: "does not compile as JSON Schema: " + ce.Message}
	}
	return FieldError{Pointer: at, Message: "does not compile as JSON Schema: " + err.Error()}
}

func (s *Server) createEventType(c *gin.Context) error {
	var in eventTypeInput
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	var errs []FieldError
	if err := subscription.ValidateEventTypeCode(in.Code); err != nil {
		errs = append(errs, FieldError{Pointer: "/code", Message: err.Error()})
	}
	if strings.TrimSpace(in.Name) == "" {
		errs = append(errs, FieldError{Pointer: "/name", Message: "is required"})
	}
	now := s.now()
	t := &schema.EventType{Code: in.Code, Name: in.Name, Description: in.Description, Status: schema.TypeCurrent, Versions: []schema.Version{}, CreatedAt: now, UpdatedAt: now}
	seen := map[string]bool{}
	for i, vin := range in.Versions {
		v, verrs := s.newVersion(vin, fmt.Sprintf("/versions/%d", i))
		errs = append(errs, verrs...)
		if seen[v.Version] {
			errs = append(errs, FieldError{Pointer: fmt.Sprintf("/versions/%d/version", i), Message: "is listed twice"})
		}
		seen[v.Version] = true
		t.Versions = append(t.Versions, v)
	}
	if len(errs) > 0 {
		return unprocessable("the event type is invalid", errs...)
	}
	if err := s.cfg.Store.EventTypeInsert(c.Request.Context(), t); err != nil {
		if isConflict(err) {
			return conflict(fmt.Sprintf("event type %q exists", in.Code))
		}
		return err
	}
	s.cfg.Registry.Invalidate()
	c.Header("Location", "/api/event-types/"+t.Code)
	c.JSON(http.StatusCreated, t)
	return nil
}

func (s *Server) listEventTypes(c *gin.Context) error {
	limit, cursor, err := listParams(c)
	if err != nil {
		return err
	}
	status := schema.TypeStatus(c.Query("status"))
	if status != "" && status != schema.TypeCurrent && status != schema.TypeArchive {
		return unprocessable("status must be CURRENT or ARCHIVE")
	}
	// The store pages by code; the API lists newest first (API.md
	// conventions), so the matching types are read whole (they are few:
	// one per kind of business event) and the page is cut here.
	var all []*schema.EventType
	p := &schema.ListParams{Status: status, Prefix: c.Query("prefix"), Limit: limitMax}
	for {
		pg, err := s.cfg.Store.EventTypeList(c.Request.Context(), p)
		if err != nil {
			return err
		}
		all = append(all, pg.EventTypes...)
		if pg.NextCursor == "" || pg.NextCursor == p.Cursor {
			break
		}
		p.Cursor = pg.NextCursor
	}
	items, next, err := pageDesc(all, func(t *schema.EventType) string { return formatTime(t.CreatedAt) + " " + t.Code }, limit, cursor)
	if err != nil {
		return err
	}
	writePage(c, items, next)
	return nil
}

func (s *Server) getEventType(c *gin.Context) error {
	t, err := s.cfg.Store.EventTypeGet(c.Request.Context(), c.Param("code"))
	if err != nil {
		return s.notFoundOr(err, "event type")
	}
	c.JSON(http.StatusOK, t)
	return nil
}

// updateEventType reads the type, applies edit and writes it back with
// the revision check, retrying a few times when another writer raced.
func (s *Server) updateEventType(c *gin.Context, edit func(t *schema.EventType) error) (*schema.EventType, error) {
	for range 3 {
		t, err := s.cfg.Store.EventTypeGet(c.Request.Context(), c.Param("code"))
		if err != nil {
			return nil, s.notFoundOr(err, "event type")
		}
		if err := edit(t); err != nil {
			return nil, err
		}
		t.UpdatedAt = s.now()
		err = s.cfg.Store.EventTypeUpdate(c.Request.Context(), t)
		if err == nil {
			s.cfg.Registry.Invalidate()
			return t, nil
		}
		if !isConflict(err) {
			return nil, err
		}
	}
	return nil, conflict("the event type changed concurrently; retry")
}

func (s *Server) patchEventType(c *gin.Context) error {
	var in struct {
		Name        *string            `json:"name"`
		Description *string            `json:"description"`
		Status      *schema.TypeStatus `json:"status"`
	}
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	if in.Name != nil && strings.TrimSpace(*in.Name) == "" {
		return unprocessable("name must not be empty", FieldError{Pointer: "/name", Message: "must not be empty"})
	}
	if in.Status != nil && *in.Status != schema.TypeCurrent && *in.Status != schema.TypeArchive {
		return unprocessable("status must be CURRENT or ARCHIVE", FieldError{Pointer: "/status", Message: "must be CURRENT or ARCHIVE"})
	}
	t, err := s.updateEventType(c, func(t *schema.EventType) error {
		if in.Name != nil {
			t.Name = *in.Name
		}
		if in.Description != nil {
			t.Description = *in.Description
		}
		if in.Status != nil {
			t.Status = *in.Status
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, t)
	return nil
}

func (s *Server) deleteEventType(c *gin.Context) error {
	code := c.Param("code")
	if _, err := s.cfg.Store.EventTypeGet(c.Request.Context(), code); err != nil {
		return s.notFoundOr(err, "event type")
	}
	ix, err := s.cfg.Subscriptions.Index(c.Request.Context())
	if err != nil {
		return err
	}
	if ix.BindsEventType(code) {
		return conflict(fmt.Sprintf("event type %q is bound by a subscription", code))
	}
	if err := s.cfg.Store.EventTypeDelete(c.Request.Context(), code); err != nil {
		return s.notFoundOr(err, "event type")
	}
	s.cfg.Registry.Invalidate()
	c.Status(http.StatusNoContent)
	return nil
}

func (s *Server) createVersion(c *gin.Context) error {
	var in versionInput
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	v, errs := s.newVersion(in, "")
	if len(errs) > 0 {
		return unprocessable("the schema version is invalid", errs...)
	}
	if _, err := s.updateEventType(c, func(t *schema.EventType) error {
		if slices.ContainsFunc(t.Versions, func(x schema.Version) bool { return x.Version == v.Version }) {
			return conflict(fmt.Sprintf("version %s exists", v.Version))
		}
		t.Versions = append(t.Versions, v)
		return nil
	}); err != nil {
		return err
	}
	c.Header("Location", "/api/event-types/"+c.Param("code")+"/versions/"+v.Version)
	c.JSON(http.StatusCreated, v)
	return nil
}

func findVersion(t *schema.EventType, version string) (*schema.Version, int) {
	for i := range t.Versions {
		if t.Versions[i].Version == version {
			return &t.Versions[i], i
		}
	}
	return nil, -1
}

// loadVersion reads the event type and schema version the request's path
// names; a problem (404) when either is missing.
func (s *Server) loadVersion(c *gin.Context) (*schema.EventType, *schema.Version, error) {
	t, err := s.cfg.Store.EventTypeGet(c.Request.Context(), c.Param("code"))
	if err != nil {
		return nil, nil, s.notFoundOr(err, "event type")
	}
	v, _ := findVersion(t, c.Param("version"))
	if v == nil {
		return nil, nil, notFound("schema version")
	}
	return t, v, nil
}

func (s *Server) getVersion(c *gin.Context) error {
	_, v, err := s.loadVersion(c)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, v)
	return nil
}

func (s *Server) patchVersion(c *gin.Context) error {
	var in struct {
		Status *schema.VersionStatus `json:"status"`
		Schema json.RawMessage       `json:"schema"`
	}
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	// FINALISING is a status, so asking for it is a move that is not
	// allowed (409), not a malformed request.
	if in.Status != nil && !slices.Contains([]schema.VersionStatus{schema.VersionFinalising, schema.VersionCurrent, schema.VersionDeprecated}, *in.Status) {
		return unprocessable("status must be CURRENT or DEPRECATED", FieldError{Pointer: "/status", Message: "must be CURRENT or DEPRECATED"})
	}
	if string(in.Schema) == "null" {
		in.Schema = nil
	}
	if len(in.Schema) > 0 {
		if _, err := schema.Compile("check", "0.0", in.Schema); err != nil {
			return unprocessable("the schema does not compile", schemaError("/schema", err))
		}
	}
	var out schema.Version
	if _, err := s.updateEventType(c, func(t *schema.EventType) error {
		v, _ := findVersion(t, c.Param("version"))
		if v == nil {
			return notFound("schema version")
		}
		if len(in.Schema) > 0 {
			if v.Status != schema.VersionFinalising {
				return conflict("the schema of a " + string(v.Status) + " version cannot change")
			}
			v.Schema = in.Schema
		}
		if in.Status != nil && *in.Status != v.Status {
			next := map[schema.VersionStatus]schema.VersionStatus{
				schema.VersionFinalising: schema.VersionCurrent,
				schema.VersionCurrent:    schema.VersionDeprecated,
			}
			if next[v.Status] != *in.Status {
				return conflict(fmt.Sprintf("a version moves FINALISING → CURRENT → DEPRECATED; %s → %s is not allowed", v.Status, *in.Status))
			}
			v.Status = *in.Status
		}
		v.UpdatedAt = s.now()
		out = *v
		return nil
	}); err != nil {
		return err
	}
	c.JSON(http.StatusOK, out)
	return nil
}

func (s *Server) deleteVersion(c *gin.Context) error {
	if _, err := s.updateEventType(c, func(t *schema.EventType) error {
		v, i := findVersion(t, c.Param("version"))
		if v == nil {
			return notFound("schema version")
		}
		if v.Status != schema.VersionFinalising {
			return conflict("only a FINALISING version can be deleted")
		}
		t.Versions = slices.Delete(t.Versions, i, i+1)
		return nil
	}); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}
