package subscription

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/destination/endpoint/endpointtest"
)

// padPEM pads a PEM text with newlines (which every PEM reader skips) to
// exactly n bytes.
func padPEM(t *testing.T, pem string, n int) string {
	t.Helper()
	require.LessOrEqual(t, len(pem), n)
	return pem + strings.Repeat("\n", n-len(pem))
}

// TestValidateEndpointBounds: every value a subscription (or TASK job)
// adds to its deliveries is bounded so that receivers accept the request;
// at each bound it passes, one byte (or one item) past it is refused at
// its pointer, without quoting the value.
func TestValidateEndpointBounds(t *testing.T) {
	t.Parallel()
	pki := endpointtest.NewPKI(t)
	oauth2 := func(edit func(a *endpoint.Auth)) func(s *Subscription) {
		return func(s *Subscription) {
			s.Auth = &endpoint.Auth{Type: endpoint.AuthOAuth2, TokenURL: "https://idp.example/token", ClientID: "gw", ClientSecret: "cs"}
			edit(s.Auth)
		}
	}
	scopes := func(n, size int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = strings.Repeat("s", size)
		}
		return out
	}
	headers := func(n int) map[string]string {
		h := make(map[string]string, n)
		for i := range n {
			h["X-H"+strconv.Itoa(i)] = "v"
		}
		return h
	}
	// tokenURL is an https URL of n bytes.
	tokenURL := func(n int) string {
		const base = "https://idp.example/"
		return base + strings.Repeat("t", n-len(base))
	}
	bytesMax := func(n int) string { return fmt.Sprintf("must be at most %d bytes", n) }
	over := func(ptr, msg string) []FieldError { return []FieldError{{Pointer: ptr, Message: msg}} }
	r := strings.Repeat
	tests := []struct {
		name string
		edit func(s *Subscription)
		want []FieldError
	}{
		{"bearer token at the bound", func(s *Subscription) {
			s.Auth = &endpoint.Auth{Type: endpoint.AuthBearer, Token: r("t", AuthTokenMaxBytes)}
		}, nil},
		{"bearer token past it", func(s *Subscription) {
			s.Auth = &endpoint.Auth{Type: endpoint.AuthBearer, Token: r("t", AuthTokenMaxBytes+1)}
		}, over("/auth/token", bytesMax(AuthTokenMaxBytes))},
		{"the issue's 100 KB bearer token", func(s *Subscription) {
			s.Auth = &endpoint.Auth{Type: endpoint.AuthBearer, Token: r("t", 100_000)}
		}, over("/auth/token", bytesMax(AuthTokenMaxBytes))},

		{"username at the bound", func(s *Subscription) {
			s.Auth = &endpoint.Auth{Type: endpoint.AuthBasic, Username: r("u", AuthUsernameMaxBytes), Password: "p"}
		}, nil},
		{"username past it", func(s *Subscription) {
			s.Auth = &endpoint.Auth{Type: endpoint.AuthBasic, Username: r("u", AuthUsernameMaxBytes+1), Password: "p"}
		}, over("/auth/username", bytesMax(AuthUsernameMaxBytes))},
		{"password at the bound, with the longest username", func(s *Subscription) {
			s.Auth = &endpoint.Auth{Type: endpoint.AuthBasic, Username: r("u", AuthUsernameMaxBytes), Password: r("p", AuthPasswordMaxBytes)}
		}, nil},
		{"password past it", func(s *Subscription) {
			s.Auth = &endpoint.Auth{Type: endpoint.AuthBasic, Username: "u", Password: r("p", AuthPasswordMaxBytes+1)}
		}, over("/auth/password", bytesMax(AuthPasswordMaxBytes))},

		{"clientId at the bound", oauth2(func(a *endpoint.Auth) { a.ClientID = r("c", AuthClientIDMaxBytes) }), nil},
		{
			"clientId past it", oauth2(func(a *endpoint.Auth) { a.ClientID = r("c", AuthClientIDMaxBytes+1) }),
			over("/auth/clientId", bytesMax(AuthClientIDMaxBytes)),
		},
		{"clientSecret at the bound", oauth2(func(a *endpoint.Auth) { a.ClientSecret = r("c", AuthClientSecretMaxBytes) }), nil},
		{
			"clientSecret past it", oauth2(func(a *endpoint.Auth) { a.ClientSecret = r("c", AuthClientSecretMaxBytes+1) }),
			over("/auth/clientSecret", bytesMax(AuthClientSecretMaxBytes)),
		},
		{"audience at the bound", oauth2(func(a *endpoint.Auth) { a.Audience = r("a", AuthAudienceMaxBytes) }), nil},
		{
			"audience past it", oauth2(func(a *endpoint.Auth) { a.Audience = r("a", AuthAudienceMaxBytes+1) }),
			over("/auth/audience", bytesMax(AuthAudienceMaxBytes)),
		},
		{"tokenUrl at the bound", oauth2(func(a *endpoint.Auth) { a.TokenURL = tokenURL(TargetMaxLength) }), nil},
		{
			"tokenUrl past it", oauth2(func(a *endpoint.Auth) { a.TokenURL = tokenURL(TargetMaxLength + 1) }),
			over("/auth/tokenUrl", fmt.Sprintf("must be at most %d characters", TargetMaxLength)),
		},
		{"scopes at the bound", oauth2(func(a *endpoint.Auth) { a.Scopes = scopes(AuthScopesMax, AuthScopeMaxBytes) }), nil},
		{
			"one scope too many", oauth2(func(a *endpoint.Auth) { a.Scopes = scopes(AuthScopesMax+1, 1) }),
			over("/auth/scopes", fmt.Sprintf("must have at most %d scopes", AuthScopesMax)),
		},
		{
			"the issue's 100,000 scopes: one problem", oauth2(func(a *endpoint.Auth) { a.Scopes = scopes(100_000, 0) }),
			over("/auth/scopes", fmt.Sprintf("must have at most %d scopes", AuthScopesMax)),
		},
		{
			"a scope past its bound", oauth2(func(a *endpoint.Auth) { a.Scopes = []string{"ok", r("s", AuthScopeMaxBytes+1)} }),
			over("/auth/scopes/1", bytesMax(AuthScopeMaxBytes)),
		},

		{"headers at the count bound", func(s *Subscription) { s.Headers = headers(HeadersMax) }, nil},
		{
			"one header too many", func(s *Subscription) { s.Headers = headers(HeadersMax + 1) },
			over("/headers", fmt.Sprintf("must have at most %d headers", HeadersMax)),
		},
		{"a header name at the bound", func(s *Subscription) { s.Headers = map[string]string{r("N", HeaderNameMaxBytes): "v"} }, nil},
		{
			"a header name past it", func(s *Subscription) { s.Headers = map[string]string{r("N", HeaderNameMaxBytes+1): "v"} },
			over("/headers/"+r("N", HeaderNameMaxBytes+1), fmt.Sprintf("name must be at most %d bytes", HeaderNameMaxBytes)),
		},
		{"one header of the whole budget", func(s *Subscription) { s.Headers = map[string]string{"X": r("v", HeadersBytesMax-1)} }, nil},
		{
			"one header past the budget", func(s *Subscription) { s.Headers = map[string]string{"X": r("v", HeadersBytesMax)} },
			over("/headers/X", fmt.Sprintf("takes %d bytes (name and value): at most %d, or receivers refuse the request (431)", HeadersBytesMax+1, HeadersBytesMax)),
		},
		{
			"the issue's 100 KB header", func(s *Subscription) { s.Headers = map[string]string{"X-Big": r("v", 100_000)} },
			over("/headers/X-Big", fmt.Sprintf("takes %d bytes (name and value): at most %d, or receivers refuse the request (431)", 100_005, HeadersBytesMax)),
		},
		{"headers that fill the budget together", func(s *Subscription) {
			s.Headers = map[string]string{"A": r("a", 2047), "B": r("b", 2047)}
		}, nil},
		{"headers past the budget together", func(s *Subscription) {
			s.Headers = map[string]string{"A": r("a", 2047), "B": r("b", 2048)}
		}, over("/headers", fmt.Sprintf("take %d bytes (names and values): at most %d, or receivers refuse the request (431)", HeadersBytesMax+1, HeadersBytesMax))},
		{"headers and a bearer token that fill the budget", func(s *Subscription) {
			s.Headers = map[string]string{"A": r("a", 99)}
			s.Auth = &endpoint.Auth{Type: endpoint.AuthBearer, Token: r("t", HeadersBytesMax-100-len("Bearer "))}
		}, nil},
		{"headers and a bearer token past the budget", func(s *Subscription) {
			s.Headers = map[string]string{"A": r("a", 100)}
			s.Auth = &endpoint.Auth{Type: endpoint.AuthBearer, Token: r("t", HeadersBytesMax-100-len("Bearer "))}
		}, over("/headers", fmt.Sprintf(
			"take 101 bytes (names and values) with the Authorization header of auth (%d): at most %d together, or receivers refuse the request (431)",
			HeadersBytesMax-100, HeadersBytesMax))},

		{"client certificate and key at their bounds", func(s *Subscription) {
			s.TLS = &endpoint.TLS{
				ClientCertificate: padPEM(t, pki.ClientCertificate, TLSClientCertificateMaxBytes),
				ClientKey:         padPEM(t, pki.ClientKey, TLSClientKeyMaxBytes),
				CACertificate:     padPEM(t, pki.CACertificate, TLSCACertificateMaxBytes),
			}
		}, nil},
		{"client certificate past it", func(s *Subscription) {
			s.TLS = pki.ClientTLS()
			s.TLS.ClientCertificate = padPEM(t, pki.ClientCertificate, TLSClientCertificateMaxBytes+1)
		}, over("/tls/clientCertificate", fmt.Sprintf("must be at most %d bytes of PEM", TLSClientCertificateMaxBytes))},
		{"client key past it", func(s *Subscription) {
			s.TLS = pki.ClientTLS()
			s.TLS.ClientKey = padPEM(t, pki.ClientKey, TLSClientKeyMaxBytes+1)
		}, over("/tls/clientKey", fmt.Sprintf("must be at most %d bytes of PEM", TLSClientKeyMaxBytes))},
		{"CA past it", func(s *Subscription) {
			s.TLS = &endpoint.TLS{CACertificate: padPEM(t, pki.CACertificate, TLSCACertificateMaxBytes+1)}
		}, over("/tls/caCertificate", fmt.Sprintf("must be at most %d bytes of PEM", TLSCACertificateMaxBytes))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := testSub("c", 1, "a.b")
			tt.edit(s)
			got := s.Validate()
			require.Equal(t, tt.want, got)
		})
	}
}

// TestHeadersBudgetHoldsAtTheBounds: the bounds fit each other as their
// doc comments say. A basic auth at its longest stays within the budget,
// and so does a bearer token alone.
func TestHeadersBudgetHoldsAtTheBounds(t *testing.T) {
	t.Parallel()
	basic := &endpoint.Auth{Type: endpoint.AuthBasic, Username: strings.Repeat("u", AuthUsernameMaxBytes), Password: strings.Repeat("p", AuthPasswordMaxBytes)}
	require.Equal(t, 1714, authorizationBytes(basic))
	bearer := &endpoint.Auth{Type: endpoint.AuthBearer, Token: strings.Repeat("t", AuthTokenMaxBytes)}
	require.Equal(t, HeadersBytesMax, authorizationBytes(bearer))
}
