package destination

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// TLS is API.md §14's tls object on a destination, or true for TLS with
// the system roots. Decode it with [Fields.TLS]; its clientKey is a
// secret (list "/tls/clientKey" in the type's Secrets).
type TLS struct {
	// ClientCertificate and ClientKey are the PEM client certificate and
	// its key; both or neither.
	ClientCertificate string
	ClientKey         string
	// CACertificate is a PEM CA that replaces the system roots; "" keeps
	// them.
	CACertificate string
}

// tlsJSON is the object form of TLS.
type tlsJSON struct {
	ClientCertificate string `json:"clientCertificate,omitempty"`
	ClientKey         string `json:"clientKey,omitempty"`
	CACertificate     string `json:"caCertificate,omitempty"`
}

// MarshalJSON writes true for the system roots without a client
// certificate, the object otherwise.
func (t *TLS) MarshalJSON() ([]byte, error) {
	if *t == (TLS{}) {
		return []byte("true"), nil
	}
	out, err := json.Marshal(tlsJSON(*t))
	if err != nil {
		return nil, fmt.Errorf("marshal tls: %w", err)
	}
	return out, nil
}

// Config returns the client TLS configuration for serverName.
func (t *TLS) Config(serverName string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if t.CACertificate != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(t.CACertificate)) {
			return nil, errors.New("tls caCertificate holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	if t.ClientCertificate != "" {
		cert, err := tls.X509KeyPair([]byte(t.ClientCertificate), []byte(t.ClientKey))
		if err != nil {
			return nil, fmt.Errorf("tls client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// TLS reads the field name as §14's tls object, or a boolean (true: TLS
// with the system roots; false: none). It returns nil for no TLS.
func (f *Fields) TLS(name string) *TLS {
	raw, ok := f.Raw(name)
	if !ok {
		return nil
	}
	var on bool
	if err := json.Unmarshal(raw, &on); err == nil {
		if on {
			return &TLS{}
		}
		return nil
	}
	o := f.Object(name)
	if o == nil {
		return nil
	}
	t := &TLS{
		ClientCertificate: o.String("clientCertificate"),
		ClientKey:         o.String("clientKey"),
		CACertificate:     o.String("caCertificate"),
	}
	o.Done()
	switch {
	case t.ClientCertificate != "" && t.ClientKey == "":
		o.Problemf("clientKey", "is required with clientCertificate")
	case t.ClientKey != "" && t.ClientCertificate == "":
		o.Problemf("clientCertificate", "is required with clientKey")
	case t.ClientCertificate != "":
		if _, err := tls.X509KeyPair([]byte(t.ClientCertificate), []byte(t.ClientKey)); err != nil {
			if !parsesAsCertificate(t.ClientCertificate) {
				o.Problemf("clientCertificate", "must be a PEM certificate")
			} else {
				o.Problemf("clientKey", "must be the PEM private key of clientCertificate")
			}
		}
	}
	if t.CACertificate != "" && !x509.NewCertPool().AppendCertsFromPEM([]byte(t.CACertificate)) {
		o.Problemf("caCertificate", "must be a PEM certificate")
	}
	return t
}

// parsesAsCertificate reports whether pemText holds a certificate that
// parses (so that a key/certificate mismatch points at the key).
func parsesAsCertificate(pemText string) bool {
	return x509.NewCertPool().AppendCertsFromPEM([]byte(pemText))
}

// TLSDial returns a DialFunc that dials with dial and runs a TLS client
// handshake over the connection with cfg (its ServerName, when empty, is
// the dialed host), bounded by ctx.
func TLSDial(dial DialFunc, cfg *tls.Config) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := cfg.Clone()
		if c.ServerName == "" {
			c.ServerName, _ = splitAddress(addr)
		}
		conn := tls.Client(raw, c)
		if err := conn.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
		}
		return conn, nil
	}
}

// BoundedDial returns dial with every dial bounded by timeout.
func BoundedDial(dial DialFunc, timeout time.Duration) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return dial(ctx, network, addr)
	}
}
