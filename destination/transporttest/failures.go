package transporttest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination"
)

// failBound is how long a publish that must fail may take.
const failBound = 5 * time.Second

// recoverDeadline is how long the retries of a publish may take to get
// through once the broker is back.
const recoverDeadline = 60 * time.Second

// testBrokerDown: with the broker down a publish is a failed, retryable
// attempt; once it is back, the retry (same clients, as the router's
// next attempt) goes through and the message arrives.
func testBrokerDown(t *testing.T, h *Harness) {
	b := setup(t, h, destination.ClientsConfig{ConnectTimeout: 3 * time.Second})
	o := h.NewOutage(t)
	d := b.decode(t, o.Raw)
	b.publish(t, d, message(event("ev-before", "up"), "job-before", "", false))
	require.Equal(t, "job-before", jobID(t, h, o.Receive(t)))

	o.Stop(t)
	pe := b.publishFails(t, d, message(event("ev-down", "down"), "job-down", "", false), failBound, false)
	require.NotEmpty(t, pe.Text, "the attempt's error says what went wrong")

	o.Start(t)
	m := message(event("ev-after", "back"), "job-after", "", false)
	deadline := time.Now().Add(recoverDeadline)
	var last error
	for attempt := 1; ; attempt++ {
		ctx, cancel := contextWithTimeout(t, failBound)
		_, last = b.tr.Deliver(ctx, d, m)
		cancel()
		if last == nil {
			break
		}
		require.False(t, destination.IsPermanent(last), "attempt %d: %v", attempt, last)
		require.True(t, time.Now().Before(deadline), "no publish got through %s after the broker came back: %v", recoverDeadline, last)
		<-time.After(200 * time.Millisecond) // the router's backoff between attempts
	}
	// A message of an attempt that failed may still have arrived (at
	// least once); the one that succeeded must.
	for {
		if jobID(t, h, o.Receive(t)) == "job-after" {
			return
		}
	}
}

// testMissing: a topic, queue, exchange or stream that does not exist is
// a failed, retryable attempt (§15); a webhook target that answers 404 a
// permanent one (§6, Features.RefusalPermanent).
func testMissing(t *testing.T, h *Harness) {
	b := setup(t, h, destination.ClientsConfig{})
	d := b.decode(t, h.NewMissing(t))
	pe := b.publishFails(t, d, message(event("ev-missing", "x"), "job-missing", "", false), 3*failBound, h.Features.RefusalPermanent)
	require.NotEmpty(t, pe.Text)
}

// testCredentialsRefused: credentials the broker refuses are a failed,
// retryable attempt (permanent for a webhook's 401 or 403, §6), whose
// error and logs never show the secret.
func testCredentialsRefused(t *testing.T, h *Harness) {
	b := setup(t, h, destination.ClientsConfig{ConnectTimeout: 3 * time.Second})
	raw, secret := h.NewRefused(t)
	d := b.decode(t, raw)
	pe := b.publishFails(t, d, message(event("ev-refused", "x"), "job-refused", "", false), 3*failBound, h.Features.RefusalPermanent)
	requireNoSecret(t, secret, pe.Error(), pe.Text, b.logText())
}

// testTimeout: a broker that accepts the connection and never answers
// fails the attempt within the publish timeout, retryable.
func testTimeout(t *testing.T, h *Harness) {
	const bound = 2 * time.Second
	b := setup(t, h, destination.ClientsConfig{ConnectTimeout: bound, PublishTimeout: bound})
	const secret = "s3cr3t-timeout-Pa55"
	d := b.decode(t, h.AtAddress(t, BlackHole(t), secret))
	start := time.Now()
	pe := b.publishFails(t, d, message(event("ev-timeout", "x"), "job-timeout", "", false), time.Minute, false)
	require.Less(t, time.Since(start), bound+3*time.Second, "the publish timeout bounds the attempt")
	require.True(t, pe.Timeout, "the attempt ran out of time: %v", pe)
	requireNoSecret(t, secret, pe.Error(), b.logText())
}

// testSecretsMasked: answers show every secret as "***", a PATCH that
// sends "***" back keeps it, one that also moves the broker is refused at
// the secret's pointer, and a refused connection's error never shows it.
func testSecretsMasked(t *testing.T, h *Harness) {
	const secret = "s3cr3t-Pa55-w0rd"
	b := setup(t, h, destination.ClientsConfig{ConnectTimeout: 2 * time.Second, PublishTimeout: 2 * time.Second})
	closed := closedAddr(t)
	raw := h.AtAddress(t, closed, secret)
	if !h.Features.MaskedElsewhere {
		testMasking(t, b, raw, closed, secret)
	}
	pe := b.publishFails(t, b.decode(t, raw), message(event("ev-closed", "x"), "job-closed", "", false), failBound, false)
	requireNoSecret(t, secret, pe.Error(), b.logText())
}

// testMasking: a destination type's answers show every secret as "***",
// a PATCH that sends "***" back keeps it, one that also moves the broker
// is refused at the secret's pointer.
func testMasking(t *testing.T, b *bundle, raw json.RawMessage, closed, secret string) {
	t.Helper()
	dest := b.decode(t, raw)
	d, ok := dest.(*destination.Destination)
	require.True(t, ok, "a destination type decodes a *destination.Destination, not %T", dest)
	masked := string(d.Masked())
	stored, err := d.MarshalJSON()
	require.NoError(t, err)
	require.Contains(t, string(stored), secret, "AtAddress must give the destination a secret")
	require.NotContains(t, masked, secret)
	require.Contains(t, masked, destination.Mask)
	require.NotContains(t, d.TargetURL(), secret)

	kept, err := b.tr.Decode(&destination.DecodeParams{Raw: json.RawMessage(masked), Stored: d})
	require.NoError(t, err, "a PATCH that sends the masked form back keeps the secrets")
	keptDest, ok := kept.(*destination.Destination)
	require.True(t, ok)
	keptJSON, err := keptDest.MarshalJSON()
	require.NoError(t, err)
	require.JSONEq(t, string(stored), string(keptJSON))

	moved := strings.ReplaceAll(masked, closed, BlackHole(t))
	_, err = b.tr.Decode(&destination.DecodeParams{Raw: json.RawMessage(moved), Stored: d})
	var ve *destination.ValidationError
	require.ErrorAs(t, err, &ve, "a secret is never sent to a new address without being given again")
	for _, p := range ve.Problems {
		require.True(t, strings.HasPrefix(p.Pointer, "/destination/"), p.Pointer)
	}

	_, err = b.tr.Decode(&destination.DecodeParams{Raw: json.RawMessage(masked)})
	require.ErrorAs(t, err, &ve, `"***" on create keeps nothing`)
}

// jobID reads the job id of a received message.
func jobID(t *testing.T, h *Harness, r *Received) string {
	t.Helper()
	id, ok := where(t, r, h.Features.JobID)
	require.True(t, ok)
	return id
}
