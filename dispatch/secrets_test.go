package dispatch_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/dispatch"
)

func taskJob() *dispatch.Job {
	return dispatch.NewTaskJob(&dispatch.TaskSpec{
		ID: "01TASK", Code: "invoice.send", Payload: []byte(`{"n":1}`), Secret: "whsec_c2lnbmluZw==",
		Auth:     &endpoint.Auth{Type: endpoint.AuthBasic, Username: "u", Password: "basic-password"},
		TLS:      &endpoint.TLS{ClientCertificate: "cert-pem", ClientKey: "key-pem", CACertificate: "ca-pem"},
		Settings: dispatch.Settings{Target: "https://receiver.example/hook"},
	}, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

func TestTaskJobCarriesAuthMaskedInJSON(t *testing.T) {
	t.Parallel()
	j := taskJob()
	require.Equal(t, "basic-password", j.Auth.Password)
	b, err := json.Marshal(j)
	require.NoError(t, err)
	for _, secret := range []string{"basic-password", "key-pem", "whsec_c2lnbmluZw=="} {
		require.NotContains(t, string(b), secret)
	}
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, map[string]any{"type": "basic", "username": "u", "password": "***"}, got["auth"])
	require.Equal(t, map[string]any{"clientCertificate": "cert-pem", "clientKey": "***", "caCertificate": "ca-pem"}, got["tls"])
	require.Equal(t, "basic-password", j.Auth.Password, "masking copies")

	b, err = json.Marshal(&dispatch.Job{ID: "01EVENT", Kind: dispatch.KindEvent})
	require.NoError(t, err)
	require.NotContains(t, string(b), `"auth"`, "an EVENT job has none")
}

func TestJobMapSecrets(t *testing.T) {
	t.Parallel()
	j := taskJob()
	up := func(v string) (string, error) { return strings.ToUpper(v), nil }
	c, err := j.MapSecrets(up)
	require.NoError(t, err)
	require.Equal(t, "WHSEC_C2LNBMLUZW==", c.Secret)
	require.Equal(t, "BASIC-PASSWORD", c.Auth.Password)
	require.Equal(t, "u", c.Auth.Username)
	require.Equal(t, "KEY-PEM", c.TLS.ClientKey)
	require.Equal(t, "cert-pem", c.TLS.ClientCertificate)
	require.Equal(t, taskJob(), j, "the job itself is unchanged")

	boom := errors.New("boom")
	_, err = j.MapSecrets(func(string) (string, error) { return "", boom })
	require.ErrorIs(t, err, boom)

	ev := &dispatch.Job{ID: "01EVENT", Kind: dispatch.KindEvent}
	same, err := ev.MapSecrets(func(string) (string, error) { return "", boom })
	require.NoError(t, err)
	require.Same(t, ev, same, "no secret: no copy, f not called")
}
