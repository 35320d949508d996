package executor_test

import (
	"context"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/wire"
)

// A run's data interval and backfill travel in the run request and reach the handler
// (executor.RunFrom) exactly; a run without them has zero times.
func TestRunCarriesDataInterval(t *testing.T) {
	runs := make(chan executor.Run, 2)
	s := start(t, func(ex *executor.Executor) {
		ex.Handle("report", func(ctx context.Context) error {
			r, _ := executor.RunFrom(ctx)
			runs <- r
			return nil
		})
	})
	from, to := time.Date(2026, 3, 1, 1, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 5, 0, 0, 0, time.UTC)
	s.mustRun(t, wire.RunRequest{ExecutionID: 1, JobID: 7, Handler: "report", Concurrency: "allow", ScheduledAt: to.UnixMilli(),
		IntervalStart: from.UnixMilli(), IntervalEnd: to.UnixMilli(), BackfillID: 3})
	s.peer.WaitResult(t, 1, wait)
	got := <-runs
	if !got.IntervalStart.Equal(from) || !got.IntervalEnd.Equal(to) || got.BackfillID != 3 {
		t.Errorf("interval %v..%v backfill %d, want %v..%v backfill 3", got.IntervalStart, got.IntervalEnd, got.BackfillID, from, to)
	}
	s.mustRun(t, wire.RunRequest{ExecutionID: 2, JobID: 7, Handler: "report", Concurrency: "allow", ScheduledAt: to.UnixMilli()})
	s.peer.WaitResult(t, 2, wait)
	if got := <-runs; !got.IntervalStart.IsZero() || !got.IntervalEnd.IsZero() || got.BackfillID != 0 {
		t.Errorf("a run without an interval: %v..%v backfill %d", got.IntervalStart, got.IntervalEnd, got.BackfillID)
	}
}
