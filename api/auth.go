package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
)

// Role is what an API key may do (API.md conventions).
type Role string

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

// Key is one configured API key. Only its hash is kept.
type Key struct {
	Name string
	Role Role
	hash [sha256.Size]byte
}

// KeySet holds the configured keys.
type KeySet struct {
	keys []Key
}

// ParseKeys parses "name:role:key" entries separated by commas. Every
// problem is reported, joined.
func ParseKeys(spec string) (*KeySet, error) {
	ks := &KeySet{}
	var errs []error
	for i, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		parts := strings.SplitN(entry, ":", 3)
		if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
			errs = append(errs, fmt.Errorf("api key entry %d: want name:role:key", i+1))
			continue
		}
		role := Role(parts[1])
		if !slices.Contains([]Role{RoleAdmin, RoleProducer, RoleWorker, RoleViewer}, role) {
			errs = append(errs, fmt.Errorf("api key %q: unknown role %q (admin, producer, worker, viewer)", parts[0], parts[1]))
			continue
		}
		ks.keys = append(ks.keys, Key{Name: parts[0], Role: role, hash: sha256.Sum256([]byte(parts[2]))})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ks, nil
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

// auth allows admin keys and keys of the given roles. With no keys
// configured, it allows everything (the server then listens on loopback
// only).
func (s *Server) auth(roles ...Role) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.cfg.Keys.Len() == 0 {
			c.Next()
			return
		}
		token, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
		if !ok || token == "" {
			c.Header("WWW-Authenticate", `Bearer realm="hooklane"`)
			writeProblem(c, newProblem(http.StatusUnauthorized, "an API key is required: Authorization: Bearer <key>"))
			c.Abort()
			return
		}
		key, ok := s.cfg.Keys.lookup(strings.TrimSpace(token))
		if !ok {
			c.Header("WWW-Authenticate", `Bearer realm="hooklane", error="invalid_token"`)
			writeProblem(c, newProblem(http.StatusUnauthorized, "unknown API key"))
			c.Abort()
			return
		}
		c.Set("api_key_name", key.Name)
		if key.Role != RoleAdmin && !slices.Contains(roles, key.Role) {
			writeProblem(c, newProblem(http.StatusForbidden, fmt.Sprintf("the key %q (role %s) may not do this", key.Name, key.Role)))
			c.Abort()
			return
		}
		c.Next()
	}
}
