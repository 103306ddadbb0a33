package subscription_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/destination/endpoint/endpointtest"
	"github.com/hooklane/hooklane/subscription"
)

// movedMsg is the problem of a stored secret a PATCH would send to a new
// place.
func movedMsg(dest string) string {
	return "must be given again: this PATCH changes " + dest +
		`, and a stored credential is never sent to a new place without being given again ("***" or leaving it out keeps nothing here)`
}

// TestServicePatchSecretFollowsNoNewTarget: a PATCH that changes where a
// stored secret goes (the target, the OAuth 2.0 tokenUrl, for the TLS
// client key the target's host or port) must give the secret again: "***"
// or no auth (tls) at all is refused at the secret's pointer, and nothing
// is stored (API.md §14). A PATCH that keeps the destination keeps "***"
// as before.
func TestServicePatchSecretFollowsNoNewTarget(t *testing.T) {
	t.Parallel()
	pki := endpointtest.NewPKI(t)
	bearer := func() *endpoint.Auth { return &endpoint.Auth{Type: endpoint.AuthBearer, Token: "stored-token"} }
	basic := func() *endpoint.Auth {
		return &endpoint.Auth{Type: endpoint.AuthBasic, Username: "u", Password: "stored-password"}
	}
	oauth2 := func() *endpoint.Auth {
		return &endpoint.Auth{Type: endpoint.AuthOAuth2, TokenURL: "https://idp.example/token", ClientID: "gw", ClientSecret: "stored-client-secret"}
	}
	tests := []struct {
		name  string
		auth  func() *endpoint.Auth
		tls   bool
		patch string
		// want are the problems; nil means the patch is stored.
		want []subscription.FieldError
		// check, when the patch is stored, checks what was.
		check func(t *testing.T, got *subscription.Subscription)
	}{
		// The attack of issue 28: only the target changes.
		{
			name: "bearer, target only", auth: bearer, patch: `{"target": "https://attacker.example/collect"}`,
			want: []subscription.FieldError{{Pointer: "/auth/token", Message: movedMsg("target")}},
		},
		{
			name: "bearer, target with the mask", auth: bearer,
			patch: `{"target": "https://attacker.example/collect", "auth": {"type": "bearer", "token": "***"}}`,
			want:  []subscription.FieldError{{Pointer: "/auth/token", Message: movedMsg("target")}},
		},
		{
			name: "bearer, another path on the same host", auth: bearer, patch: `{"target": "https://example.com/other"}`,
			want: []subscription.FieldError{{Pointer: "/auth/token", Message: movedMsg("target")}},
		},
		{
			name: "bearer, the same host in capitals", auth: bearer, patch: `{"target": "https://EXAMPLE.com/hook"}`,
			want: []subscription.FieldError{{Pointer: "/auth/token", Message: movedMsg("target")}},
		},
		{
			name: "bearer, target with the token given again", auth: bearer,
			patch: `{"target": "https://new.example/hook", "auth": {"type": "bearer", "token": "new-token"}}`,
			check: func(t *testing.T, got *subscription.Subscription) {
				t.Helper()
				require.Equal(t, "https://new.example/hook", got.Target)
				require.Equal(t, "new-token", got.Auth.Token)
			},
		},
		{
			name: "bearer, target with the same token given again", auth: bearer,
			patch: `{"target": "https://new.example/hook", "auth": {"type": "bearer", "token": "stored-token"}}`,
			check: func(t *testing.T, got *subscription.Subscription) {
				t.Helper()
				require.Equal(t, "https://new.example/hook", got.Target)
			},
		},
		{
			name: "bearer, target and auth removed", auth: bearer, patch: `{"target": "https://new.example/hook", "auth": null}`,
			check: func(t *testing.T, got *subscription.Subscription) {
				t.Helper()
				require.Nil(t, got.Auth)
			},
		},
		{
			name: "bearer, the same target sent back with the mask", auth: bearer,
			patch: `{"target": "https://example.com/hook", "name": "renamed", "auth": {"type": "bearer", "token": "***"}}`,
			check: func(t *testing.T, got *subscription.Subscription) {
				t.Helper()
				require.Equal(t, "stored-token", got.Auth.Token)
				require.Equal(t, "renamed", got.Name)
			},
		},
		{
			name: "bearer, no target in the patch", auth: bearer, patch: `{"name": "renamed"}`,
			check: func(t *testing.T, got *subscription.Subscription) {
				t.Helper()
				require.Equal(t, "stored-token", got.Auth.Token)
			},
		},
		{
			name: "bearer, the mask under another type", auth: bearer,
			patch: `{"target": "https://new.example/hook", "auth": {"type": "basic", "username": "u", "password": "***"}}`,
			want: []subscription.FieldError{{
				Pointer: "/auth/password",
				Message: `"***" keeps a stored secret only on a PATCH of an auth or tls that has it: send the secret itself`,
			}},
		},

		{
			name: "basic, target only", auth: basic, patch: `{"target": "https://attacker.example/collect"}`,
			want: []subscription.FieldError{{Pointer: "/auth/password", Message: movedMsg("target")}},
		},
		{
			name: "basic without a password, target only", auth: func() *endpoint.Auth {
				return &endpoint.Auth{Type: endpoint.AuthBasic, Username: "u"}
			},
			patch: `{"target": "https://new.example/hook"}`,
			check: func(t *testing.T, got *subscription.Subscription) {
				t.Helper()
				require.Equal(t, "u", got.Auth.Username, "no secret: nothing to give again")
			},
		},

		{
			name: "oauth2, tokenUrl with the mask", auth: oauth2,
			patch: `{"auth": {"type": "oauth2", "tokenUrl": "https://attacker.example/token", "clientId": "gw", "clientSecret": "***"}}`,
			want:  []subscription.FieldError{{Pointer: "/auth/clientSecret", Message: movedMsg("tokenUrl")}},
		},
		{
			name: "oauth2, target only", auth: oauth2, patch: `{"target": "https://attacker.example/collect"}`,
			want: []subscription.FieldError{{Pointer: "/auth/clientSecret", Message: movedMsg("target")}},
		},
		{
			name: "oauth2, tokenUrl with the secret given again", auth: oauth2,
			patch: `{"auth": {"type": "oauth2", "tokenUrl": "https://idp2.example/token", "clientId": "gw", "clientSecret": "new-secret"}}`,
			check: func(t *testing.T, got *subscription.Subscription) {
				t.Helper()
				require.Equal(t, "https://idp2.example/token", got.Auth.TokenURL)
				require.Equal(t, "new-secret", got.Auth.ClientSecret)
			},
		},
		{
			name: "oauth2, the same tokenUrl with the mask", auth: oauth2,
			patch: `{"auth": {"type": "oauth2", "tokenUrl": "https://idp.example/token", "clientId": "gw", "clientSecret": "***", "scopes": ["a"]}}`,
			check: func(t *testing.T, got *subscription.Subscription) {
				t.Helper()
				require.Equal(t, "stored-client-secret", got.Auth.ClientSecret)
				require.Equal(t, []string{"a"}, got.Auth.Scopes)
			},
		},

		// The TLS client key follows the target's origin: it only ever
		// authenticates the TLS connection to that host and port.
		{
			name: "tls, another host", tls: true, patch: `{"target": "https://attacker.example/hook"}`,
			want: []subscription.FieldError{{Pointer: "/tls/clientKey", Message: movedMsg("the target's host or port")}},
		},
		{
			name: "tls, another port", tls: true, patch: `{"target": "https://example.com:8443/hook"}`,
			want: []subscription.FieldError{{Pointer: "/tls/clientKey", Message: movedMsg("the target's host or port")}},
		},
		{
			name: "tls, another host with the mask", tls: true,
			patch: `{"target": "https://attacker.example/hook", "tls": {"clientCertificate": ` + jsonString(pki.ClientCertificate) + `, "clientKey": "***"}}`,
			want:  []subscription.FieldError{{Pointer: "/tls/clientKey", Message: movedMsg("the target's host or port")}},
		},
		{
			name: "tls, another path on the same origin", tls: true, patch: `{"target": "https://Example.com:443/other"}`,
			check: func(t *testing.T, got *subscription.Subscription) {
				t.Helper()
				require.Equal(t, pki.ClientKey, got.TLS.ClientKey)
			},
		},
		{
			name: "tls, another host with the key given again", tls: true,
			patch: `{"target": "https://new.example/hook", "tls": {"clientCertificate": ` + jsonString(pki.ClientCertificate) +
				`, "clientKey": ` + jsonString(pki.ClientKey) + `}}`,
			check: func(t *testing.T, got *subscription.Subscription) {
				t.Helper()
				require.Equal(t, pki.ClientKey, got.TLS.ClientKey)
				require.Equal(t, "https://new.example/hook", got.Target)
			},
		},

		{
			name: "bearer and tls, another host", auth: bearer, tls: true, patch: `{"target": "https://attacker.example/hook"}`,
			want: []subscription.FieldError{
				{Pointer: "/auth/token", Message: movedMsg("target")},
				{Pointer: "/tls/clientKey", Message: movedMsg("the target's host or port")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupService(t, false)
			ctx := t.Context()
			sub := newSub("s1", "a.b")
			if tt.auth != nil {
				sub.Auth = tt.auth()
			}
			if tt.tls {
				sub.TLS = pki.ClientTLS()
			}
			_, err := b.svc.Create(ctx, sub, nil)
			require.NoError(t, err)
			stored, err := b.svc.Get(ctx, sub.ID)
			require.NoError(t, err)

			got, err := b.svc.Patch(ctx, sub.ID, jsonMerge(tt.patch))
			if tt.want != nil {
				rej := requireFieldErrors(t, err, tt.want...)
				for _, secret := range []string{"stored-token", "stored-password", "stored-client-secret", pki.ClientKey} {
					require.NotContains(t, rej.Error(), secret)
				}
				after, err := b.svc.Get(ctx, sub.ID)
				require.NoError(t, err)
				require.Equal(t, stored, after, "nothing stored")
				return
			}
			require.NoError(t, err)
			tt.check(t, got)
			after, err := b.svc.Get(ctx, sub.ID)
			require.NoError(t, err)
			tt.check(t, after)
		})
	}
}
