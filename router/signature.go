package router

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
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

// Sign returns the webhook-signature header value for one delivery: one
// "v1,<base64 HMAC-SHA256>" per key, space separated, over
// "{id}.{timestamp}.{body}" (Standard Webhooks).
func Sign(keys [][]byte, id string, ts time.Time, body []byte) string {
	var b strings.Builder
	unix := strconv.FormatInt(ts.Unix(), 10)
	for i, key := range keys {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id))
		mac.Write([]byte{'.'})
		mac.Write([]byte(unix))
		mac.Write([]byte{'.'})
		mac.Write(body)
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		b.WriteString(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return b.String()
}
