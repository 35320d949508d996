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
	if err := s.Sign(req, path, []byte(body), Target{App: "billing", Instance: instance, Address: "http://executor.example"}, at); err != nil {
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
	to, err := v.Verify(req, "/kill", []byte(body))
	if err != nil || to != (Target{App: "billing", Instance: "i1", Address: "http://executor.example"}) {
		t.Fatalf("a good call: target %+v, err %v", to, err)
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
	for _, field := range []string{"app=billing", "to=http%3A%2F%2Fexecutor.example"} {
		moved := signed(t, s, "/kill", body, "i1", now)
		k, _, _ := strings.Cut(field, "=")
		moved.Header.Set(Header, strings.Replace(moved.Header.Get(Header), field, k+"=other", 1))
		refused("altered "+k, moved, "/kill", body, "does not match")
	}
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

// TestTargetEscaped: a target with commas, equals signs and line breaks is signed and read
// back whole, and cannot be confused with the header's own fields.
func TestTargetEscaped(t *testing.T) {
	now := time.Now()
	s := newSigner(t)
	v := NewVerifier(func() time.Time { return now })
	if err := v.SetKeys([]string{s.Public()}); err != nil {
		t.Fatal(err)
	}
	want := Target{App: "a,instance=x", Instance: "i\n1", Address: "http://h:1/p?q=1,2"}
	req, _ := http.NewRequest(http.MethodPost, "http://x/run", nil)
	if err := s.Sign(req, "/run", nil, want, now); err != nil {
		t.Fatal(err)
	}
	if got, err := v.Verify(req, "/run", nil); err != nil || got != want {
		t.Fatalf("target %+v, %v; want %+v", got, err, want)
	}
	if err := s.Sign(req, "/run", nil, Target{Instance: "i1"}, now); err == nil {
		t.Fatal("a call naming no app was signed")
	}
}

// TestInstanceProof: a request proven by an instance's key passes for that instance and app
// only; one naming another instance, altered, stale or without a proof is refused.
func TestInstanceProof(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	k, other := newInstanceKey(t), newInstanceKey(t)
	body := []byte(`{"results":[]}`)
	proven := func(k *InstanceKey, app string, at time.Time) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, "http://server/api/v1/executor/results", bytes.NewReader(body))
		k.Prove(req, "/api/v1/executor/results", body, app, at)
		return req
	}
	if err := VerifyProof(proven(k, "billing", now), "/api/v1/executor/results", body, "billing", k.ID(), now); err != nil {
		t.Fatalf("a good proof: %v", err)
	}
	if len(k.ID()) != 32 || k.ID() == other.ID() {
		t.Fatalf("instance ids %q, %q: want 32 hex digits, one per key", k.ID(), other.ID())
	}
	refused := func(name string, req *http.Request, path string, body []byte, app, instance, why string) {
		t.Helper()
		err := VerifyProof(req, path, body, app, instance, now)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: got %v, want a refusal saying %q", name, err, why)
		}
	}
	const path = "/api/v1/executor/results"
	refused("another instance's key", proven(other, "billing", now), path, body, "billing", k.ID(), "not")
	refused("another app", proven(k, "billing", now), path, body, "payroll", k.ID(), "does not match")
	refused("altered body", proven(k, "billing", now), path, []byte(`{"results":[1]}`), "billing", k.ID(), "does not match")
	refused("another path", proven(k, "billing", now), "/api/v1/executor/logs", body, "billing", k.ID(), "does not match")
	refused("stale", proven(k, "billing", now.Add(-Window-time.Millisecond)), path, body, "billing", k.ID(), "away from")
	bare, _ := http.NewRequest(http.MethodPost, "http://server"+path, nil)
	refused("no proof", bare, path, body, "billing", k.ID(), "without a proof")
}

func newInstanceKey(t *testing.T) *InstanceKey {
	t.Helper()
	k, err := NewInstanceKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}
