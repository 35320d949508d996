package main

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/sundial-scheduler/sundial/internal/bench"
	"github.com/sundial-scheduler/sundial/internal/testdb"
)

// TestBenchSeparateProcesses runs the steady scenario with a second node in its own process
// (`sundial bench node`) on PostgreSQL and checks correctness only: every fire of the window
// ran once, whichever process ran it.
func TestBenchSeparateProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a few seconds of real time")
	}
	dsn := testdb.DSN(t, "postgres")
	bin := buildBinary(t, t.TempDir())
	out, err := exec.Command(bin, "bench", "steady", "--db", dsn, "--processes", "1", "--triggers", "20",
		"--interval", "100ms", "--warmup", "500ms", "--duration", "2s", "-o", "json").Output()
	if err != nil {
		t.Fatalf("sundial bench: %v\n%s", err, out)
	}
	var results []bench.Result
	if err := json.Unmarshal(out, &results); err != nil || len(results) != 1 {
		t.Fatalf("output %s: %v", out, err)
	}
	r := results[0]
	if r.Nodes != 2 || r.Duplicates != 0 || r.Missing != 0 || r.Fires < 300 {
		t.Errorf("%s: want 2 nodes, 0 duplicates, 0 missing and about 400 fires", r)
	}
}
