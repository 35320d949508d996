package setting

import (
	"strings"
	"testing"
	"time"
)

func TestOne(t *testing.T) {
	for _, tc := range []struct {
		a, b, want time.Duration
		err        bool
	}{
		{0, 0, 0, false},
		{time.Second, 0, time.Second, false},
		{0, time.Second, time.Second, false},
		{time.Second, time.Second, time.Second, false},
		{time.Second, time.Minute, 0, true},
	} {
		got, err := One("A", tc.a, "B", tc.b)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("One(%v, %v) = %v, %v; want %v, error %v", tc.a, tc.b, got, err, tc.want, tc.err)
		}
		if err != nil && (!strings.Contains(err.Error(), "A (1s)") || !strings.Contains(err.Error(), "B (1m0s)")) {
			t.Errorf("error %q does not name both settings and values", err)
		}
	}
}
