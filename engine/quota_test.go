package engine

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestFireRateSlots: the quota gives at most per starts in any window, in order, and never
// moves a start earlier than due.
func TestFireRateSlots(t *testing.T) {
	r := newFireRate(2)
	var got []int64
	for _, due := range []int64{0, 0, 0, 0, 0, 3500, 3600, 3700} {
		got = append(got, r.slot("a", due))
	}
	want := []int64{0, 0, 1000, 1000, 2000, 3500, 3600, 4500}
	if !slices.Equal(got, want) {
		t.Fatalf("slots %v, want %v", got, want)
	}
	if s := r.slot("b", 0); s != 0 {
		t.Fatalf("another app's first slot is %d: apps share a quota", s)
	}
}

// TestAppFireRateQuota: 12 fires of one app due at the same millisecond under a quota of 4
// per second all run (none dropped or skipped), at most 4 in any second, with their
// scheduled times unchanged; another app's fires due then are not held back by them.
func TestAppFireRateQuota(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		rec := newRecorder()
		// Each start with its time, taken as the fire runs (the recorder's own channel gets
		// the fire just before).
		type start struct {
			f  *Fire
			at time.Time
		}
		starts := make(chan start, 64)
		rec.behave = func(_ context.Context, f *Fire) Result {
			starts <- start{f, time.Now()}
			return Result{}
		}
		e := newEngine(t, st, rec, "n1", clock.Real{}, func(c *Config) { c.AppFiresPerSecond = 4 })
		due := time.Now().Add(300 * time.Millisecond).Truncate(time.Millisecond)
		busy := insertJob(t, st, "busy", func(j *store.Job) { j.TargetKind, j.App = store.TargetRemote, "busy" })
		calm := insertJob(t, st, "calm", func(j *store.Job) { j.TargetKind, j.App = store.TargetRemote, "calm" })
		for i := range 12 {
			insertTrigger(t, st, busy, "b"+strconv.Itoa(i), schedule.Simple{}, due, nil)
		}
		for i := range 2 {
			insertTrigger(t, st, calm, "c"+strconv.Itoa(i), schedule.Simple{}, due, nil)
		}
		startEngine(t, e)
		// The quota's promise is on the start slots it gives (whole milliseconds): at most 4
		// in any second. A fire never starts before its slot; how long after depends on the
		// machine's load, so real start times are only checked against their slots.
		var busySlots []int64
		var lastBusy time.Time
		for _, s := range waitFor(t, "14 fires", starts, 14) {
			f, now := s.f, s.at
			if f.Execution.ScheduledAt != due.UnixMilli() {
				t.Errorf("fire %d scheduled at %d, want %d: the quota must not move the scheduled time", f.Execution.ID, f.Execution.ScheduledAt, due.UnixMilli())
			}
			slot := max(f.Execution.ScheduledAt, f.notBefore)
			if now.Before(time.UnixMilli(slot)) {
				t.Errorf("fire %d started at %v, before its quota slot %v", f.Execution.ID, now, time.UnixMilli(slot))
			}
			if f.Job.App == "calm" {
				if f.notBefore != 0 {
					t.Errorf("a fire of the other app was delayed to %v by the busy app's quota", time.UnixMilli(f.notBefore))
				}
				continue
			}
			busySlots = append(busySlots, slot)
			if now.After(lastBusy) {
				lastBusy = now
			}
		}
		slices.Sort(busySlots)
		for i := 4; i < len(busySlots); i++ {
			if gap := busySlots[i] - busySlots[i-4]; gap < rateWindow.Milliseconds() {
				t.Errorf("slots %d and %d of the app are %d ms apart: 5 starts in one second under a quota of 4", i-4, i, gap)
			}
		}
		if lastBusy.Before(due.Add(2 * time.Second)) {
			t.Errorf("the 12th fire started %v after the due time; a quota of 4 per second puts it 2 s or more after", lastBusy.Sub(due))
		}
		if n := e.Stats().QuotaDelayed.Load(); n != 8 {
			t.Errorf("QuotaDelayed = %d, want 8 (12 fires, 4 on time)", n)
		}
	})
}
