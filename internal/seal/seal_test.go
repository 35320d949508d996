package seal

import (
	"errors"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	b, err := New("a passphrase of some length")
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.Seal("tok-123", "billing")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s, "tok-123") {
		t.Fatalf("sealed value %q shows the secret", s)
	}
	if got, err := b.Open(s, "billing"); err != nil || got != "tok-123" {
		t.Fatalf("Open = %q, %v; want tok-123", got, err)
	}
	if _, err := b.Open(s, "other"); err == nil {
		t.Fatal("a value sealed for billing opened for another app")
	}
	other, _ := New("another passphrase")
	if _, err := other.Open(s, "billing"); err == nil {
		t.Fatal("a value opened under another key")
	}
	none, _ := New("")
	if _, err := none.Seal("x", "a"); !errors.Is(err, ErrNoKey) {
		t.Fatalf("Seal without a key: %v, want ErrNoKey", err)
	}
}
