package api

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"
)

// validateData serves POST /api/event-types/{code}/versions/{version}/validate
// with a body {"data": …}: it validates data against that version's schema,
// whatever the version's status, and stores nothing. Valid data answers
// 200 {"valid": true, …}; invalid data answers 422 problem+json with one
// errors[] entry per violation, pointing below /data exactly as ingest
// (API.md §1 step 4) would.
func (s *Server) validateData(c *gin.Context) error {
	var in struct {
		Data json.RawMessage `json:"data"`
	}
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	// decodeJSON accepted the body as well-formed JSON, so Data is too.
	v, err := s.catalog.ValidateData(c.Request.Context(), c.Param("code"), c.Param("version"), in.Data)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"valid": true, "eventType": c.Param("code"), "version": v.Version, "status": v.Status})
	return nil
}
