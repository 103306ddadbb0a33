package tenant

import "context"

// scopeKey is the context key of a request's client scope.
type scopeKey struct{}

// WithScope returns ctx scoped to a client: what runs under it acts inside
// that client only (API.md §11).
func WithScope(ctx context.Context, clientID string) context.Context {
	return context.WithValue(ctx, scopeKey{}, clientID)
}

// ScopeOf returns the client ctx is scoped to; ok is false for an unscoped
// (platform) context.
func ScopeOf(ctx context.Context) (clientID string, ok bool) {
	id, ok := ctx.Value(scopeKey{}).(string)
	return id, ok
}

// Owns reports whether a caller with ctx's scope may see an object of the
// client owner (nil: an anchor-level object). An unscoped caller sees
// everything; a scoped one only its client's objects.
func Owns(ctx context.Context, owner *string) bool {
	id, scoped := ScopeOf(ctx)
	if !scoped {
		return true
	}
	return owner != nil && *owner == id
}
