package subscription

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
)

// SecretPrefix starts every signing secret (Standard Webhooks).
const SecretPrefix = "whsec_"

// secretBytes is the size of a generated secret's key.
const secretBytes = 32

// ErrInvalidSecret is returned for a secret that is not "whsec_" followed
// by base64.
var ErrInvalidSecret = errors.New(`secret must be "whsec_" followed by base64`)

// NewSecret returns a fresh random signing secret.
func NewSecret() string {
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// SecretKey returns the HMAC key of a whsec_ secret.
func SecretKey(secret string) ([]byte, error) {
	raw, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok || raw == "" {
		return nil, ErrInvalidSecret
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(key) == 0 {
		return nil, ErrInvalidSecret
	}
	return key, nil
}
