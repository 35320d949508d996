// Package execsign signs the server's calls to executors (/run, /kill, /beat, /idle-beat) with
// the cluster's Ed25519 key, and verifies them on the executor. It is the one implementation
// of the scheme in docs/executor-protocol.md ("Signed calls"), used by dispatch (signing) and
// the executor SDK (verifying).
//
// The two directions of the executor channel use different credentials on purpose: an
// executor proves itself to the server with its bearer credential, and the server proves
// itself to the executor with a signature. No secret of either side travels with a call to an
// executor, so an executor address pointed at someone else's listener learns nothing it could
// use: a signature covers one method, path, body, time, nonce and target instance, and the
// executor takes each nonce once within the replay window.
package execsign

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Header carries the signature of a server → executor call:
//
//	Sundial-Signature: v1 key=<key id>,ts=<unix ms>,nonce=<32 hex>,instance=<target instance>,sig=<base64>
const Header = "Sundial-Signature"

// Window is how far a call's timestamp may be from the executor's clock, either way. A call
// older than that is refused, so its nonce need be remembered only that long.
const Window = 60 * time.Second

const (
	version   = "v1"
	domain    = "sundial-executor-call-v1"
	keyPrefix = "ed25519:"
)

// ErrRefused wraps every reason a call is refused.
var ErrRefused = errors.New("signature refused")

// NewKey makes a cluster key pair: the private key's seed and the public key, both in the
// text form the store keeps and executors receive ("ed25519:<base64>").
func NewKey() (private, public string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("execsign: generate a key: %w", err)
	}
	return keyPrefix + base64.StdEncoding.EncodeToString(priv.Seed()), encodePublic(pub), nil
}

func encodePublic(pub ed25519.PublicKey) string {
	return keyPrefix + base64.StdEncoding.EncodeToString(pub)
}

// KeyID names a public key in a signature: the first 8 bytes of its SHA-256, in hex.
func KeyID(public string) string {
	sum := sha256.Sum256([]byte(public))
	return hex.EncodeToString(sum[:8])
}

// Signer signs calls with one private key.
type Signer struct {
	priv   ed25519.PrivateKey
	public string
	id     string
}

// NewSigner reads a private key made by NewKey.
func NewSigner(private string) (*Signer, error) {
	seed, err := decode(private, ed25519.SeedSize)
	if err != nil {
		return nil, fmt.Errorf("execsign: private key: %w", err)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := encodePublic(priv.Public().(ed25519.PublicKey))
	return &Signer{priv: priv, public: pub, id: KeyID(pub)}, nil
}

// Public is the signer's public key, as executors receive it.
func (s *Signer) Public() string { return s.public }

// Sign sets the signature header of req, a call to the executor instance (its id; "" when
// the caller does not know it) on path (the protocol path, e.g. /run: not the address's
// prefix, which a proxy in front of the executor may strip) with body, at now. Every call
// needs its own Sign: a repeat with the same nonce is refused as a replay.
func (s *Signer) Sign(req *http.Request, path string, body []byte, instance string, now time.Time) error {
	if strings.ContainsAny(instance, ",\r\n") {
		return fmt.Errorf("execsign: instance id %q: a comma or line break cannot be signed", instance)
	}
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		return fmt.Errorf("execsign: nonce: %w", err)
	}
	nonce, ts := hex.EncodeToString(n[:]), now.UnixMilli()
	sig := ed25519.Sign(s.priv, message(req.Method, path, body, ts, nonce, instance))
	req.Header.Set(Header, fmt.Sprintf("%s key=%s,ts=%d,nonce=%s,instance=%s,sig=%s",
		version, s.id, ts, nonce, instance, base64.StdEncoding.EncodeToString(sig)))
	return nil
}

// message is what a signature covers. The body enters by its digest, so the message has a
// fixed shape whatever the body holds; instance ids and nonces carry no newline (checked).
func message(method, path string, body []byte, ts int64, nonce, instance string) []byte {
	digest := sha256.Sum256(body)
	return []byte(strings.Join([]string{domain, method, path, hex.EncodeToString(digest[:]),
		strconv.FormatInt(ts, 10), nonce, instance}, "\n"))
}

// Verifier checks calls on the executor: a signature by one of the cluster's public keys
// (those the executor's server last announced), a timestamp within Window of now, and a nonce
// not seen before. It is safe for concurrent use.
type Verifier struct {
	now func() time.Time

	mu        sync.Mutex
	keys      map[string]ed25519.PublicKey // by KeyID
	nonces    map[string]int64             // nonce → unix ms after which it may be forgotten
	nextPrune int
}

// NewVerifier returns a Verifier with no key: it refuses every call until SetKeys.
func NewVerifier(now func() time.Time) *Verifier {
	return &Verifier{now: now, keys: map[string]ed25519.PublicKey{}, nonces: map[string]int64{}, nextPrune: 1024}
}

// SetKeys replaces the trusted public keys by keys (as NewKey makes them). A key not in the
// list stops being trusted at once: that is how a rotated-out key is dropped.
func (v *Verifier) SetKeys(keys []string) error {
	m := make(map[string]ed25519.PublicKey, len(keys))
	for _, k := range keys {
		pub, err := decode(k, ed25519.PublicKeySize)
		if err != nil {
			return fmt.Errorf("execsign: cluster key %q: %w", k, err)
		}
		m[KeyID(k)] = ed25519.PublicKey(pub)
	}
	v.mu.Lock()
	v.keys = m
	v.mu.Unlock()
	return nil
}

// HasKeys reports whether any key is trusted.
func (v *Verifier) HasKeys() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.keys) > 0
}

// Verify checks the signature of req, received on the protocol path with body, and returns
// the instance it was signed for ("" when the server did not name one); the caller decides
// whether that instance may make this call. Every error wraps ErrRefused.
func (v *Verifier) Verify(req *http.Request, path string, body []byte) (instance string, err error) {
	f, err := parse(req.Header.Get(Header))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrRefused, err)
	}
	now := v.now().UnixMilli()
	if d := now - f.ts; d > Window.Milliseconds() || d < -Window.Milliseconds() {
		return "", fmt.Errorf("%w: timestamp %d is %d ms away from the executor's clock (at most %v)", ErrRefused, f.ts, d, Window)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	pub, ok := v.keys[f.key]
	if !ok {
		return "", fmt.Errorf("%w: key %s is not a cluster key this executor was given", ErrRefused, f.key)
	}
	if !ed25519.Verify(pub, message(req.Method, path, body, f.ts, f.nonce, f.instance), f.sig) {
		return "", fmt.Errorf("%w: the signature does not match the call", ErrRefused)
	}
	if _, seen := v.nonces[f.nonce]; seen {
		return "", fmt.Errorf("%w: nonce %s was used before (a replayed call)", ErrRefused, f.nonce)
	}
	v.nonces[f.nonce] = f.ts + Window.Milliseconds()
	if len(v.nonces) >= v.nextPrune {
		// Amortised: a nonce past its window can go, since its timestamp is refused anyway.
		for n, until := range v.nonces {
			if until < now {
				delete(v.nonces, n)
			}
		}
		v.nextPrune = max(1024, 2*len(v.nonces))
	}
	return f.instance, nil
}

type fields struct {
	key, nonce, instance string
	ts                   int64
	sig                  []byte
}

func parse(h string) (fields, error) {
	var f fields
	if h == "" {
		return f, errors.New("the call is not signed (no " + Header + " header)")
	}
	rest, ok := strings.CutPrefix(h, version+" ")
	if !ok {
		return f, fmt.Errorf("want a %s signature", version)
	}
	seen := map[string]bool{}
	for part := range strings.SplitSeq(rest, ",") {
		k, val, _ := strings.Cut(part, "=")
		if seen[k] {
			return f, fmt.Errorf("%s given twice", k)
		}
		seen[k] = true
		var err error
		switch k {
		case "key":
			f.key = val
		case "ts":
			f.ts, err = strconv.ParseInt(val, 10, 64)
		case "nonce":
			if len(val) != 32 {
				err = errors.New("want 32 hex digits")
			}
			f.nonce = val
		case "instance":
			f.instance = val
		case "sig":
			f.sig, err = base64.StdEncoding.DecodeString(val)
		default:
			err = errors.New("unknown field")
		}
		if err != nil {
			return f, fmt.Errorf("signature field %q: %w", k, err)
		}
	}
	for _, k := range []string{"key", "ts", "nonce", "instance", "sig"} {
		if !seen[k] {
			return f, fmt.Errorf("signature field %q missing", k)
		}
	}
	return f, nil
}

func decode(k string, size int) ([]byte, error) {
	b64, ok := strings.CutPrefix(k, keyPrefix)
	if !ok {
		return nil, fmt.Errorf("want %s<base64>", keyPrefix)
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, err
	}
	if len(b) != size {
		return nil, fmt.Errorf("want %d bytes, got %d", size, len(b))
	}
	return b, nil
}
