package server

import (
	"testing"
)

// TestCheckPassword: the strength estimate refuses what a length rule would let through.
func TestCheckPassword(t *testing.T) {
	for _, weak := range []string{"short1!", "password1234", "qwertyuiop123", "aaaaaaaaaaaaaaaa", "alice-alice-1", "123456789012"} {
		if err := checkPassword("password", weak, "alice"); err == nil {
			t.Errorf("%q: accepted, want refused", weak)
		}
	}
	for _, strong := range []string{"violet-Harbor-ana-Quince-81", "Granite-Lantern-Wobble-52", "correct horse battery staple"} {
		if err := checkPassword("password", strong, "alice"); err != nil {
			t.Errorf("%q: %v, want accepted", strong, err)
		}
	}
	// The first-start admin's generated password meets the rule it imposes on everyone.
	for range 50 {
		if pw := randomPassword(); checkPassword("password", pw, "admin") != nil {
			t.Fatalf("generated password %q is refused", pw)
		}
	}
}
