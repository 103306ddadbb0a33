package subscription

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/dispatch"
)

// maskLeft is the message for a secret that is still "***" when checked:
// at creation, or on a PATCH with nothing stored to keep.
const maskLeft = `"***" keeps a stored secret only on a PATCH of an auth or tls that has it: send the secret itself`

// validateEndpoint checks auth and tls (API.md §14): every field of the
// auth type and none of another, header-safe secrets, an http(s) tokenUrl,
// scopes as RFC 6749 scope tokens, PEM that parses, a client key matching
// its certificate, tls only towards an https target, both only for push
// delivery, and no Authorization header beside auth. Problems quote no
// secret. Whether tokenUrl's host is public is checked by the Service,
// like the target's.
func (s *Subscription) validateEndpoint() []FieldError {
	var errs []FieldError
	add := func(ptr, msg string) { errs = append(errs, FieldError{Pointer: ptr, Message: msg}) }
	if s.Auth != nil {
		if s.Delivery == dispatch.DeliveryPull {
			add("/auth", "applies to push delivery only")
		} else {
			for _, p := range validateAuth(s.Auth) {
				add("/auth"+p.Pointer, p.Message)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(s.Headers)) {
			if http.CanonicalHeaderKey(name) == "Authorization" {
				add("/headers/"+escapePointer(name), "conflicts with auth, which sets Authorization")
			}
		}
	}
	if s.TLS != nil {
		switch {
		case s.Delivery == dispatch.DeliveryPull:
			add("/tls", "applies to push delivery only")
		case !httpsTarget(s.Target):
			add("/tls", "applies to an https target only")
		default:
			for _, p := range validateTLS(s.TLS) {
				add("/tls"+p.Pointer, p.Message)
			}
		}
	}
	return errs
}

// httpsTarget reports whether target is an https URL; an unparsable one
// counts as https here, its own check reports it.
func httpsTarget(target string) bool {
	u, err := url.Parse(target)
	return err != nil || strings.EqualFold(u.Scheme, "https")
}

// validateAuth returns the problems of a, pointers relative to it.
func validateAuth(a *endpoint.Auth) []FieldError {
	var errs []FieldError
	add := func(ptr, msg string) { errs = append(errs, FieldError{Pointer: ptr, Message: msg}) }
	// fields lists every member with its value and the type that uses it.
	fields := []struct {
		ptr, value string
		of         endpoint.AuthType
		secret     bool
	}{
		{"/token", a.Token, endpoint.AuthBearer, true},
		{"/username", a.Username, endpoint.AuthBasic, false},
		{"/password", a.Password, endpoint.AuthBasic, true},
		{"/tokenUrl", a.TokenURL, endpoint.AuthOAuth2, false},
		{"/clientId", a.ClientID, endpoint.AuthOAuth2, false},
		{"/clientSecret", a.ClientSecret, endpoint.AuthOAuth2, true},
		{"/audience", a.Audience, endpoint.AuthOAuth2, false},
	}
	switch a.Type {
	case endpoint.AuthBearer, endpoint.AuthBasic, endpoint.AuthOAuth2:
	case "":
		add("/type", "is required: bearer, basic or oauth2")
		return errs
	default:
		add("/type", "must be bearer, basic or oauth2")
		return errs
	}
	for _, f := range fields {
		switch {
		case f.value == "":
		case f.of != a.Type:
			add(f.ptr, "is not used by auth type "+string(a.Type))
		case f.secret && f.value == endpoint.Mask:
			add(f.ptr, maskLeft)
		case authFieldMax(f.ptr) > 0 && len(f.value) > authFieldMax(f.ptr):
			// Bounded so it can be sent (limits_endpoint.go).
			add(f.ptr, fmt.Sprintf("must be at most %d bytes", authFieldMax(f.ptr)))
		case !headerSafe(f.value):
			add(f.ptr, "must not contain control characters")
		}
	}
	if len(a.Scopes) > 0 && a.Type != endpoint.AuthOAuth2 {
		add("/scopes", "is not used by auth type "+string(a.Type))
	}
	required := func(ptr, v string) {
		if v == "" {
			add(ptr, "is required for auth type "+string(a.Type))
		}
	}
	switch a.Type {
	case endpoint.AuthBearer:
		required("/token", a.Token)
	case endpoint.AuthBasic:
		required("/username", a.Username)
		if strings.Contains(a.Username, ":") {
			add("/username", "must not contain ':' (RFC 7617)")
		}
	case endpoint.AuthOAuth2:
		required("/tokenUrl", a.TokenURL)
		if a.TokenURL != "" {
			if err := ValidateTargetURL(a.TokenURL); err != nil {
				add("/tokenUrl", err.Error())
			} else if u, _ := url.Parse(a.TokenURL); u.User != nil {
				// Credentials belong in clientId and clientSecret, which
				// are write-only; a URL is shown in answers and errors.
				add("/tokenUrl", "must not carry credentials: use clientId and clientSecret")
			}
		}
		required("/clientId", a.ClientID)
		required("/clientSecret", a.ClientSecret)
		if len(a.Scopes) > AuthScopesMax {
			// One problem, not one per scope.
			add("/scopes", fmt.Sprintf("must have at most %d scopes", AuthScopesMax))
			break
		}
		for i, sc := range a.Scopes {
			switch {
			case len(sc) > AuthScopeMaxBytes:
				add("/scopes/"+strconv.Itoa(i), fmt.Sprintf("must be at most %d bytes", AuthScopeMaxBytes))
			case !scopeToken(sc):
				add("/scopes/"+strconv.Itoa(i), "must be a non-empty scope token: printable ASCII without spaces, '\"' or '\\'")
			}
		}
	}
	return errs
}

// validateTLS returns the problems of t, pointers relative to it.
func validateTLS(t *endpoint.TLS) []FieldError {
	var errs []FieldError
	add := func(ptr, msg string) { errs = append(errs, FieldError{Pointer: ptr, Message: msg}) }
	if t.ClientCertificate == "" && t.ClientKey == "" && t.CACertificate == "" {
		add("", "must set clientCertificate with clientKey, caCertificate, or both")
		return errs
	}
	if errs = validateTLSBounds(t); len(errs) > 0 {
		return errs // not parsed: too long to be used (limits_endpoint.go)
	}
	switch {
	case t.ClientCertificate != "" && t.ClientKey == "":
		add("/clientKey", "is required with clientCertificate")
	case t.ClientCertificate == "" && t.ClientKey != "":
		add("/clientCertificate", "is required with clientKey")
	case t.ClientCertificate != "":
		if t.ClientKey == endpoint.Mask {
			add("/clientKey", maskLeft)
			if _, err := endpoint.ParseCertificates(t.ClientCertificate); err != nil {
				add("/clientCertificate", endpoint.ErrNoCertificate.Error())
			}
			break
		}
		_, err := t.KeyPair()
		switch {
		case errors.Is(err, endpoint.ErrNoCertificate):
			add("/clientCertificate", endpoint.ErrNoCertificate.Error())
		case errors.Is(err, endpoint.ErrBadKey):
			add("/clientKey", endpoint.ErrBadKey.Error())
		case errors.Is(err, endpoint.ErrKeyMismatch):
			add("/clientKey", endpoint.ErrKeyMismatch.Error())
		}
	}
	if t.CACertificate != "" {
		if _, err := endpoint.ParseCertificates(t.CACertificate); err != nil {
			add("/caCertificate", endpoint.ErrNoCertificate.Error())
		}
	}
	return errs
}

// headerSafe reports whether v can go into a header value: no control
// characters (CR and LF would split the header).
func headerSafe(v string) bool {
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// scopeToken reports whether s is an RFC 6749 §3.3 scope-token:
// 1*( %x21 / %x23-5B / %x5D-7E ).
func scopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
