package engine

import (
	"context"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestJitterStartsAtOffsetKeepsKey: a trigger with jitter is taken at its scheduled time, its
// execution keeps the scheduled time as its key, and its handler starts at the scheduled time
// plus the trigger's offset (schedule.JitterOffset), not before. The node then stops before
// the next fire starts: that fire goes back to pending, and the node that takes it over
// starts it at the same offset, under the same key.
func TestJitterStartsAtOffsetKeepsKey(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		ctx := context.Background()
		const maxJitter = 10 * time.Minute
		hourly, err := schedule.ParseCron("0 0 * * * ?", time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		first := t0.Add(time.Hour)
		job := insertJob(t, st, "spread", nil)
		row := insertTrigger(t, st, job, "spread", hourly, t0.Add(time.Second), func(r *store.Trigger) {
			r.JitterMs = maxJitter.Milliseconds()
		})
		clk := clock.NewFake(first.Add(-time.Second))
		rec := newRecorder()
		started := make(chan time.Time, 16)
		rec.behave = func(ctx context.Context, f *Fire) Result {
			started <- clk.Now()
			return Result{}
		}
		// The clock jumps by minutes: a lease of a day keeps the lives alive across the jumps.
		tune := func(c *Config) { c.Acquirers, c.NodeTimeout = 1, 24*time.Hour }
		n1 := newEngine(t, st, rec, "n1", clk, tune)
		startEngine(t, n1)

		// checkStart moves the clock to the fire's scheduled time, then to a millisecond before
		// its start (no fire starts), then to its start.
		checkStart := func(e *Engine, sched time.Time, wantTaken bool) {
			t.Helper()
			offset := schedule.JitterOffset(row.ID, sched, maxJitter)
			if offset <= 0 || offset >= maxJitter {
				t.Fatalf("offset %s: want within (0, %s) for this test to mean anything", offset, maxJitter)
			}
			clk.Set(sched)
			if wantTaken {
				waitAcquired(t, e, 1)
			}
			clk.Set(sched.Add(offset - time.Millisecond))
			waitAcquired(t, e, 0) // a full round at the later time: the fire had its chance
			select {
			case at := <-started:
				t.Fatalf("fire of %s started at %s, before its offset %s", sched, at, offset)
			default:
			}
			clk.Set(sched.Add(offset))
			f := waitFor(t, "the fire's start", rec.started, 1)[0]
			at := waitFor(t, "the fire's start time", started, 1)[0]
			if f.Execution.ScheduledAt != sched.UnixMilli() || !at.Equal(sched.Add(offset)) {
				t.Fatalf("fire keyed %s started at %s; want key %s, start %s", time.UnixMilli(f.Execution.ScheduledAt).UTC(),
					at, sched, sched.Add(offset))
			}
		}
		checkStart(n1, first, true)

		// The next fire is taken, then its node stops before its start: it is released.
		second := first.Add(time.Hour)
		clk.Set(second)
		waitAcquired(t, n1, 1)
		if err := n1.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		execs, err := st.ExecutionList(ctx, store.ExecutionFilter{JobID: job.ID, State: store.ExecPending})
		if err != nil || len(execs) != 1 || execs[0].ScheduledAt != second.UnixMilli() {
			t.Fatalf("after the stop: pending %+v, %v; want the fire of %s", execs, err, second)
		}
		n2 := newEngine(t, st, rec, "n2", clk, tune)
		startEngine(t, n2)
		waitAcquired(t, n2, 1)
		checkStart(n2, second, false)
		if d := rec.duplicates(); len(d) > 0 {
			t.Errorf("fires ran twice: %v", d)
		}
	})
}

// waitAcquired waits for an acquisition round of e that took at least n fires (any round for 0).
func waitAcquired(t *testing.T, e *Engine, n int) {
	t.Helper()
	for {
		if got := waitFor(t, "an acquisition round", e.signals.acquired, 1)[0]; got >= n {
			return
		}
	}
}
