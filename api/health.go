package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// getSubscriptionHealth answers GET /api/subscriptions/{id}/health (API.md
// §12) from the subscription service's health view.
func (s *Server) getSubscriptionHealth(c *gin.Context) error {
	h, err := s.subscriptions.Health(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "subscription")
	}
	c.JSON(http.StatusOK, h)
	return nil
}
