package engine

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
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
			// Halfway, then a millisecond short of the start: a full round at each, the fire had
			// its chance to start early.
			clk.Set(sched.Add(offset / 2))
			waitAcquired(t, e, 0)
			clk.Set(sched.Add(offset - time.Millisecond))
			waitAcquired(t, e, 0)
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
			// The claim stamps the instant it won the fire, at most two start leads before the
			// start (fire.go): a claim at the halfway mark shows here.
			waitFor(t, "the fire's result", e.signals.completed, 1)
			x, err := st.ExecutionGet(ctx, f.Execution.ID)
			earliest := sched.Add(offset - 2*e.cfg.StartLead).UnixMilli()
			if err != nil || x.FiredAt < earliest || x.ScheduledAt != sched.UnixMilli() {
				t.Fatalf("stored fire %+v, %v: want scheduled %s, claimed from %s", x, err, sched, time.UnixMilli(earliest).UTC())
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

// TestJitterReturnedFireLateness: a fire that went back to pending gets its trigger's offset
// again, and its lateness counts from its jittered start: within the misfire threshold of that
// start it runs, past it the trigger's misfire policy (do_nothing here) skips it, though both
// are far later than the threshold after the scheduled time.
func TestJitterReturnedFireLateness(t *testing.T) {
	st := openStore(t, "sqlite")
	ctx := context.Background()
	const maxJitter = time.Hour
	hourly, err := schedule.ParseCron("0 0 * * * ?", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	job := insertJob(t, st, "spread", nil)
	row := insertTrigger(t, st, job, "spread", hourly, t0.Add(time.Second), func(r *store.Trigger) {
		r.JitterMs, r.MisfirePolicy = maxJitter.Milliseconds(), schedule.MisfireDoNothing.String()
	})
	sched := t0.Add(time.Hour)
	offset := schedule.JitterOffset(row.ID, sched, maxJitter)
	e := newEngine(t, st, newRecorder(), "n1", clock.NewFake(t0), func(c *Config) { c.MisfireThreshold = time.Minute })
	if offset <= 2*time.Minute {
		t.Fatalf("offset %s: want more than twice the threshold for this test to mean anything", offset)
	}
	for _, c := range []struct {
		now  time.Time
		skip bool
	}{
		{sched.Add(offset + time.Minute - time.Millisecond), false},
		{sched.Add(offset + time.Minute + time.Millisecond), true},
	} {
		f := &pendingFire{exec: &store.Execution{JobID: job.ID, TriggerID: row.ID, ScheduledAt: sched.UnixMilli(),
			Cause: store.CauseSchedule}, priority: 5}
		if err := e.misfireReturned(ctx, st, []*pendingFire{f}, c.now); err != nil {
			t.Fatal(err)
		}
		if f.notBefore != sched.Add(offset).UnixMilli() {
			t.Errorf("returned fire starts at %d, want %d (scheduled + offset %s)", f.notBefore, sched.Add(offset).UnixMilli(), offset)
		}
		if (f.missed != "") != c.skip {
			t.Errorf("at %s after the start: skipped %q, want skipped %v", c.now.Sub(sched.Add(offset)), f.missed, c.skip)
		}
	}
}

// TestDSTPolicyPreview: a stored trigger's DST policy decides its fire times as the engine
// will fire them, and the preview marks the fires next to a change and gives each jittered
// start. New York, 2026-11-01: 01:00 happens twice; 2026-03-08: 02:00-03:00 does not happen.
func TestDSTPolicyPreview(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		ctx := context.Background()
		ny, err := schedule.LoadZone("America/New_York")
		if err != nil {
			t.Fatal(err)
		}
		job := insertJob(t, st, "dst", nil)
		e := newEngine(t, st, newRecorder(), "n1", clock.NewFake(t0), nil)
		for _, c := range []struct {
			expr, dst string
			start     time.Time
			want      []string
			marks     []string
		}{
			{"0 30 1 * * ?", "", time.Date(2026, 10, 31, 0, 0, 0, 0, ny),
				[]string{"2026-10-31T01:30:00.000-04:00", "2026-11-01T01:30:00.000-05:00", "2026-11-02T01:30:00.000-05:00"},
				[]string{"", "overlap", ""}},
			{"0 30 1 * * ?", "once", time.Date(2026, 10, 31, 0, 0, 0, 0, ny),
				[]string{"2026-10-31T01:30:00.000-04:00", "2026-11-01T01:30:00.000-04:00", "2026-11-02T01:30:00.000-05:00"},
				[]string{"", "overlap", ""}},
			{"0 30 2 * * ?", "once", time.Date(2026, 3, 7, 0, 0, 0, 0, ny),
				[]string{"2026-03-07T02:30:00.000-05:00", "2026-03-08T03:00:00.000-04:00", "2026-03-09T02:30:00.000-04:00"},
				[]string{"", "gap", ""}},
			{"0 30 2 * * ?", "once_skip_gap", time.Date(2026, 3, 7, 0, 0, 0, 0, ny),
				[]string{"2026-03-07T02:30:00.000-05:00", "2026-03-09T02:30:00.000-04:00", "2026-03-10T02:30:00.000-04:00"},
				nil},
		} {
			cron, err := schedule.ParseCron(c.expr, ny)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := schedule.ParseDSTPolicy(c.dst)
			ws, err := schedule.WithDST(cron, s)
			if err != nil {
				t.Fatal(err)
			}
			tr := &schedule.Trigger{Schedule: ws, Start: c.start}
			first, err := tr.ComputeFirst(nil)
			if err != nil {
				t.Fatal(err)
			}
			row := insertTrigger(t, st, job, c.expr+c.dst, cron, c.start, func(r *store.Trigger) {
				r.TimeZone, r.DSTPolicy, r.NextFireAt, r.JitterMs = "America/New_York", c.dst, first.UnixMilli(), 60_000
			})
			p, err := e.PreviewTriggerAfter(ctx, row, c.start, len(c.want))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, f := range p.Fires {
				got = append(got, f.Format("2006-01-02T15:04:05.000Z07:00"))
				if want := f.Add(schedule.JitterOffset(row.ID, f, time.Minute)); i >= len(p.Due) || !p.Due[i].Equal(want) {
					t.Errorf("%s %s: start of fire %d: %v, want %s", c.expr, c.dst, i, p.Due, want)
				}
			}
			if !slices.Equal(got, c.want) || !slices.Equal(p.DST, c.marks) {
				t.Errorf("%s %q: fires %v marks %q; want %v %q", c.expr, c.dst, got, p.DST, c.want, c.marks)
			}
		}
	})
}

// TestJitterExactlyOnceTwoNodes: two nodes share ten triggers that fire every 200 ms with a
// jitter of 150 ms, and one node stops halfway (the fires it holds before their starts go back
// to pending and the other node takes them): every fire of the window runs exactly once,
// under its scheduled time as key, and none starts before its scheduled time plus its offset.
func TestJitterExactlyOnceTwoNodes(t *testing.T) {
	const (
		interval  = 200 * time.Millisecond
		maxJitter = 150 * time.Millisecond
		window    = 4 * time.Second
		triggers  = 10
	)
	eachDialect(t, func(t *testing.T, dialect string) {
		nodes := 2
		if dialect == "sqlite" {
			nodes = 1 // not a cluster store
		}
		dsn := testdb.DSN(t, dialect)
		ctx := context.Background()
		var stores []*sqlstore.Store
		for range nodes {
			st, err := sqlstore.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			stores = append(stores, st)
		}
		if err := stores[0].Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		start := time.Now().Add(2 * time.Second).Truncate(time.Second)
		end := start.Add(window)
		job := insertJob(t, stores[0], "tick", nil)
		ledger := map[fireKey]time.Time{} // fire → its start
		for i := range triggers {
			first := start.Add(time.Duration(i) * interval / triggers)
			row := insertTrigger(t, stores[0], job, "t"+strconv.Itoa(i), schedule.Simple{Interval: interval, RepeatCount: schedule.RepeatForever}, first,
				func(r *store.Trigger) { r.JitterMs = maxJitter.Milliseconds() })
			for at := first; at.Before(end); at = at.Add(interval) {
				ledger[fireKey{row.ID, ms(at)}] = at.Add(schedule.JitterOffset(row.ID, at, maxJitter))
			}
		}
		rec := newRecorder()
		var mu sync.Mutex
		early := map[fireKey]time.Duration{}
		rec.behave = func(_ context.Context, f *Fire) Result {
			k := fireKey{f.Execution.TriggerID, f.Execution.ScheduledAt}
			if due, ok := ledger[k]; ok && time.Now().Before(due) {
				mu.Lock()
				early[k] = time.Until(due)
				mu.Unlock()
			}
			return Result{}
		}
		var engines []*Engine
		for i := range nodes {
			e := newEngine(t, stores[i], rec, "node"+strconv.Itoa(i), clock.Real{}, nil)
			startEngine(t, e)
			engines = append(engines, e)
		}
		deadline := time.After(time.Until(end) + 30*time.Second)
		stopped := false
		for missing := len(ledger); missing > 0; {
			select {
			case f := <-rec.started:
				if _, ok := ledger[fireKey{f.Execution.TriggerID, f.Execution.ScheduledAt}]; ok {
					missing--
				}
			case <-deadline:
				reportMissing(t, stores[0], job.ID, rec, ledger)
				t.Fatalf("%d of %d ledger fires did not run", missing, len(ledger))
			}
			if nodes > 1 && !stopped && missing < len(ledger)/2 {
				stopped = true
				if err := engines[0].Stop(ctx); err != nil {
					t.Errorf("stop node0: %v", err)
				}
			}
		}
		for _, e := range engines {
			if err := e.Stop(ctx); err != nil {
				t.Errorf("stop %s: %v", e.NodeID(), err)
			}
		}
		for _, k := range rec.duplicates() {
			t.Errorf("fired more than once: %s", describe(k))
		}
		for k := range ledger {
			if !rec.ran(k) {
				t.Errorf("never fired: %s", describe(k))
			}
		}
		mu.Lock()
		for k, by := range early {
			t.Errorf("%s started %s before its jittered start", describe(k), by)
		}
		mu.Unlock()
	})
}

// reportMissing logs, for each ledger fire that did not run, the job's execution rows at its
// key: what the store says became of it.
func reportMissing[V any](t *testing.T, st store.Store, jobID int64, rec *recorder, ledger map[fireKey]V) {
	t.Helper()
	rows, err := st.ExecutionList(context.Background(), store.ExecutionFilter{JobID: jobID, Limit: 100_000})
	if err != nil {
		t.Logf("listing executions: %v", err)
		return
	}
	for k := range ledger {
		if rec.ran(k) {
			continue
		}
		t.Logf("missing: %s", describe(k))
		for _, x := range rows {
			if x.TriggerID == k.trigger && x.ScheduledAt == k.scheduledAt {
				t.Logf("  row %d state %s cause %s node %s fired %d inc %s handle %q", x.ID, x.State, x.Cause, x.Node, x.FiredAt, x.Incarnation, x.HandleMsg)
			}
		}
	}
}
