package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ReplayEventType is the type of the replay phase's stored history.
const ReplayEventType = "bench.history.recorded"

// ReplayResult is the replay phase (API.md §13): a subscription created
// after ReplayEvents stored events is backfilled by a replay, while live
// events of another subscription arrive at LiveDuringReplay.OfferedPerSec.
type ReplayResult struct {
	// Events is the stored history the replay walks; all of it matches
	// (Scanned may be a little higher: events of other phases received
	// in the same millisecond range).
	Events int `json:"events"`
	// Scanned, Matched and Created are the replay's final counters.
	Scanned int64 `json:"scanned"`
	Matched int64 `json:"matched"`
	Created int64 `json:"created"`
	// Seconds is from the replay's start to its COMPLETED status.
	Seconds float64 `json:"seconds"`
	// ScannedPerSec and CreatedPerSec are Scanned and Created over Seconds.
	ScannedPerSec float64 `json:"scannedPerSec"`
	CreatedPerSec float64 `json:"createdPerSec"`
	// Delivered counts the replayed jobs' deliveries the sink received
	// (each job once at least); DeliveredSeconds is when the last arrived,
	// from the replay's start.
	Delivered        int64   `json:"delivered"`
	DeliveredSeconds float64 `json:"deliveredSeconds"`
	AllDelivered     bool    `json:"allDelivered"`
	// LiveDuringReplay is the open-loop latency of live events offered
	// while the replay ran; LiveOverlapped is false when the replay ended
	// before the live load did (the figure then is partly without it).
	LiveDuringReplay LatencyResult `json:"liveDuringReplay"`
	LiveOverlapped   bool          `json:"liveOverlapped"`
	// HistorySeconds is how long storing the history took (not measured
	// further: the ingest phase measures ingest).
	HistorySeconds float64 `json:"historySeconds"`
}

// replay runs the replay phase.
func (r *runner) replay(ctx context.Context) error {
	cfg := r.cfg
	// At the gateway's default rate (2000 jobs/s), plus the history's
	// storing and the live load.
	need := cfg.ReplayLiveDuration + time.Duration(cfg.ReplayEvents/2000+10)*time.Second
	if !r.fits("replay", need) {
		return nil
	}
	if err := r.gw.ensureEventType(ctx, ReplayEventType); err != nil {
		return err
	}
	var sunk atomic.Int64
	var lastAt atomic.Int64
	sink, err := startServer(ctx, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		sunk.Add(1)
		lastAt.Store(cfg.NowFunc().UnixNano())
		w.WriteHeader(http.StatusNoContent)
	}))
	if err != nil {
		return err
	}
	defer sink.close(ctx)

	// The range starts now: the earlier phases' events stay out of it.
	since := cfg.NowFunc().UTC()
	cfg.Logger.Info("replay: storing history", "events", cfg.ReplayEvents)
	began := cfg.NowFunc()
	if err := r.storeHistory(ctx, cfg.ReplayEvents); err != nil {
		return err
	}
	res := ReplayResult{Events: cfg.ReplayEvents, HistorySeconds: cfg.NowFunc().Sub(began).Seconds()}
	subID, err := r.gw.subscribe(ctx, "bench-replay-"+r.runID, ReplayEventType, sink.url+"/replay")
	if err != nil {
		return err
	}
	defer func() { _ = r.gw.deleteSubscription(context.WithoutCancel(ctx), subID) }()

	start := cfg.NowFunc()
	status, raw, err := r.gw.call(ctx, http.MethodPost, "/api/subscriptions/"+subID+"/replay", map[string]any{
		"since": since.Format(time.RFC3339Nano),
	})
	if err != nil {
		return fmt.Errorf("start replay: %w", err)
	}
	if status != http.StatusAccepted {
		return fmt.Errorf("start replay: answered %d: %s", status, raw)
	}
	var started struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &started); err != nil || started.ID == "" {
		return fmt.Errorf("start replay: no id in %s", raw)
	}

	// Follow the replay while live events are offered and measured.
	type state struct {
		Status  string `json:"status"`
		Scanned int64  `json:"scanned"`
		Matched int64  `json:"matched"`
		Created int64  `json:"created"`
	}
	var (
		mu       sync.Mutex
		last     state
		doneAt   time.Time
		pollErr  error
		finished = make(chan struct{})
	)
	pctx, stopPoll := context.WithTimeout(ctx, cfg.ReplayTimeout)
	defer stopPoll()
	go func() {
		defer close(finished)
		for pctx.Err() == nil {
			status, raw, err := r.gw.call(pctx, http.MethodGet, "/api/replays/"+started.ID, nil)
			var s state
			if err == nil && status == http.StatusOK {
				err = json.Unmarshal(raw, &s)
			} else if err == nil {
				err = fmt.Errorf("get replay: answered %d: %s", status, raw)
			}
			mu.Lock()
			if err != nil {
				pollErr = err
				mu.Unlock()
				return
			}
			last = s
			if s.Status != "RUNNING" {
				doneAt = cfg.NowFunc()
				mu.Unlock()
				return
			}
			mu.Unlock()
			select {
			case <-pctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	cfg.Logger.Info("replay: live load while it runs", "rate", cfg.ReplayLiveRate)
	live, err := latencyPhase(ctx, r, r.nextFactory(), cfg.ReplayLiveRate, cfg.ReplayLiveDuration)
	if err != nil {
		return err
	}
	res.LiveDuringReplay = live
	mu.Lock()
	res.LiveOverlapped = last.Status == "RUNNING"
	mu.Unlock()
	<-finished
	if pollErr != nil {
		return pollErr
	}
	if doneAt.IsZero() {
		return fmt.Errorf("replay %s did not finish within %s (at %+v)", started.ID, cfg.ReplayTimeout, last)
	}
	if last.Status != "COMPLETED" {
		return fmt.Errorf("replay %s ended %s", started.ID, last.Status)
	}
	res.Scanned, res.Matched, res.Created = last.Scanned, last.Matched, last.Created
	res.Seconds = doneAt.Sub(start).Seconds()
	if res.Seconds > 0 {
		res.ScannedPerSec = float64(res.Scanned) / res.Seconds
		res.CreatedPerSec = float64(res.Created) / res.Seconds
	}
	deadline := cfg.NowFunc().Add(r.drainLimit())
	for sunk.Load() < res.Created && cfg.NowFunc().Before(deadline) && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	res.Delivered = sunk.Load()
	res.AllDelivered = res.Delivered >= res.Created && res.Created == int64(res.Events)
	if at := lastAt.Load(); at > 0 {
		res.DeliveredSeconds = time.Unix(0, at).Sub(start).Seconds()
	}
	r.rep.Replay = &res
	return nil
}

// storeHistory posts n events of ReplayEventType in batches of 1000 over
// four connections; no subscription receives them yet.
func (r *runner) storeHistory(ctx context.Context, n int) error {
	const batch, conns = 1000, 4
	data := `{"pad":"` + strings.Repeat("x", max(r.cfg.PayloadBytes-10, 0)) + `"}`
	var next atomic.Int64
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 60 * time.Second}
	for range conns {
		wg.Go(func() {
			for ctx.Err() == nil {
				first := int(next.Add(batch)) - batch
				if first >= n {
					return
				}
				var b bytes.Buffer
				b.WriteByte('[')
				for i := first; i < min(first+batch, n); i++ {
					if i > first {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, `{"specversion":"1.0","id":"h-%s-%d","source":"/bench/history","type":%q,"messagegroup":"g%d","data":%s}`,
						r.runID, i, ReplayEventType, i%100, data)
				}
				b.WriteByte(']')
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.gw.base+"/api/events", &b)
				if err != nil {
					errs <- fmt.Errorf("store history: %w", err)
					return
				}
				req.Header.Set("Content-Type", contentType(batch))
				if r.gw.apiKey != "" {
					req.Header.Set("Authorization", "Bearer "+r.gw.apiKey)
				}
				resp, err := client.Do(req)
				if err != nil {
					errs <- fmt.Errorf("store history: %w", err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					errs <- fmt.Errorf("store history: answered %d: %.300s", resp.StatusCode, body)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// writeReplay adds the replay phase to the report's table.
func (r *Report) writeReplay(p func(format string, a ...any)) {
	x := r.Replay
	if x == nil {
		return
	}
	l := x.LiveDuringReplay
	p("replay (stored history)\tevents\tscanned/s\tcreated/s\tseconds\tdelivered\tlast delivered s\tlive offered/s\tlive delivered\tlive p50 ms\tlive p99 ms\tlive max ms\toverlapped\t\n")
	p("\t%d\t%.0f\t%.0f\t%.1f\t%d/%d\t%.1f\t%.0f\t%d/%d\t%.1f\t%.1f\t%.1f\t%v\t\n", x.Events, x.ScannedPerSec, x.CreatedPerSec, x.Seconds,
		x.Delivered, x.Created, x.DeliveredSeconds, l.OfferedPerSec, l.Delivered, l.Accepted, l.P50Ms, l.P99Ms, l.MaxMs, x.LiveOverlapped)
	p("\n")
}

// replayProblems lists what makes the replay phase's figures unsound.
func (r *Report) replayProblems() []string {
	x := r.Replay
	if x == nil {
		return nil
	}
	var out []string
	if !x.AllDelivered || x.Matched != int64(x.Events) {
		out = append(out, fmt.Sprintf("replay: %d of %d events scanned, %d jobs created, %d delivered", x.Scanned, x.Events, x.Created, x.Delivered))
	}
	if l := x.LiveDuringReplay; l.Accepted == 0 || l.Errors > 0 || !l.AllDelivered {
		out = append(out, fmt.Sprintf("live load during the replay: %d of %d accepted, %d errors, %d delivered", l.Accepted, l.Scheduled, l.Errors, l.Delivered))
	}
	return out
}
