package main

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/hooklane/hooklane/api"
	"github.com/hooklane/hooklane/api/metrics"
)

// opsReadyTimeout bounds the readiness pings, as the API's /readyz does.
const opsReadyTimeout = 3 * time.Second

// opsHandler serves the operations endpoints of API.md §8 — /healthz,
// /readyz and /metrics, with the answers the API gives — for a process
// that runs no api role (a router or pollers instance), so that its
// liveness and readiness probes and its metrics scrape have something to
// reach. Every other path is 404: such a process serves no API.
func opsHandler(version string, st, q api.Pinger, m *metrics.Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeOpsJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": version})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), opsReadyTimeout)
		defer cancel()
		checks := map[string]string{}
		ready := true
		for name, p := range map[string]api.Pinger{"store": st, "queue": q} {
			if err := p.Ping(ctx); err != nil {
				checks[name] = "unavailable: " + err.Error()
				ready = false
				continue
			}
			checks[name] = "ok"
		}
		if !ready {
			w.Header().Set("Retry-After", "5")
			writeOpsJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "checks": checks})
			return
		}
		writeOpsJSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": checks})
	})
	mux.Handle("GET /metrics", m.Handler())
	return mux
}

func writeOpsJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body) //nolint:errchkjson // maps of strings always encode; a write error means the client went away
}
