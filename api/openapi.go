package api

import (
	_ "embed" // the OpenAPI document is embedded
	"net/http"

	"github.com/gin-gonic/gin"
)

// OpenAPI is the HTTP contract of API.md as an OpenAPI 3.1 document,
// served at GET /api/openapi.json. A test checks it against the registered
// routes and validates it with an OpenAPI library.
//
//go:embed openapi.json
var OpenAPI []byte //nolint:gochecknoglobals // embedded, read-only by contract

// openAPI serves the embedded document.
func (s *Server) openAPI(c *gin.Context) {
	c.Header("Cache-Control", "public, max-age=300")
	c.Data(http.StatusOK, "application/json", OpenAPI)
}
