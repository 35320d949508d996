package bench

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/internal/testdb"
)

// TestSteadyWritesPerFire runs the in-process steady scenario with the store's operation
// counts and logs where a fire's statements and transactions go (docs/performance.md,
// "Writes per fire", quotes such runs).
func TestSteadyWritesPerFire(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			opts := Options{DSN: testdb.DSN(t, dialect), Logger: log, Operations: true}
			triggers := 1000
			if n, err := strconv.Atoi(os.Getenv("SUNDIAL_BENCH_TRIGGERS")); err == nil && n > 0 {
				triggers = n
			}
			cfg := SteadyConfig{Triggers: triggers, Interval: time.Second, Warmup: time.Second, Duration: 3 * time.Second}
			r, err := Steady(context.Background(), opts, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s\n%s", r, r.OperationsTable())
			if r.Fires == 0 || len(r.Operations) == 0 {
				t.Fatalf("nothing measured: %s", r)
			}
		})
	}
}
