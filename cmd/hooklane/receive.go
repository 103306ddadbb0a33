package main

import (
	"context"
	"crypto/hmac"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hooklane/hooklane/router/webhook"
	"github.com/hooklane/hooklane/subscription"
)

// receive runs a development webhook receiver: it prints every delivery,
// checks its signature when given the secret, and answers with a fixed
// status. It is the other end of the README walkthrough.
func receive(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hooklane receive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:9000", "address to listen on")
	secret := fs.String("secret", "", "the subscription's whsec_ secret, to verify signatures")
	status := fs.Int("status", http.StatusOK, "status code to answer with")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("parse flags: %w", err)
	}
	var key []byte
	if *secret != "" {
		k, err := subscription.SecretKey(*secret)
		if err != nil {
			return fmt.Errorf("--secret: %w", err)
		}
		key = k
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	fmt.Fprintf(stdout, "receiving webhooks on http://%s/ (answering %d)\n", ln.Addr(), *status)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 10<<20))
		verdict := "not checked (no --secret)"
		if key != nil {
			verdict = "INVALID"
			if verifySignature(key, r.Header, body) {
				verdict = "valid"
			}
		}
		fmt.Fprintf(stdout, "%s %s  webhook-id=%s attempt=%s subscription=%s signature=%s\n%s\n\n",
			r.Method, r.URL.Path, r.Header.Get("webhook-id"), r.Header.Get("hooklane-attempt"),
			r.Header.Get("hooklane-subscription"), verdict, body)
		w.WriteHeader(*status)
	})}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// verifySignature checks a Standard Webhooks signature header against key.
func verifySignature(key []byte, h http.Header, body []byte) bool {
	ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil {
		return false
	}
	want := webhook.Sign([][]byte{key}, h.Get("webhook-id"), time.Unix(ts, 0), body)
	for sig := range strings.FieldsSeq(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}
