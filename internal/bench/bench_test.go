package bench

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/internal/testdb"
)

// TestScenariosSmoke runs every scenario small on every database and checks correctness
// only — no duplicate and no missing fire. Timing is measured by `sundial bench`, never
// asserted here.
func TestScenariosSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a few seconds of real time per database")
	}
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			// Warnings only: the remote scenario's servers log every HTTP request at info.
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			opts := Options{DSN: testdb.DSN(t, dialect), Logger: log}
			ctx := context.Background()
			check := func(r Result, err error, wantFires int) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", r.Scenario, err)
				}
				if r.Duplicates != 0 || r.Missing != 0 {
					t.Errorf("%s: %d duplicates, %d missing", r, r.Duplicates, r.Missing)
				}
				if r.Fires < wantFires {
					t.Errorf("%s: %d fires, want at least %d", r.Scenario, r.Fires, wantFires)
				}
				if r.StatementsPerFire <= 0 {
					t.Errorf("%s: no store statements counted", r.Scenario)
				}
				t.Log(r)
			}
			steady := SteadyConfig{Triggers: 20, Interval: 100 * time.Millisecond, Warmup: 500 * time.Millisecond, Duration: time.Second}
			if testdb.RaceEnabled {
				steady.Triggers = 5
			}
			// How many fires a loaded machine starts in the window is the benchmark's to
			// measure; the test asks for some, each once. Only the backlog has a count that
			// must be reached: all of it.
			r, err := Steady(ctx, opts, steady)
			check(r, err, 1)
			// The scale scenario: the same load on 320 then 600 stored triggers, bulk-loaded;
			// its node in this process.
			rs, err := Scale(ctx, opts, ScaleConfig{Stored: []int{steady.Triggers + 300, steady.Triggers + 580},
				Firing: steady.Triggers, Interval: steady.Interval, Warmup: steady.Warmup, Duration: steady.Duration})
			if len(rs) != 2 {
				t.Fatalf("scale: %d results, %v", len(rs), err)
			}
			for _, r := range rs {
				check(r, err, 1)
				if r.Scale.NodeStart <= 0 || r.Scale.LoadRate <= 0 || !r.Scale.AcquireIndex {
					t.Errorf("%s: want a start time, a load rate and the due index (plan %q)", r, r.Scale.AcquirePlan)
				}
			}
			// remote: the same kind of load through a server and two SDK executors over HTTP.
			remote := RemoteConfig{SteadyConfig: SteadyConfig{Triggers: 50, Interval: 200 * time.Millisecond,
				Warmup: 500 * time.Millisecond, Duration: 2 * time.Second}, Executors: 2}
			if testdb.RaceEnabled {
				remote.Triggers = 10
			}
			r, err = Remote(ctx, opts, remote)
			check(r, err, 1)
			if r.Incomplete != 0 {
				t.Errorf("%s: %d runs of the window did not complete", r, r.Incomplete)
			}
			r, err = Backlog(ctx, opts, BacklogConfig{Fires: 300, MaxWait: time.Minute})
			check(r, err, 300)
			r, err = Schedule(ctx, opts, ScheduleConfig{Jobs: 20})
			if err != nil || r.InsertRate <= 0 || r.BatchRate <= 0 {
				t.Errorf("schedule: %v, %v", r, err)
			}
		})
	}
}
