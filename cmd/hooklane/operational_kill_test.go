package main

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOperationalEventSurvivesKill opens a subscription's circuit (its
// receiver answers 503), SIGKILLs the gateway the moment the opening shows
// on the status stream — before an in-memory buffer could have ingested
// its operational event —, starts it again on the same store, and requires
// the hooklane.subscription.circuit.opened event to be stored exactly once,
// with the status event's id (issue 32: operational events are written
// with the circuit's own write, in the operational outbox, and relayed).
func TestOperationalEventSurvivesKill(t *testing.T) {
	t.Parallel()
	for _, st := range []string{"embedded", "mongo-sqs"} {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			bin := hooklaneBinary.get(t)
			env := faultEnv(map[string]string{
				"HOOKLANE_CIRCUIT_FAILURES": "3",
				"HOOKLANE_CIRCUIT_COOLDOWN": "1h", // no probe while the test runs: one opening
				"HOOKLANE_LOG_LEVEL":        "info",
			})
			if st == "embedded" {
				env["HOOKLANE_DATA_DIR"] = t.TempDir()
			} else {
				mongoURI, sqsEndpoint := stackEnv()
				maps.Copy(env, sqsEnv(sqsEndpoint, newDefaultFIFOQueue(t, sqsClient(sqsEndpoint))))
				env["HOOKLANE_MONGO_URI"] = mongoURI
				env["HOOKLANE_MONGO_DATABASE"] = "hooklane_opkill_" + faultSuffix()
			}
			recv := newCountingReceiver(t)
			recv.down.Store(true)
			gw := startProcess(t, bin, "opkill-"+st, env)
			ctx := t.Context()

			// The stream first, so that the opening cannot pass unseen.
			openedID := make(chan string, 1)
			streamCtx, stopStream := context.WithCancel(ctx)
			defer stopStream()
			req, err := http.NewRequestWithContext(streamCtx, http.MethodGet, gw.base+"/api/stream?types=subscription.circuit.opened", nil)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			go func() {
				defer resp.Body.Close()
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					data, ok := strings.CutPrefix(sc.Text(), "data: ")
					if !ok {
						continue
					}
					var ev struct {
						ID   string `json:"id"`
						Type string `json:"type"`
					}
					if json.Unmarshal([]byte(data), &ev) == nil && ev.Type == "subscription.circuit.opened" {
						openedID <- ev.ID
						return
					}
				}
			}()

			typ, _ := setupFault(t, gw, recv)
			// Enough failing jobs to reach the threshold at once.
			for i := range 5 {
				status, body := gw.post(ctx, "/api/events", "application/cloudevents+json",
					`{"specversion":"1.0","id":"opk-`+faultSuffix()+`","source":"/opk","type":"`+typ+`","data":{"n":`+strconv.Itoa(i)+`}}`)
				require.Contains(t, []int{http.StatusCreated, http.StatusOK}, status, "%s", body)
			}
			var id string
			select {
			case id = <-openedID:
			case <-time.After(90 * time.Second):
				require.FailNow(t, "the circuit never opened")
			}
			gw.kill()
			t.Logf("%s: killed right after the circuit opened (status event %s)", st, id)

			restarted := startProcess(t, bin, "opkill-"+st+"-restarted", env)
			list := func() []string {
				_, _, b := restarted.request(ctx, http.MethodGet, "/api/events?type=hooklane.subscription.circuit.opened&limit=100", "", "")
				var page struct {
					Items []struct {
						Event struct {
							ID string `json:"id"`
						} `json:"event"`
					} `json:"items"`
				}
				_ = json.Unmarshal(b, &page)
				out := make([]string, len(page.Items))
				for i, it := range page.Items {
					out[i] = it.Event.ID // the CloudEvent id
				}
				return out
			}
			require.Eventually(t, func() bool { return len(list()) > 0 }, 60*time.Second, 100*time.Millisecond,
				"the operational event of the opening was lost with the process")
			// Past several relay periods, it is still there once.
			require.Never(t, func() bool { return len(list()) != 1 }, 5*time.Second, 250*time.Millisecond)
			require.Equal(t, []string{id}, list(), "exactly once, with the status event's id")
		})
	}
}

// TestDiscardedEventSurvivesKill is TestOperationalEventSurvivesKill for a
// discarded job: a subscription whose jobs wait 2 s (delaySeconds) but may
// live 1 s (maxAgeSeconds), so each is moved to ERROR when it comes due;
// the gateway is SIGKILLed the moment the stream shows dispatch.discarded
// and started again on the same store, and the
// hooklane.dispatch.discarded event of that job must be stored exactly
// once, with the status event's id, its data rendered by the restarted
// process from the outbox and the stored job (issue 32: the discard's
// event is written with the job's own update). No discard's event may be
// stored twice.
func TestDiscardedEventSurvivesKill(t *testing.T) {
	t.Parallel()
	for _, st := range []string{"embedded", "mongo-sqs"} {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			bin := hooklaneBinary.get(t)
			env := faultEnv(map[string]string{"HOOKLANE_LOG_LEVEL": "info"})
			if st == "embedded" {
				env["HOOKLANE_DATA_DIR"] = t.TempDir()
			} else {
				mongoURI, sqsEndpoint := stackEnv()
				maps.Copy(env, sqsEnv(sqsEndpoint, newDefaultFIFOQueue(t, sqsClient(sqsEndpoint))))
				env["HOOKLANE_MONGO_URI"] = mongoURI
				env["HOOKLANE_MONGO_DATABASE"] = "hooklane_dkill_" + faultSuffix()
			}
			recv := newCountingReceiver(t)
			gw := startProcess(t, bin, "dkill-"+st, env)
			ctx := t.Context()

			type discard struct{ id, job string }
			discarded := make(chan discard, 1)
			streamCtx, stopStream := context.WithCancel(ctx)
			defer stopStream()
			req, err := http.NewRequestWithContext(streamCtx, http.MethodGet, gw.base+"/api/stream?types=dispatch.discarded", nil)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			go func() {
				defer resp.Body.Close()
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					data, ok := strings.CutPrefix(sc.Text(), "data: ")
					if !ok {
						continue
					}
					var ev struct {
						ID      string `json:"id"`
						Type    string `json:"type"`
						Subject string `json:"subject"`
					}
					if json.Unmarshal([]byte(data), &ev) == nil && ev.Type == "dispatch.discarded" {
						discarded <- discard{id: ev.ID, job: ev.Subject}
						return
					}
				}
			}()

			// The probe of setupFaultTo is the first job to expire.
			typ, _ := setupFaultTo(t, gw, `"target":"`+recv.srv.URL+`","maxAgeSeconds":1,"delaySeconds":2`)
			for i := range 3 {
				status, body := gw.post(ctx, "/api/events", "application/cloudevents+json",
					`{"specversion":"1.0","id":"dk-`+faultSuffix()+`","source":"/dk","type":"`+typ+`","data":{"n":`+strconv.Itoa(i)+`}}`)
				require.Contains(t, []int{http.StatusCreated, http.StatusOK}, status, "%s", body)
			}
			var d discard
			select {
			case d = <-discarded:
			case <-time.After(90 * time.Second):
				require.FailNow(t, "no job was discarded")
			}
			gw.kill()
			t.Logf("%s: killed right after job %s was discarded (status event %s)", st, d.job, d.id)

			restarted := startProcess(t, bin, "dkill-"+st+"-restarted", env)
			type item struct {
				Event struct {
					ID   string         `json:"id"`
					Data map[string]any `json:"data"`
				} `json:"event"`
			}
			list := func() []item {
				_, _, b := restarted.request(ctx, http.MethodGet, "/api/events?type=hooklane.dispatch.discarded&limit=100", "", "")
				var page struct {
					Items []item `json:"items"`
				}
				_ = json.Unmarshal(b, &page)
				return page.Items
			}
			find := func() []item {
				var out []item
				for _, it := range list() {
					if it.Event.ID == d.id {
						out = append(out, it)
					}
				}
				return out
			}
			require.Eventually(t, func() bool { return len(find()) > 0 }, 60*time.Second, 100*time.Millisecond,
				"the operational event of the discard was lost with the process")
			// Past several relay periods, it is still there once, and no
			// other discard's event twice.
			require.Never(t, func() bool {
				seen := map[string]bool{}
				for _, it := range list() {
					if seen[it.Event.ID] {
						return true
					}
					seen[it.Event.ID] = true
				}
				return len(find()) != 1
			}, 5*time.Second, 250*time.Millisecond)
			got := find()
			require.Len(t, got, 1, "exactly once, with the status event's id")
			data := got[0].Event.Data
			require.Equal(t, d.job, data["jobId"])
			require.Equal(t, typ, data["eventType"])
			require.Equal(t, "fault", data["subscription"])
			require.NotEmpty(t, data["subscriptionId"], "read from the stored job by the restarted process")
			require.Equal(t, "max age passed before delivery", data["error"])
			require.Zero(t, recv.total.Load(), "no job was attempted: each expired before its first attempt")
		})
	}
}
