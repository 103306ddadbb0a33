// Package secretbox seals the secrets the gateway stores (signing secrets,
// endpoint auth secrets, TLS client keys) with AES-256-GCM under the key of
// HOOKLANE_ENCRYPTION_KEY (API.md §9, §14).
//
// A sealed value is a versioned envelope string that names the key it was
// sealed with:
//
//	enc:v1:<key id>:<base64 of nonce ‖ ciphertext ‖ tag>
//
// The key id is derived from the key (a hash, never the key), so a gateway
// can tell "sealed with another key" from "corrupt", and a key rotation can
// later open values of several keys by id. Each value gets a fresh random
// 96-bit nonce.
//
// The store adapters hold a *Box and pass every secret through it: Seal on
// the way in, Open on the way out. A nil *Box is "no key": Seal keeps the
// value as it is and Open returns plain values as they are but refuses a
// sealed one (ErrNoKey), so a gateway never treats an envelope as a secret.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the size of an encryption key in bytes (AES-256).
const KeySize = 32

// envelopePrefix starts every sealed value; the version names the format
// (AES-256-GCM, 12-byte nonce, base64 without padding).
const envelopePrefix = "enc:v1:"

// Errors of opening a sealed value.
var (
	// ErrNoKey is returned when a sealed value is read without a key.
	ErrNoKey = errors.New("the value is encrypted and no encryption key is set")
	// ErrWrongKey is returned when a value was sealed with another key, or
	// does not open with this one (tampered or corrupt).
	ErrWrongKey = errors.New("the value is encrypted with another key")
)

// Box seals and opens values with one key. It is safe for concurrent use;
// a nil *Box stands for "no key" (see the package documentation).
type Box struct {
	aead  cipher.AEAD
	keyID string
}

// ParseKey decodes a key as HOOKLANE_ENCRYPTION_KEY gives it: base64
// (standard or URL alphabet, padded or not) of exactly KeySize bytes. The
// error never contains the key.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(s); err == nil {
			if len(key) != KeySize {
				return nil, fmt.Errorf("must be base64 of %d bytes, got %d bytes", KeySize, len(key))
			}
			return key, nil
		}
	}
	return nil, fmt.Errorf("must be base64 of %d bytes (e.g. the output of `openssl rand -base64 32`)", KeySize)
}

// New returns a Box sealing with key, which must be KeySize bytes.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("encryption key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("create cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("create GCM: %w", err)
	}
	return &Box{aead: aead, keyID: KeyID(key)}, nil
}

// KeyID returns the id of key stored beside each value it seals: 16 hex
// digits of a domain-separated SHA-256 of the key, which reveals nothing of
// the key itself.
func KeyID(key []byte) string {
	h := sha256.New()
	h.Write([]byte("hooklane secretbox key id\x00"))
	h.Write(key)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// KeyID returns the id of the box's key, "" for a nil box.
func (b *Box) KeyID() string {
	if b == nil {
		return ""
	}
	return b.keyID
}

// IsSealed reports whether v is a sealed envelope (of any key).
func IsSealed(v string) bool { return strings.HasPrefix(v, envelopePrefix) }

// SealedKeyID returns the key id a sealed value names, "" when v is not
// sealed.
func SealedKeyID(v string) string {
	rest, ok := strings.CutPrefix(v, envelopePrefix)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, ":")
	return id
}

// Seal returns v sealed with the box's key. The empty string stays empty
// (there is nothing to hide, and "no value" must stay recognisable); a
// value already sealed with this key is returned as it is, one sealed with
// another key is an error wrapping ErrWrongKey. A nil box returns v
// unchanged.
func (b *Box) Seal(v string) (string, error) {
	if b == nil || v == "" {
		return v, nil
	}
	if IsSealed(v) {
		if id := SealedKeyID(v); id != b.keyID {
			return "", fmt.Errorf("%w: sealed with key id %s, this key's id is %s", ErrWrongKey, id, b.keyID)
		}
		return v, nil
	}
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(v)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("read nonce: %w", err)
	}
	sealed := b.aead.Seal(nonce, nonce, []byte(v), nil)
	return envelopePrefix + b.keyID + ":" + base64.RawStdEncoding.EncodeToString(sealed), nil
}

// Open returns the plain value of v: v itself when it is not sealed, its
// decryption when it is sealed with the box's key. A sealed value is an
// error wrapping ErrNoKey for a nil box, and wrapping ErrWrongKey when it
// names another key or does not decrypt (tampered, corrupt). Errors never
// contain the value.
func (b *Box) Open(v string) (string, error) {
	if !IsSealed(v) {
		return v, nil
	}
	id := SealedKeyID(v)
	if b == nil {
		return "", fmt.Errorf("%w (sealed with key id %s)", ErrNoKey, id)
	}
	if id != b.keyID {
		return "", fmt.Errorf("%w: sealed with key id %s, this key's id is %s", ErrWrongKey, id, b.keyID)
	}
	raw, err := base64.RawStdEncoding.DecodeString(v[len(envelopePrefix)+len(id)+1:])
	if err != nil || len(raw) < b.aead.NonceSize()+b.aead.Overhead() {
		return "", fmt.Errorf("%w: malformed envelope under key id %s", ErrWrongKey, id)
	}
	n := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], nil)
	if err != nil {
		return "", fmt.Errorf("%w: authentication failed under key id %s", ErrWrongKey, id)
	}
	return string(plain), nil
}

// Census counts the secrets a store holds, as the stores' SecretSealAll
// found them.
type Census struct {
	// Sealed is how many were sealed (and opened with the key, to check
	// it).
	Sealed int
	// Plain is how many were in plain text; with a key they have been
	// sealed and rewritten.
	Plain int
}

// Upgrade returns the function the stores' SecretSealAll maps every stored
// secret through, counting in c: an empty value stays empty; a sealed one
// is opened to check the key (its error is returned) and kept as it is; a
// plain one is counted and, when b is not nil, sealed.
func (b *Box) Upgrade(c *Census) func(string) (string, error) {
	return func(v string) (string, error) {
		switch {
		case v == "":
			return v, nil
		case IsSealed(v):
			if _, err := b.Open(v); err != nil {
				return "", err
			}
			c.Sealed++
			return v, nil
		default:
			c.Plain++
			return b.Seal(v)
		}
	}
}
