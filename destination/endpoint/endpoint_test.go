package endpoint_test

import (
	"crypto/x509"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/destination/endpoint/endpointtest"
)

func oauth2Auth() *endpoint.Auth {
	return &endpoint.Auth{
		Type: endpoint.AuthOAuth2, TokenURL: "https://idp.example/token", ClientID: "gateway",
		ClientSecret: "s3cret", Scopes: []string{"hooks:write"}, Audience: "https://receiver.example",
	}
}

func TestAuthMaskedHidesEverySecret(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   *endpoint.Auth
		want *endpoint.Auth
	}{
		{"nil", nil, nil},
		{"bearer", &endpoint.Auth{Type: endpoint.AuthBearer, Token: "tok"}, &endpoint.Auth{Type: endpoint.AuthBearer, Token: "***"}},
		{"basic", &endpoint.Auth{Type: endpoint.AuthBasic, Username: "u", Password: "p"}, &endpoint.Auth{Type: endpoint.AuthBasic, Username: "u", Password: "***"}},
		{"basic without password", &endpoint.Auth{Type: endpoint.AuthBasic, Username: "u"}, &endpoint.Auth{Type: endpoint.AuthBasic, Username: "u"}},
		{"oauth2", oauth2Auth(), func() *endpoint.Auth { a := oauth2Auth(); a.ClientSecret = "***"; return a }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			orig := tt.in.Clone()
			require.Equal(t, tt.want, tt.in.Masked())
			require.Equal(t, orig, tt.in, "Masked copies")
		})
	}
}

func TestAuthRestoreKeepsStoredSecrets(t *testing.T) {
	t.Parallel()
	stored := oauth2Auth()
	patch := oauth2Auth()
	patch.ClientSecret, patch.Scopes = endpoint.Mask, []string{"other"}
	require.True(t, patch.HasMask())
	patch.Restore(stored)
	require.Equal(t, "s3cret", patch.ClientSecret)
	require.Equal(t, []string{"other"}, patch.Scopes)
	require.False(t, patch.HasMask())

	// Another type, or nothing stored: the mask stays, for validation.
	basic := &endpoint.Auth{Type: endpoint.AuthBasic, Username: "u", Password: endpoint.Mask}
	basic.Restore(stored)
	require.Equal(t, endpoint.Mask, basic.Password)
	bearer := &endpoint.Auth{Type: endpoint.AuthBearer, Token: endpoint.Mask}
	bearer.Restore(nil)
	require.True(t, bearer.HasMask())

	// A new secret replaces the stored one.
	fresh := oauth2Auth()
	fresh.ClientSecret = "new"
	fresh.Restore(stored)
	require.Equal(t, "new", fresh.ClientSecret)
}

func TestAuthHeader(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Bearer tok", (&endpoint.Auth{Type: endpoint.AuthBearer, Token: "tok"}).Header())
	require.Equal(t, "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==", (&endpoint.Auth{Type: endpoint.AuthBasic, Username: "Aladdin", Password: "open sesame"}).Header())
	require.Empty(t, oauth2Auth().Header())
}

func TestKeysChangeWithEveryField(t *testing.T) {
	t.Parallel()
	base := oauth2Auth()
	require.Equal(t, base.Key(), oauth2Auth().Key())
	require.Empty(t, (*endpoint.Auth)(nil).Key())
	for _, mod := range []func(a *endpoint.Auth){
		func(a *endpoint.Auth) { a.ClientSecret = "other" },
		func(a *endpoint.Auth) { a.TokenURL += "x" },
		func(a *endpoint.Auth) { a.Scopes = append(a.Scopes, "x") },
		func(a *endpoint.Auth) { a.Audience = "" },
		func(a *endpoint.Auth) { a.ClientID, a.ClientSecret = "gatewaysecret", "" }, // boundaries cannot shift
	} {
		a := oauth2Auth()
		mod(a)
		require.NotEqual(t, base.Key(), a.Key())
	}
	tl := &endpoint.TLS{ClientCertificate: "c", ClientKey: "k"}
	require.Equal(t, tl.Key(), tl.Clone().Key())
	require.NotEqual(t, tl.Key(), (&endpoint.TLS{ClientCertificate: "c", ClientKey: "k2"}).Key())
	require.NotEqual(t, tl.Key(), (&endpoint.TLS{ClientCertificate: "ck"}).Key())
}

func TestMapSecretsReportsErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	_, err := oauth2Auth().MapSecrets(func(string) (string, error) { return "", boom })
	require.ErrorIs(t, err, boom)
	_, err = (&endpoint.TLS{ClientKey: "k"}).MapSecrets(func(string) (string, error) { return "", boom })
	require.ErrorIs(t, err, boom)
	got, err := (&endpoint.TLS{CACertificate: "ca"}).MapSecrets(func(string) (string, error) { return "", boom })
	require.NoError(t, err, "no key, nothing mapped")
	require.Equal(t, &endpoint.TLS{CACertificate: "ca"}, got)
}

func TestTLSMaskedAndRestore(t *testing.T) {
	t.Parallel()
	stored := &endpoint.TLS{ClientCertificate: "cert", ClientKey: "key", CACertificate: "ca"}
	require.Equal(t, &endpoint.TLS{ClientCertificate: "cert", ClientKey: "***", CACertificate: "ca"}, stored.Masked())
	patch := stored.Masked()
	patch.Restore(stored)
	require.Equal(t, stored, patch)
	kept := &endpoint.TLS{ClientKey: endpoint.Mask}
	kept.Restore(&endpoint.TLS{CACertificate: "ca"})
	require.Equal(t, endpoint.Mask, kept.ClientKey, "nothing stored to keep")
	require.Equal(t, &endpoint.TLS{CACertificate: "ca"}, stored.CAOnly())
	require.Nil(t, (&endpoint.TLS{ClientKey: "k"}).CAOnly())
}

func TestTLSParsing(t *testing.T) {
	t.Parallel()
	p := endpointtest.NewPKI(t)
	other := endpointtest.NewPKI(t)

	cfg, err := p.ClientTLS().Config()
	require.NoError(t, err)
	require.Len(t, cfg.Certificates, 1)
	require.NotNil(t, cfg.RootCAs)

	caOnly, err := (&endpoint.TLS{CACertificate: p.CACertificate}).Config()
	require.NoError(t, err)
	require.Empty(t, caOnly.Certificates)

	_, err = (&endpoint.TLS{ClientCertificate: p.ClientCertificate, ClientKey: other.ClientKey}).KeyPair()
	require.ErrorIs(t, err, endpoint.ErrKeyMismatch, "a key of another certificate")
	_, err = (&endpoint.TLS{ClientCertificate: p.ClientCertificate, ClientKey: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}).KeyPair()
	require.ErrorIs(t, err, endpoint.ErrBadKey)
	require.NotContains(t, err.Error(), "AAAA")
	_, err = (&endpoint.TLS{ClientCertificate: "not pem", ClientKey: p.ClientKey}).KeyPair()
	require.ErrorIs(t, err, endpoint.ErrNoCertificate)

	_, err = endpoint.ParseCertificates(p.ClientKey)
	require.ErrorIs(t, err, endpoint.ErrNoCertificate, "a key is not a certificate")
	broken := strings.Replace(p.CACertificate, "\n", "\nAAAA", 2)
	_, err = endpoint.ParseCertificates(broken)
	require.ErrorIs(t, err, endpoint.ErrNoCertificate)
	chain, err := endpoint.ParseCertificates(p.ClientCertificate + p.CACertificate)
	require.NoError(t, err)
	require.Len(t, chain, 2)
	require.True(t, chain[1].IsCA)
	_, err = chain[0].Verify(x509.VerifyOptions{Roots: cfg.RootCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
}
