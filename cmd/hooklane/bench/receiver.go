package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// server is an HTTP server on a free 127.0.0.1 port.
type server struct {
	url  string
	srv  *http.Server
	done chan struct{}
}

func startServer(ctx context.Context, h http.Handler) (*server, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	s := &server{url: "http://" + ln.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// close shuts the server down within 5 s, also when ctx has ended already.
func (s *server) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	<-s.done
}

// startNoop starts the ceiling's server: it reads the body and answers 201
// with a small JSON body, doing nothing else.
func startNoop(ctx context.Context) (*server, error) {
	return startServer(ctx, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{}`))
	}))
}

// receiver is the webhook target: it answers 200 to every delivery and
// tells the current phase's tracker which event arrived when.
type receiver struct {
	*server
	cur   atomic.Pointer[tracker]
	stray atomic.Int64
	now   func() time.Time
}

func startReceiver(ctx context.Context, now func() time.Time) (*receiver, error) {
	r := &receiver{now: now}
	s, err := startServer(ctx, http.HandlerFunc(r.serveHTTP))
	if err != nil {
		return nil, err
	}
	r.server = s
	return r, nil
}

func (r *receiver) track(t *tracker) { r.cur.Store(t) }

func (r *receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	at := r.now()
	body, err := io.ReadAll(req.Body)
	w.WriteHeader(http.StatusOK)
	if err != nil {
		r.stray.Add(1)
		return
	}
	if req.URL.Path == "/count" {
		// The transform phase: a transformed body need not carry the
		// event's id, so arrivals are numbered as they come.
		if t := r.cur.Load(); t == nil || !t.arriveCounted(at) {
			r.stray.Add(1)
		}
		return
	}
	var ev struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(body, &ev) != nil {
		r.stray.Add(1)
		return
	}
	// A fan-out phase's subscription k targets /hook/k.
	k := 0
	if rest, ok := strings.CutPrefix(req.URL.Path, "/hook/"); ok {
		if k, err = strconv.Atoi(rest); err != nil {
			r.stray.Add(1)
			return
		}
	}
	t := r.cur.Load()
	if t == nil || !t.arrive(ev.ID, k, at) {
		r.stray.Add(1)
	}
}

// tracker records the first arrival of each webhook of one phase, by the
// sequence number in its event's id and (fan-out) the subscription's
// number k < fan.
type tracker struct {
	prefix   string
	start    time.Time
	interval time.Duration // open loop: event i was due at start+i*interval
	fan      int           // webhooks per event

	mu      sync.Mutex
	arrived []time.Duration // since start, +1ns; 0 = not yet
	unique  int64
	dups    int64
	last    time.Duration
	notify  chan struct{}
	counted int64 // arrivals numbered by arriveCounted
}

func newTracker(prefix string, start time.Time, interval time.Duration, fan int) *tracker {
	return &tracker{prefix: prefix, start: start, interval: interval, fan: max(fan, 1), notify: make(chan struct{}, 1)}
}

func (t *tracker) arrive(id string, k int, at time.Time) bool {
	rest, ok := strings.CutPrefix(id, t.prefix)
	if !ok || k < 0 || k >= t.fan {
		return false
	}
	seq, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || seq < 0 || seq > 1<<26 {
		return false
	}
	i := int(seq)*t.fan + k
	d := at.Sub(t.start)
	t.mu.Lock()
	if i >= len(t.arrived) {
		t.arrived = append(t.arrived, make([]time.Duration, i+1-len(t.arrived)+1024)...)
	}
	if t.arrived[i] != 0 {
		t.dups++
	} else {
		t.arrived[i] = d + 1
		t.unique++
		t.last = max(t.last, d)
	}
	t.mu.Unlock()
	select {
	case t.notify <- struct{}{}:
	default:
	}
	return true
}

// arriveCounted records one arrival numbered by its order of arrival (the
// webhooks of a phase that cannot name their event).
func (t *tracker) arriveCounted(at time.Time) bool {
	t.mu.Lock()
	seq := t.counted
	t.counted++
	t.mu.Unlock()
	return t.arrive(t.prefix+strconv.FormatInt(seq, 10), 0, at)
}

type trackerStats struct {
	unique, dups int64
	last         time.Duration
}

func (t *tracker) stats() trackerStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return trackerStats{unique: t.unique, dups: t.dups, last: t.last}
}

// waitFor blocks until n distinct webhooks arrived (true) or timeout passed
// (false).
func (t *tracker) waitFor(ctx context.Context, n int64, timeout time.Duration) (bool, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if t.stats().unique >= n {
			return true, nil
		}
		select {
		case <-t.notify:
		case <-deadline.C:
			return false, nil
		case <-ctx.Done():
			return false, fmt.Errorf("wait for deliveries: %w", ctx.Err())
		}
	}
}

// latencies are, for an open-loop phase, each delivered event's time from
// its scheduled send to its first arrival.
func (t *tracker) latencies() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]time.Duration, 0, t.unique)
	for i, a := range t.arrived {
		if a == 0 {
			continue
		}
		out = append(out, max(a-1-time.Duration(i/t.fan)*t.interval, 0))
	}
	return out
}
