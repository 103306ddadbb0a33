package destination_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination"
)

// amqpLike is a type whose secret is the password inside a URL, plus a
// plain secret field, for the registry's generic rules.
type amqpLike struct{}

func (amqpLike) Name() string { return "amqplike" }
func (amqpLike) Secrets() []destination.Secret {
	return []destination.Secret{{Pointer: "/url", InURL: true}, {Pointer: "/auth/token"}}
}

func (amqpLike) Binding() destination.Binding {
	return destination.Binding{AttrPrefix: "cloudEvents:", MaxHeaders: 2, HeaderNameFunc: func(name string) error {
		if name == "bad name" {
			return errors.New("must not hold a space")
		}
		return nil
	}}
}

type amqpLikeConfig struct {
	URL   string `json:"url"`
	Queue string `json:"queue"`
	Auth  *struct {
		Token string `json:"token"`
	} `json:"auth,omitempty"`
	u *url.URL
}

func (amqpLike) Decode(raw []byte) (destination.Config, error) {
	f := destination.NewFields(raw, "amqplike")
	c := &amqpLikeConfig{URL: f.RequiredString("url"), Queue: f.RequiredString("queue")}
	c.u = f.URL("url", c.URL, "amqp", "amqps")
	if a := f.Object("auth"); a != nil {
		c.Auth = &struct {
			Token string `json:"token"`
		}{Token: a.RequiredString("token")}
		a.Done()
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

func (amqpLike) Open(context.Context, destination.Config, *destination.OpenOptions) (destination.Publisher, error) {
	return nil, errors.New("not a broker")
}

func (c *amqpLikeConfig) MarshalJSON() ([]byte, error) {
	type plain amqpLikeConfig
	out, err := json.Marshal((*plain)(c))
	if err != nil {
		return nil, fmt.Errorf("marshal: %w", err)
	}
	return out, nil
}

func (c *amqpLikeConfig) Addresses() []destination.Address {
	return []destination.Address{destination.URLAddress("/url", c.u)}
}
func (c *amqpLikeConfig) Audience() []string { return []string{c.u.Host} }
func (c *amqpLikeConfig) TargetURL() string  { return "amqp://" + c.u.Host + "/" + c.Queue }

func problems(t *testing.T, err error) map[string]string {
	t.Helper()
	var ve *destination.ValidationError
	require.ErrorAs(t, err, &ve)
	out := map[string]string{}
	for _, p := range ve.Problems {
		out[p.Pointer] = p.Message
	}
	return out
}

func TestDecodeProblems(t *testing.T) {
	t.Parallel()
	reg := destination.NewRegistry(amqpLike{})
	tests := []struct {
		name     string
		raw      string
		dataOnly bool
		headers  map[string]string
		want     []string
	}{
		{"not an object", `[]`, false, nil, []string{"/destination"}},
		{"no type", `{}`, false, nil, []string{"/destination/type"}},
		{"unknown type", `{"type": "carrier-pigeon"}`, false, nil, []string{"/destination/type"}},
		{"type not a string", `{"type": 3}`, false, nil, []string{"/destination/type"}},
		{"required fields", `{"type": "amqplike"}`, false, nil, []string{"/destination/url", "/destination/queue"}},
		{"wrong scheme", `{"type": "amqplike", "url": "http://h/", "queue": "q"}`, false, nil, []string{"/destination/url"}},
		{"bad port", `{"type": "amqplike", "url": "amqp://h:99999/", "queue": "q"}`, false, nil, []string{"/destination/url"}},
		{"unknown field", `{"type": "amqplike", "url": "amqp://h/", "queue": "q", "extra": 1}`, false, nil, []string{"/destination/extra"}},
		{"nested", `{"type": "amqplike", "url": "amqp://h/", "queue": "q", "auth": {"tokn": "x"}}`, false, nil, []string{"/destination/auth/token", "/destination/auth/tokn"}},
		{"wrong kind", `{"type": "amqplike", "url": 3, "queue": ""}`, false, nil, []string{"/destination/url", "/destination/queue"}},
		{"dataOnly on a structured-only type", `{"type": "amqplike", "url": "amqp://h/", "queue": "q"}`, true, nil, []string{"/dataOnly"}},
		{"too many headers", `{"type": "amqplike", "url": "amqp://h/", "queue": "q"}`, false, map[string]string{"a": "1", "b": "2", "c": "3"}, []string{"/headers"}},
		{"header name", `{"type": "amqplike", "url": "amqp://h/", "queue": "q"}`, false, map[string]string{"bad name": "1"}, []string{"/headers/bad name"}},
		{"mask on create", `{"type": "amqplike", "url": "amqp://u:***@h/", "queue": "q"}`, false, nil, []string{"/destination/url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := reg.Decode(&destination.DecodeParams{Raw: json.RawMessage(tt.raw), DataOnly: tt.dataOnly, Headers: tt.headers})
			got := problems(t, err)
			for _, p := range tt.want {
				require.Contains(t, got, p)
			}
			require.Len(t, got, len(tt.want), "%v", got)
		})
	}
}

func TestSecrets(t *testing.T) {
	t.Parallel()
	reg := destination.NewRegistry(amqpLike{})
	const raw = `{"type": "amqplike", "url": "amqp://user:p%40ss*w0rd@broker.example:5672/vhost", "queue": "q", "auth": {"token": "tok-123"}}`
	d, err := reg.Decode(&destination.DecodeParams{Raw: json.RawMessage(raw)})
	require.NoError(t, err)

	masked := string(d.Masked())
	require.JSONEq(t, `{"type": "amqplike", "url": "amqp://user:***@broker.example:5672/vhost", "queue": "q", "auth": {"token": "***"}}`, masked)
	require.Equal(t, "amqp://broker.example:5672/q", d.TargetURL())

	t.Run("a PATCH that sends *** back keeps the stored secrets", func(t *testing.T) {
		t.Parallel()
		kept, err := reg.Decode(&destination.DecodeParams{Raw: json.RawMessage(masked), Stored: d})
		require.NoError(t, err)
		require.Equal(t, d.Key(), kept.Key())
		stored, err := kept.MarshalJSON()
		require.NoError(t, err)
		require.JSONEq(t, raw, string(stored))
	})
	t.Run("a new address needs the secrets again", func(t *testing.T) {
		t.Parallel()
		moved := `{"type": "amqplike", "url": "amqp://user:***@elsewhere.example:5672/vhost", "queue": "q", "auth": {"token": "***"}}`
		_, err := reg.Decode(&destination.DecodeParams{Raw: json.RawMessage(moved), Stored: d})
		got := problems(t, err)
		require.Contains(t, got, "/destination/url")
		require.Contains(t, got, "/destination/auth/token")
	})
	t.Run("a new address with the secrets given again", func(t *testing.T) {
		t.Parallel()
		moved := `{"type": "amqplike", "url": "amqp://user:new@elsewhere.example:5672/vhost", "queue": "q", "auth": {"token": "tok-new"}}`
		_, err := reg.Decode(&destination.DecodeParams{Raw: json.RawMessage(moved), Stored: d})
		require.NoError(t, err)
	})
	t.Run("another queue on the same broker keeps them", func(t *testing.T) {
		t.Parallel()
		other := `{"type": "amqplike", "url": "amqp://user:***@broker.example:5672/other", "queue": "q2", "auth": {"token": "***"}}`
		got, err := reg.Decode(&destination.DecodeParams{Raw: json.RawMessage(other), Stored: d})
		require.NoError(t, err)
		stored, err := got.MarshalJSON()
		require.NoError(t, err)
		require.Contains(t, string(stored), "tok-123")
		require.Contains(t, string(stored), "p%40ss*w0rd@broker.example")
	})
	t.Run("stored form round-trips through Load", func(t *testing.T) {
		t.Parallel()
		stored, err := d.MarshalJSON()
		require.NoError(t, err)
		loaded, err := reg.Load(stored)
		require.NoError(t, err)
		require.Equal(t, d.Key(), loaded.Key())
		_, err = reg.Load([]byte(`{"type": "gone"}`))
		require.Error(t, err)
	})
}

func TestCheckAddresses(t *testing.T) {
	t.Parallel()
	reg := destination.NewRegistry(amqpLike{})
	d, err := reg.Decode(&destination.DecodeParams{Raw: json.RawMessage(`{"type": "amqplike", "url": "amqp://127.0.0.1:5672/", "queue": "q"}`)})
	require.NoError(t, err)
	var hosts []string
	err = reg.CheckAddresses(t.Context(), d, func(_ context.Context, host string) error {
		hosts = append(hosts, host)
		return fmt.Errorf("%s is loopback", host)
	})
	require.Equal(t, []string{"127.0.0.1"}, hosts)
	require.Equal(t, map[string]string{"/destination/url": "127.0.0.1 is loopback"}, problems(t, err))
	require.NoError(t, reg.CheckAddresses(t.Context(), d, func(context.Context, string) error { return nil }))
}

func TestNewRegistryRefusesDuplicates(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() { destination.NewRegistry(amqpLike{}, amqpLike{}) })
	require.Equal(t, []string{"amqplike"}, destination.NewRegistry(amqpLike{}).Names())
}
