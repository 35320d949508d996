package main

import (
	"encoding/json"
	"os/exec"
	"strings"
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
	if r.Nodes != 2 || r.Duplicates != 0 || r.Missing != 0 || r.Fires == 0 {
		// How many fires a loaded machine manages is the benchmark's to measure, not a test's.
		t.Errorf("%s: want 2 nodes, some fires, 0 duplicates and 0 missing", r)
	}
}

// TestBenchScale runs `sundial bench scale` small on PostgreSQL, its node in a process of its
// own, and checks what it reports per size: the stored count, fires each once, a node start
// time and the node process's peak memory, costs per fire, and an acquisition planned on the
// due index.
func TestBenchScale(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a few seconds of real time")
	}
	dsn := testdb.DSN(t, "postgres")
	bin := buildBinary(t, t.TempDir())
	out, err := exec.Command(bin, "bench", "scale", "--db", dsn, "--stored", "3000,20000", "--triggers", "50",
		"--interval", "200ms", "--warmup", "500ms", "--duration", "2s", "-o", "json").Output()
	if err != nil {
		t.Fatalf("sundial bench scale: %v\n%s", err, out)
	}
	var results []bench.Result
	if err := json.Unmarshal(out, &results); err != nil || len(results) != 2 {
		t.Fatalf("output %s: %v", out, err)
	}
	for i, r := range results {
		t.Log(r)
		s := r.Scale
		if r.Stored != []int{3000, 20000}[i] || s == nil || !s.NodeProcess || s.NodeStart <= 0 || s.LoadRate <= 0 {
			t.Errorf("%s: want %d stored, a node process and its start time", r, []int{3000, 20000}[i])
			continue
		}
		if r.Duplicates != 0 || r.Missing != 0 || r.Fires == 0 || r.StatementsPerFire <= 0 || r.CPUPer1000Fires <= 0 || r.RSSMiB <= 0 {
			t.Errorf("%s: want some fires, each once, and their cost", r)
		}
		if !s.AcquireIndex {
			t.Errorf("%d stored: the due triggers' lock is not planned on the due index:\n%s", r.Stored, s.AcquirePlan)
		}
	}
}

// TestBenchRemote runs `sundial bench remote` small on its default SQLite store and checks
// the command's wiring and correctness only: every fire of the window started once on an
// executor and its execution completed.
func TestBenchRemote(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a few seconds of real time")
	}
	code, out, errOut := runCLI(t, "", "bench", "remote", "--triggers", "20", "--interval", "200ms", "--warmup", "500ms",
		"--duration", "1s", "--executors", "3", "--routing", "least_recently_used", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var results []bench.Result
	if err := json.Unmarshal([]byte(out), &results); err != nil || len(results) != 1 {
		t.Fatalf("output %s: %v", out, err)
	}
	r := results[0]
	if r.Scenario != "remote" || r.Duplicates != 0 || r.Missing != 0 || r.Incomplete != 0 || r.Fires == 0 {
		t.Errorf("%s: want some fires, 0 duplicates, 0 missing and 0 incomplete", r)
	}
}

func TestBenchRemoteBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--routing", "sharding_broadcast"},
		{"--routing", "nearest"},
		{"--executors", "0"},
		{"--processes", "1"},
	} {
		code, _, errOut := runCLI(t, "", append([]string{"bench", "remote"}, args...)...)
		if code != 2 || !strings.Contains(errOut, args[0]) {
			t.Errorf("%v: exit %d, stderr %q: want 2 and a message naming %s", args, code, errOut, args[0])
		}
	}
}

// TestBenchOverload runs `sundial bench overload` tiny on its default SQLite store (two
// handler slots of 50 ms: a capacity of about 40 fires/s) and checks the command's wiring:
// the report's fields come out, from a capacity it measured.
func TestBenchOverload(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a few seconds of real time")
	}
	code, out, errOut := runCLI(t, "", "bench", "overload", "--ramp-from", "10", "--ramp-step", "1s", "--ramp-hold", "1s", "--work", "50ms", "--max-running", "2",
		"--duration", "2s", "--max-drain", "1m", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var results []bench.Result
	if err := json.Unmarshal([]byte(out), &results); err != nil || len(results) != 1 {
		t.Fatalf("output %s: %v", out, err)
	}
	r := results[0]
	o := r.Overload
	if r.Scenario != "overload" || o == nil || o.Capacity <= 0 || o.Hold == nil || o.Hold.Achieved != o.Capacity || len(o.Windows) != 2 || o.HeartbeatWrites == 0 || !o.Drained || r.Duplicates != 0 {
		t.Errorf("%s: want a measured capacity, two windows, timed heartbeats, a drain and no duplicate", r)
	}
}

func TestBenchOverloadBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--factor", "0"},
		{"--ramp-from", "0"},
		{"--ramp-step", "10ms"},
		{"--ramp-hold", "10ms"},
		{"--interval", "0s"},
		{"--duration", "100ms"},
		{"--processes", "1"},
	} {
		code, _, errOut := runCLI(t, "", append([]string{"bench", "overload"}, args...)...)
		if code != 2 || !strings.Contains(errOut, args[0]) {
			t.Errorf("%v: exit %d, stderr %q: want 2 and a message naming %s", args, code, errOut, args[0])
		}
	}
}

// TestBenchHistory runs `sundial bench history` small on every database and checks what it
// read: full pages, a day's rows deleted by retention (on PostgreSQL as a dropped partition),
// the plans on PostgreSQL. Timings are the benchmark's to measure, not a test's.
func TestBenchHistory(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			dsn := testdb.DSN(t, dialect)
			code, out, errOut := runCLI(t, "", "bench", "history", "--db", dsn, "--rows", "3000", "--jobs", "10",
				"--repeat", "1", "--triggers", "0", "-o", "json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var r bench.HistoryResult
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("output %s: %v", out, err)
			}
			if r.Rows != 3000 || r.Days != 30 {
				t.Errorf("%d rows over %d days, want 3000 over 30", r.Rows, r.Days)
			}
			for _, q := range r.Reads {
				if strings.HasPrefix(q.Name, "list") || strings.HasPrefix(q.Name, "by job") {
					if q.Rows != 50 {
						t.Errorf("%s: %d rows, want a full page of 50", q.Name, q.Rows)
					}
				}
			}
			if r.Retention.Deleted != 100 {
				t.Errorf("retention of one day deleted %d rows, want 100 (3000 over 30 days)", r.Retention.Deleted)
			}
			if (r.Partitions > 0) != (dialect == "postgres") || (len(r.Plans) > 0) != (dialect == "postgres") {
				t.Errorf("%d partitions, %d plans on %s", r.Partitions, len(r.Plans), dialect)
			}
		})
	}
}

func TestBenchHistoryBadInput(t *testing.T) {
	db := t.TempDir() + "/h.db"
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--db", db, "--rows", "0"}, "--rows"},
		{[]string{"--db", db, "--days", "2"}, "--days"},
		{[]string{"--db", db, "-o", "yaml"}, "-o"},
		{nil, "--db"},
	} {
		code, _, errOut := runCLI(t, "", append([]string{"bench", "history"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.flag) {
			t.Errorf("%v: exit %d, stderr %q: want 2 and a message naming %s", c.args, code, errOut, c.flag)
		}
	}
}

// TestBenchMap runs `sundial bench map` tiny on its default SQLite store, in both outputs:
// every sub-task ran once and the reduce saw them all.
func TestBenchMap(t *testing.T) {
	code, out, errOut := runCLI(t, "", "bench", "map", "--subtasks", "40", "--executors", "2", "--map-batch", "7", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r bench.MapResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output %s: %v", out, err)
	}
	if r.Subtasks != 40 || r.Executors != 2 || r.Reduced != 40 || r.Duplicates != 0 || r.Missing != 0 {
		t.Errorf("%s: want 40 sub-tasks over 2 executors, 40 reduced, none duplicated or missing", r)
	}
	code, out, errOut = runCLI(t, "", "bench", "map", "--subtasks", "10", "--executors", "1")
	if code != 0 || !strings.HasPrefix(out, "map: 10 sub-tasks over 1 executors") || strings.Count(out, "\n") != 1 {
		t.Errorf("table: exit %d, stdout %q, stderr %s: want one line for 10 sub-tasks", code, out, errOut)
	}
	for _, args := range [][]string{{"--subtasks", "0"}, {"--executors", "0"}, {"-o", "yaml"}} {
		code, _, errOut := runCLI(t, "", append([]string{"bench", "map"}, args...)...)
		if code != 2 || !strings.Contains(errOut, args[0]) {
			t.Errorf("%v: exit %d, stderr %q: want 2 and a message naming %s", args, code, errOut, args[0])
		}
	}
}
