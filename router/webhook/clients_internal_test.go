package webhook

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/destination/endpoint/endpointtest"
	"github.com/hooklane/hooklane/dispatch/clocktest"
)

// TestClientsBoundedAndSwept: one client per distinct TLS configuration,
// reused; past the bound the least recently used goes, and one unused for
// the idle bound goes at the next sweep; a dropped client's idle
// connections are closed.
func TestClientsBoundedAndSwept(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	pki := endpointtest.NewPKI(t)
	base := newHTTPClient(NewDialContext(true, time.Second), nil, 4, 4)
	created := 0
	newTLS := func(tlsCfg *tls.Config) *http.Client {
		created++
		return newHTTPClient(NewDialContext(true, time.Second), tlsCfg, 4, 4)
	}
	c := newClients(base, newTLS, 2, 10*time.Minute, clock.Now)
	t.Cleanup(c.close)

	none, err := c.get(nil)
	require.NoError(t, err)
	require.Same(t, base, none)

	cfgs := []*endpoint.TLS{pki.ClientTLS(), {CACertificate: pki.CACertificate}, {ClientCertificate: pki.ClientCertificate, ClientKey: pki.ClientKey}}
	first, err := c.get(cfgs[0])
	require.NoError(t, err)
	again, err := c.get(cfgs[0].Clone())
	require.NoError(t, err)
	require.Same(t, first, again, "an equal configuration shares the client")
	require.Equal(t, 1, created)

	// Open a kept-alive connection on the first client.
	var conns atomic.Int32
	srv := pki.NewServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), true, func(hs *http.Server) {
		hs.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed {
				conns.Add(1)
			}
		}
	})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := first.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())

	_, err = c.get(cfgs[1])
	require.NoError(t, err)
	_, err = c.get(cfgs[2]) // past the bound of 2: the first goes
	require.NoError(t, err)
	require.Equal(t, 2, c.len())
	require.Eventually(t, func() bool { return conns.Load() == 1 }, 60*time.Second, 10*time.Millisecond,
		"the dropped client's idle connection is closed")
	_, err = c.get(cfgs[0])
	require.NoError(t, err)
	require.Equal(t, 4, created, "a dropped configuration gets a new client")

	// cfgs[2] and cfgs[0] are in use; after the idle bound, the next
	// lookup sweeps every client unused since.
	clock.Advance(5 * time.Minute)
	_, err = c.get(cfgs[0])
	require.NoError(t, err)
	clock.Advance(6 * time.Minute)
	_, err = c.get(nil)
	require.NoError(t, err)
	require.Equal(t, 1, c.len(), "cfgs[2], unused for 11 minutes, is gone")
	_, ok := c.byKey.Get(cfgs[0].Key())
	require.True(t, ok)

	_, err = c.get(&endpoint.TLS{CACertificate: "not pem"})
	require.ErrorIs(t, err, endpoint.ErrNoCertificate)
}

func TestRefreshAt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		lifetime time.Duration
		want     time.Time
	}{
		{0, time.Time{}},
		{time.Hour, now.Add(time.Hour - 10*time.Second)},
		{20 * time.Second, now.Add(10 * time.Second)},
		{19 * time.Second, now.Add(9500 * time.Millisecond)},
		{2 * time.Second, now.Add(time.Second)},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, refreshAt(now, tt.lifetime), tt.lifetime)
	}
}

func TestTokenErrorQuotesNoSecret(t *testing.T) {
	t.Parallel()
	body := []byte(`{"error":"invalid_client","echo":"the-client-secret"}`)
	err := tokenError("https://gw:url-password@idp.example/token", &oauth2.RetrieveError{Body: body, ErrorCode: "invalid_client"})
	require.Equal(t, "token endpoint https://gw:xxxxx@idp.example/token refused the request (invalid_client)", err.Error())
	err = tokenError("https://idp.example/token", &oauth2.RetrieveError{Body: body, Response: &http.Response{StatusCode: http.StatusBadRequest}})
	require.Equal(t, "token endpoint https://idp.example/token answered 400 Bad Request", err.Error())
	err = tokenError("https://gw:url-password@idp.example/token", errors.New("dial: refused"))
	require.NotContains(t, err.Error(), "url-password")
}
