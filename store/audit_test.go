package store_test

import (
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// TestRedactJSON: secrets are masked at any depth, the rest is kept.
func TestRedactJSON(t *testing.T) {
	got, err := store.RedactJSON(map[string]any{"name": "j", "data": map[string]any{"db_password": "hunter2",
		"nested": []any{map[string]any{"api_token": "sdl_x", "ok": 1}}}, "password_hash": "$2a$"})
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2", "sdl_x", "$2a$"} {
		if strings.Contains(got, secret) {
			t.Errorf("%s: %q is not redacted", got, secret)
		}
	}
	if !strings.Contains(got, `"name":"j"`) || !strings.Contains(got, `"ok":1`) {
		t.Errorf("%s: lost what is not secret", got)
	}
}
