package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hooklane/hooklane/tenant"
)

// Role is what an API key may do (API.md conventions).
type Role string

// Key is one configured API key. Only its hash is kept.
type Key struct {
	Name string
	Role Role
	// ClientID scopes the key to one client (the entry's fourth part,
	// API.md §11); "" for a platform key.
	ClientID string
	hash     [sha256.Size]byte
}

// KeySet holds the configured keys.
type KeySet struct {
	keys []Key
}

// ParseKeys parses "name:role:key" entries separated by commas (the form
// of HOOKLANE_API_KEYS); a fourth part, "name:role:key:clientId", scopes
// the key to that client (API.md §11), so a key cannot contain a colon.
// Every problem is reported, joined; no message contains a key.
func ParseKeys(spec string) (*KeySet, error) {
	ks := &KeySet{}
	var errs []error
	for i, entry := range strings.Split(spec, ",") {
		if err := ks.addEntry(entry, fmt.Sprintf("entry %d", i+1)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ks, nil
}

// ParseKeyFile parses the text of an API keys file: one "name:role:key" or
// "name:role:key:clientId" entry per line; blank lines and lines starting
// with # are ignored. The key runs from the second colon to the third (or
// the end of the line), trimmed, so it may hold commas but not colons.
// Every problem is reported with its line number.
func ParseKeyFile(text string) (*KeySet, error) {
	ks := &KeySet{}
	var errs []error
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		if err := ks.addEntry(line, fmt.Sprintf("line %d", i+1)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ks, nil
}

// JoinKeys returns the keys of every set in one set. A name or a key that
// appears twice is an error: a key must mean one role, and a name must
// point to one key in the logs.
func JoinKeys(sets ...*KeySet) (*KeySet, error) {
	out := &KeySet{}
	var errs []error
	for _, ks := range sets {
		if ks == nil {
			continue
		}
		for _, k := range ks.keys {
			if err := out.add(k); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// Names returns the key names with their roles ("name (role)"), for the
// start-up log.
func (ks *KeySet) Names() []string {
	if ks == nil {
		return nil
	}
	out := make([]string, len(ks.keys))
	for i, k := range ks.keys {
		out[i] = k.Name + " (" + string(k.Role) + ")"
	}
	return out
}

func (ks *KeySet) addEntry(entry, where string) error {
	entry = strings.TrimSpace(entry)
	if entry == "" {
		return nil
	}
	// name:role:key or name:role:key:clientId (API.md §11): a fourth part
	// scopes the key, so a key itself cannot hold a colon.
	parts := strings.SplitN(entry, ":", 4)
	if len(parts) < 3 || strings.TrimSpace(parts[0]) == "" || strings.TrimSpace(parts[2]) == "" {
		return fmt.Errorf("api key %s: want name:role:key or name:role:key:clientId", where)
	}
	name, role := strings.TrimSpace(parts[0]), Role(strings.TrimSpace(parts[1]))
	if !slices.Contains([]Role{RoleAdmin, RoleProducer, RoleWorker, RoleViewer}, role) {
		return fmt.Errorf("api key %q (%s): unknown role %q (admin, producer, worker, viewer)", name, where, role)
	}
	k := Key{Name: name, Role: role, hash: sha256.Sum256([]byte(strings.TrimSpace(parts[2])))}
	if len(parts) == 4 {
		k.ClientID = strings.TrimSpace(parts[3])
		if !tenant.ValidID(k.ClientID) {
			return fmt.Errorf("api key %q (%s): %q is not a client id", name, where, k.ClientID)
		}
	}
	return ks.add(k)
}

func (ks *KeySet) add(k Key) error {
	for _, have := range ks.keys {
		if have.Name == k.Name {
			return fmt.Errorf("api key %q: the name is used twice", k.Name)
		}
		if have.hash == k.hash {
			return fmt.Errorf("api key %q: the same key as %q", k.Name, have.Name)
		}
	}
	ks.keys = append(ks.keys, k)
	return nil
}

// Len is the number of keys.
func (ks *KeySet) Len() int {
	if ks == nil {
		return 0
	}
	return len(ks.keys)
}

// lookup finds the key matching the presented secret. Every key is compared
// (in constant time each), so timing reveals nothing about which matched.
func (ks *KeySet) lookup(presented string) (Key, bool) {
	h := sha256.Sum256([]byte(presented))
	var found Key
	ok := false
	for _, k := range ks.keys {
		if subtle.ConstantTimeCompare(h[:], k.hash[:]) == 1 {
			found, ok = k, true
		}
	}
	return found, ok
}

// Roles.
const (
	// RoleAdmin may do everything.
	RoleAdmin Role = "admin"
	// RoleProducer posts events and TASK jobs and reads events and jobs.
	RoleProducer Role = "producer"
	// RoleWorker pulls jobs and reads jobs.
	RoleWorker Role = "worker"
	// RoleViewer reads everything but secrets, and the stream.
	RoleViewer Role = "viewer"
)
