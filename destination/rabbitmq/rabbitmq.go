// Package rabbitmq is the "rabbitmq" destination type (API.md §15): an
// exchange of a RabbitMQ (AMQP 0-9-1) broker, published to with
// amqp091-go on a channel in confirm mode. Success is the publisher
// confirm (ack); a nack, or a message returned as unroutable (it is
// published mandatory), is a failed attempt.
//
//	{"type": "rabbitmq", "url": "amqps://hooklane:…@rabbit-1:5671/prod",
//	 "exchange": "orders", "routingKey": "order.created"}
//
// exchange "" is the default exchange (routingKey then names the queue);
// routingKey defaults to the event's type. A message follows the AMQP
// protocol binding of CloudEvents: structured by default (content_type
// application/cloudevents+json), binary with dataOnly (application
// properties cloudEvents:<attr>, every value a string). message_id is
// the job id, header hooklane-attempt the attempt number. There is no
// message group: AMQP keeps order per queue.
//
// A client is one connection with one channel; publishes on it take
// turns (a confirm is matched to its publish by order). A connection
// that closes is replaced at the next attempt.
package rabbitmq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/hooklane/hooklane/destination"
)

// Name is the type's "type" value.
const Name = "rabbitmq"

// Type is the rabbitmq destination type.
type Type struct{}

// Name returns "rabbitmq".
func (Type) Name() string { return Name }

// Secrets is the password inside url.
func (Type) Secrets() []destination.Secret {
	return []destination.Secret{{Pointer: "/url", InURL: true}}
}

// Binding is the AMQP protocol binding of CloudEvents.
func (Type) Binding() destination.Binding {
	return destination.Binding{Binary: true, AttrPrefix: "cloudEvents:"}
}

// Config is a decoded rabbitmq destination.
type Config struct {
	// URL is the broker, amqp:// or amqps://, with user and password.
	URL string
	// Exchange is the exchange; "" is the default exchange.
	Exchange string
	// RoutingKey is the routing key; "" routes by the event's type.
	RoutingKey string

	u *url.URL
}

// Decode validates a rabbitmq destination.
func (Type) Decode(raw []byte) (destination.Config, error) {
	f := destination.NewFields(raw, Name)
	c := &Config{URL: f.RequiredString("url"), RoutingKey: f.String("routingKey")}
	if _, ok := f.Raw("exchange"); !ok {
		f.Problemf("exchange", `is required ("" for the default exchange)`)
	} else {
		c.Exchange = f.String("exchange")
	}
	c.u = f.URL("url", c.URL, "amqp", "amqps")
	if c.u != nil {
		if _, err := amqp.ParseURI(c.URL); err != nil {
			f.Problemf("url", "must be an AMQP URI with a host and a valid port")
		}
	}
	if len(c.Exchange) > 255 || len(c.RoutingKey) > 255 {
		f.Problemf("exchange", "exchange and routingKey hold at most 255 bytes")
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// MarshalJSON writes the stored form, secrets in clear.
func (c *Config) MarshalJSON() ([]byte, error) {
	out, err := json.Marshal(struct {
		URL        string `json:"url"`
		Exchange   string `json:"exchange"`
		RoutingKey string `json:"routingKey,omitempty"`
	}{c.URL, c.Exchange, c.RoutingKey})
	if err != nil {
		return nil, fmt.Errorf("marshal rabbitmq destination: %w", err)
	}
	return out, nil
}

// Addresses is the broker of url.
func (c *Config) Addresses() []destination.Address {
	return []destination.Address{destination.URLAddress("/url", c.u)}
}

// Audience is the broker's host and port.
func (c *Config) Audience() []string { return []string{c.hostPort()} }

// TargetURL is amqp://<host:port>/<exchange>.
func (c *Config) TargetURL() string { return "amqp://" + c.hostPort() + "/" + c.Exchange }

// TargetScheme is the scheme of TargetURL, which is not the type's name:
// the router routes "amqp://…" targets to the destinations' transport.
func (Type) TargetScheme() string { return "amqp" }

func (c *Config) hostPort() string {
	if c.u.Port() != "" {
		return c.u.Host
	}
	port := "5672"
	if c.u.Scheme == "amqps" {
		port = "5671"
	}
	return net.JoinHostPort(c.u.Hostname(), port)
}

// Open connects and opens a channel in confirm mode.
func (Type) Open(ctx context.Context, cfg destination.Config, o *destination.OpenOptions) (destination.Publisher, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("rabbitmq: open a %T", cfg)
	}
	deadline, _ := ctx.Deadline()
	conn, err := amqp.DialConfig(c.URL, amqp.Config{
		Heartbeat: 10 * time.Second,
		Locale:    "en_US",
		Dial: func(network, addr string) (net.Conn, error) {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.ConnectTimeout)
			defer cancel()
			nc, err := o.Dial(dctx, network, addr)
			if err != nil {
				return nil, err
			}
			// Bounds the AMQP handshake; amqp091 clears it after.
			if !deadline.IsZero() {
				_ = nc.SetDeadline(deadline)
			}
			return nc, nil
		},
	})
	if err != nil {
		if handshakeTimedOut(err) {
			// amqp091 reports the handshake's deadline as an *amqp.Error
			// whose reason is the read's text: say it ran out of time.
			return nil, fmt.Errorf("connect to %s: %w: %w", c.hostPort(), err, os.ErrDeadlineExceeded)
		}
		return nil, fmt.Errorf("connect to %s: %w", c.hostPort(), err)
	}
	ch, err := conn.Channel()
	if err == nil {
		err = ch.Confirm(false)
	}
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("open confirm channel: %w", err)
	}
	p := &publisher{
		conn: conn, ch: ch, exchange: c.Exchange, routingKey: c.RoutingKey,
		returns: ch.NotifyReturn(make(chan amqp.Return, 1)),
	}
	return p, nil
}

// publisher publishes on one channel; publishes take turns (mu) so each
// confirm and return belongs to the publish waiting for it.
type publisher struct {
	conn       *amqp.Connection
	ch         *amqp.Channel
	exchange   string
	routingKey string
	returns    chan amqp.Return

	mu sync.Mutex
}

// Publish publishes m mandatory and waits for its confirm.
func (p *publisher) Publish(ctx context.Context, m *destination.Message) (string, error) {
	key := p.routingKey
	if key == "" {
		key = eventType(m)
	}
	headers := amqp.Table{}
	for k, v := range m.Headers {
		headers[k] = v
	}
	msg := amqp.Publishing{
		Headers:      headers,
		ContentType:  m.ContentType,
		DeliveryMode: amqp.Persistent,
		MessageId:    m.JobID,
		Timestamp:    time.Now(),
		Body:         m.Body,
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	conf, err := p.ch.PublishWithDeferredConfirmWithContext(ctx, p.exchange, key, true, false, msg)
	if err != nil {
		return "", fmt.Errorf("publish to exchange %q: %w", p.exchange, err)
	}
	acked, err := conf.WaitContext(ctx)
	if err != nil {
		p.discard()
		return "", fmt.Errorf("wait for the confirm: %w", err)
	}
	// A returned message is sent back before its confirm.
	select {
	case ret := <-p.returns:
		return "", fmt.Errorf("returned unroutable by exchange %q with routing key %q: %d %s", ret.Exchange, ret.RoutingKey, ret.ReplyCode, ret.ReplyText)
	default:
	}
	if !acked {
		return "", fmt.Errorf("nacked by the broker (exchange %q)", p.exchange)
	}
	return "ack delivery tag " + strconv.FormatUint(conf.DeliveryTag, 10), nil
}

// discard closes the connection after a confirm the attempt gave up on:
// a late confirm would otherwise be taken for the next publish's.
func (p *publisher) discard() { _ = p.conn.Close() }

// eventType is the CloudEvents type of a message: the binary-mode
// attribute, or the structured body's "type".
func eventType(m *destination.Message) string {
	if t, ok := m.Headers["cloudEvents:type"]; ok {
		return t
	}
	var ev struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(m.Body, &ev)
	return ev.Type
}

// Alive is false once the connection or the channel closed (the broker
// went away, or refused a publish: a missing exchange closes the
// channel).
func (p *publisher) Alive() bool { return !p.conn.IsClosed() && !p.ch.IsClosed() }

// Close closes the connection.
func (p *publisher) Close() error {
	if err := p.conn.Close(); err != nil && !errors.Is(err, amqp.ErrClosed) {
		return fmt.Errorf("close rabbitmq connection: %w", err)
	}
	return nil
}

// handshakeTimedOut reports whether a failed dial ran out of time in the
// AMQP handshake (the connection's deadline, ConnectTimeout).
func handshakeTimedOut(err error) bool {
	ae, ok := errors.AsType[*amqp.Error](err)
	return ok && strings.Contains(ae.Reason, "i/o timeout")
}
