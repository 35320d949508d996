package execsign

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func newSigner(t *testing.T) *Signer {
	t.Helper()
	priv, pub, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	if s.Public() != pub {
		t.Fatalf("the signer's public key %q is not the one made with it, %q", s.Public(), pub)
	}
	return s
}

func signed(t *testing.T, s *Signer, path, body, instance string, at time.Time) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://executor.example"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sign(req, path, []byte(body), instance, at); err != nil {
		t.Fatal(err)
	}
	return req
}

// TestVerify: a signed call passes once; a replay, an altered body, path or method, a call
// signed by another cluster's key, a stale one and an unsigned one are refused.
func TestVerify(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	s, other := newSigner(t), newSigner(t)
	v := NewVerifier(func() time.Time { return now })
	body := `{"execution_id":42}`
	if _, err := v.Verify(signed(t, s, "/kill", body, "i1", now), "/kill", []byte(body)); !errors.Is(err, ErrRefused) {
		t.Fatalf("a verifier with no key took a call: %v", err)
	}
	if err := v.SetKeys([]string{s.Public()}); err != nil {
		t.Fatal(err)
	}
	req := signed(t, s, "/kill", body, "i1", now)
	inst, err := v.Verify(req, "/kill", []byte(body))
	if err != nil || inst != "i1" {
		t.Fatalf("a good call: instance %q, err %v", inst, err)
	}
	refused := func(name string, req *http.Request, path, body string, why string) {
		t.Helper()
		_, err := v.Verify(req, path, []byte(body))
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: got %v, want a refusal saying %q", name, err, why)
		}
	}
	refused("replay", req, "/kill", body, "replayed")
	refused("altered body", signed(t, s, "/kill", body, "i1", now), "/kill", `{"execution_id":43}`, "does not match")
	refused("altered path", signed(t, s, "/kill", body, "i1", now), "/run", body, "does not match")
	moved := signed(t, s, "/kill", body, "i1", now)
	moved.Header.Set(Header, strings.Replace(moved.Header.Get(Header), "instance=i1", "instance=i2", 1))
	refused("altered instance", moved, "/kill", body, "does not match")
	get := signed(t, s, "/kill", body, "i1", now)
	get.Method = http.MethodGet
	refused("altered method", get, "/kill", body, "does not match")
	refused("another cluster's key", signed(t, other, "/kill", body, "i1", now), "/kill", body, "not a cluster key")
	refused("stale", signed(t, s, "/kill", body, "i1", now.Add(-Window-time.Millisecond)), "/kill", body, "away from")
	refused("from the future", signed(t, s, "/kill", body, "i1", now.Add(Window+time.Millisecond)), "/kill", body, "away from")
	unsigned, _ := http.NewRequest(http.MethodPost, "http://executor.example/kill", bytes.NewReader([]byte(body)))
	refused("unsigned", unsigned, "/kill", body, "not signed")

	// Rotation: the executor is given the new key beside the old, then the new alone.
	if err := v.SetKeys([]string{other.Public(), s.Public()}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []*Signer{s, other} {
		if _, err := v.Verify(signed(t, k, "/beat", "{}", "", now), "/beat", []byte("{}")); err != nil {
			t.Fatalf("during a rotation both keys must pass: %v", err)
		}
	}
	if err := v.SetKeys([]string{other.Public()}); err != nil {
		t.Fatal(err)
	}
	refused("a rotated-out key", signed(t, s, "/beat", "{}", "", now), "/beat", "{}", "not a cluster key")
}

// TestNonceCacheForgets: nonces past the window are forgotten (the cache stays bounded),
// and a call that old is refused by its timestamp anyway.
func TestNonceCacheForgets(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	s := newSigner(t)
	v := NewVerifier(func() time.Time { return now })
	if err := v.SetKeys([]string{s.Public()}); err != nil {
		t.Fatal(err)
	}
	for range 1500 {
		if _, err := v.Verify(signed(t, s, "/beat", "{}", "", now), "/beat", []byte("{}")); err != nil {
			t.Fatal(err)
		}
		now = now.Add(100 * time.Millisecond)
	}
	v.mu.Lock()
	n := len(v.nonces)
	v.mu.Unlock()
	// 1,500 calls over 150 s: only about the last Window's worth (600) may be kept, plus those
	// since the last prune.
	if n > 1100 {
		t.Fatalf("%d nonces kept after 150 s of calls; want the old ones forgotten", n)
	}
}

func TestSignRefusesUnsignableInstance(t *testing.T) {
	s := newSigner(t)
	req, _ := http.NewRequest(http.MethodPost, "http://x/run", nil)
	if err := s.Sign(req, "/run", nil, "a,b", time.Now()); err == nil {
		t.Fatal("an instance id with a comma was signed")
	}
}
