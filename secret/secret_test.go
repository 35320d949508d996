package secret

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func key(b byte) string {
	k := make([]byte, KeyLen)
	for i := range k {
		k[i] = b + byte(i)
	}
	return base64.StdEncoding.EncodeToString(k)
}

func TestSealOpen(t *testing.T) {
	k, err := Parse("k1:" + key(1))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := k.Seal("db-password=hunter2")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "hunter2") || !strings.HasPrefix(sealed, "sdl1:k1:") {
		t.Fatalf("sealed %q", sealed)
	}
	again, _ := k.Seal("db-password=hunter2")
	if again == sealed {
		t.Fatal("two seals of one value are equal: the nonce is not random")
	}
	got, err := k.Open(sealed)
	if err != nil || got != "db-password=hunter2" {
		t.Fatalf("Open = %q, %v", got, err)
	}
}

// TestRotation: a ring with a new primary key seals with it and still opens what the old
// key sealed; a ring without the old key says which key is missing.
func TestRotation(t *testing.T) {
	old, _ := Parse("k1:" + key(1))
	sealed, _ := old.Seal("s3cret")
	rotated, err := Parse("k2:" + key(2) + ",k1:" + key(1))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rotated.Open(sealed); err != nil || got != "s3cret" {
		t.Fatalf("rotated ring opens the old value: %q, %v", got, err)
	}
	resealed, _ := rotated.Seal("s3cret")
	if id, _ := KeyID(resealed); id != "k2" {
		t.Fatalf("sealed under %q, want the primary k2", id)
	}
	only2, _ := Parse("k2:" + key(2))
	if _, err := only2.Open(sealed); err == nil || !strings.Contains(err.Error(), `"k1": that key is not configured`) {
		t.Fatalf("Open without k1: %v", err)
	}
}

// TestWrongKey: a key of the right id but other bytes, or an altered value, is a clear
// error, never garbage.
func TestWrongKey(t *testing.T) {
	right, _ := Parse("k1:" + key(1))
	wrong, _ := Parse("k1:" + key(9))
	sealed, _ := right.Seal("s3cret")
	if got, err := wrong.Open(sealed); err == nil || got != "" || !strings.Contains(err.Error(), "does not open") {
		t.Fatalf("Open with the wrong key = %q, %v", got, err)
	}
	relabelled := strings.Replace(sealed, "sdl1:k1:", "sdl1:k2:", 1)
	both, _ := Parse("k1:" + key(1) + ",k2:" + key(1))
	if _, err := both.Open(relabelled); err == nil {
		t.Fatal("a value relabelled with another key id opened")
	}
	var none *Keyring
	if _, err := none.Seal("x"); !errors.Is(err, ErrNoKey) {
		t.Fatalf("Seal without keys: %v", err)
	}
	if _, err := none.Open(sealed); !errors.Is(err, ErrNoKey) {
		t.Fatalf("Open without keys: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"", "k1", "k1:notbase64!!", "k1:" + base64.StdEncoding.EncodeToString([]byte("short")),
		"bad id:" + key(1), "k1:" + key(1) + ",k1:" + key(2)} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) took it", in)
		} else if strings.Contains(err.Error(), key(1)) {
			t.Errorf("Parse(%q): the error shows the key: %v", in, err)
		}
	}
}

// TestFromFlag: the server's --secret-key is a keyring when it parses as one, else a
// passphrase that derives one key the same way every time.
func TestFromFlag(t *testing.T) {
	k, derived, err := FromFlag("k1:" + key(1))
	if err != nil || derived || k.Primary() != "k1" {
		t.Fatalf("keyring: %v %v %v", k.Primary(), derived, err)
	}
	a, derived, err := FromFlag("a passphrase of some length")
	if err != nil || !derived || a.Primary() != "k0" {
		t.Fatalf("passphrase: %v %v %v", a.Primary(), derived, err)
	}
	b, _, _ := FromFlag("a passphrase of some length")
	sealed, _ := a.Seal("x")
	if got, err := b.Open(sealed); err != nil || got != "x" {
		t.Fatalf("the same passphrase derives another key: %v", err)
	}
	if c, _, _ := FromFlag("another passphrase here"); c != nil {
		if _, err := c.Open(sealed); err == nil {
			t.Fatal("another passphrase opens the value")
		}
	}
	if k, _, err := FromFlag(""); k != nil || err != nil {
		t.Fatalf("empty: %v %v", k, err)
	}
}
