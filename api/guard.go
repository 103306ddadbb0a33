package api

import (
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// localOnly guards a server without API keys (auth off, which the command
// allows on loopback listeners only) against the web pages its operator
// visits:
//   - DNS rebinding: a page whose name resolves to 127.0.0.1 reaches the
//     listener with its own name in Host. Only loopback Host names are
//     served (localhost, 127.0.0.0/8, [::1], any port); any other is 421
//     Misdirected Request.
//   - Cross-site requests: a page may send "simple" requests (a POST
//     without a body, or a form) to the loopback listener. A browser names
//     the page in Origin; an Origin that is not a loopback http(s) origin
//     ("null" included) is 403. Clients that are not browsers send no
//     Origin and pass.
//
// JSON bodies need a JSON content type in every mode (decodeJSON), so a
// form cannot carry one. With API keys configured the guard does nothing:
// a browser cannot attach the Authorization header to a cross-site request
// without a CORS preflight, which this server never grants.
func (s *Server) localOnly(c *gin.Context) {
	if s.cfg.Keys.Len() > 0 {
		return
	}
	if host := c.Request.Host; host != "" && !isLoopbackHost(host) {
		writeProblem(c, newProblem(http.StatusMisdirectedRequest,
			"without API keys this server answers only to loopback host names (localhost, 127.0.0.1, [::1]); the request named "+
				quoteClipped(host)+": configure API keys to serve other names"))
		c.Abort()
		return
	}
	if origin := c.GetHeader("Origin"); origin != "" && !isLoopbackOrigin(origin) {
		writeProblem(c, newProblem(http.StatusForbidden,
			"without API keys this server refuses requests from web pages of other origins (Origin: "+quoteClipped(origin)+")"))
		c.Abort()
	}
}

// isLoopbackHost reports whether a Host header value (host, host:port,
// [v6] or [v6]:port) names the loopback interface: localhost, or a
// loopback IP literal.
func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

// isLoopbackOrigin reports whether an Origin header value is an http or
// https origin on a loopback host.
func isLoopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return isLoopbackHost(u.Host)
}

// requireJSON checks that a request body declared itself JSON: an
// application/json or application/*+json content type (parameters such as
// charset allowed). Anything else — none, text/plain, a form — is 415, so
// a browser's "simple" cross-site request can never carry a JSON body.
// Ingest (POST /api/events) has its own content-type rules (API.md §1) and
// does not come here.
func requireJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return newProblem(http.StatusUnsupportedMediaType,
		"the body must be JSON, sent with Content-Type: application/json (got Content-Type "+quoteClipped(ct)+")")
}

// quoteClipped quotes a client-sent header value for a problem detail, cut
// to 100 bytes.
func quoteClipped(v string) string {
	if len(v) > 100 {
		v = v[:100] + "…"
	}
	return strconv.Quote(v)
}
