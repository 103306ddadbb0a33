package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/event/schema"
)

// The event type endpoints (API.md §2) decode, call the schema catalog
// (schema.Catalog, which owns the version lifecycle) and encode; errors
// are mapped in toProblem.

func (s *Server) createEventType(c *gin.Context) error {
	var in schema.EventTypeSpec
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	t, err := s.catalog.Create(c.Request.Context(), &in)
	if err != nil {
		return err
	}
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
	// The catalog lists by code; the API lists newest first (API.md
	// conventions), so the page is cut here.
	all, err := s.catalog.List(c.Request.Context(), status, c.Query("prefix"))
	if err != nil {
		return err
	}
	items, next := pageDesc(all, func(t *schema.EventType) string { return formatTime(t.CreatedAt) + " " + t.Code }, limit, cursor)
	writePage(c, items, next)
	return nil
}

func (s *Server) getEventType(c *gin.Context) error {
	t, err := s.catalog.Get(c.Request.Context(), c.Param("code"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, t)
	return nil
}

func (s *Server) patchEventType(c *gin.Context) error {
	var in schema.EventTypePatch
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	t, err := s.catalog.Update(c.Request.Context(), c.Param("code"), &in)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, t)
	return nil
}

func (s *Server) deleteEventType(c *gin.Context) error {
	if err := s.catalog.Delete(c.Request.Context(), c.Param("code")); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

func (s *Server) createVersion(c *gin.Context) error {
	var in schema.VersionSpec
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	v, err := s.catalog.AddVersion(c.Request.Context(), c.Param("code"), &in)
	if err != nil {
		return err
	}
	c.Header("Location", "/api/event-types/"+c.Param("code")+"/versions/"+v.Version)
	c.JSON(http.StatusCreated, v)
	return nil
}

func (s *Server) getVersion(c *gin.Context) error {
	v, err := s.catalog.GetVersion(c.Request.Context(), c.Param("code"), c.Param("version"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, v)
	return nil
}

func (s *Server) patchVersion(c *gin.Context) error {
	var in schema.VersionPatch
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	v, err := s.catalog.UpdateVersion(c.Request.Context(), c.Param("code"), c.Param("version"), &in)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, v)
	return nil
}

func (s *Server) deleteVersion(c *gin.Context) error {
	if err := s.catalog.DeleteVersion(c.Request.Context(), c.Param("code"), c.Param("version")); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}
