package transformrun

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/subscription/transform"
)

// Check accepts a result url with user information only when it is the
// target's own, on the target's origin; a credentialed subscription's url
// may change its path and query only.
func TestCheckURLs(t *testing.T) {
	t.Parallel()
	const target = "https://u:p@receiver.example.com/hooks"
	for _, tt := range []struct {
		next         string
		credentialed bool
		ok           bool
	}{
		{target, false, true},
		{target + "/42?x=1", false, true},
		{"https://receiver.example.com/hooks", false, true},
		{"https://other.example.com/hooks", false, true},
		{"https://u:p@other.example.com/hooks", false, false},
		{"https://u:q@receiver.example.com/hooks", false, false},
		{target + "/42", true, true},
		{"https://other.example.com/hooks", true, false},
		{"ftp://receiver.example.com/hooks", false, false},
	} {
		out := transform.Output{Method: "POST", URL: tt.next}
		err := Check(&out, Request{URL: target, Credentialed: tt.credentialed})
		if tt.ok {
			require.NoError(t, err, tt.next)
			continue
		}
		var te *Error
		require.ErrorAs(t, err, &te, tt.next)
		require.Equal(t, transform.KindInvalidResult, te.Kind)
	}
	out := transform.Output{Method: "POST", URL: "https://u:p@receiver.example.com/"}
	require.Error(t, Check(&out, Request{URL: "https://receiver.example.com/"}), "credentials the target has not")
}
