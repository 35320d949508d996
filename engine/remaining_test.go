package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestRemainingRuns: a trigger that would fire every second forever, with 2 remaining runs,
// fires at 1 s and 2 s and completes in the transaction that took its second fire: nothing
// fires at 3 s or after.
func TestRemainingRuns(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		n := newFakeNode(t, dialect, nil)
		job := insertJob(t, n.st, "limited", nil)
		tr := insertTrigger(t, n.st, job, "twice", schedule.Simple{Interval: time.Second, RepeatCount: schedule.RepeatForever},
			t0.Add(time.Second), func(tr *store.Trigger) { tr.RunLimit = 2 })
		n.start()
		n.advance(time.Second)
		n.completed(1)
		row, err := n.st.TriggerGet(context.Background(), tr.ID)
		if err != nil {
			t.Fatal(err)
		}
		if row.State != store.TriggerWaiting || row.RunLimit-row.TimesFired != 1 {
			t.Fatalf("after one fire: %s with %d of %d fired, want waiting with 1 left", row.State, row.TimesFired, row.RunLimit)
		}
		n.advance(time.Second)
		n.completed(1)
		n.advance(3 * time.Second)
		var at []int64
		for _, ex := range n.executions(job) {
			at = append(at, ex.ScheduledAt)
		}
		if want := []int64{ms(t0.Add(time.Second)), ms(t0.Add(2 * time.Second))}; !slices.Equal(at, want) {
			t.Fatalf("fires %v, want %v", fmtTimes(at), fmtTimes(want))
		}
		row, err = n.st.TriggerGet(context.Background(), tr.ID)
		if err != nil {
			t.Fatal(err)
		}
		if row.State != store.TriggerComplete || row.TimesFired != 2 {
			t.Fatalf("after its runs: %s with %d fired, want complete with 2", row.State, row.TimesFired)
		}
	})
}
