package subscription

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/hooklane/hooklane/destination/endpoint"
)

// MapSecrets returns a copy of s whose secrets — the values of its signing
// secrets, its auth secrets, its TLS client key, and its destination as a
// whole (see mapDestinationSecrets) — are f of the
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
	if c.Destination, err = mapDestinationSecrets(s.Destination, f); err != nil {
		return nil, fmt.Errorf("destination of subscription %s: %w", s.ID, err)
	}
	return &c, nil
}

// endpointPatch carries auth and tls through a PATCH (API.md §14). A patch
// that has `auth` (or `tls`) replaces it as a whole — null removes it —
// and any secret sent back as "***" keeps the stored one; a patch without
// the member keeps what is stored.
//
// A stored secret is never sent to a new place without being given again
// (see moved): when the patch changes where a secret goes, "***" — or no
// `auth` (`tls`) at all — keeps nothing, and finish reports the secret at
// its pointer.
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
// stored subscription. It returns a problem for every stored secret the
// patch would send to a new place without giving it again (nil when
// there is none); the caller refuses such a patch.
//
// next is completed as if each kept secret were allowed, so that the
// rest of the validation reports only the patch's other problems.
func (p endpointPatch) finish(next, cur *Subscription) []FieldError {
	var errs []FieldError
	authGiven := next.Auth != p.auth || p.auth.Key() != (&endpoint.Auth{}).Key()
	if !authGiven {
		next.Auth = cur.Auth.Clone() // no auth in the patch
	}
	if dest := authMoved(next, cur); dest != "" {
		for _, f := range keptAuthSecrets(next.Auth, cur.Auth, authGiven) {
			errs = append(errs, FieldError{Pointer: "/auth/" + f, Message: movedMessage(dest)})
		}
	}
	if authGiven {
		next.Auth.Restore(cur.Auth)
	}

	tlsGiven := next.TLS != p.tls || *p.tls != (endpoint.TLS{})
	if !tlsGiven {
		next.TLS = cur.TLS.Clone() // no tls in the patch
	}
	if keptClientKey(next.TLS, cur.TLS, tlsGiven) && !sameOrigin(next.Target, cur.Target) {
		errs = append(errs, FieldError{Pointer: "/tls/clientKey", Message: movedMessage("the target's host or port")})
	}
	if tlsGiven {
		next.TLS.Restore(cur.TLS)
	}
	return errs
}

// authMoved names where next sends the stored auth's secrets anew — "target"
// when next's target differs from cur's, "tokenUrl" when the OAuth 2.0
// token endpoint does — or returns "" when both stay. Any change of the URL
// text counts, even one that names the same place (a host in other case,
// an explicit default port): the contract says "changes target", and a
// false alarm costs the client only sending its secret again.
func authMoved(next, cur *Subscription) string {
	switch {
	case next.Target != cur.Target:
		return "target"
	case next.Auth != nil && cur.Auth != nil && next.Auth.TokenURL != cur.Auth.TokenURL:
		return "tokenUrl"
	}
	return ""
}

// keptAuthSecrets returns the JSON names of the stored secrets of stored
// that next would keep without the client giving them: every secret stored
// holds when the patch has no auth (given false), else each secret of next
// that is the Mask and that Restore would fill from stored.
func keptAuthSecrets(next, stored *endpoint.Auth, given bool) []string {
	if stored == nil || next == nil || (given && next.Type != stored.Type) {
		return nil
	}
	var out []string
	for _, f := range []struct {
		name         string
		next, stored string
	}{
		{"token", next.Token, stored.Token},
		{"password", next.Password, stored.Password},
		{"clientSecret", next.ClientSecret, stored.ClientSecret},
	} {
		if f.stored != "" && (!given || f.next == endpoint.Mask) {
			out = append(out, f.name)
		}
	}
	return out
}

// keptClientKey reports whether next would keep the stored client key
// without the client giving it: the patch has no tls and a key is stored,
// or its clientKey is the Mask and Restore would fill it.
func keptClientKey(next, stored *endpoint.TLS, given bool) bool {
	if stored == nil || stored.ClientKey == "" || next == nil {
		return false
	}
	return !given || next.ClientKey == endpoint.Mask
}

// sameOrigin reports whether two targets reach the same TLS server: the
// same scheme, host (in any case) and port (the scheme's default when
// none is written). A TLS client key authenticates only the connection to
// that server, whatever the path, so another path keeps it; another host
// or port is a new place. A target that does not parse is a new place.
func sameOrigin(a, b string) bool {
	if a == b {
		return true
	}
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Hostname(), ub.Hostname()) &&
		effectivePort(ua) == effectivePort(ub)
}

// effectivePort is u's port, or its scheme's default (443 for https, 80
// for http) when none is written.
func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// movedMessage is the problem of a stored secret that a PATCH would send to
// a new place (API.md §14): dest names what changes.
func movedMessage(dest string) string {
	return "must be given again: this PATCH changes " + dest +
		`, and a stored credential is never sent to a new place without being given again ("***" or leaving it out keeps nothing here)`
}
