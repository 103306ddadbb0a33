package subscription

import (
	"fmt"
	"maps"
	"slices"

	"github.com/hooklane/hooklane/destination/endpoint"
)

// Bounds of what a subscription or a TASK job adds to the requests it
// delivers (API.md §3, §14). A value past them could never be delivered —
// the receiver, or a proxy in front of it, answers 431 or drops the
// connection on every attempt, and in BLOCK_ON_ERROR the job holds its
// message group — so it is refused when written, 422 at its pointer.
//
// The header budget is set from the receivers' defaults: nginx reads a
// header line of at most 8 KiB, Tomcat and Jetty a whole header block of
// 8 KiB, Node.js 16 KiB. The gateway's own headers (Host, User-Agent,
// Content-*, webhook-*, hooklane-*, traceparent, tracestate) take about
// 1 KiB, the request line up to TargetMaxLength; so with HeadersBytesMax a
// delivery in structured mode stays under 8 KiB of headers, and one in
// binary mode, whose ce-* headers carry up to 8 KiB of event attributes,
// under 16 KiB.
const (
	// HeadersBytesMax bounds the bytes a subscription adds to every
	// request's header block: the names and values of its custom headers
	// and the value of the Authorization header its bearer or basic auth
	// sets (`Bearer <token>`, `Basic <base64>`). An OAuth 2.0 access token
	// is the token endpoint's choice and is not counted.
	HeadersBytesMax = 4 << 10
	// HeadersMax bounds the number of custom headers.
	HeadersMax = 32
	// HeaderNameMaxBytes bounds a custom header's name; real ones are
	// tens of bytes.
	HeaderNameMaxBytes = 256

	// AuthTokenMaxBytes bounds a bearer token: `Bearer <token>` alone may
	// take the whole HeadersBytesMax. Common JWTs are 1–3 KiB.
	AuthTokenMaxBytes = HeadersBytesMax - len(bearerPrefix)
	// AuthUsernameMaxBytes bounds a basic username.
	AuthUsernameMaxBytes = 256
	// AuthPasswordMaxBytes bounds a basic password. With the longest
	// username, `Basic <base64>` takes at most 1,714 bytes.
	AuthPasswordMaxBytes = 1024
	// AuthClientIDMaxBytes bounds an OAuth 2.0 clientId.
	AuthClientIDMaxBytes = 256
	// AuthClientSecretMaxBytes bounds an OAuth 2.0 clientSecret. The
	// credentials go to the token endpoint in an Authorization header,
	// form-encoded then base64 (RFC 6749 §2.3.1): at the longest, and
	// every byte escaped, about 5 KiB, within the 8 KiB of a header line.
	AuthClientSecretMaxBytes = 1024
	// AuthScopesMax bounds the number of OAuth 2.0 scopes; grants name a
	// handful.
	AuthScopesMax = 50
	// AuthScopeMaxBytes bounds one OAuth 2.0 scope.
	AuthScopeMaxBytes = 256
	// AuthAudienceMaxBytes bounds the OAuth 2.0 audience, often a URL: as
	// long as a target may be. (tokenUrl is a target-like URL, bounded by
	// TargetMaxLength.)
	AuthAudienceMaxBytes = TargetMaxLength

	// TLSClientCertificateMaxBytes bounds the PEM of a client certificate
	// with its chain. It goes to the server in the TLS handshake, whose
	// messages servers bound (Go 64 KiB, OpenSSL 100 KiB by default); a
	// chain of a few certificates takes 2–8 KiB.
	TLSClientCertificateMaxBytes = 32 << 10
	// TLSClientKeyMaxBytes bounds the PEM of a client key; an 8192-bit
	// RSA key takes 6.4 KiB.
	TLSClientKeyMaxBytes = 16 << 10
	// TLSCACertificateMaxBytes bounds the PEM of the CA that replaces the
	// system roots. It is never sent; the bound keeps a whole public
	// bundle (about 220 KiB) possible and the parse at write short.
	TLSCACertificateMaxBytes = 256 << 10
)

// bearerPrefix starts the Authorization value of a bearer auth.
const bearerPrefix = "Bearer "

// authorizationBytes is the size of the Authorization value a sets on
// every delivery (0 for none, and for OAuth 2.0, whose token is not ours
// to bound).
func authorizationBytes(a *endpoint.Auth) int {
	if a == nil {
		return 0
	}
	return len(a.Header())
}

// validateHeaderBounds checks the number of s's custom headers, each
// name's length, and the bytes they take with the Authorization value of
// s's auth against HeadersBytesMax: one header that alone exceeds it is
// reported at its own pointer, headers that do together at /headers. It
// returns false when there are more than HeadersMax, so the caller skips
// checking each of them (a request with a hundred thousand headers gets
// one problem, not a hundred thousand).
func (s *Subscription) validateHeaderBounds() (errs []FieldError, each bool) {
	add := func(ptr, msg string) { errs = append(errs, FieldError{Pointer: ptr, Message: msg}) }
	if len(s.Headers) > HeadersMax {
		add("/headers", fmt.Sprintf("must have at most %d headers", HeadersMax))
		return errs, false
	}
	total := 0
	for _, name := range slices.Sorted(maps.Keys(s.Headers)) {
		ptr := "/headers/" + escapePointer(name)
		n := len(name) + len(s.Headers[name])
		total += n
		switch {
		case len(name) > HeaderNameMaxBytes:
			add(ptr, fmt.Sprintf("name must be at most %d bytes", HeaderNameMaxBytes))
		case n > HeadersBytesMax:
			add(ptr, fmt.Sprintf("takes %d bytes (name and value): at most %d, or receivers refuse the request (431)", n, HeadersBytesMax))
		}
	}
	if len(errs) > 0 {
		return errs, true
	}
	auth := authorizationBytes(s.Auth)
	if auth > HeadersBytesMax {
		auth = 0 // too long alone: reported at its own field
	}
	if total > 0 && total+auth > HeadersBytesMax {
		msg := fmt.Sprintf("take %d bytes (names and values): at most %d, or receivers refuse the request (431)", total, HeadersBytesMax)
		if auth > 0 {
			msg = fmt.Sprintf("take %d bytes (names and values) with the Authorization header of auth (%d): at most %d together, or receivers refuse the request (431)", total, auth, HeadersBytesMax)
		}
		add("/headers", msg)
	}
	return errs, true
}

// authFieldMax is the bound of each string member of an auth, by its
// pointer; 0 for tokenUrl, which ValidateTargetURL bounds.
func authFieldMax(ptr string) int {
	switch ptr {
	case "/token":
		return AuthTokenMaxBytes
	case "/username":
		return AuthUsernameMaxBytes
	case "/password":
		return AuthPasswordMaxBytes
	case "/clientId":
		return AuthClientIDMaxBytes
	case "/clientSecret":
		return AuthClientSecretMaxBytes
	case "/audience":
		return AuthAudienceMaxBytes
	}
	return 0
}

// validateTLSBounds returns the PEM fields of t that are too long,
// pointers relative to t.
func validateTLSBounds(t *endpoint.TLS) []FieldError {
	var errs []FieldError
	for _, f := range []struct {
		ptr, value string
		limit      int
	}{
		{"/clientCertificate", t.ClientCertificate, TLSClientCertificateMaxBytes},
		{"/clientKey", t.ClientKey, TLSClientKeyMaxBytes},
		{"/caCertificate", t.CACertificate, TLSCACertificateMaxBytes},
	} {
		if len(f.value) > f.limit {
			errs = append(errs, FieldError{Pointer: f.ptr, Message: fmt.Sprintf("must be at most %d bytes of PEM", f.limit)})
		}
	}
	return errs
}
