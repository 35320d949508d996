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
	"time"
)

// Instance proof: an executor process makes an Ed25519 key pair at start, and its instance id
// is the digest of the public key. Each of its requests to the server (register, logs,
// results, unregister) carries the public key and a signature over the request, so the
// server checks that the sender holds the key of the instance it names without having stored
// anything: an instance id read from the executor list (ids are not secret) is worth nothing
// without the key. The same key can prove the instance over any transport (a stream opened
// by the executor signs its opening the same way).

// ProofHeader carries an instance's proof on an executor → server request:
//
//	Sundial-Executor-Proof: v1 key=<base64 public key>,ts=<unix ms>,sig=<base64>
const ProofHeader = "Sundial-Executor-Proof"

const (
	proofVersion = "v1"
	proofDomain  = "sundial-executor-report-v1"
	instanceTag  = "sundial-executor-instance-v1\n"
)

// InstanceKey is an executor instance's key pair.
type InstanceKey struct {
	priv ed25519.PrivateKey
	pub  string // base64
	id   string
}

// NewInstanceKey makes a key pair for a new executor process.
func NewInstanceKey() (*InstanceKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("execsign: generate an instance key: %w", err)
	}
	return &InstanceKey{priv: priv, pub: base64.StdEncoding.EncodeToString(pub), id: instanceID(pub)}, nil
}

// ID is the instance id the key proves: 32 hex digits of the public key's digest.
func (k *InstanceKey) ID() string { return k.id }

func instanceID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(append([]byte(instanceTag), pub...))
	return hex.EncodeToString(sum[:16])
}

// Prove sets the proof header of req, a request of the instance of app to the server on path
// (the protocol path, e.g. /api/v1/executor/results) with body, at now.
func (k *InstanceKey) Prove(req *http.Request, path string, body []byte, app string, now time.Time) {
	ts := now.UnixMilli()
	sig := ed25519.Sign(k.priv, proofMessage(req.Method, path, body, ts, app, k.id))
	req.Header.Set(ProofHeader, fmt.Sprintf("%s key=%s,ts=%d,sig=%s", proofVersion, k.pub, ts,
		base64.StdEncoding.EncodeToString(sig)))
}

func proofMessage(method, path string, body []byte, ts int64, app, instance string) []byte {
	digest := sha256.Sum256(body)
	return []byte(strings.Join([]string{proofDomain, method, path, hex.EncodeToString(digest[:]),
		strconv.FormatInt(ts, 10), strconv.Quote(app), instance}, "\n"))
}

// VerifyProof checks that req (received on path with body, from an executor of app naming
// itself instance) carries a proof by the key of that instance, made within Window of now.
// Every error wraps ErrRefused.
//
// A proof may be replayed within the window, but only with the request it signs: the same
// output lines or result again, which the server takes once.
func VerifyProof(req *http.Request, path string, body []byte, app, instance string, now time.Time) error {
	h := req.Header.Get(ProofHeader)
	if h == "" {
		return fmt.Errorf("%w: instance %q names itself without a proof (no %s header)", ErrRefused, instance, ProofHeader)
	}
	rest, ok := strings.CutPrefix(h, proofVersion+" ")
	if !ok {
		return fmt.Errorf("%w: want a %s instance proof", ErrRefused, proofVersion)
	}
	var pub, sig []byte
	var ts int64
	seen := map[string]bool{}
	for part := range strings.SplitSeq(rest, ",") {
		k, val, _ := strings.Cut(part, "=")
		var err error
		switch {
		case seen[k]:
			err = errors.New("given twice")
		case k == "key":
			pub, err = base64.StdEncoding.DecodeString(val)
			if err == nil && len(pub) != ed25519.PublicKeySize {
				err = fmt.Errorf("want %d bytes, got %d", ed25519.PublicKeySize, len(pub))
			}
		case k == "ts":
			ts, err = strconv.ParseInt(val, 10, 64)
		case k == "sig":
			sig, err = base64.StdEncoding.DecodeString(val)
		default:
			err = errors.New("unknown field")
		}
		if err != nil {
			return fmt.Errorf("%w: proof field %q: %w", ErrRefused, k, err)
		}
		seen[k] = true
	}
	if pub == nil || sig == nil || !seen["ts"] {
		return fmt.Errorf("%w: the proof needs key, ts and sig", ErrRefused)
	}
	if got := instanceID(pub); got != instance {
		return fmt.Errorf("%w: the proof's key is instance %s's, not %q's", ErrRefused, got, instance)
	}
	if d := now.UnixMilli() - ts; d > Window.Milliseconds() || d < -Window.Milliseconds() {
		return fmt.Errorf("%w: proof time %d is %d ms away from the server's clock (at most %v)", ErrRefused, ts, d, Window)
	}
	if !ed25519.Verify(pub, proofMessage(req.Method, path, body, ts, app, instance), sig) {
		return fmt.Errorf("%w: the proof does not match the request", ErrRefused)
	}
	return nil
}
