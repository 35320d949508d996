package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/internal/testdb"
)

type readyOut struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
}

func (e *env) ready() (int, readyOut) {
	e.t.Helper()
	resp := e.raw("GET", "/readyz", "", nil, nil)
	defer resp.Body.Close()
	var out readyOut
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		e.t.Fatalf("readyz body: %v", err)
	}
	return resp.StatusCode, out
}

// TestReadyzDatabaseCut: while the network to the database is cut, /readyz answers 503 and
// names the database, /healthz (liveness) still answers 200, and once the network is back the
// node is ready again by itself.
func TestReadyzDatabaseCut(t *testing.T) {
	for _, dialect := range []string{"postgres", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			dsn, proxy := testdb.Proxied(t, dialect)
			e := newEnvOn(t, openDSN(t, dsn), nil, nil)
			if code, out := e.ready(); code != 200 || out.Checks["database"] != "ok" {
				t.Fatalf("readyz before the cut: %d %+v", code, out)
			}
			if err := proxy.Cut(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			code, out := e.ready()
			if code != 503 || out.Status != "unavailable" || out.Checks["database"] == "ok" || out.Checks["engine"] != "ok" {
				t.Fatalf("readyz with the database cut: %d %+v", code, out)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("readyz took %s to say the database is unreachable", took)
			}
			if resp := e.raw("GET", "/healthz", "", nil, nil); resp.StatusCode != 200 {
				t.Fatalf("healthz with the database cut: %d, want 200 (liveness only)", resp.StatusCode)
			}
			if err := proxy.Heal(); err != nil {
				t.Fatal(err)
			}
			// The pool reconnects on its own; each probe waits for the database's answer.
			deadline := time.Now().Add(30 * time.Second)
			for {
				code, out := e.ready()
				if code == 200 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("readyz 30 s after the network came back: %d %+v", code, out)
				}
			}
		})
	}
}
