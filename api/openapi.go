package api

import (
	"bytes"
	_ "embed" // the OpenAPI document is embedded
	"net/http"

	"github.com/gin-gonic/gin"
)

// openAPIDoc is openapi.json, never modified.
//
//go:embed openapi.json
var openAPIDoc []byte

// OpenAPI returns the HTTP contract of API.md as an OpenAPI 3.1 document
// (a copy), the one served at GET /api/openapi.json. A test checks it
// against the registered routes and validates it with an OpenAPI library;
// each operation's x-hooklane-roles lists the roles allowed to call it.
func OpenAPI() []byte { return bytes.Clone(openAPIDoc) }

// openAPI serves the embedded document.
func (s *Server) openAPI(c *gin.Context) {
	c.Header("Cache-Control", "public, max-age=300")
	c.Data(http.StatusOK, "application/json", openAPIDoc)
}
