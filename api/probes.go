package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

func (s *Server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok", "version": s.cfg.Version})
}

func (s *Server) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 3*time.Second)
	defer cancel()
	checks := gin.H{}
	ready := true
	for name, p := range map[string]Pinger{"store": s.cfg.Store, "queue": s.cfg.Queue} {
		if p == nil {
			continue
		}
		if err := p.Ping(ctx); err != nil {
			checks[name] = "unavailable: " + err.Error()
			ready = false
			continue
		}
		checks[name] = "ok"
	}
	if !ready {
		c.Header("Retry-After", "5")
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "unavailable", "checks": checks})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready", "checks": checks})
}
