package router_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
)

// TestRetryClasses delivers one job per outcome class and checks what the
// first attempt leads to (API.md §6). The backoff is long (initial 100 s) so
// a retried job stays PENDING for the check, except where Retry-After
// raises or the cap bounds it.
func TestRetryClasses(t *testing.T) { //nolint:tparallel // see the loop: the subtests share one gateway
	t.Parallel()
	refused, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refusedURL := "http://" + refused.Addr().String()
	require.NoError(t, refused.Close())

	var redirectHit atomic.Int32
	redirectTarget := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		redirectHit.Add(1)
	}))
	t.Cleanup(redirectTarget.Close)
	hang := make(chan struct{})

	tests := []struct {
		name    string
		handler http.HandlerFunc
		url     string
		retry   dispatch.Retry
		timeout int
		// want is the status after the first attempt; for PENDING,
		// minWait/maxWait bound NextAttemptAt − the attempt's end.
		want             dispatch.Status
		minWait, maxWait time.Duration
		code             int
		errContains      string
	}{
		{
			name: "500 retried with backoff", want: dispatch.StatusPending, code: 500, minWait: 50 * time.Second, maxWait: 100 * time.Second,
			handler: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) },
		},
		{
			name: "502 retried", want: dispatch.StatusPending, code: 502, minWait: 50 * time.Second, maxWait: 100 * time.Second,
			handler: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) },
		},
		{
			name: "408 retried", want: dispatch.StatusPending, code: 408, minWait: 50 * time.Second, maxWait: 100 * time.Second,
			handler: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusRequestTimeout) },
		},
		{
			name: "429 Retry-After seconds raises the wait", want: dispatch.StatusPending, code: 429,
			retry: dispatch.Retry{InitialBackoffSeconds: 1, MaxBackoffSeconds: 3600}, minWait: 299 * time.Second, maxWait: 301 * time.Second,
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Retry-After", "300")
				w.WriteHeader(http.StatusTooManyRequests)
			},
		},
		{
			name: "503 Retry-After HTTP date raises the wait", want: dispatch.StatusPending, code: 503,
			retry: dispatch.Retry{InitialBackoffSeconds: 1, MaxBackoffSeconds: 3600}, minWait: 590 * time.Second, maxWait: 601 * time.Second,
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Retry-After", time.Now().Add(600*time.Second).UTC().Format(http.TimeFormat))
				w.WriteHeader(http.StatusServiceUnavailable)
			},
		},
		{
			name: "429 Retry-After capped by maxBackoffSeconds", want: dispatch.StatusPending, code: 429,
			retry: dispatch.Retry{InitialBackoffSeconds: 1, MaxBackoffSeconds: 30}, minWait: 29 * time.Second, maxWait: 30 * time.Second,
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Retry-After", "100000")
				w.WriteHeader(http.StatusTooManyRequests)
			},
		},
		{
			name: "timeout retried", want: dispatch.StatusPending, timeout: 1, minWait: 50 * time.Second, maxWait: 100 * time.Second,
			errContains: "deadline exceeded",
			handler: func(_ http.ResponseWriter, r *http.Request) {
				select {
				case <-hang:
				case <-r.Context().Done():
				}
			},
		},
		{
			name: "connection refused retried", url: refusedURL, want: dispatch.StatusPending, minWait: 50 * time.Second, maxWait: 100 * time.Second,
			errContains: "refused",
		},
		{
			name: "400 ends in ERROR", want: dispatch.StatusError, code: 400,
			handler: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadRequest) },
		},
		{
			name: "410 ends in ERROR", want: dispatch.StatusError, code: 410,
			handler: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) },
		},
		{
			name: "redirect not followed, ERROR", want: dispatch.StatusError, code: 302,
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, redirectTarget.URL, http.StatusFound)
			},
		},
	}
	g := newGW(t, gwOptions{})
	type tc struct {
		job *dispatch.Job
		i   int
	}
	var cases []tc
	for i, tt := range tests {
		url := tt.url
		if tt.handler != nil {
			srv := httptest.NewServer(tt.handler)
			t.Cleanup(srv.Close)
			url = srv.URL
		}
		retry := tt.retry
		if retry.InitialBackoffSeconds == 0 {
			retry = dispatch.Retry{InitialBackoffSeconds: 100, MaxBackoffSeconds: 3600}
		}
		j := g.taskJob(url, dispatch.ModeImmediate, "", retry)
		if tt.timeout > 0 {
			j.TimeoutSeconds = tt.timeout
		}
		cases = append(cases, tc{job: j, i: i})
		g.submit(j)
	}
	// Runs first: free the hanging handler and stop the gateway before
	// the servers close.
	t.Cleanup(func() {
		close(hang)
		g.stop()
	})
	//nolint:paralleltest // the subtests only read the jobs of one shared gateway, whose cleanup must wait for all of them
	for _, c := range cases {
		tt := tests[c.i]
		t.Run(tt.name, func(t *testing.T) {
			var j *dispatch.Job
			require.Eventually(t, func() bool {
				j = g.job(c.job.ID)
				return len(j.Attempts) == 1 && j.Status != dispatch.StatusInProgress
			}, 30*time.Second, 10*time.Millisecond)
			require.Equal(t, tt.want, j.Status)
			a := j.Attempts[0]
			require.Equal(t, 1, a.Attempt)
			require.Equal(t, tt.code, a.StatusCode)
			require.NotEmpty(t, a.Error)
			require.NotNil(t, j.LastError)
			if tt.errContains != "" {
				require.Contains(t, a.Error, tt.errContains)
			}
			if tt.want == dispatch.StatusPending {
				require.NotNil(t, j.NextAttemptAt)
				end := a.StartedAt.Add(time.Duration(a.DurationMs) * time.Millisecond)
				wait := j.NextAttemptAt.Sub(end)
				require.GreaterOrEqual(t, wait, tt.minWait-time.Second)
				require.LessOrEqual(t, wait, tt.maxWait+time.Second)
			} else {
				require.Nil(t, j.NextAttemptAt)
			}
		})
	}
	require.Zero(t, redirectHit.Load(), "the redirect was followed")
}

// TestMaxAttempts: a job that keeps failing ends in ERROR after maxAttempts
// attempts, each recorded, with the response body's first 1 KiB.
func TestMaxAttempts(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(strings.Repeat("x", 5000)))
	}))
	t.Cleanup(srv.Close)
	g := newGW(t, gwOptions{})
	j := g.taskJob(srv.URL, dispatch.ModeImmediate, "", dispatch.Retry{MaxAttempts: 3, InitialBackoffSeconds: 1, MaxBackoffSeconds: 1})
	g.submit(j)
	done := g.waitStatus(j.ID, dispatch.StatusError, 30*time.Second)
	require.Equal(t, 3, done.AttemptCount)
	require.Len(t, done.Attempts, 3)
	for i, a := range done.Attempts {
		require.Equal(t, i+1, a.Attempt)
		require.Equal(t, 500, a.StatusCode)
		require.Len(t, a.ResponseBody, dispatch.ResponseBodyLimit)
	}
}

// TestMaxAge: a retry that would start after maxAgeSeconds is not
// scheduled: the job ends in ERROR; a job already past its max age is not
// delivered at all.
func TestMaxAge(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	g := newGW(t, gwOptions{})
	// Backoff at least 30 s (initial 60 s, jitter [d/2, d]) > max age 20 s,
	// which leaves a loaded machine 20 s for the first attempt.
	j := g.taskJob(srv.URL, dispatch.ModeImmediate, "", dispatch.Retry{MaxAttempts: 10, InitialBackoffSeconds: 60, MaxBackoffSeconds: 120})
	j.MaxAgeSeconds = 20
	g.submit(j)
	done := g.waitStatus(j.ID, dispatch.StatusError, 30*time.Second)
	require.Equal(t, 1, done.AttemptCount)

	old := g.taskJob(srv.URL, dispatch.ModeImmediate, "", dispatch.Retry{})
	old.MaxAgeSeconds = 60
	old.CreatedAt = time.Now().Add(-2 * time.Minute).UTC()
	g.submit(old)
	expired := g.waitStatus(old.ID, dispatch.StatusError, 30*time.Second)
	require.Zero(t, expired.AttemptCount)
	require.Contains(t, *expired.LastError, "max age")
	require.Equal(t, int32(1), hits.Load())
}
