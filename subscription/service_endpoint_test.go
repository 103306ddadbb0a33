package subscription_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/destination/endpoint/endpointtest"
	"github.com/hooklane/hooklane/subscription"
)

// jsonMerge decodes a PATCH body over the subscription, as the API does.
func jsonMerge(body string) func(*subscription.Subscription) error {
	return func(s *subscription.Subscription) error { return json.Unmarshal([]byte(body), s) }
}

func TestServiceTokenURLMustBePublic(t *testing.T) {
	t.Parallel()
	b := setupService(t, false)
	var hosts []string
	svc := subscription.NewService(subscription.ServiceConfig{
		Store: b.store, Jobs: b.jobs, NewIDFunc: func() string { return "id-" + strings.Repeat("x", len(hosts)) },
		PublicHostFunc: func(_ context.Context, host string) (bool, error) {
			hosts = append(hosts, host)
			return host != "10.1.2.3", nil
		},
	})
	sub := newSub("s1", "a.b")
	sub.Auth = &endpoint.Auth{Type: endpoint.AuthOAuth2, TokenURL: "https://10.1.2.3/token", ClientID: "c", ClientSecret: "s"}
	_, err := svc.Create(t.Context(), sub, nil)
	_ = requireFieldErrors(t, err, subscription.FieldError{Pointer: "/auth/tokenUrl", Message: "resolves to a loopback, private or otherwise non-public address"})
	require.Equal(t, []string{"example.com", "10.1.2.3"}, hosts, "the target and the token endpoint are checked")

	sub.Auth.TokenURL = "https://idp.example/token"
	_, err = svc.Create(t.Context(), sub, nil)
	require.NoError(t, err)
}

func TestServicePatchAuthAndTLS(t *testing.T) {
	t.Parallel()
	b := setupService(t, false)
	ctx := t.Context()
	pki := endpointtest.NewPKI(t)
	sub := newSub("s1", "a.b")
	sub.Auth = &endpoint.Auth{Type: endpoint.AuthOAuth2, TokenURL: "https://idp.example/token", ClientID: "gw", ClientSecret: "first-secret"}
	sub.TLS = pki.ClientTLS()
	_, err := b.svc.Create(ctx, sub, nil)
	require.NoError(t, err)

	get := func() *subscription.Subscription {
		t.Helper()
		got, err := b.svc.Get(ctx, sub.ID)
		require.NoError(t, err)
		return got
	}

	// A patch without auth or tls keeps both.
	_, err = b.svc.Patch(ctx, sub.ID, jsonMerge(`{"name": "renamed"}`))
	require.NoError(t, err)
	require.Equal(t, sub.Auth, get().Auth)
	require.Equal(t, sub.TLS, get().TLS)

	// What every answer shows, sent back with one change, keeps the
	// secrets and applies the change.
	shown, err := json.Marshal(get())
	require.NoError(t, err)
	require.NotContains(t, string(shown), "first-secret")
	require.NotContains(t, string(shown), pki.ClientKey)
	var answer map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(shown, &answer))
	var shownAuth map[string]any
	require.NoError(t, json.Unmarshal(answer["auth"], &shownAuth))
	require.Equal(t, "***", shownAuth["clientSecret"])
	shownAuth["scopes"] = []string{"hooks"}
	patch, err := json.Marshal(map[string]any{"auth": shownAuth, "tls": answer["tls"]})
	require.NoError(t, err)
	next, err := b.svc.Patch(ctx, sub.ID, jsonMerge(string(patch)))
	require.NoError(t, err)
	require.Equal(t, "first-secret", next.Auth.ClientSecret)
	require.Equal(t, []string{"hooks"}, get().Auth.Scopes)
	require.Equal(t, "first-secret", get().Auth.ClientSecret)
	require.Equal(t, pki.ClientKey, get().TLS.ClientKey)

	// A new secret replaces the stored one; auth is replaced as a whole.
	_, err = b.svc.Patch(ctx, sub.ID, jsonMerge(`{"auth": {"type": "bearer", "token": "tok-2"}}`))
	require.NoError(t, err)
	require.Equal(t, &endpoint.Auth{Type: endpoint.AuthBearer, Token: "tok-2"}, get().Auth)

	// "***" for a secret of another type keeps nothing: 422, nothing stored.
	_, err = b.svc.Patch(ctx, sub.ID, jsonMerge(`{"auth": {"type": "basic", "username": "u", "password": "***"}}`))
	rej := requireFieldErrors(t, err, subscription.FieldError{
		Pointer: "/auth/password",
		Message: `"***" keeps a stored secret only on a PATCH of an auth or tls that has it: send the secret itself`,
	})
	require.NotContains(t, rej.Error(), "tok-2")
	require.Equal(t, "tok-2", get().Auth.Token)

	// A bad key is refused at its pointer, and nothing is stored.
	_, err = b.svc.Patch(ctx, sub.ID, jsonMerge(`{"tls": {"clientCertificate": `+jsonString(pki.ClientCertificate)+`, "clientKey": "nope"}}`))
	_ = requireFieldErrors(t, err, subscription.FieldError{Pointer: "/tls/clientKey", Message: "must be a PEM private key (PKCS #8, PKCS #1 or SEC 1)"})
	require.Equal(t, pki.ClientKey, get().TLS.ClientKey)

	// null removes them.
	_, err = b.svc.Patch(ctx, sub.ID, jsonMerge(`{"auth": null, "tls": null}`))
	require.NoError(t, err)
	require.Nil(t, get().Auth)
	require.Nil(t, get().TLS)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s) //nolint:errchkjson // a string always encodes
	return string(b)
}
