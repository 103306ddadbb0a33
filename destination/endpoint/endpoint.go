// Package endpoint holds how the gateway authenticates to a push endpoint
// (API.md §14): the `auth` of a subscription or TASK job (a bearer token,
// basic credentials, or OAuth 2.0 client credentials) and its `tls` (a
// client certificate for mutual TLS, a private CA).
//
// Their secrets — token, password, clientSecret, clientKey — are
// write-only: Masked is what every answer shows instead, and Restore puts
// the stored value back where a client sent the mask. MapSecrets lets the
// store adapters seal and open exactly those fields (package secretbox).
// Key identifies a configuration by a hash, so caches keyed by it (OAuth 2.0
// tokens, HTTP transports) follow a change at once.
//
// The rules a configuration must follow are checked where subscriptions are
// validated (package subscription); this package parses PEM the same way
// for the check and for the delivery.
package endpoint

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"
)

// Mask is what every answer shows in place of a write-only secret; a
// PATCH that sends it back keeps the stored value.
const Mask = "***"

// AuthType is the kind of an Auth.
type AuthType string

// Auth types (API.md §14).
const (
	// AuthBearer sends `Authorization: Bearer <token>`.
	AuthBearer AuthType = "bearer"
	// AuthBasic sends `Authorization: Basic base64(username:password)`.
	AuthBasic AuthType = "basic"
	// AuthOAuth2 obtains an access token from TokenURL with the client
	// credentials grant (RFC 6749 §4.4) and sends it as a bearer token.
	AuthOAuth2 AuthType = "oauth2"
)

// Auth is how deliveries authenticate to their target. Only the fields of
// its Type are set. Token, Password and ClientSecret are secrets.
type Auth struct {
	Type AuthType `json:"type"`
	// Token is the bearer token (bearer).
	Token string `json:"token,omitempty"`
	// Username and Password are the basic credentials (basic).
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// TokenURL is the OAuth 2.0 token endpoint (oauth2).
	TokenURL string `json:"tokenUrl,omitempty"`
	// ClientID and ClientSecret are the client credentials (oauth2).
	ClientID     string `json:"clientId,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// Scopes are requested with the token (oauth2, optional).
	Scopes []string `json:"scopes,omitempty"`
	// Audience is sent as the `audience` parameter (oauth2, optional).
	Audience string `json:"audience,omitempty"`
}

// TLS is the TLS configuration of deliveries to an https target: a client
// certificate for mutual TLS (ClientCertificate with ClientKey), a CA that
// replaces the system roots (CACertificate), or both. All are PEM;
// ClientKey is a secret.
type TLS struct {
	ClientCertificate string `json:"clientCertificate,omitempty"`
	ClientKey         string `json:"clientKey,omitempty"`
	CACertificate     string `json:"caCertificate,omitempty"`
}

// Clone returns a deep copy of a (nil for nil).
func (a *Auth) Clone() *Auth {
	if a == nil {
		return nil
	}
	c := *a
	c.Scopes = slices.Clone(a.Scopes)
	return &c
}

// Masked returns a copy of a with every secret that is set replaced by Mask
// (nil for nil): the form every answer shows.
func (a *Auth) Masked() *Auth {
	c, _ := a.MapSecrets(func(string) (string, error) { return Mask, nil })
	return c
}

// MapSecrets returns a copy of a whose set secrets (Token, Password,
// ClientSecret) are f of the originals; empty ones stay empty. It returns
// nil for nil, and f's first error.
//
//nolint:nilnil // no auth maps to no auth
func (a *Auth) MapSecrets(f func(string) (string, error)) (*Auth, error) {
	if a == nil {
		return nil, nil
	}
	c := a.Clone()
	for _, p := range []*string{&c.Token, &c.Password, &c.ClientSecret} {
		if *p == "" {
			continue
		}
		v, err := f(*p)
		if err != nil {
			return nil, err
		}
		*p = v
	}
	return c, nil
}

// HasMask reports whether a secret of a is the Mask.
func (a *Auth) HasMask() bool {
	return a != nil && (a.Token == Mask || a.Password == Mask || a.ClientSecret == Mask)
}

// Restore replaces each secret of a that is the Mask by the same field of
// stored, the auth a PATCH replaces, when stored is of the same type and
// has that field set. A Mask it cannot replace stays, for validation to
// refuse (the client must then send the secret itself).
func (a *Auth) Restore(stored *Auth) {
	if a == nil || stored == nil || stored.Type != a.Type {
		return
	}
	keep := func(dst *string, src string) {
		if *dst == Mask && src != "" {
			*dst = src
		}
	}
	keep(&a.Token, stored.Token)
	keep(&a.Password, stored.Password)
	keep(&a.ClientSecret, stored.ClientSecret)
}

// Header returns the Authorization header value of a bearer or basic auth,
// "" for other types (an oauth2 token is obtained at delivery).
func (a *Auth) Header() string {
	switch a.Type {
	case AuthBearer:
		return "Bearer " + a.Token
	case AuthBasic:
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(a.Username+":"+a.Password))
	case AuthOAuth2:
		return "" // obtained at delivery
	}
	return ""
}

// Key identifies the configuration: a hash of every field, secrets
// included, so a changed secret is a new key. "" for nil.
func (a *Auth) Key() string {
	if a == nil {
		return ""
	}
	h := sha256.New()
	writeFields(h, string(a.Type), a.Token, a.Username, a.Password, a.TokenURL, a.ClientID, a.ClientSecret, a.Audience)
	writeFields(h, a.Scopes...)
	return hex.EncodeToString(h.Sum(nil))
}

// writeFields hashes each value with its length, so field boundaries
// cannot shift.
func writeFields(h hash.Hash, values ...string) {
	for _, v := range values {
		h.Write([]byte(strconv.Itoa(len(v)) + ":" + v))
	}
	h.Write([]byte{0})
}

// Clone returns a copy of t (nil for nil).
func (t *TLS) Clone() *TLS {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// Masked returns a copy of t with ClientKey, when set, replaced by Mask
// (nil for nil).
func (t *TLS) Masked() *TLS {
	c, _ := t.MapSecrets(func(string) (string, error) { return Mask, nil })
	return c
}

// MapSecrets returns a copy of t whose ClientKey, when set, is f of the
// original; nil for nil.
//
//nolint:nilnil // no TLS maps to no TLS
func (t *TLS) MapSecrets(f func(string) (string, error)) (*TLS, error) {
	if t == nil {
		return nil, nil
	}
	c := *t
	if c.ClientKey != "" {
		v, err := f(c.ClientKey)
		if err != nil {
			return nil, err
		}
		c.ClientKey = v
	}
	return &c, nil
}

// Restore replaces a ClientKey that is the Mask by stored's, when stored
// has one; otherwise the Mask stays, for validation to refuse.
func (t *TLS) Restore(stored *TLS) {
	if t != nil && t.ClientKey == Mask && stored != nil && stored.ClientKey != "" {
		t.ClientKey = stored.ClientKey
	}
}

// Key identifies the configuration by a hash of its PEM blocks; "" for
// nil.
func (t *TLS) Key() string {
	if t == nil {
		return ""
	}
	h := sha256.New()
	writeFields(h, t.ClientCertificate, t.ClientKey, t.CACertificate)
	return hex.EncodeToString(h.Sum(nil))
}

// CAOnly returns the part of t that applies to an OAuth 2.0 token endpoint:
// its CA, without the client certificate; nil when t sets no CA.
func (t *TLS) CAOnly() *TLS {
	if t == nil || t.CACertificate == "" {
		return nil
	}
	return &TLS{CACertificate: t.CACertificate}
}

// Errors of parsing a TLS configuration; each names what is wrong without
// quoting the PEM.
var (
	// ErrNoCertificate: a PEM field holds no certificate that parses.
	ErrNoCertificate = errors.New("must be one or more PEM certificates")
	// ErrBadKey: the client key is no PEM private key that parses.
	ErrBadKey = errors.New("must be a PEM private key (PKCS #8, PKCS #1 or SEC 1)")
	// ErrKeyMismatch: the client key is not the key of the client
	// certificate.
	ErrKeyMismatch = errors.New("does not match clientCertificate")
)

// ParseCertificates returns the certificates of a PEM text: every
// CERTIFICATE block, each of which must parse; ErrNoCertificate when there
// is none or one does not parse.
func ParseCertificates(text string) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := []byte(text)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoCertificate, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, ErrNoCertificate
	}
	return certs, nil
}

// KeyPair returns the client certificate and key as a tls.Certificate;
// ErrNoCertificate when the certificate does not parse, ErrBadKey when
// the key does not, ErrKeyMismatch when the key is not the certificate's.
// No error quotes the key.
func (t *TLS) KeyPair() (tls.Certificate, error) {
	if _, err := ParseCertificates(t.ClientCertificate); err != nil {
		return tls.Certificate{}, err
	}
	if !parsesAsKey(t.ClientKey) {
		return tls.Certificate{}, ErrBadKey
	}
	pair, err := tls.X509KeyPair([]byte(t.ClientCertificate), []byte(t.ClientKey))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%w: %w", ErrKeyMismatch, err)
	}
	return pair, nil
}

// parsesAsKey reports whether text holds a PEM private key block that
// parses as PKCS #8, PKCS #1 (RSA) or SEC 1 (EC), as tls.X509KeyPair reads
// them.
func parsesAsKey(text string) bool {
	rest := []byte(text)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return false
		}
		if !strings.HasSuffix(block.Type, "PRIVATE KEY") {
			continue
		}
		if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
			return true
		}
		if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
			return true
		}
		_, err := x509.ParseECPrivateKey(block.Bytes)
		return err == nil
	}
}

// Config returns the client TLS configuration of t: its client
// certificate, when set, and its CA as the only roots, when set. TLS 1.2 is
// the least version.
func (t *TLS) Config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.ClientCertificate != "" || t.ClientKey != "" {
		pair, err := t.KeyPair()
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if t.CACertificate != "" {
		certs, err := ParseCertificates(t.CACertificate)
		if err != nil {
			return nil, fmt.Errorf("CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		for _, c := range certs {
			pool.AddCert(c)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}
