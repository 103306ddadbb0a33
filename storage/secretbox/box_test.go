package secretbox_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/storage/secretbox"
)

func newBox(t *testing.T, fill byte) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(bytes.Repeat([]byte{fill}, secretbox.KeySize))
	require.NoError(t, err)
	return b
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{0xfb}, 32) // encodes with '+' and '/' or '-' and '_'
	tests := []struct {
		name, in string
		wantErr  string
	}{
		{"std", base64.StdEncoding.EncodeToString(key), ""},
		{"raw std", base64.RawStdEncoding.EncodeToString(key), ""},
		{"url", base64.URLEncoding.EncodeToString(key), ""},
		{"raw url with spaces", "  " + base64.RawURLEncoding.EncodeToString(key) + "\n", ""},
		{"short", base64.StdEncoding.EncodeToString(key[:16]), "got 16 bytes"},
		{"not base64", "not a key!", "must be base64 of 32 bytes"},
		{"empty", "", "got 0 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := secretbox.ParseKey(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, key, got)
		})
	}
}

func TestNewRefusesWrongSize(t *testing.T) {
	t.Parallel()
	_, err := secretbox.New(make([]byte, 16))
	require.Error(t, err)
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	b := newBox(t, 1)
	for _, v := range []string{"whsec_c2VjcmV0", "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n", "ü", "a secret token"} {
		sealed, err := b.Seal(v)
		require.NoError(t, err)
		require.True(t, secretbox.IsSealed(sealed))
		require.True(t, strings.HasPrefix(sealed, "enc:v1:"+b.KeyID()+":"), sealed)
		require.NotContains(t, sealed, v)
		again, err := b.Seal(v)
		require.NoError(t, err)
		require.NotEqual(t, sealed, again, "a fresh nonce per value")
		got, err := b.Open(sealed)
		require.NoError(t, err)
		require.Equal(t, v, got)
		resealed, err := b.Seal(sealed)
		require.NoError(t, err)
		require.Equal(t, sealed, resealed, "a value sealed with this key is kept")
	}
	empty, err := b.Seal("")
	require.NoError(t, err)
	require.Empty(t, empty)
}

func TestOpenPlainValueAsIs(t *testing.T) {
	t.Parallel()
	got, err := newBox(t, 1).Open("whsec_plain")
	require.NoError(t, err)
	require.Equal(t, "whsec_plain", got)
	var none *secretbox.Box
	got, err = none.Open("whsec_plain")
	require.NoError(t, err)
	require.Equal(t, "whsec_plain", got)
}

func TestNilBoxKeepsValuesAndRefusesSealed(t *testing.T) {
	t.Parallel()
	var none *secretbox.Box
	v, err := none.Seal("whsec_x")
	require.NoError(t, err)
	require.Equal(t, "whsec_x", v)
	require.Empty(t, none.KeyID())

	sealed, err := newBox(t, 1).Seal("whsec_x")
	require.NoError(t, err)
	_, err = none.Open(sealed)
	require.ErrorIs(t, err, secretbox.ErrNoKey)
	require.NotContains(t, err.Error(), "whsec_x")
}

func TestOpenWithAnotherKey(t *testing.T) {
	t.Parallel()
	a, other := newBox(t, 1), newBox(t, 2)
	require.NotEqual(t, a.KeyID(), other.KeyID())
	sealed, err := a.Seal("whsec_x")
	require.NoError(t, err)
	_, err = other.Open(sealed)
	require.ErrorIs(t, err, secretbox.ErrWrongKey)
	require.ErrorContains(t, err, a.KeyID())
	_, err = other.Seal(sealed)
	require.ErrorIs(t, err, secretbox.ErrWrongKey)
}

func TestOpenTamperedValue(t *testing.T) {
	t.Parallel()
	b := newBox(t, 1)
	sealed, err := b.Seal("whsec_x")
	require.NoError(t, err)
	prefix := "enc:v1:" + b.KeyID() + ":"
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimPrefix(sealed, prefix))
	require.NoError(t, err)
	raw[len(raw)-1] ^= 1
	for _, bad := range []string{
		prefix + base64.RawStdEncoding.EncodeToString(raw),
		prefix + "!!!",
		prefix + "AAAA",
	} {
		_, err = b.Open(bad)
		require.ErrorIs(t, err, secretbox.ErrWrongKey, bad)
	}
}

func TestUpgradeCounts(t *testing.T) {
	t.Parallel()
	b := newBox(t, 1)
	sealed, err := b.Seal("old")
	require.NoError(t, err)

	var c secretbox.Census
	up := b.Upgrade(&c)
	got, err := up("plain")
	require.NoError(t, err)
	require.True(t, secretbox.IsSealed(got))
	got, err = up(sealed)
	require.NoError(t, err)
	require.Equal(t, sealed, got)
	got, err = up("")
	require.NoError(t, err)
	require.Empty(t, got)
	require.Equal(t, secretbox.Census{Sealed: 1, Plain: 1}, c)

	var none *secretbox.Box
	c = secretbox.Census{}
	got, err = none.Upgrade(&c)("plain")
	require.NoError(t, err)
	require.Equal(t, "plain", got)
	_, err = none.Upgrade(&c)(sealed)
	require.ErrorIs(t, err, secretbox.ErrNoKey)
	require.Equal(t, secretbox.Census{Plain: 1}, c)

	_, err = newBox(t, 2).Upgrade(&c)(sealed)
	require.ErrorIs(t, err, secretbox.ErrWrongKey)
}

func ExampleBox() {
	key, _ := secretbox.ParseKey("AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=")
	box, _ := secretbox.New(key)
	sealed, _ := box.Seal("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	plain, _ := box.Open(sealed)
	fmt.Println(strings.HasPrefix(sealed, "enc:v1:"+box.KeyID()+":"), plain)
	// Output: true whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
}
