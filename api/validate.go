package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/hooklane/hooklane/schema"
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
	t, v, err := s.loadVersion(c)
	if err != nil {
		return err
	}
	if len(in.Data) == 0 {
		return unprocessable("data is required", FieldError{Pointer: "/data", Message: "is required"})
	}
	sch, err := schema.Compile(t.Code, v.Version, v.Schema)
	if err != nil {
		var ce *schema.CompileError
		if !errors.As(err, &ce) {
			return fmt.Errorf("compile schema %s %s: %w", t.Code, v.Version, err)
		}
		// Stored before a rule of Compile existed: no data can pass it,
		// as at ingest (schema.Registry answers its events 422 too).
		return unprocessable("the schema of "+t.Code+" "+v.Version+" does not compile; the event type's owner must fix it",
			FieldError{Pointer: "/data", Message: "cannot be validated: the schema does not compile: " + ce.Error()})
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(in.Data))
	if err != nil {
		return badRequest("data is not well-formed JSON", FieldError{Pointer: "/data", Message: err.Error()})
	}
	// ValidateInstance refuses numbers the validator cannot take and turns
	// a panic of the validator into a rejection: bad data is a 422 here,
	// exactly as at ingest, never a 500.
	if err := schema.ValidateInstance(sch, inst); err != nil {
		var rej *schema.Rejection
		if !errors.As(err, &rej) {
			return fmt.Errorf("validate data against %s %s: %w", t.Code, v.Version, err)
		}
		if rej.Err != nil {
			s.cfg.Logger.WarnContext(c.Request.Context(), "data could not be validated", "event_type", t.Code, "version", v.Version, "error", rej.Err)
		}
		errs := make([]FieldError, 0, len(rej.Violations))
		for _, vio := range rej.Violations {
			errs = append(errs, FieldError{Pointer: vio.Pointer, Message: vio.Message})
		}
		return unprocessable("the data does not match the schema of "+t.Code+" "+v.Version, errs...)
	}
	c.JSON(http.StatusOK, gin.H{"valid": true, "eventType": t.Code, "version": v.Version, "status": v.Status})
	return nil
}
