package api

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// h adapts a handler that returns an error: the error becomes the answer,
// rendered as problem+json in this one place.
func (s *Server) h(fn func(c *gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		err := fn(c)
		if err == nil {
			return
		}
		p, internal := toProblem(err)
		if internal {
			s.cfg.Logger.ErrorContext(c.Request.Context(), "request failed", "method", c.Request.Method, "path", c.FullPath(), "error", err)
		} else if p.Status == http.StatusServiceUnavailable {
			s.cfg.Logger.WarnContext(c.Request.Context(), "store unavailable", "path", c.FullPath(), "error", err)
		}
		writeProblem(c, p)
	}
}

func (s *Server) recoverPanics(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			s.cfg.Logger.ErrorContext(c.Request.Context(), "handler panicked", "path", c.Request.URL.Path, "panic", r)
			if !c.Writer.Written() {
				writeProblem(c, newProblem(http.StatusInternalServerError, "internal error"))
			}
			c.Abort()
		}
	}()
	c.Next()
}

// logRequests writes the access log line of every request (with the name
// of the API key that authenticated it, never the key) and counts it in
// the HTTP metrics by route template. Probes and scrapes log at debug.
func (s *Server) logRequests(c *gin.Context) {
	start := s.cfg.NowFunc()
	c.Next()
	d := s.cfg.NowFunc().Sub(start)
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	status := c.Writer.Status()
	s.cfg.Metrics.ObserveHTTP(c.Request.Method, route, status, d)
	if route == "/api/dispatch-jobs" && c.Request.Method == http.MethodPost && status == http.StatusCreated {
		s.cfg.Metrics.ObserveTaskJobCreated()
	}
	level := slog.LevelInfo
	if !strings.HasPrefix(route, "/api/") {
		level = slog.LevelDebug
	}
	attrs := []slog.Attr{
		slog.String("method", c.Request.Method), slog.String("path", c.Request.URL.Path), slog.String("route", route),
		slog.Int("status", status), slog.Int64("duration_ms", d.Milliseconds()), slog.String("remote_addr", c.ClientIP()),
	}
	if name := c.GetString(ctxKeyName); name != "" {
		attrs = append(attrs, slog.String("api_key", name))
	}
	s.cfg.Logger.LogAttrs(c.Request.Context(), level, "request", attrs...)
}
