package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/queue/sqsqueue"
)

// The fault tests run the real binary and break what it depends on: the
// gateway itself (SIGKILL), the SQS-compatible server, the store. Each
// posts events under load, records every event answered 201 (or 200, a
// duplicate of a stored one), and checks that each of them reaches the
// receiver at least once: it logs lost=0 and the duplicate count. The
// thresholds are shortened by configuration only (HOOKLANE_* settings).

// faultEnv is the configuration every fault test starts from: fast pollers,
// a short lease, quiet logs; extra adds to it.
func faultEnv(extra map[string]string) map[string]string {
	env := map[string]string{
		"HOOKLANE_ALLOW_PRIVATE_TARGETS": "true",
		"HOOKLANE_LEASE":                 "5s",
		"HOOKLANE_PENDING_POLL_INTERVAL": "500ms",
		"HOOKLANE_LEASE_POLL_INTERVAL":   "1s",
		"HOOKLANE_STALE_POLL_INTERVAL":   "1s",
		"HOOKLANE_FANOUT_POLL_INTERVAL":  "1s",
		"HOOKLANE_FANOUT_GRACE":          "2s",
		// A job stored QUEUED whose message never reached the queue (the
		// process died, or the store failed after the write, between the
		// store write and the send) waits for the stale-queued rescuer.
		"HOOKLANE_STALE_QUEUED_AFTER": "10s",
		"HOOKLANE_LOG_LEVEL":          "warn",
	}
	maps.Copy(env, extra)
	return env
}

func faultSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// countingReceiver counts the deliveries of each CloudEvents id. While
// down it answers 503 and counts the refusals instead.
type countingReceiver struct {
	srv     *httptest.Server
	down    atomic.Bool
	mu      sync.Mutex
	seen    map[string]int
	refused map[string]int
	total   atomic.Int64
}

func newCountingReceiver(t *testing.T) *countingReceiver {
	t.Helper()
	r := &countingReceiver{seen: map[string]int{}, refused: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var ce struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(body, &ce); err != nil || ce.ID == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		if r.down.Load() {
			r.refused[ce.ID]++
			r.mu.Unlock()
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		r.seen[ce.ID]++
		r.mu.Unlock()
		r.total.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// setupFault registers the test's event type and an IMMEDIATE subscription
// to recv, and waits until an event gets a job. It returns the type code
// and the CloudEvents id of that probe event (to be delivered too).
func setupFault(t *testing.T, p *process, recv *countingReceiver) (typ, probeID string) {
	t.Helper()
	return setupFaultTo(t, p, `"target":"`+recv.srv.URL+`"`)
}

// setupFaultTo is setupFault for any delivery: to is the subscription's
// "target" or "destination" member, as JSON.
func setupFaultTo(t *testing.T, p *process, to string) (typ, probeID string) {
	t.Helper()
	ctx := t.Context()
	typ = "fault.tested"
	status, body := p.post(ctx, "/api/event-types", "application/json", `{"code":"`+typ+`","name":"fault"}`)
	require.Equal(t, http.StatusCreated, status, "%s", body)
	status, body = p.post(ctx, "/api/subscriptions", "application/json", `{"code":"fault","timeoutSeconds":5,
		"retry":{"maxAttempts":30,"initialBackoffSeconds":1,"maxBackoffSeconds":3},
		"eventTypes":[{"eventTypeCode":"`+typ+`"}],`+to+`}`)
	require.Equal(t, http.StatusCreated, status, "%s", body)
	probeID = "probe-" + faultSuffix()
	require.Eventually(t, func() bool {
		st, b := p.post(ctx, "/api/events", "application/cloudevents+json",
			`{"specversion":"1.0","id":"`+probeID+`","source":"/fault","type":"`+typ+`","data":{}}`)
		var resp struct {
			DispatchJobs []json.RawMessage `json:"dispatchJobs"`
		}
		_ = json.Unmarshal(b, &resp)
		return (st == http.StatusCreated || st == http.StatusOK) && len(resp.DispatchJobs) == 1
	}, 60*time.Second, 100*time.Millisecond, "the subscription never matched")
	return typ, probeID
}

// faultLoad posts batches of events to whichever process is the current
// target, retrying each batch until it is accepted, and records what was
// accepted and every other answer.
type faultLoad struct {
	t      *testing.T
	typ    string
	target atomic.Pointer[process]
	next   atomic.Int64

	mu           sync.Mutex
	accepted     map[string]string // CloudEvents id → gateway event id
	others       map[int]int       // answers other than 201/200 by status; 0 is no answer
	noRetryAfter int               // 503 answers without Retry-After
	count        atomic.Int64      // len(accepted)
}

func newFaultLoad(t *testing.T, typ string, p *process, probeID string) *faultLoad {
	t.Helper()
	l := &faultLoad{t: t, typ: typ, accepted: map[string]string{probeID: ""}, others: map[int]int{}}
	l.target.Store(p)
	l.count.Store(1)
	return l
}

// run posts with `posters` concurrent producers, batch events a request,
// pausing `pace` after each accepted batch, until limit events were posted
// (0: no limit) or ctx ends.
func (l *faultLoad) run(ctx context.Context, posters, batch, limit int, pace time.Duration) {
	var wg sync.WaitGroup
	for range posters {
		wg.Go(func() {
			for ctx.Err() == nil {
				first := int(l.next.Add(int64(batch))) - batch
				if limit > 0 && first >= limit {
					return
				}
				var items []string
				for i := first; i < first+batch; i++ {
					id := fmt.Sprintf("ev-%d", i)
					items = append(items, fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":"/fault","type":%q,"data":{"seq":%d}}`, id, l.typ, i))
				}
				if !l.postUntilAccepted(ctx, "["+strings.Join(items, ",")+"]") {
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(pace):
				}
			}
		})
	}
	wg.Wait()
}

func (l *faultLoad) postUntilAccepted(ctx context.Context, body string) bool {
	for ctx.Err() == nil {
		// A request in flight when the load ends is answered and read in
		// full (bounded by its own timeout): its events may be accepted,
		// and the test must know which.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		status, header, resp := l.target.Load().request(rctx, http.MethodPost, "/api/events", "application/cloudevents-batch+json", body)
		cancel()
		if status == http.StatusCreated || status == http.StatusOK {
			var out struct {
				Items []struct {
					ID    string `json:"id"`
					Event struct {
						ID string `json:"id"`
					} `json:"event"`
				} `json:"items"`
			}
			if err := json.Unmarshal(resp, &out); err != nil || len(out.Items) == 0 {
				l.t.Errorf("unreadable %d answer: %s", status, resp)
				return false
			}
			l.mu.Lock()
			for _, it := range out.Items {
				l.accepted[it.Event.ID] = it.ID
			}
			l.count.Store(int64(len(l.accepted)))
			l.mu.Unlock()
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		l.mu.Lock()
		l.others[status]++
		if status == http.StatusServiceUnavailable && header.Get("Retry-After") == "" {
			l.noRetryAfter++
		}
		l.mu.Unlock()
		select { // a producer's back-off before it retries the same batch
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}

// waitAccepted blocks until at least n events were accepted, for a minute
// at most.
func (l *faultLoad) waitAccepted(t *testing.T, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return l.count.Load() >= n }, time.Minute, 20*time.Millisecond,
		"fewer than %d events accepted within a minute", n)
}

// snapshot returns a copy of what was recorded.
func (l *faultLoad) snapshot() (accepted map[string]string, others map[int]int, noRetryAfter int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	accepted, others = map[string]string{}, map[int]int{}
	maps.Copy(accepted, l.accepted)
	maps.Copy(others, l.others)
	return accepted, others, l.noRetryAfter
}

// requireDelivered waits until every accepted event reached recv at least
// once, logs lost and duplicates, and fails when any is lost.
func requireDelivered(t *testing.T, recv *countingReceiver, accepted map[string]string, within time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	for {
		recv.mu.Lock()
		lost, duplicates := 0, 0
		var missing []string
		for id, gatewayID := range accepted {
			switch n := recv.seen[id]; {
			case n == 0:
				lost++
				if len(missing) < 10 {
					missing = append(missing, id+"="+gatewayID)
				}
			case n > 1:
				duplicates += n - 1
			}
		}
		recv.mu.Unlock()
		if lost == 0 {
			t.Logf("accepted=%d delivered=%d lost=0 duplicates=%d (all delivered %s after the load ended)",
				len(accepted), recv.total.Load(), duplicates, time.Since(start).Round(100*time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Logf("accepted=%d delivered=%d lost=%d duplicates=%d", len(accepted), recv.total.Load(), lost, duplicates)
			require.Zero(t, lost, "accepted events never delivered within %s, e.g. %v", within, missing)
		}
		time.Sleep(200 * time.Millisecond) //nolint:forbidigo // polls the receiver's tally until the deadline: deliveries come from the gateway processes
	}
}

// privateServer is a dependency server a test starts, stops and restarts on
// its own loopback port.
type privateServer struct {
	t    *testing.T
	name string
	argv []string
	env  []string
	cmd  *exec.Cmd
	done chan struct{}
	log  *syncBuffer
}

func startPrivateServer(t *testing.T, name string, env, argv []string, ready func() bool) *privateServer {
	t.Helper()
	s := &privateServer{t: t, name: name, argv: argv, env: env, log: &syncBuffer{}}
	s.start(ready)
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			s.log.mu.Lock()
			t.Logf("--- log of %s ---\n%s", name, tail(s.log.String(), 4000))
			s.log.mu.Unlock()
		}
	})
	return s
}

func (s *privateServer) start(ready func() bool) {
	s.t.Helper()
	cmd := exec.Command(s.argv[0], s.argv[1:]...) //nolint:noctx // the server is stopped and restarted by the test itself, across t.Context()'s end
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, s.env...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(s.t, cmd.Start())
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(60 * time.Second)
	for !ready() {
		select {
		case <-done:
			s.log.mu.Lock()
			defer s.log.mu.Unlock()
			s.t.Fatalf("%s exited at start:\n%s", s.name, s.log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s not ready after 60s", s.name)
		}
	}
}

// kill sends SIGKILL to the server's PID and waits for it to exit.
func (s *privateServer) kill() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

func portOpen(ctx context.Context, addr string) bool {
	c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// startPrivateFerretDB starts a FerretDB of the test's own on a free
// loopback port with a temporary data directory, and returns it and its
// address. The shared one serves other tests at the same time, and
// FerretDB's scans are CPU-bound: a private one keeps this test's timing
// its own.
func startPrivateFerretDB(t *testing.T) (*privateServer, string) {
	t.Helper()
	bin := cmp.Or(os.Getenv("HOOKLANE_TEST_FERRETDB_BIN"), repoFile("localstack", ".cache", "bin", "ferretdb"))
	require.FileExists(t, bin, "run localstack/stack.sh start (it builds FerretDB) and eval its env")
	addr := freePort(t)
	s := startPrivateServer(t, "ferretdb", nil,
		[]string{bin, "-listen", addr, "-data-dir", t.TempDir(), "-log-level", "warn"}, func() bool { return portOpen(t.Context(), addr) })
	return s, addr
}

// repoFile returns a path of the repository from this package's directory.
func repoFile(parts ...string) string {
	return filepath.Join(append([]string{"..", ".."}, parts...)...)
}

func sqsClient(endpoint string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

// sqsEnv is the gateway configuration for an SQS queue at endpoint.
func sqsEnv(endpoint, queueURL string) map[string]string {
	return map[string]string{
		"HOOKLANE_SQS_QUEUE_URL": queueURL,
		"HOOKLANE_SQS_ENDPOINT":  endpoint,
		"HOOKLANE_SQS_REGION":    "us-east-1",
		"AWS_ACCESS_KEY_ID":      "test",
		"AWS_SECRET_ACCESS_KEY":  "test",
	}
}

// TestFaultGatewayKilledEmbedded kills the embedded gateway (SQLite file and
// in-process queue) with SIGKILL under load and restarts it on the same
// data directory: the jobs its in-process queue held are re-queued at start.
func TestFaultGatewayKilledEmbedded(t *testing.T) {
	t.Parallel()
	bin := hooklaneBinary.get(t)
	recv := newCountingReceiver(t)
	env := faultEnv(map[string]string{"HOOKLANE_DATA_DIR": t.TempDir()})
	killUnderLoad(t, bin, "embedded", env, recv, killLoad{total: 3000, posters: 8, batch: 10, deliverWithin: 60 * time.Second})
}

// killLoad sizes a kill-under-load scenario.
type killLoad struct {
	total, posters, batch int
	deliverWithin         time.Duration
}

// killUnderLoad starts a gateway, posts load.total events, SIGKILLs the
// gateway after 40 % were accepted, restarts it with the same environment,
// and requires every accepted event to reach the receiver.
func killUnderLoad(t *testing.T, bin, name string, env map[string]string, recv *countingReceiver, load killLoad) {
	t.Helper()
	p := startProcess(t, bin, name, env)
	typ, probe := setupFault(t, p, recv)
	l := newFaultLoad(t, typ, p, probe)
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		l.run(t.Context(), load.posters, load.batch, load.total, 0)
	}()
	l.waitAccepted(t, int64(load.total*2/5))
	p.kill()
	t.Logf("killed the gateway after %d accepted events", l.count.Load())
	l.target.Store(startProcess(t, bin, name+"-restarted", env))
	<-loaded
	accepted, others, _ := l.snapshot()
	require.Len(t, accepted, load.total+1)
	t.Logf("answers other than 201/200 while it was down: %v", others)
	requireDelivered(t, recv, accepted, load.deliverWithin)
}

// TestFaultGatewayKilledMongoSQS kills a gateway on MongoDB and SQS (a
// private FerretDB, and a fresh FIFO queue on the shared SQS-compatible
// server) under load and restarts it: what the dead process held in flight
// comes back through the queue's visibility timeout and the expired-lease
// rescuer, what it stored but never sent through the stale-queued rescuer.
func TestFaultGatewayKilledMongoSQS(t *testing.T) {
	t.Parallel()
	_, mongoAddr := startPrivateFerretDB(t)
	mongoURI := "mongodb://" + mongoAddr + "/"
	endpoint := cmp.Or(os.Getenv("HOOKLANE_TEST_SQS_ENDPOINT"), "http://127.0.0.1:4566")
	bin := hooklaneBinary.get(t)
	recv := newCountingReceiver(t)
	url, err := sqsqueue.CreateQueue(t.Context(), sqsClient(endpoint), "hooklane-fault-"+faultSuffix()+".fifo", sqsqueue.CreateQueueParams{})
	require.NoError(t, err)
	env := faultEnv(sqsEnv(endpoint, url))
	env["HOOKLANE_MONGO_URI"] = mongoURI
	env["HOOKLANE_MONGO_DATABASE"] = "hooklane_fault_" + faultSuffix()
	// FerretDB is slow: a small load.
	killUnderLoad(t, bin, "mongo-sqs", env, recv, killLoad{total: 300, posters: 4, batch: 5, deliverWithin: 90 * time.Second})
}

// TestFaultQueueDown stops a private SQS-compatible server (fauxqs, which
// keeps its queues in memory) for 20 s under load: ingest keeps answering
// 201 (the jobs wait PENDING), and once the server is back and the queue
// recreated, everything is delivered; the messages the dead server held are
// recovered by the stale-queued rescuer (HOOKLANE_STALE_QUEUED_AFTER=10s).
func TestFaultQueueDown(t *testing.T) {
	t.Parallel()
	server := cmp.Or(os.Getenv("HOOKLANE_TEST_FAUXQS_SERVER"), repoFile("localstack", "sqs", "server.mjs"))
	require.FileExists(t, server, "run localstack/stack.sh start (it installs fauxqs) and eval its env")
	addr := freePort(t)
	_, port, _ := net.SplitHostPort(addr)
	endpoint := "http://" + addr
	client := sqsClient(endpoint)
	sqsReady := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := client.ListQueues(ctx, &sqs.ListQueuesInput{})
		return err == nil
	}
	fq := startPrivateServer(t, "fauxqs", []string{"HOOKLANE_STACK_SQS_HOST=127.0.0.1", "HOOKLANE_STACK_SQS_PORT=" + port},
		[]string{"node", server}, sqsReady)
	name := "hooklane-fault-" + faultSuffix() + ".fifo"
	url, err := sqsqueue.CreateQueue(t.Context(), client, name, sqsqueue.CreateQueueParams{})
	require.NoError(t, err)

	bin := hooklaneBinary.get(t)
	recv := newCountingReceiver(t)
	env := faultEnv(sqsEnv(endpoint, url))
	env["HOOKLANE_DATA_DIR"] = t.TempDir()
	p := startProcess(t, bin, "queue-down", env)
	typ, probe := setupFault(t, p, recv)
	l := newFaultLoad(t, typ, p, probe)
	ctx, stopLoad := context.WithCancel(t.Context())
	defer stopLoad()
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		l.run(ctx, 2, 5, 0, 100*time.Millisecond)
	}()
	l.waitAccepted(t, 200)
	fq.kill()
	before := l.count.Load()
	t.Logf("stopped the SQS server after %d accepted events", before)
	select {
	case <-time.After(20 * time.Second): // the outage the test is about
	case <-loaded:
		t.Fatal("the load ended during the outage")
	}
	during := l.count.Load() - before
	_, others, _ := l.snapshot()
	require.Empty(t, others, "every answer while the queue was down is 201")
	// Each ingest request waits for the SQS client's retries of the send
	// (about 1.5 s while the server refuses connections), so the posters
	// go slower, but they keep getting 201.
	require.Greater(t, during, int64(20), "ingest kept accepting while the queue was down")
	require.True(t, p.alive())
	fq.start(sqsReady)
	again, err := sqsqueue.CreateQueue(t.Context(), client, name, sqsqueue.CreateQueueParams{})
	require.NoError(t, err)
	require.Equal(t, url, again, "the recreated queue has the same URL")
	t.Logf("SQS server back with the queue recreated; %d events accepted during the 20 s outage", during)
	l.waitAccepted(t, l.count.Load()+100)
	stopLoad()
	<-loaded
	accepted, others, _ := l.snapshot()
	require.Empty(t, others, "every answer is 201")
	requireDelivered(t, recv, accepted, 60*time.Second)
}

// TestFaultStoreDown stops a private MongoDB-compatible server (FerretDB)
// under load: ingest answers 503 with Retry-After and never 201 for an
// event it did not store, the gateway stays up (/healthz 200, /readyz 503
// naming the store), and once the store is back every accepted event is
// stored and delivered.
func TestFaultStoreDown(t *testing.T) {
	t.Parallel()
	db, addr := startPrivateFerretDB(t)

	bin := hooklaneBinary.get(t)
	recv := newCountingReceiver(t)
	env := faultEnv(map[string]string{
		// A short server selection bound makes a request fail fast (503)
		// while the store is away; the default is 10 s.
		"HOOKLANE_MONGO_URI":      "mongodb://" + addr + "/?serverSelectionTimeoutMS=2000",
		"HOOKLANE_MONGO_DATABASE": "hooklane_fault",
	})
	p := startProcess(t, bin, "store-down", env)
	typ, probe := setupFault(t, p, recv)
	l := newFaultLoad(t, typ, p, probe)
	ctx, stopLoad := context.WithCancel(t.Context())
	defer stopLoad()
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		l.run(ctx, 2, 5, 0, 200*time.Millisecond)
	}()
	l.waitAccepted(t, 100)
	db.kill()
	t.Logf("stopped the store after %d accepted events", l.count.Load())
	require.Eventually(t, func() bool {
		_, others, _ := l.snapshot()
		return others[http.StatusServiceUnavailable] >= 3
	}, 30*time.Second, 100*time.Millisecond, "ingest answers 503 while the store is down")
	var ready []byte
	require.Eventually(t, func() bool {
		var status int
		status, _, ready = p.request(t.Context(), http.MethodGet, "/readyz", "", "")
		return status == http.StatusServiceUnavailable
	}, 30*time.Second, 200*time.Millisecond)
	var checks struct {
		Checks map[string]string `json:"checks"`
	}
	require.NoError(t, json.Unmarshal(ready, &checks), "%s", ready)
	require.Contains(t, checks.Checks["store"], "unavailable", "%s", ready)
	status, _, _ := p.request(t.Context(), http.MethodGet, "/healthz", "", "")
	require.Equal(t, http.StatusOK, status)
	outage := l.count.Load()
	select {
	case <-time.After(5 * time.Second): // keep the store away a little longer under load
	case <-loaded:
		t.Fatal("the load ended during the outage")
	}
	require.True(t, p.alive(), "the gateway survives the store outage")
	db.start(func() bool { return portOpen(t.Context(), addr) })
	require.Eventually(t, func() bool {
		status, _, _ := p.request(t.Context(), http.MethodGet, "/readyz", "", "")
		return status == http.StatusOK
	}, 30*time.Second, 200*time.Millisecond, "ready again once the store is back")
	t.Logf("store back; %d events accepted before it went", outage)
	l.waitAccepted(t, l.count.Load()+50)
	stopLoad()
	<-loaded
	accepted, others, noRetryAfter := l.snapshot()
	t.Logf("answers other than 201/200: %v", others)
	for status := range others {
		require.Equal(t, http.StatusServiceUnavailable, status, "the only refusal is 503")
	}
	require.Zero(t, noRetryAfter, "every 503 carries Retry-After")
	for ceID, id := range accepted {
		if id == "" {
			continue // the probe
		}
		status, _, body := p.request(t.Context(), http.MethodGet, "/api/events/"+id, "", "")
		require.Equal(t, http.StatusOK, status, "event %s (%s) answered 201 but not stored: %s", id, ceID, body)
		require.Contains(t, string(body), ceID)
	}
	requireDelivered(t, recv, accepted, 60*time.Second)
}

// TestFaultReceiverDown takes the receiver down (503) for 30 s under load:
// the jobs retry with their subscription's policy (back-off from 1 s up to
// 3 s, 30 attempts) and all complete once it is back, within that policy.
func TestFaultReceiverDown(t *testing.T) {
	t.Parallel()
	bin := hooklaneBinary.get(t)
	recv := newCountingReceiver(t)
	// Retries through the outage, the circuit off (TestFaultReceiverDownCircuit
	// is the same outage with it on).
	p := startProcess(t, bin, "receiver-down", faultEnv(map[string]string{"HOOKLANE_DATA_DIR": t.TempDir(), "HOOKLANE_CIRCUIT_FAILURES": "0"}))
	typ, probe := setupFault(t, p, recv)
	recv.down.Store(true)
	const total = 300
	l := newFaultLoad(t, typ, p, probe)
	l.run(t.Context(), 4, 10, total, 0)
	accepted, others, _ := l.snapshot()
	require.Len(t, accepted, total+1)
	require.Empty(t, others)
	select {
	case <-time.After(30 * time.Second): // the outage the test is about
	case <-t.Context().Done():
	}
	recv.down.Store(false)
	recv.mu.Lock()
	refusals, most := 0, 0
	for _, n := range recv.refused {
		refusals += n
		most = max(most, n)
	}
	recv.mu.Unlock()
	t.Logf("receiver back after 30 s: %d refused attempts, at most %d for one event", refusals, most)
	require.GreaterOrEqual(t, most, 8, "jobs kept retrying through the outage")
	requireDelivered(t, recv, accepted, 60*time.Second)
	recv.mu.Lock()
	defer recv.mu.Unlock()
	for id := range accepted {
		require.Less(t, recv.refused[id], 30, "event %s took more attempts than its policy allows", id)
	}
}
