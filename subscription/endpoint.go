package subscription

import (
	"fmt"
	"slices"

	"github.com/hooklane/hooklane/endpoint"
)

// MapSecrets returns a copy of s whose secrets — the values of its signing
// secrets, its auth secrets and its TLS client key — are f of the
// originals (the store adapters seal and open them with it). s is not
// changed; f's first error is returned.
func (s *Subscription) MapSecrets(f func(string) (string, error)) (*Subscription, error) {
	c := *s
	c.Secrets = slices.Clone(s.Secrets)
	for i := range c.Secrets {
		v, err := f(c.Secrets[i].Value)
		if err != nil {
			return nil, fmt.Errorf("signing secret %d of subscription %s: %w", i, s.ID, err)
		}
		c.Secrets[i].Value = v
	}
	var err error
	if c.Auth, err = s.Auth.MapSecrets(f); err != nil {
		return nil, fmt.Errorf("auth of subscription %s: %w", s.ID, err)
	}
	if c.TLS, err = s.TLS.MapSecrets(f); err != nil {
		return nil, fmt.Errorf("tls of subscription %s: %w", s.ID, err)
	}
	return &c, nil
}

// endpointPatch carries auth and tls through a PATCH (API.md §14). A patch
// that has `auth` (or `tls`) replaces it as a whole — null removes it —
// and any secret sent back as "***" keeps the stored one; a patch without
// the member keeps what is stored.
//
// The merge decodes the patch over a copy of the stored subscription, so
// before it both fields get fresh empty values (begin): decoding a member
// fills them, null sets them nil, and an absent member leaves them empty
// and untouched, which finish recognises.
type endpointPatch struct {
	auth *endpoint.Auth
	tls  *endpoint.TLS
}

// beginEndpointPatch prepares next, a copy of the stored subscription, for
// the merge. It also stops the merge from writing through pointers next
// shares with the stored subscription.
func beginEndpointPatch(next *Subscription) endpointPatch {
	p := endpointPatch{auth: &endpoint.Auth{}, tls: &endpoint.TLS{}}
	next.Auth, next.TLS = p.auth, p.tls
	return p
}

// finish settles auth and tls of next after the merge, against cur, the
// stored subscription.
func (p endpointPatch) finish(next, cur *Subscription) {
	if next.Auth == p.auth && p.auth.Key() == (&endpoint.Auth{}).Key() {
		next.Auth = cur.Auth.Clone() // no auth in the patch
	} else {
		next.Auth.Restore(cur.Auth)
	}
	if next.TLS == p.tls && *p.tls == (endpoint.TLS{}) {
		next.TLS = cur.TLS.Clone() // no tls in the patch
	} else {
		next.TLS.Restore(cur.TLS)
	}
}
