package chaos

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestChaos is the short chaos run on PostgreSQL and on MariaDB, each with a server of its
// own. It runs only when SUNDIAL_CHAOS is set ("short"): it needs the database binaries and
// about three minutes per database.
func TestChaos(t *testing.T) {
	mode := os.Getenv("SUNDIAL_CHAOS")
	if mode == "" {
		t.Skip("set SUNDIAL_CHAOS=short to run the chaos suite (docs/chaos.md)")
	}
	for _, dialect := range []string{"postgres", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			need := map[string]string{"postgres": postgresBin() + "/pg_ctl", "mysql": "mariadbd"}[dialect]
			if _, err := exec.LookPath(need); err != nil {
				t.Fatalf("%s is needed for the %s chaos run: %v", need, dialect, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			rep, err := Run(ctx, Options{Dialect: dialect, Log: testWriter{t}, Keep: os.Getenv("SUNDIAL_CHAOS_KEEP") != ""})
			if err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + rep.String())
			if failed := rep.Failed(); len(failed) > 0 {
				t.Errorf("targets missed on %s: %v", dialect, failed)
			}
		})
	}
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b[:len(b)-1]))
	return len(b), nil
}
