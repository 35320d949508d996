package dispatch

import (
	"context"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// TestRunSendsDataInterval dispatches a backfill's run to a real executor: the run request
// carries its data interval and backfill, and the handler reads them exactly.
func TestRunSendsDataInterval(t *testing.T) {
	ctx := context.Background()
	fx := newRemoteFixture(t)
	from, to := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)
	now := time.Now().UnixMilli()
	ex := &store.Execution{JobID: fx.job.ID, ScheduledAt: now, FiredAt: now, Cause: store.CauseBackfill, Node: "n",
		State: store.ExecRunning, IntervalStart: from.UnixMilli(), IntervalEnd: to.UnixMilli(), BackfillID: 4}
	if _, err := fx.st.ExecutionsInsert(ctx, []*store.Execution{ex}); err != nil {
		t.Fatal(err)
	}
	if res := NewRemote(Config{Store: fx.st}).send(ctx, ex, fx.job, fx.exe.Address(), 0, 1, nil, ""); res.Err != nil {
		t.Fatalf("dispatch: %+v", res)
	}
	run := <-fx.got
	if !run.IntervalStart.Equal(from) || !run.IntervalEnd.Equal(to) || run.BackfillID != 4 {
		t.Errorf("the executor's run has interval %v..%v, backfill %d; want %v..%v, backfill 4", run.IntervalStart, run.IntervalEnd,
			run.BackfillID, from, to)
	}
}
