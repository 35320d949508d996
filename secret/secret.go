// Package secret seals and opens secret job parameters with AES-256-GCM. A Keyring holds
// one or more keys, each with an id: the first (primary) key seals, and any key opens what
// it sealed, so a key is rotated by putting a new key first and keeping the old one until
// every secret was saved again under the new one.
//
// A sealed value names its key: "sdl1:<key id>:<base64 of nonce and ciphertext>". Opening
// one whose key is not on the ring, or with a key that did not seal it, is an error that
// says so; it never yields garbage.
package secret

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

// Mask is what the API, the CLI, the console and the audit log show in place of a secret.
const Mask = "***"

// prefix starts every sealed value; its version lets the format change later.
const prefix = "sdl1:"

// KeyLen is the length of a key: AES-256.
const KeyLen = 32

// ErrNoKey is returned when a secret is to be sealed or opened and no key is configured.
var ErrNoKey = errors.New("no secret key is configured (--secret-key-file or SUNDIAL_SECRET_KEY)")

// Keyring is the set of keys a node seals and opens secrets with. The zero value and nil
// have no key: Seal and Open fail with ErrNoKey.
type Keyring struct {
	ids  []string // ids[0] is the primary key's
	aead map[string]cipher.AEAD
}

// Parse reads a keyring: comma- or newline-separated "id:key" entries, where id is 1 to 32
// letters, digits, '-' or '_' and key is the standard base64 of 32 random bytes
// (`openssl rand -base64 32`). The first entry is the primary key.
func Parse(text string) (*Keyring, error) {
	k := &Keyring{aead: map[string]cipher.AEAD{}}
	for _, entry := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		id, b64, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, fmt.Errorf("secret key %q: want id:base64-key", redactEntry(entry))
		}
		if !validID(id) {
			return nil, fmt.Errorf("secret key id %q: want 1 to 32 letters, digits, - or _", id)
		}
		if _, dup := k.aead[id]; dup {
			return nil, fmt.Errorf("secret key id %q is given twice", id)
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		if err != nil {
			return nil, fmt.Errorf("secret key %q: the key is not base64: %w", id, err)
		}
		if len(key) != KeyLen {
			return nil, fmt.Errorf("secret key %q: want %d bytes (openssl rand -base64 32), got %d", id, KeyLen, len(key))
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("secret key %q: %w", id, err)
		}
		gcm, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("secret key %q: %w", id, err)
		}
		k.ids = append(k.ids, id)
		k.aead[id] = gcm
	}
	if len(k.ids) == 0 {
		return nil, errors.New("secret keyring: no key given")
	}
	return k, nil
}

// redactEntry keeps a malformed entry's key material out of the error: it may be a key.
func redactEntry(s string) string {
	if len(s) > 4 {
		return s[:4] + "…"
	}
	return s
}

func validID(id string) bool {
	if id == "" || len(id) > 32 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// Primary returns the id of the key that seals; "" without keys.
func (k *Keyring) Primary() string {
	if k == nil || len(k.ids) == 0 {
		return ""
	}
	return k.ids[0]
}

// Seal encrypts plain under the primary key.
func (k *Keyring) Seal(plain string) (string, error) { return k.SealFor(plain, "") }

// SealFor is Seal bound to what the value is for (an xxl-job app's name, say): the value
// opens only with OpenFor and the same bound, so a sealed value copied to another row does not.
func (k *Keyring) SealFor(plain, bound string) (string, error) {
	id := k.Primary()
	if id == "" {
		return "", ErrNoKey
	}
	gcm := k.aead[id]
	nonce := make([]byte, gcm.NonceSize(), gcm.NonceSize()+len(plain)+gcm.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("secret: nonce: %w", err)
	}
	// The key id is authenticated data: a value relabelled with another id does not open.
	out := gcm.Seal(nonce, nonce, []byte(plain), additional(id, bound))
	return prefix + id + ":" + base64.RawStdEncoding.EncodeToString(out), nil
}

// KeyID returns the id of the key that sealed v, and whether v is a sealed value at all.
func KeyID(v string) (string, bool) {
	rest, ok := strings.CutPrefix(v, prefix)
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, ":")
	return id, ok
}

// Sealed reports whether v is a sealed value.
func Sealed(v string) bool {
	_, ok := KeyID(v)
	return ok
}

// Shown is v as the API, the CLI and the console show it: Mask for a sealed value.
func Shown(v string) string {
	if Sealed(v) {
		return Mask
	}
	return v
}

// additional is the authenticated data of a value: its key id, and its bound if any.
func additional(id, bound string) []byte {
	if bound == "" {
		return []byte(id)
	}
	return []byte(id + "\x00" + bound)
}

// Open decrypts a value Seal returned, with whichever key of the ring sealed it.
func (k *Keyring) Open(sealed string) (string, error) { return k.OpenFor(sealed, "") }

// OpenFor decrypts a value SealFor returned for the same bound.
func (k *Keyring) OpenFor(sealed, bound string) (string, error) {
	rest, ok := strings.CutPrefix(sealed, prefix)
	if !ok {
		return "", errors.New("secret: the stored value is not sealed (no sdl1: prefix)")
	}
	id, b64, ok := strings.Cut(rest, ":")
	if !ok {
		return "", errors.New("secret: the stored value has no key id")
	}
	if k == nil || len(k.ids) == 0 {
		return "", fmt.Errorf("secret sealed with key %q: %w", id, ErrNoKey)
	}
	gcm, ok := k.aead[id]
	if !ok {
		return "", fmt.Errorf("secret sealed with key %q: that key is not configured (configured: %s)", id, strings.Join(k.ids, ", "))
	}
	raw, err := base64.RawStdEncoding.DecodeString(b64)
	if err != nil || len(raw) < gcm.NonceSize()+gcm.Overhead() {
		return "", fmt.Errorf("secret sealed with key %q: the stored value is damaged", id)
	}
	plain, err := gcm.Open(nil, raw[:gcm.NonceSize()], raw[gcm.NonceSize():], additional(id, bound))
	if err != nil {
		return "", fmt.Errorf("secret sealed with key %q: it does not open with the configured key of that id (wrong key, or the value was altered)", id)
	}
	return string(plain), nil
}

// FromFlag reads the server's --secret-key: a keyring (Parse) when it is one, else a
// passphrase, from which one key of id "k0" is derived (SHA-256): the same flag also keys
// the server's other sealed values (xxl-job apps' tokens), which take a passphrase. Only a
// keyring can rotate. derived tells which it was; "" gives nil.
func FromFlag(text string) (k *Keyring, derived bool, err error) {
	if strings.TrimSpace(text) == "" {
		return nil, false, nil
	}
	if k, err := Parse(text); err == nil {
		return k, false, nil
	}
	sum := sha256.Sum256([]byte("sundial secret params v1\x00" + text))
	k, err = Parse("k0:" + base64.StdEncoding.EncodeToString(sum[:]))
	return k, true, err
}
