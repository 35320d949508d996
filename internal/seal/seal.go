// Package seal keeps a secret the server must be able to read back (an XXL-JOB app's access
// token, which the server presents to the app's executors) encrypted in the database: with
// AES-256-GCM under a key derived from the server's --secret-key, which is not in the database.
// A database dump alone then yields no token.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// prefix marks the format, so another can follow.
const prefix = "v1:"

// ErrNoKey is the error of sealing or opening without a key.
var ErrNoKey = errors.New("no secret key is configured (sundial server --secret-key)")

// Box seals and opens with one key. The zero Box has no key and refuses both.
type Box struct{ aead cipher.AEAD }

// New derives the box's key from secret (SHA-256 of it, so any length of passphrase works);
// an empty secret gives a box without a key.
func New(secret string) (*Box, error) {
	if secret == "" {
		return &Box{}, nil
	}
	k := sha256.Sum256([]byte("sundial seal v1\x00" + secret))
	block, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// Keyed reports whether the box has a key.
func (b *Box) Keyed() bool { return b != nil && b.aead != nil }

// Seal encrypts plain; the additional data binds the result to what it is for (the app's
// name), so a sealed token copied to another app's row does not open.
func (b *Box) Seal(plain, bound string) (string, error) {
	if !b.Keyed() {
		return "", ErrNoKey
	}
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := b.aead.Seal(nonce, nonce, []byte(plain), []byte(bound))
	return prefix + base64.RawStdEncoding.EncodeToString(out), nil
}

// Open decrypts what Seal made for the same bound.
func (b *Box) Open(sealed, bound string) (string, error) {
	if !b.Keyed() {
		return "", ErrNoKey
	}
	raw, ok := strings.CutPrefix(sealed, prefix)
	if !ok {
		return "", fmt.Errorf("seal: unknown format %.3q", sealed)
	}
	data, err := base64.RawStdEncoding.DecodeString(raw)
	if err != nil || len(data) < b.aead.NonceSize() {
		return "", fmt.Errorf("seal: malformed sealed value: %v", err)
	}
	n := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, data[:n], data[n:], []byte(bound))
	if err != nil {
		return "", fmt.Errorf("seal: cannot open (another --secret-key, or another app's value): %w", err)
	}
	return string(plain), nil
}
