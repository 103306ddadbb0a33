package subscription

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/destination/endpoint/endpointtest"
	"github.com/hooklane/hooklane/dispatch"
)

func TestValidateEndpoint(t *testing.T) {
	t.Parallel()
	pki := endpointtest.NewPKI(t)
	other := endpointtest.NewPKI(t)
	oauth2 := func() *endpoint.Auth {
		return &endpoint.Auth{
			Type: endpoint.AuthOAuth2, TokenURL: "https://idp.example/token", ClientID: "gw", ClientSecret: "cs-secret-value",
			Scopes: []string{"hooks:write", "read"}, Audience: "https://receiver.example",
		}
	}
	tests := []struct {
		name string
		edit func(s *Subscription)
		want []FieldError
	}{
		{"bearer", func(s *Subscription) { s.Auth = &endpoint.Auth{Type: endpoint.AuthBearer, Token: "t0k.en"} }, nil},
		{"basic without password", func(s *Subscription) { s.Auth = &endpoint.Auth{Type: endpoint.AuthBasic, Username: "u"} }, nil},
		{"oauth2", func(s *Subscription) { s.Auth = oauth2() }, nil},
		{"mtls with CA", func(s *Subscription) { s.TLS = pki.ClientTLS() }, nil},
		{"CA only", func(s *Subscription) { s.TLS = &endpoint.TLS{CACertificate: pki.CACertificate} }, nil},
		{"client certificate only", func(s *Subscription) {
			s.TLS = &endpoint.TLS{ClientCertificate: pki.ClientCertificate, ClientKey: pki.ClientKey}
		}, nil},

		{
			"no type", func(s *Subscription) { s.Auth = &endpoint.Auth{Token: "t"} },
			[]FieldError{{"/auth/type", "is required: bearer, basic or oauth2"}},
		},
		{
			"unknown type", func(s *Subscription) { s.Auth = &endpoint.Auth{Type: "digest"} },
			[]FieldError{{"/auth/type", "must be bearer, basic or oauth2"}},
		},
		{
			"bearer without token", func(s *Subscription) { s.Auth = &endpoint.Auth{Type: endpoint.AuthBearer} },
			[]FieldError{{"/auth/token", "is required for auth type bearer"}},
		},
		{"bearer with fields of others", func(s *Subscription) {
			s.Auth = &endpoint.Auth{Type: endpoint.AuthBearer, Token: "t", Username: "u", Scopes: []string{"x"}}
		}, []FieldError{{"/auth/username", "is not used by auth type bearer"}, {"/auth/scopes", "is not used by auth type bearer"}}},
		{
			"header injection", func(s *Subscription) { s.Auth = &endpoint.Auth{Type: endpoint.AuthBearer, Token: "t\r\nX-Evil: 1"} },
			[]FieldError{{"/auth/token", "must not contain control characters"}},
		},
		{
			"mask at creation", func(s *Subscription) {
				s.Auth = &endpoint.Auth{Type: endpoint.AuthBasic, Username: "u", Password: "***"}
			},
			[]FieldError{{"/auth/password", maskLeft}},
		},
		{
			"basic username with colon", func(s *Subscription) {
				s.Auth = &endpoint.Auth{Type: endpoint.AuthBasic, Username: "a:b", Password: "p"}
			},
			[]FieldError{{"/auth/username", "must not contain ':' (RFC 7617)"}},
		},
		{"oauth2 missing every field", func(s *Subscription) { s.Auth = &endpoint.Auth{Type: endpoint.AuthOAuth2} }, []FieldError{
			{"/auth/tokenUrl", "is required for auth type oauth2"},
			{"/auth/clientId", "is required for auth type oauth2"},
			{"/auth/clientSecret", "is required for auth type oauth2"},
		}},
		{
			"oauth2 tokenUrl not http", func(s *Subscription) { a := oauth2(); a.TokenURL = "ftp://idp.example/token"; s.Auth = a },
			[]FieldError{{"/auth/tokenUrl", "must be an http or https URL"}},
		},
		{
			"oauth2 tokenUrl with credentials", func(s *Subscription) { a := oauth2(); a.TokenURL = "https://gw:pw@idp.example/token"; s.Auth = a },
			[]FieldError{{"/auth/tokenUrl", "must not carry credentials: use clientId and clientSecret"}},
		},
		{"oauth2 bad scope", func(s *Subscription) { a := oauth2(); a.Scopes = []string{"ok", "two words", ""}; s.Auth = a }, []FieldError{
			{"/auth/scopes/1", "must be a non-empty scope token: printable ASCII without spaces, '\"' or '\\'"},
			{"/auth/scopes/2", "must be a non-empty scope token: printable ASCII without spaces, '\"' or '\\'"},
		}},
		{"Authorization header beside auth", func(s *Subscription) {
			s.Auth = &endpoint.Auth{Type: endpoint.AuthBearer, Token: "t"}
			s.Headers = map[string]string{"authorization": "Bearer x"}
		}, []FieldError{{"/headers/authorization", "conflicts with auth, which sets Authorization"}}},
		{"auth on pull", func(s *Subscription) {
			s.Delivery, s.Auth = dispatch.DeliveryPull, &endpoint.Auth{Type: endpoint.AuthBearer, Token: "t"}
		}, []FieldError{{"/auth", "applies to push delivery only"}}},

		{
			"tls on http target", func(s *Subscription) { s.Target = "http://receiver.example/hook"; s.TLS = pki.ClientTLS() },
			[]FieldError{{"/tls", "applies to an https target only"}},
		},
		{
			"tls on pull", func(s *Subscription) { s.Delivery, s.TLS = dispatch.DeliveryPull, pki.ClientTLS() },
			[]FieldError{{"/tls", "applies to push delivery only"}},
		},
		{
			"empty tls", func(s *Subscription) { s.TLS = &endpoint.TLS{} },
			[]FieldError{{"/tls", "must set clientCertificate with clientKey, caCertificate, or both"}},
		},
		{
			"certificate without key", func(s *Subscription) { s.TLS = &endpoint.TLS{ClientCertificate: pki.ClientCertificate} },
			[]FieldError{{"/tls/clientKey", "is required with clientCertificate"}},
		},
		{
			"key without certificate", func(s *Subscription) { s.TLS = &endpoint.TLS{ClientKey: pki.ClientKey} },
			[]FieldError{{"/tls/clientCertificate", "is required with clientKey"}},
		},
		{
			"certificate not PEM", func(s *Subscription) { s.TLS = &endpoint.TLS{ClientCertificate: "hello", ClientKey: pki.ClientKey} },
			[]FieldError{{"/tls/clientCertificate", "must be one or more PEM certificates"}},
		},
		{
			"key not PEM", func(s *Subscription) {
				s.TLS = &endpoint.TLS{ClientCertificate: pki.ClientCertificate, ClientKey: "garbage"}
			},
			[]FieldError{{"/tls/clientKey", "must be a PEM private key (PKCS #8, PKCS #1 or SEC 1)"}},
		},
		{"key of another certificate", func(s *Subscription) {
			s.TLS = &endpoint.TLS{ClientCertificate: pki.ClientCertificate, ClientKey: other.ClientKey}
		}, []FieldError{{"/tls/clientKey", "does not match clientCertificate"}}},
		{"key masked at creation", func(s *Subscription) {
			s.TLS = &endpoint.TLS{ClientCertificate: pki.ClientCertificate, ClientKey: "***"}
		}, []FieldError{{"/tls/clientKey", maskLeft}}},
		{"CA not PEM", func(s *Subscription) {
			s.TLS = &endpoint.TLS{CACertificate: strings.Replace(pki.CACertificate, "CERTIFICATE", "KEY", 2)}
		}, []FieldError{{"/tls/caCertificate", "must be one or more PEM certificates"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := testSub("s", 1, "a.b")
			tt.edit(s)
			got := s.Validate()
			require.Equal(t, tt.want, got)
			for _, e := range got {
				for _, secret := range []string{pki.ClientKey, other.ClientKey, "cs-secret-value", "t\r\n"} {
					require.NotContains(t, e.Message, secret, "a problem never quotes a secret")
				}
			}
		})
	}
}
