package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hooklane/hooklane/tenant"
)

// Stream bounds (README "Security"). The caps are per instance: instances
// share only the store, and a count in the store would cost a write per
// connection.
const (
	// StreamAuthRecheckDefault is how often an open stream authenticated by
	// a client token or a client-scoped key reads its credential from the
	// store again (HOOKLANE_STREAM_AUTH_RECHECK): a revocation, a token's
	// expiry or a client's deletion ends the stream within it, on every
	// instance. A token's expiry ends it at the expiry instant as well.
	StreamAuthRecheckDefault = 5 * time.Second
	// StreamMaxPerKeyDefault is how many streams (SSE responses and
	// WebSocket connections together) one key or token may hold open on
	// one instance (HOOKLANE_MAX_STREAMS_PER_KEY).
	StreamMaxPerKeyDefault = 20
	// StreamMaxSubscriptionsDefault is how many subscriptions one WebSocket
	// connection may hold (HOOKLANE_MAX_STREAM_SUBSCRIPTIONS).
	StreamMaxSubscriptionsDefault = 20
)

// streamRevokedError is the cause a guarded stream's context ends with when its
// credential stopped working.
type streamRevokedError struct {
	detail string
}

func (e *streamRevokedError) Error() string {
	return "the credential of this stream is no longer valid: " + e.detail
}

// revokedCause returns the revocation that ended ctx, if one did.
func revokedCause(ctx context.Context) (*streamRevokedError, bool) {
	return errors.AsType[*streamRevokedError](context.Cause(ctx))
}

// guardStream returns a context derived from ctx that ends, with a
// *streamRevoked cause, when cr stops authenticating: it authenticates cr
// again (the same rules as every request: authenticate) every interval,
// and a client token's expiry ends it at the expiry instant. A credential
// that cannot be revoked while the process runs (an unscoped configured
// key, or none) is not watched. A store read that fails keeps the stream
// (it is logged) and is tried again at the next interval. stop ends the
// watch; call it when the stream ends.
func (s *Server) guardStream(ctx context.Context, cr *credential, interval time.Duration) (guarded context.Context, stop func()) {
	gctx, cancel := context.WithCancelCause(ctx)
	if cr == nil || !cr.revocable() {
		return gctx, func() { cancel(nil) }
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.watchCredential(gctx, cancel, cr, interval)
	}()
	return gctx, func() {
		cancel(nil)
		<-done
	}
}

func (s *Server) watchCredential(ctx context.Context, cancel context.CancelCauseFunc, cr *credential, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var expiry <-chan time.Time
	if !cr.expiresAt.IsZero() {
		t := time.NewTimer(cr.expiresAt.Sub(s.cfg.NowFunc()))
		defer t.Stop()
		expiry = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-expiry:
			cancel(&streamRevokedError{detail: "the token expired at " + cr.expiresAt.UTC().Format(time.RFC3339)})
			return
		case <-tick.C:
			if err := s.reauthenticate(ctx, cr); err != nil {
				if rev, ok := errors.AsType[*streamRevokedError](err); ok {
					cancel(rev)
					return
				}
				if ctx.Err() == nil {
					s.cfg.Logger.WarnContext(ctx, "stream credential check failed", "key", cr.key.Name, "error", err)
				}
			}
		}
	}
}

// reauthenticate authenticates cr again, as a new request would be: a
// *streamRevoked when it no longer authenticates (or names another
// client or role, which a credential cannot, but the stream is then not
// its stream any more), another error when the store cannot be read.
func (s *Server) reauthenticate(ctx context.Context, cr *credential) error {
	if cr == nil {
		return nil
	}
	now, err := s.authenticate(ctx, cr.header)
	if un, ok := errors.AsType[*tenant.Unauthorized](err); ok {
		return &streamRevokedError{detail: un.Detail}
	}
	if err != nil {
		return err
	}
	if now == nil || now.key.ClientID != cr.key.ClientID || now.key.Role != cr.key.Role || now.tokenID != cr.tokenID {
		return &streamRevokedError{detail: "the credential changed"}
	}
	return nil
}

// holdStream counts one more stream of cr against cfg.MaxPerKey on this
// instance: a 429 past it. A request without a credential (authentication
// off: loopback only) is not counted.
func holdStream(cfg *StreamConfig, cr *credential) (release func(), err error) {
	if cr == nil {
		return func() {}, nil
	}
	release, ok := cfg.Hub.Hold(cr.owner(), cfg.MaxPerKey)
	if !ok {
		return nil, newProblem(http.StatusTooManyRequests, fmt.Sprintf(
			"the key %q holds %d open streams on this instance, the most allowed (HOOKLANE_MAX_STREAMS_PER_KEY): close one first",
			cr.key.Name, cfg.MaxPerKey))
	}
	return release, nil
}
