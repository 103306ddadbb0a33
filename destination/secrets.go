package destination

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// decodeDoc parses a JSON document into maps, slices and json.Number.
func decodeDoc(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decode destination: %w", err)
	}
	return doc, nil
}

// getPointer returns the value at a simple pointer ("/a/b": object keys
// only, no escapes) of doc.
func getPointer(doc any, pointer string) (any, bool) {
	cur := doc
	for tok := range strings.SplitSeq(strings.TrimPrefix(pointer, "/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// setPointer sets the value at a simple pointer whose parent object
// exists.
func setPointer(doc any, pointer string, v any) {
	toks := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	parent, ok := getPointer(doc, "/"+strings.Join(toks[:len(toks)-1], "/"))
	if len(toks) == 1 {
		parent, ok = doc, true
	}
	if m, isMap := parent.(map[string]any); ok && isMap {
		m[toks[len(toks)-1]] = v
	}
}

// secretString returns the string at pointer of doc, "" when there is
// none.
func secretString(doc any, pointer string) string {
	v, _ := getPointer(doc, pointer)
	s, _ := v.(string)
	return s
}

// urlPassword returns the password in a URL's user information.
func urlPassword(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return "", false
	}
	return u.User.Password()
}

// urlWithPassword returns raw with the password of its user information
// replaced by password, written as it is (so "***" stays readable:
// url.UserPassword would escape it). ok is false when raw has no
// password.
func urlWithPassword(raw, password string) (string, bool) {
	p, ok := splitUserinfo(raw)
	if !ok {
		return "", false
	}
	return p.scheme + "://" + p.user + ":" + password + "@" + p.rest, true
}

// rawURLPassword returns the password of a URL's user information as it
// is written (escapes kept).
func rawURLPassword(raw string) (string, bool) {
	p, ok := splitUserinfo(raw)
	return p.password, ok
}

// userinfo is a URL split around its user information, as written.
type userinfo struct {
	scheme, user, password, rest string
}

// splitUserinfo splits "scheme://user:password@rest" as written; ok is
// false when the URL has no password.
func splitUserinfo(raw string) (userinfo, bool) {
	var p userinfo
	if _, has := urlPassword(raw); !has {
		return p, false
	}
	scheme, after, found := strings.Cut(raw, "://")
	if !found {
		return p, false
	}
	authority := after
	if i := strings.IndexAny(after, "/?#"); i >= 0 {
		authority = after[:i]
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return p, false
	}
	user, password, found := strings.Cut(authority[:at], ":")
	if !found {
		return p, false
	}
	return userinfo{scheme: scheme, user: user, password: password, rest: after[at+1:]}, true
}

// secretValues lists the secrets of a stored destination, for redaction.
func secretValues(t Type, stored []byte) []string {
	doc, err := decodeDoc(stored)
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range t.Secrets() {
		v := secretString(doc, s.Pointer)
		if s.InURL {
			v, _ = urlPassword(v)
			if v != "" {
				// A library may print the URL with its password escaped.
				out = append(out, url.QueryEscape(v), url.PathEscape(v))
			}
		}
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// redact replaces every secret in text with Mask.
func redact(text string, secrets []string) string {
	for _, s := range secrets {
		if s != "" {
			text = strings.ReplaceAll(text, s, Mask)
		}
	}
	return text
}

// configKey hashes a stored destination: equal configurations, secrets
// included, have equal keys.
func configKey(stored []byte) string {
	sum := sha256.Sum256(stored)
	return hex.EncodeToString(sum[:])
}

// keepSecrets replaces, in doc (the request's destination of type t), each
// secret sent as "***" with its stored value, and returns the pointers it
// kept; a "***" with no stored value to keep is a problem.
func keepSecrets(t Type, doc any, stored *Destination) (kept []string, problems []Problem) {
	var storedDoc any
	if stored != nil && stored.Type.Name() == t.Name() {
		storedDoc, _ = decodeDoc(stored.stored)
	}
	for _, s := range t.Secrets() {
		v, _ := getPointer(doc, s.Pointer)
		str, ok := v.(string)
		if !ok {
			continue
		}
		old := secretString(storedDoc, s.Pointer)
		if s.InURL {
			pw, has := urlPassword(str)
			if !has || pw != Mask {
				continue
			}
			oldPW, oldHas := urlPassword(old)
			if !oldHas || oldPW == "" {
				problems = append(problems, noStoredSecret(s.Pointer))
				continue
			}
			rawPW, _ := rawURLPassword(old)
			merged, _ := urlWithPassword(str, rawPW)
			setPointer(doc, s.Pointer, merged)
			kept = append(kept, s.Pointer)
			continue
		}
		if str != Mask {
			continue
		}
		if old == "" {
			problems = append(problems, noStoredSecret(s.Pointer))
			continue
		}
		setPointer(doc, s.Pointer, old)
		kept = append(kept, s.Pointer)
	}
	return kept, problems
}

func noStoredSecret(pointer string) Problem {
	return Problem{Pointer: pointer, Message: `is write-only: "***" keeps the stored value, and there is none; send the value`}
}
