package chaos

import (
	"context"
	"os"
	"os/exec"
	"strings"
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

// TestPostgresFailover runs the cluster on a PostgreSQL primary with a synchronous standby
// (streaming replication set up with pg_basebackup), the nodes given a DSN naming both
// servers with target_session_attrs=read-write; 12 s into the load the primary is killed with
// SIGKILL and the standby promoted. The nodes must reconnect by themselves: every fire once
// (0 double, 0 missing, 0 stuck, 0 zombie), and no run of the ledger the database forgot (a
// commit acknowledged by the primary and not on the standby). Enabled by SUNDIAL_CHAOS, like
// TestChaos; about two minutes.
func TestPostgresFailover(t *testing.T) {
	if os.Getenv("SUNDIAL_CHAOS") == "" {
		t.Skip("set SUNDIAL_CHAOS=short to run the chaos suite (docs/chaos.md)")
	}
	for _, tool := range []string{"pg_ctl", "pg_basebackup"} {
		if _, err := exec.LookPath(postgresBin() + "/" + tool); err != nil {
			t.Fatalf("%s is needed for the failover run: %v", tool, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{Dialect: "postgres", Failover: true, Triggers: 60, Load: 40 * time.Second,
		Settle: 20 * time.Second, Log: testWriter{t}, Keep: os.Getenv("SUNDIAL_CHAOS_KEEP") != ""})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.String())
	if len(rep.Faults) == 0 || !strings.Contains(rep.Faults[0].What, "promote the standby") {
		t.Errorf("faults %+v: want the failover", rep.Faults)
	}
	if rep.Runs == 0 {
		t.Error("nothing ran")
	}
	if failed := rep.Failed(); len(failed) > 0 {
		t.Errorf("targets missed across the failover: %v", failed)
	}
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b[:len(b)-1]))
	return len(b), nil
}
