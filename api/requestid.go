package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"

	"github.com/gin-gonic/gin"
)

// HeaderRequestID carries a request's id in and out.
const HeaderRequestID = "X-Request-Id"

// maxRequestIDLen bounds an id a client sends; a longer or odd one is
// replaced, so logs never carry arbitrary client text.
const maxRequestIDLen = 128

// ctxKeyName is the gin context key of the authenticated key's name.
const ctxKeyName = "api_key_name"

// ctxKeyRole is the gin context key of the authenticated key's role.
const ctxKeyRole = "api_key_role"

type requestIDKey struct{}

// ContextWithRequestID returns ctx carrying the request id.
func ContextWithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestIDFrom returns the request id ctx carries, "" when none.
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// requestID takes the client's X-Request-Id when it is a sane token, else
// makes one; it echoes it in the answer and puts it in the request context,
// where the logger (see WithRequestID) adds it to every line logged with
// that context.
func (s *Server) requestID(c *gin.Context) {
	id := c.GetHeader(HeaderRequestID)
	if !validRequestID(id) {
		id = s.newRequestID()
	}
	c.Header(HeaderRequestID, id)
	c.Request = c.Request.WithContext(ContextWithRequestID(c.Request.Context(), id))
	c.Next()
}

func (s *Server) newRequestID() string {
	if s.cfg.IDs != nil {
		return s.cfg.IDs.New()
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == ':'
		if !ok {
			return false
		}
	}
	return true
}

// WithRequestID wraps h so that every record logged with a context that
// carries a request id gets a request_id attribute. Wrapping twice is a
// no-op.
func WithRequestID(h slog.Handler) slog.Handler {
	if _, ok := h.(requestIDHandler); ok {
		return h
	}
	return requestIDHandler{h}
}

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestIDFrom(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r) //nolint:wrapcheck // a transparent wrapper
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
