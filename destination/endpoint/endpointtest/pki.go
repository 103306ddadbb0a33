// Package endpointtest builds the certificates tests of mutual TLS need: a
// private CA, a server certificate for 127.0.0.1 and client certificates,
// all generated in memory with crypto/x509.
package endpointtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hooklane/hooklane/destination/endpoint"
)

// PKI is a private CA with a server certificate for 127.0.0.1 and one
// client certificate, all in PEM.
type PKI struct {
	// CACertificate is the CA's certificate.
	CACertificate string
	// ServerCertificate and ServerKey are 127.0.0.1's, issued by the CA.
	ServerCertificate, ServerKey string
	// ClientCertificate and ClientKey are a client's, issued by the CA.
	ClientCertificate, ClientKey string

	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
}

// NewPKI generates a fresh CA and its server and client certificates.
func NewPKI(tb testing.TB) *PKI {
	tb.Helper()
	caKey := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "hooklane test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
	if err != nil {
		tb.Fatalf("create CA: %v", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("parse CA: %v", err)
	}
	p := &PKI{CACertificate: certPEM(der), ca: ca, caKey: caKey}
	p.ServerCertificate, p.ServerKey = p.Issue(tb, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	p.ClientCertificate, p.ClientKey = p.Issue(tb, "hooklane test client", x509.ExtKeyUsageClientAuth)
	return p
}

// Issue returns a new certificate for name (an IP address for a server)
// and its key, issued by the CA.
func (p *PKI) Issue(tb testing.TB, name string, usage x509.ExtKeyUsage) (certificate, key string) {
	tb.Helper()
	k := newKey(tb)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		tb.Fatalf("serial: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	if ip := net.ParseIP(name); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &k.PublicKey, p.caKey)
	if err != nil {
		tb.Fatalf("issue %s: %v", name, err)
	}
	return certPEM(der), keyPEM(tb, k)
}

// ClientTLS returns the endpoint configuration that authenticates with the
// client certificate and trusts the CA.
func (p *PKI) ClientTLS() *endpoint.TLS {
	return &endpoint.TLS{ClientCertificate: p.ClientCertificate, ClientKey: p.ClientKey, CACertificate: p.CACertificate}
}

// NewServer starts an httptest TLS server on 127.0.0.1 with the server
// certificate, requiring (when requireClient) a client certificate issued
// by the CA; it is closed when tb ends. configure, when given, edits the
// http.Server before it starts (a ConnState hook, say).
func (p *PKI) NewServer(tb testing.TB, h http.Handler, requireClient bool, configure ...func(*http.Server)) *httptest.Server {
	tb.Helper()
	pair, err := tls.X509KeyPair([]byte(p.ServerCertificate), []byte(p.ServerKey))
	if err != nil {
		tb.Fatalf("server key pair: %v", err)
	}
	srv := httptest.NewUnstartedServer(h)
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if requireClient {
		pool := x509.NewCertPool()
		pool.AddCert(p.ca)
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	srv.TLS = cfg
	// Refused handshakes are what mutual TLS tests provoke: log them with
	// the test's output.
	srv.Config.ErrorLog = log.New(tbWriter{tb}, "tls server: ", 0)
	for _, f := range configure {
		f(srv.Config)
	}
	srv.StartTLS()
	tb.Cleanup(srv.Close)
	return srv
}

// tbWriter sends a server's log lines to tb.Log.
type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("generate key: %v", err)
	}
	return k
}

func certPEM(der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func keyPEM(tb testing.TB, k *ecdsa.PrivateKey) string {
	tb.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		tb.Fatalf("marshal key: %v", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}
