// Package ui is the operator dashboard: a static single-page application
// (hand-written ES modules, one style sheet, no build step) embedded in the
// binary and served at /ui/. It talks to the gateway only through the
// public REST API and the SSE status stream, so it needs no endpoint of its
// own and proves the API is enough to operate the gateway.
package ui

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// assets are the dashboard's files, served as they are.
//
//go:embed assets
var assets embed.FS

// contentSecurityPolicy allows nothing but this origin: the dashboard
// loads no CDN, font or script from elsewhere, and no inline script.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// file is one asset ready to serve.
type file struct {
	body        []byte
	etag        string
	contentType string
}

// handler serves the embedded assets.
type handler struct {
	files map[string]file
}

// Handler returns the dashboard's file server. It expects paths relative
// to its mount point ("/", "/js/app.js"): mount it with http.StripPrefix.
// "/" serves index.html (the routes are in the URL fragment, so the server
// side is a plain file server). Every answer carries a strong ETag and
// Cache-Control: no-cache, so browsers revalidate cheaply (304) and never
// run assets older than the binary; and a Content-Security-Policy that
// allows only this origin.
func Handler() http.Handler {
	h, err := newHandler(assets)
	if err != nil {
		panic(fmt.Sprintf("ui: read embedded assets: %v", err)) // the embed is fixed at build time
	}
	return h
}

func newHandler(fsys fs.FS) (*handler, error) {
	sub, err := fs.Sub(fsys, "assets")
	if err != nil {
		return nil, fmt.Errorf("open assets: %w", err)
	}
	h := &handler{files: map[string]file{}}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(sub, p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		sum := sha256.Sum256(body)
		h.files["/"+p] = file{body: body, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, contentType: contentType(p)}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk assets: %w", err)
	}
	return h, nil
}

// contentType names the type of an asset by its extension; the types of
// the dashboard's own files are fixed here so they do not depend on the
// host's MIME tables.
func contentType(p string) string {
	switch path.Ext(p) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".ico":
		return "image/x-icon"
	}
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// ServeHTTP serves one asset.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	if p == "" || p == "/" {
		p = "/index.html"
	}
	f, ok := h.files[p]
	if !ok {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", f.contentType)
	hd.Set("ETag", f.etag)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	if matchesETag(r.Header.Get("If-None-Match"), f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Length", strconv.Itoa(len(f.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(f.body)
	}
}

// matchesETag reports whether an If-None-Match header names etag.
func matchesETag(header, etag string) bool {
	for c := range strings.SplitSeq(header, ",") {
		c = strings.TrimPrefix(strings.TrimSpace(c), "W/")
		if c == etag || c == "*" {
			return true
		}
	}
	return false
}
