// Package execsign signs the executor channel in both directions. The server's calls to
// executors (/run, /kill, /beat, /idle-beat) are signed with the cluster's Ed25519 key and
// verified on the executor; an executor instance's requests to the server are signed with the
// instance's own key (instance.go), whose digest is the instance's id. It is the one
// implementation of the schemes in docs/executor-protocol.md ("Signed calls", "Instance
// proof"), used by dispatch and the server, and by the executor SDK.
//
// The two directions use different credentials on purpose: an executor proves its app with
// its bearer credential and its instance with its key, and the server proves itself to the
// executor with a signature. No secret of either side travels with a call to an executor, so
// an executor address pointed at someone else's listener learns nothing it could use: a
// signature covers one method, path, body, time, nonce and target (app, instance, and address
// when no instance is named), and the executor takes each nonce once within the replay window.
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
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Header carries the signature of a server → executor call:
//
//	Sundial-Signature: v2 key=<key id>,ts=<unix ms>,nonce=<32 hex>,app=<app>,instance=<instance>,to=<address>,sig=<base64>
//
// app, instance and to are query-escaped (no comma or line break is left in them).
const Header = "Sundial-Signature"

// Window is how far a call's timestamp may be from the executor's clock, either way. A call
// older than that is refused, so its nonce need be remembered only that long.
const Window = 60 * time.Second

const (
	version   = "v2"
	domain    = "sundial-executor-call-v2"
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

// Target is what a call is meant for, inside its signature: the app whose executor is to
// take it, the executor instance (its id; "" when the caller does not know it yet), and the
// address the call is sent to (the executor's base URL, without a trailing slash), by which
// an executor takes a call that names no instance only when it is sent to it.
type Target struct {
	App, Instance, Address string
}

// Sign sets the signature header of req, a call to target on path (the protocol path, e.g.
// /run: not the address's prefix, which a proxy in front of the executor may strip) with
// body, at now. Every call needs its own Sign: a repeat with the same nonce is refused as a
// replay.
func (s *Signer) Sign(req *http.Request, path string, body []byte, to Target, now time.Time) error {
	if to.App == "" {
		return errors.New("execsign: a call must name the app it is meant for")
	}
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		return fmt.Errorf("execsign: nonce: %w", err)
	}
	nonce, ts := hex.EncodeToString(n[:]), now.UnixMilli()
	app, inst, addr := url.QueryEscape(to.App), url.QueryEscape(to.Instance), url.QueryEscape(to.Address)
	sig := ed25519.Sign(s.priv, message(req.Method, path, body, ts, nonce, app, inst, addr))
	req.Header.Set(Header, fmt.Sprintf("%s key=%s,ts=%d,nonce=%s,app=%s,instance=%s,to=%s,sig=%s",
		version, s.id, ts, nonce, app, inst, addr, base64.StdEncoding.EncodeToString(sig)))
	return nil
}

// message is what a signature covers. The body enters by its digest, so the message has a
// fixed shape whatever the body holds; the target's fields enter escaped, so no line break.
func message(method, path string, body []byte, ts int64, nonce string, target ...string) []byte {
	digest := sha256.Sum256(body)
	return []byte(strings.Join(append([]string{domain, method, path, hex.EncodeToString(digest[:]),
		strconv.FormatInt(ts, 10), nonce}, target...), "\n"))
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
// the target it was signed for; the caller decides whether it is the one meant (see
// Target). Every error wraps ErrRefused.
func (v *Verifier) Verify(req *http.Request, path string, body []byte) (Target, error) {
	f, err := parse(req.Header.Get(Header))
	if err != nil {
		return Target{}, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	now := v.now().UnixMilli()
	if d := now - f.ts; d > Window.Milliseconds() || d < -Window.Milliseconds() {
		return Target{}, fmt.Errorf("%w: timestamp %d is %d ms away from the executor's clock (at most %v)", ErrRefused, f.ts, d, Window)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	pub, ok := v.keys[f.key]
	if !ok {
		return Target{}, fmt.Errorf("%w: key %s is not a cluster key this executor was given", ErrRefused, f.key)
	}
	if !ed25519.Verify(pub, message(req.Method, path, body, f.ts, f.nonce, f.app, f.instance, f.to), f.sig) {
		return Target{}, fmt.Errorf("%w: the signature does not match the call", ErrRefused)
	}
	if _, seen := v.nonces[f.nonce]; seen {
		return Target{}, fmt.Errorf("%w: nonce %s was used before (a replayed call)", ErrRefused, f.nonce)
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
	var t Target
	for _, p := range []struct {
		to  *string
		esc string
	}{{&t.App, f.app}, {&t.Instance, f.instance}, {&t.Address, f.to}} {
		if *p.to, err = url.QueryUnescape(p.esc); err != nil {
			return Target{}, fmt.Errorf("%w: target %q: %w", ErrRefused, p.esc, err)
		}
	}
	return t, nil
}

type fields struct {
	key, nonce, app, instance, to string
	ts                            int64
	sig                           []byte
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
		case "app":
			f.app = val
		case "instance":
			f.instance = val
		case "to":
			f.to = val
		case "sig":
			f.sig, err = base64.StdEncoding.DecodeString(val)
		default:
			err = errors.New("unknown field")
		}
		if err != nil {
			return f, fmt.Errorf("signature field %q: %w", k, err)
		}
	}
	for _, k := range []string{"key", "ts", "nonce", "app", "instance", "to", "sig"} {
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
