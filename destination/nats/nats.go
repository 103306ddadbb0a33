// Package nats is the "nats" destination type (API.md §15): a subject of
// a NATS server, published to with nats.go — through JetStream by default
// (success is the stream's PubAck), or core NATS with "jetstream": false
// (success is the publish flushed to the server).
//
//	{"type": "nats", "url": "nats://nats-1:4222", "subject": "orders.created",
//	 "username": "hooklane", "password": "…"}
//
// A message follows the NATS protocol binding of CloudEvents: structured
// by default (header content-type: application/cloudevents+json), binary
// with dataOnly (ce-<attr> headers). Header Nats-Msg-Id is the job id
// (JetStream deduplicates on it), hooklane-attempt the attempt number.
// There is no message group: NATS keeps order per subject.
//
// A client is one connection. It does not reconnect: a connection that
// drops is closed, and the next attempt opens a new one (an attempt on a
// dead connection fails at once rather than waiting in a reconnect
// buffer).
package nats

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hooklane/hooklane/destination"
)

// Name is the type's "type" value.
const Name = "nats"

// Type is the nats destination type.
type Type struct{}

// Name returns "nats".
func (Type) Name() string { return Name }

// Secrets are the token, the password, and a password inside url.
func (Type) Secrets() []destination.Secret {
	return []destination.Secret{{Pointer: "/token"}, {Pointer: "/password"}, {Pointer: "/url", InURL: true}}
}

// Binding is the NATS protocol binding of CloudEvents.
func (Type) Binding() destination.Binding {
	return destination.Binding{
		Binary:            true,
		AttrPrefix:        "ce-",
		ContentTypeHeader: "content-type",
		JobIDHeader:       nats.MsgIdHdr,
	}
}

// Config is a decoded nats destination.
type Config struct {
	// URL is the server, nats:// or tls://.
	URL string
	// Subject is the subject messages are published to.
	Subject string
	// JetStream asks for the stream's acknowledgement (default true).
	JetStream bool
	// Token, or Username and Password, authenticate; all optional.
	Token, Username, Password string

	u *url.URL
}

// Decode validates a nats destination.
func (Type) Decode(raw []byte) (destination.Config, error) {
	f := destination.NewFields(raw, Name)
	c := &Config{
		URL:       f.RequiredString("url"),
		Subject:   f.RequiredString("subject"),
		JetStream: f.Bool("jetstream", true),
		Token:     f.String("token"),
		Username:  f.String("username"),
		Password:  f.String("password"),
	}
	c.u = f.URL("url", c.URL, "nats", "tls")
	if c.Subject != "" && !validSubject(c.Subject) {
		f.Problemf("subject", "must be a NATS subject to publish to: dot-separated tokens, no spaces, no wildcards")
	}
	switch {
	case c.Token != "" && (c.Username != "" || c.Password != ""):
		f.Problemf("token", "a token, or a username and password, not both")
	case c.Username != "" && c.Password == "":
		f.Problemf("password", "is required with username")
	case c.Password != "" && c.Username == "":
		f.Problemf("username", "is required with password")
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// validSubject reports whether s is a subject one can publish to.
func validSubject(s string) bool {
	if strings.ContainsAny(s, " \t\r\n*>") {
		return false
	}
	for tok := range strings.SplitSeq(s, ".") {
		if tok == "" {
			return false
		}
	}
	return true
}

// MarshalJSON writes the stored form, secrets in clear.
func (c *Config) MarshalJSON() ([]byte, error) {
	out, err := json.Marshal(struct {
		URL       string `json:"url"`
		Subject   string `json:"subject"`
		JetStream bool   `json:"jetstream"`
		Token     string `json:"token,omitempty"`
		Username  string `json:"username,omitempty"`
		Password  string `json:"password,omitempty"`
	}{c.URL, c.Subject, c.JetStream, c.Token, c.Username, c.Password})
	if err != nil {
		return nil, fmt.Errorf("marshal nats destination: %w", err)
	}
	return out, nil
}

// Addresses is the server of url.
func (c *Config) Addresses() []destination.Address {
	return []destination.Address{destination.URLAddress("/url", c.u)}
}

// Audience is the server's host and port.
func (c *Config) Audience() []string { return []string{c.u.Host} }

// TargetURL is nats://<host:port>/<subject>.
func (c *Config) TargetURL() string { return "nats://" + c.u.Host + "/" + c.Subject }

// Open connects to the server.
func (Type) Open(ctx context.Context, cfg destination.Config, o *destination.OpenOptions) (destination.Publisher, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("nats: open a %T", cfg)
	}
	opts := []nats.Option{
		nats.Name("hooklane"),
		nats.Timeout(o.ConnectTimeout),
		nats.NoReconnect(),
		nats.SetCustomDialer(dialer{ctx: context.WithoutCancel(ctx), dial: o.Dial, timeout: o.ConnectTimeout}),
		// Keep a dropped connection from being noticed only at the next
		// publish: ping every 20 s, closed after 2 unanswered.
		nats.PingInterval(20 * time.Second),
		nats.MaxPingsOutstanding(2),
	}
	switch {
	case c.Token != "":
		opts = append(opts, nats.Token(c.Token))
	case c.Username != "":
		opts = append(opts, nats.UserInfo(c.Username, c.Password))
	}
	if strings.EqualFold(c.u.Scheme, "tls") {
		opts = append(opts, nats.Secure(&tls.Config{MinVersion: tls.VersionTLS12}))
	}
	nc, err := nats.Connect(c.URL, opts...)
	if errors.Is(err, nats.ErrTimeout) {
		return nil, fmt.Errorf("connect to %s: %w (%w)", c.u.Host, err, context.DeadlineExceeded)
	}
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", c.u.Host, err)
	}
	p := &publisher{nc: nc, subject: c.Subject}
	if c.JetStream {
		if p.js, err = jetstream.New(nc); err != nil {
			nc.Close()
			return nil, fmt.Errorf("jetstream: %w", err)
		}
	}
	return p, nil
}

// dialer adapts a DialFunc to nats.go's CustomDialer.
type dialer struct {
	ctx     context.Context //nolint:containedctx // nats.go's CustomDialer has no context: this is the open's, without its cancel
	dial    destination.DialFunc
	timeout time.Duration
}

// Dial dials with the gateway's dialer, bounded by the connect timeout.
func (d dialer) Dial(network, address string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(d.ctx, d.timeout)
	defer cancel()
	return d.dial(ctx, network, address)
}

// publisher publishes to one subject on one connection.
type publisher struct {
	nc      *nats.Conn
	js      jetstream.JetStream // nil: core NATS
	subject string
}

// Publish publishes m and waits for the PubAck, or for the flush.
func (p *publisher) Publish(ctx context.Context, m *destination.Message) (string, error) {
	msg := &nats.Msg{Subject: p.subject, Data: m.Body, Header: make(nats.Header, len(m.Headers))}
	for k, v := range m.Headers {
		msg.Header[k] = []string{v}
	}
	if p.js != nil {
		ack, err := p.js.PublishMsg(ctx, msg)
		if err != nil {
			return "", fmt.Errorf("jetstream publish to %s: %w", p.subject, err)
		}
		if ack.Duplicate {
			return fmt.Sprintf("stream %s seq %d (duplicate)", ack.Stream, ack.Sequence), nil
		}
		return fmt.Sprintf("stream %s seq %d", ack.Stream, ack.Sequence), nil
	}
	if err := p.nc.PublishMsg(msg); err != nil {
		return "", fmt.Errorf("publish to %s: %w", p.subject, err)
	}
	if err := p.nc.FlushWithContext(ctx); err != nil {
		return "", fmt.Errorf("flush publish to %s: %w", p.subject, err)
	}
	return "flushed", nil
}

// Alive is false once the connection closed.
func (p *publisher) Alive() bool { return !p.nc.IsClosed() }

// Close closes the connection.
func (p *publisher) Close() error {
	p.nc.Close()
	return nil
}
