package destination_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination"
)

// recorder is a destination type whose publishers record their life in
// memory: the Clients cache under test, without a broker.
type recorder struct {
	opened, closed atomic.Int64
	mu             sync.Mutex
	pubs           []*recorderPub
	openErr        error
	publishErr     error
}

type recorderConfig struct {
	Name     string `json:"name"`
	Password string `json:"password,omitempty"`
}

func (r *recorder) Name() string { return "recorder" }
func (r *recorder) Secrets() []destination.Secret {
	return []destination.Secret{{Pointer: "/password"}}
}
func (r *recorder) Binding() destination.Binding           { return destination.Binding{} }
func (c *recorderConfig) Addresses() []destination.Address { return nil }
func (c *recorderConfig) Audience() []string               { return []string{c.Name} }
func (c *recorderConfig) TargetURL() string                { return "recorder://" + c.Name }
func (c *recorderConfig) MarshalJSON() ([]byte, error) {
	type plain recorderConfig
	out, err := json.Marshal((*plain)(c))
	if err != nil {
		return nil, fmt.Errorf("marshal: %w", err)
	}
	return out, nil
}

func (r *recorder) Decode(raw []byte) (destination.Config, error) {
	f := destination.NewFields(raw, "recorder")
	c := &recorderConfig{Name: f.RequiredString("name"), Password: f.String("password")}
	return c, f.Err()
}

func (r *recorder) Open(context.Context, destination.Config, *destination.OpenOptions) (destination.Publisher, error) {
	if r.openErr != nil {
		return nil, r.openErr
	}
	r.opened.Add(1)
	p := &recorderPub{r: r}
	r.mu.Lock()
	r.pubs = append(r.pubs, p)
	r.mu.Unlock()
	return p, nil
}

type recorderPub struct {
	r      *recorder
	dead   atomic.Bool
	closed atomic.Bool
}

func (p *recorderPub) Publish(context.Context, *destination.Message) (string, error) {
	if p.closed.Load() {
		return "", errors.New("publish on a closed client")
	}
	if p.r.publishErr != nil {
		return "", p.r.publishErr
	}
	return "ok", nil
}
func (p *recorderPub) Alive() bool { return !p.dead.Load() }
func (p *recorderPub) Close() error {
	p.closed.Store(true)
	p.r.closed.Add(1)
	return nil
}

type clientsBundle struct {
	rec     *recorder
	reg     *destination.Registry
	clients *destination.Clients
	now     atomic.Int64
}

func setupClients(t *testing.T, cfg destination.ClientsConfig) *clientsBundle {
	t.Helper()
	b := &clientsBundle{rec: &recorder{}}
	b.now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	b.reg = destination.NewRegistry(b.rec)
	cfg.NowFunc = func() time.Time { return time.Unix(0, b.now.Load()) }
	b.clients = destination.NewClients(cfg)
	t.Cleanup(b.clients.Close)
	return b
}

func (b *clientsBundle) dest(t *testing.T, name, password string) *destination.Destination {
	t.Helper()
	raw := fmt.Sprintf(`{"type": "recorder", "name": %q, "password": %q}`, name, password)
	d, err := b.reg.Decode(&destination.DecodeParams{Raw: json.RawMessage(raw)})
	require.NoError(t, err)
	return d
}

func (b *clientsBundle) publish(t *testing.T, d *destination.Destination) error {
	t.Helper()
	_, err := b.clients.Publish(t.Context(), d, &destination.Message{JobID: "j"})
	return err
}

func TestClientsShareOnePerConfiguration(t *testing.T) {
	t.Parallel()
	b := setupClients(t, destination.ClientsConfig{})
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			_, err := b.clients.Publish(t.Context(), b.dest(t, "a", "pw"), &destination.Message{})
			require.NoError(t, err)
		})
	}
	wg.Wait()
	require.Equal(t, int64(1), b.rec.opened.Load(), "concurrent deliveries share one client")
	require.NoError(t, b.publish(t, b.dest(t, "a", "other-pw")))
	require.Equal(t, int64(2), b.rec.opened.Load(), "a changed secret is another configuration")
	require.Equal(t, 2, b.clients.Len())
}

func TestClientsIdleAndBound(t *testing.T) {
	t.Parallel()
	b := setupClients(t, destination.ClientsConfig{MaxClients: 2, IdleTimeout: time.Minute})
	require.NoError(t, b.publish(t, b.dest(t, "a", "")))
	b.now.Add(int64(time.Second))
	require.NoError(t, b.publish(t, b.dest(t, "b", "")))
	b.now.Add(int64(time.Second))
	require.NoError(t, b.publish(t, b.dest(t, "c", "")))
	require.Equal(t, 2, b.clients.Len(), "the bound closes the least recently used")
	require.Equal(t, int64(1), b.rec.closed.Load())
	require.True(t, b.rec.pubs[0].closed.Load(), "a was the least recently used")

	b.now.Add(int64(30 * time.Second))
	b.clients.Sweep()
	require.Equal(t, 2, b.clients.Len(), "not idle for a minute yet")
	b.now.Add(int64(31 * time.Second))
	b.clients.Sweep()
	require.Equal(t, 0, b.clients.Len())
	require.Equal(t, int64(3), b.rec.closed.Load())
}

func TestClientsReplaceDeadAndFailed(t *testing.T) {
	t.Parallel()
	b := setupClients(t, destination.ClientsConfig{})
	d := b.dest(t, "a", "")
	require.NoError(t, b.publish(t, d))
	b.rec.pubs[0].dead.Store(true)
	require.NoError(t, b.publish(t, d))
	require.Equal(t, int64(2), b.rec.opened.Load(), "a client that lost its connection is replaced")
	require.Equal(t, int64(1), b.rec.closed.Load())
}

func TestClientsErrorsNeverShowSecrets(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-s3cret"
	b := setupClients(t, destination.ClientsConfig{})
	b.rec.publishErr = fmt.Errorf("auth failed for password %s: %w", secret, context.DeadlineExceeded)
	err := b.publish(t, b.dest(t, "a", secret))
	var pe *destination.PublishError
	require.ErrorAs(t, err, &pe)
	require.NotContains(t, err.Error(), secret)
	require.Contains(t, err.Error(), "auth failed for password ***")
	require.True(t, pe.Timeout)
	require.False(t, pe.Permanent)
	require.NoError(t, errors.Unwrap(err), "nothing wrapped that could print the secret")

	b.rec.publishErr = destination.Permanent(errors.New("too large"))
	err = b.publish(t, b.dest(t, "a", secret))
	require.True(t, destination.IsPermanent(err))

	b.clients.Close()
	require.ErrorIs(t, b.publish(t, b.dest(t, "a", secret)), destination.ErrClosed)
}

func TestClientsOpenFailureIsRetried(t *testing.T) {
	t.Parallel()
	b := setupClients(t, destination.ClientsConfig{})
	b.rec.openErr = errors.New("connection refused")
	require.Error(t, b.publish(t, b.dest(t, "a", "")))
	require.Equal(t, 0, b.clients.Len(), "a failed open is not kept")
}
