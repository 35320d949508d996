package sundial_test

import (
	"context"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/teststore"
)

// An in-process handler reads its run's data interval and backfill from its context
// (sundial.ExecutionFrom): here the two runs of a backfill over two nightly fires.
func TestHandlerSeesDataInterval(t *testing.T) {
	ctx := context.Background()
	st := teststore.Open(t, "sqlite")
	s, err := sundial.New(sundial.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	runs := make(chan sundial.Execution, 4)
	s.Register("nightly", func(ctx context.Context) error {
		runs <- *sundial.ExecutionFrom(ctx)
		return nil
	})
	cron, err := sundial.Cron("0 0 2 * * ?", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ScheduleJob(ctx, sundial.Job{Name: "j", Handler: "nightly"}, sundial.Trigger{Group: "g", Name: "t", Schedule: cron}); err != nil {
		t.Fatal(err)
	}
	row, err := st.TriggerGetByKey(ctx, "g", "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop(ctx) }()
	day := func(d int) time.Time { return time.Date(2026, 3, d, 2, 0, 0, 0, time.UTC) }
	b, err := s.Engine().CreateBackfill(ctx, engine.BackfillRequest{TriggerID: row.ID, From: day(1), To: day(2)})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][2]time.Time{{day(0), day(1)}, {day(1), day(2)}} {
		select {
		case got := <-runs:
			if !got.IntervalStart.Equal(want[0]) || !got.IntervalEnd.Equal(want[1]) || got.BackfillID != b.ID || got.Cause != "backfill" {
				t.Errorf("run %d: %s..%s backfill %d cause %s; want %s..%s backfill %d", got.ID, got.IntervalStart, got.IntervalEnd,
					got.BackfillID, got.Cause, want[0], want[1], b.ID)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the backfill's runs did not run")
		}
	}
}
