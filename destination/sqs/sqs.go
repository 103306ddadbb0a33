// Package sqs is the "sqs" destination type (API.md §15): an Amazon SQS
// queue, sent to with aws-sdk-go-v2; success is SendMessage answered.
//
//	{"type": "sqs", "queueUrl": "https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo",
//	 "region": "eu-west-1", "accessKeyId": "AKIA…", "secretAccessKey": "…"}
//
// Without accessKeyId and secretAccessKey the instance's AWS credential
// chain applies (environment, shared files, instance role). endpoint
// replaces AWS's regional endpoint (an SQS-compatible server).
//
// SQS has no CloudEvents binding of its own with headers for every
// attribute, so a message is structured only (the stored event as the
// body): dataOnly is refused at /dataOnly. String message attributes
// hooklane-job-id and hooklane-attempt carry the delivery metadata, then
// the subscription's headers (at most 8: SQS takes 10 attributes), then
// traceparent and tracestate while there is room. On a FIFO queue (.fifo)
// the job's messageGroup is the MessageGroupId (the job id for a job
// without a group) and the job id the MessageDeduplicationId.
//
// A client is an HTTP client whose idle connections are kept 90 s.
package sqs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hooklane/hooklane/destination"
)

// Name is the type's "type" value.
const Name = "sqs"

// SQS's limits on message attributes.
const (
	// maxAttributes is how many message attributes one message carries.
	maxAttributes = 10
	// MaxHeaders is how many subscription headers fit beside the two
	// metadata attributes.
	MaxHeaders = maxAttributes - 2
)

// Type is the sqs destination type.
type Type struct{}

// Name returns "sqs".
func (Type) Name() string { return Name }

// Secrets is the secret access key.
func (Type) Secrets() []destination.Secret {
	return []destination.Secret{{Pointer: "/secretAccessKey"}}
}

// attributeName is SQS's rule for message attribute names.
var attributeName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,256}$`)

// Binding is structured only, with the metadata as message attributes.
func (Type) Binding() destination.Binding {
	return destination.Binding{
		JobIDHeader: destination.HeaderJobID,
		MaxHeaders:  MaxHeaders,
		HeaderNameFunc: func(name string) error {
			lower := strings.ToLower(name)
			if !attributeName.MatchString(name) || strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon.") ||
				strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
				return errors.New("an sqs destination carries headers as message attributes: letters, digits, _ - . only, not starting with AWS. or Amazon. (case-insensitive)")
			}
			return nil
		},
	}
}

// Config is a decoded sqs destination.
type Config struct {
	// QueueURL is the queue's URL.
	QueueURL string
	// Region is the queue's AWS region.
	Region string
	// Endpoint replaces AWS's regional endpoint; "" keeps it.
	Endpoint string
	// AccessKeyID and SecretAccessKey are static credentials; both or
	// neither.
	AccessKeyID, SecretAccessKey string

	addrs []destination.Address
	fifo  bool
}

// Decode validates an sqs destination.
func (Type) Decode(raw []byte) (destination.Config, error) {
	f := destination.NewFields(raw, Name)
	c := &Config{
		QueueURL:        f.RequiredString("queueUrl"),
		Region:          f.RequiredString("region"),
		Endpoint:        f.String("endpoint"),
		AccessKeyID:     f.String("accessKeyId"),
		SecretAccessKey: f.String("secretAccessKey"),
	}
	if u := f.URL("queueUrl", c.QueueURL, "https", "http"); u != nil {
		if name := path.Base(u.Path); u.Path == "" || name == "/" || name == "." {
			f.Problemf("queueUrl", "must end with the queue name")
		}
		c.addrs = append(c.addrs, destination.URLAddress(f.Pointer("queueUrl"), u))
		c.fifo = strings.HasSuffix(u.Path, ".fifo")
	}
	if u := f.URL("endpoint", c.Endpoint, "https", "http"); u != nil {
		c.addrs = append(c.addrs, destination.URLAddress(f.Pointer("endpoint"), u))
	}
	switch {
	case c.AccessKeyID != "" && c.SecretAccessKey == "":
		f.Problemf("secretAccessKey", "is required with accessKeyId")
	case c.SecretAccessKey != "" && c.AccessKeyID == "":
		f.Problemf("accessKeyId", "is required with secretAccessKey")
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// MarshalJSON writes the stored form, secrets in clear.
func (c *Config) MarshalJSON() ([]byte, error) {
	out, err := json.Marshal(struct {
		QueueURL        string `json:"queueUrl"`
		Region          string `json:"region"`
		Endpoint        string `json:"endpoint,omitempty"`
		AccessKeyID     string `json:"accessKeyId,omitempty"`
		SecretAccessKey string `json:"secretAccessKey,omitempty"`
	}{c.QueueURL, c.Region, c.Endpoint, c.AccessKeyID, c.SecretAccessKey})
	if err != nil {
		return nil, fmt.Errorf("marshal sqs destination: %w", err)
	}
	return out, nil
}

// Addresses are the hosts of queueUrl and endpoint.
func (c *Config) Addresses() []destination.Address { return c.addrs }

// Audience is the queue URL and the endpoint: a changed queue needs the
// secret again (§15).
func (c *Config) Audience() []string { return []string{c.QueueURL, c.Endpoint} }

// TargetURL is sqs://<queue name>.
func (c *Config) TargetURL() string {
	u, err := url.Parse(c.QueueURL)
	if err != nil {
		return "sqs://"
	}
	return "sqs://" + path.Base(u.Path)
}

// Open builds the SQS client; it connects on the first send.
func (Type) Open(ctx context.Context, cfg destination.Config, o *destination.OpenOptions) (destination.Publisher, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("sqs: open a %T", cfg)
	}
	built := &atomic.Pointer[http.Transport]{}
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		// The configuration loader clones the client (to add the CA
		// bundle); the transport built last is the one in use.
		built.Store(tr)
		tr.Proxy = nil
		tr.DialContext = destination.BoundedDial(o.Dial, o.ConnectTimeout)
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 16, 16
		tr.IdleConnTimeout = 90 * time.Second
		tr.TLSHandshakeTimeout = o.ConnectTimeout
	})
	loadOpts := []func(*config.LoadOptions) error{config.WithRegion(c.Region), config.WithHTTPClient(httpClient)}
	if c.AccessKeyID != "" {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, "")))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	client := awssqs.NewFromConfig(awsCfg, func(so *awssqs.Options) {
		if c.Endpoint != "" {
			so.BaseEndpoint = aws.String(c.Endpoint)
		}
	})
	return &publisher{client: client, transport: built, queueURL: c.QueueURL, fifo: c.fifo}, nil
}

// publisher sends to one queue.
type publisher struct {
	client    *awssqs.Client
	transport *atomic.Pointer[http.Transport]
	queueURL  string
	fifo      bool
}

// Publish sends m with SendMessage.
func (p *publisher) Publish(ctx context.Context, m *destination.Message) (string, error) {
	in := &awssqs.SendMessageInput{
		QueueUrl:          aws.String(p.queueURL),
		MessageBody:       aws.String(string(m.Body)),
		MessageAttributes: attributes(m.Headers),
	}
	if p.fifo {
		in.MessageGroupId = aws.String(cmp.Or(m.Key, m.JobID))
		in.MessageDeduplicationId = aws.String(m.JobID)
	}
	out, err := p.client.SendMessage(ctx, in)
	if err != nil {
		return "", fmt.Errorf("send message: %w", err)
	}
	return "message " + aws.ToString(out.MessageId), nil
}

// attributes returns the message attributes of headers: the metadata,
// the subscription's headers, then the trace context while there is room
// (SQS takes at most 10, and no empty value).
func attributes(headers map[string]string) map[string]types.MessageAttributeValue {
	first := []string{destination.HeaderJobID, destination.HeaderAttempt}
	last := []string{destination.HeaderTraceParent, destination.HeaderTraceState}
	order := slices.Clone(first)
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		if !slices.Contains(first, k) && !slices.Contains(last, k) {
			order = append(order, k)
		}
	}
	order = append(order, last...)
	out := make(map[string]types.MessageAttributeValue, maxAttributes)
	for _, k := range order {
		v, ok := headers[k]
		if !ok || v == "" || len(out) == maxAttributes {
			continue
		}
		out[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	return out
}

// Alive is always true: the HTTP client reconnects on its own.
func (p *publisher) Alive() bool { return true }

// Close closes the idle connections.
func (p *publisher) Close() error {
	if tr := p.transport.Load(); tr != nil {
		tr.CloseIdleConnections()
	}
	return nil
}
