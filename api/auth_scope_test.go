package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api"
)

func TestParseScopedKeys(t *testing.T) {
	t.Parallel()
	ks, err := api.ParseKeys("ops:admin:k1,acme:viewer:k2:acme,eu:producer:k3:acme.eu:1")
	require.NoError(t, err)
	require.Equal(t, 3, ks.Len())
	_, err = api.ParseKeys("bad:viewer:k2:not a client")
	require.ErrorContains(t, err, "not a client id")
	_, err = api.ParseKeyFile("# portal keys\nacme:viewer:k, with comma:acme\n")
	require.NoError(t, err)
	_, err = api.ParseKeyFile("acme:viewer:k::\n")
	require.Error(t, err, "an empty client id")
}
