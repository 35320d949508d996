package engine

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestFireRateSlots: the quota gives at most per starts in any window, in order, never moves
// a start earlier than due, and its state survives the text the database keeps.
func TestFireRateSlots(t *testing.T) {
	var q quotaState
	var got []int64
	for _, due := range []int64{0, 0, 0, 0, 0, 3500, 3600, 3700} {
		got = append(got, q.slot(2, due))
		q = parseQuotaState(q.String()) // as the next round reads it back
	}
	want := []int64{0, 0, 1000, 1000, 2000, 3500, 3600, 4500}
	if !slices.Equal(got, want) {
		t.Fatalf("slots %v, want %v", got, want)
	}
	if s := q.String(); s != "3600:1,4500:1" {
		t.Fatalf("state %q, want only the starts of the last second", s)
	}
	for _, bad := range []string{"", "x", "5:1,4:1", "5:0", "5"} {
		if q := parseQuotaState(bad); len(q) != 0 {
			t.Errorf("parseQuotaState(%q) = %v, want no starts", bad, q)
		}
	}
}

// TestAppFireRateQuotaCluster: two nodes acquiring fires of one app at once share its quota
// through the database: of 16 fires due at the same millisecond, 8 taken by each node under
// a quota of 4 per second, at most 4 start in any second across both, none earlier than due,
// and 12 are delayed (a quota per node would let 8 start at once).
func TestAppFireRateQuotaCluster(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		tune := func(c *Config) { c.AppFiresPerSecond = 4 }
		nodes := []*Engine{newEngine(t, st, newRecorder(), "n1", clock.NewFake(t0), tune),
			newEngine(t, st, newRecorder(), "n2", clock.NewFake(t0), tune)}
		busy := insertJob(t, st, "busy", func(j *store.Job) { j.TargetKind, j.App = store.TargetRemote, "busy" })
		due := t0.Add(time.Second).UnixMilli()
		var all []*pendingFire
		done := make(chan struct{})
		for _, e := range nodes {
			fires := make([]*pendingFire, 8)
			for i := range fires {
				fires[i] = &pendingFire{exec: &store.Execution{JobID: busy.ID, ScheduledAt: due}, priority: 5}
			}
			all = append(all, fires...)
			go func() {
				defer func() { done <- struct{}{} }()
				e.applyFireRate(context.Background(), fires)
			}()
		}
		<-done
		<-done
		slots := make([]int64, len(all))
		for i, f := range all {
			slots[i] = max(f.exec.ScheduledAt, f.notBefore)
			if slots[i] < due {
				t.Errorf("fire %d starts at %d, before it is due (%d)", i, slots[i], due)
			}
		}
		slices.Sort(slots)
		for i := 4; i < len(slots); i++ {
			if gap := slots[i] - slots[i-4]; gap < rateWindow.Milliseconds() {
				t.Errorf("slots %v: %d and %d are %d ms apart, 5 starts in one second across the cluster under a quota of 4", slots, i-4, i, gap)
			}
		}
		if delayed := nodes[0].Stats().QuotaDelayed.Load() + nodes[1].Stats().QuotaDelayed.Load(); delayed != 12 {
			t.Errorf("%d fires delayed, want 12 (16 fires, 4 on time)", delayed)
		}
		if last := slots[len(slots)-1]; last != due+3000 {
			t.Errorf("the last slot is %d ms after due, want 3000", last-due)
		}
	})
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

// TestFireRateSlotKeptAfterFailedClaim: a fire the quota delays keeps its slot when its claim
// fails and is retried. Under a quota of 1 per second two fires due together get slots 1 s
// apart; with a StartLead longer than the claim's retry pause, both are claimed well ahead of
// their slots, and each one's first claim fails. Before the fix the retried fire had
// lost its delay and started with the first, at its scheduled time.
func TestFireRateSlotKeptAfterFailedClaim(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := &claimFailsOnce{Store: openStore(t, dialect), seen: map[int64]bool{}}
		clk := clock.NewFake(t0)
		rec := newRecorder()
		type start struct {
			slot int64 // the start the fire was given: its scheduled time or its quota slot
			at   time.Time
		}
		starts := make(chan start, 4)
		rec.behave = func(_ context.Context, f *Fire) Result {
			starts <- start{max(f.Execution.ScheduledAt, f.notBefore), clk.Now()}
			return Result{}
		}
		e := newEngine(t, st, rec, "node", clk, func(c *Config) {
			c.PollInterval, c.LookAhead, c.StartLead = 100*time.Millisecond, 3*time.Second, time.Second
			c.HeartbeatInterval, c.NodeTimeout, c.Acquirers = time.Hour, 2*time.Hour, 1
			c.AppFiresPerSecond = 1
		})
		n := &fakeNode{t: t, st: st, clk: clk, e: e, rec: rec}
		job := insertJob(t, st, "job", nil)
		due := t0.Add(2 * time.Second)
		insertTrigger(t, st, job, "a", schedule.Simple{}, due, nil)
		insertTrigger(t, st, job, "b", schedule.Simple{}, due, nil)
		n.start()

		n.advance(3 * time.Second) // the claims fail, are retried, and the fires run
		// Each fire's first claim failed: one claim of both when the acquirer took them in one
		// batch, one each when it took them apart.
		st.mu.Lock()
		claimed := len(st.seen)
		st.mu.Unlock()
		if claimed != 2 || st.failed.Load() == 0 {
			t.Fatalf("%d claims failed, of %d fires: want the first claim of each fire failed", st.failed.Load(), claimed)
		}
		got := waitFor(t, "the two fires", starts, 2)
		n.completed(2)
		slices.SortFunc(got, func(a, b start) int { return int(a.slot - b.slot) })
		if got[0].slot != ms(due) || got[1].slot != ms(due)+rateWindow.Milliseconds() {
			t.Fatalf("start slots %d and %d ms after the due time, want 0 and %d: the retried claim lost the quota's delay",
				got[0].slot-ms(due), got[1].slot-ms(due), rateWindow.Milliseconds())
		}
		for _, s := range got {
			if s.at.Before(time.UnixMilli(s.slot)) {
				t.Fatalf("a fire started at %v, before its slot %v", s.at, time.UnixMilli(s.slot))
			}
		}
	})
}

// claimFailsOnce is the real store, except that the first claim of each fire fails before
// the statement reaches the database.
type claimFailsOnce struct {
	store.Store
	mu     sync.Mutex
	seen   map[int64]bool
	failed atomic.Int32
}

func (s *claimFailsOnce) ExecutionsMarkRunning(ctx context.Context, o store.Owner, ids []int64, firedAt int64) ([]int64, error) {
	s.mu.Lock()
	fresh := false
	for _, id := range ids {
		if !s.seen[id] {
			s.seen[id], fresh = true, true
		}
	}
	s.mu.Unlock()
	if fresh {
		s.failed.Add(1)
		return nil, errors.New("connection reset (before the statement)")
	}
	return s.Store.ExecutionsMarkRunning(ctx, o, ids, firedAt)
}
