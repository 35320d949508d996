package engine

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// TestExactlyOnce runs three nodes on one database (one node on SQLite, which is not a
// cluster store) sharing 100 triggers that fire every 100 ms — 1,000 fires/s — for 10 s of
// real time (a tenth of the load under the race detector), and checks every (trigger, scheduled time) of the window against a ledger
// computed from the schedules: each fired exactly once, none missing.
func TestExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 10 s of real time per database")
	}
	const (
		interval = 100 * time.Millisecond
		window   = 10 * time.Second
	)
	triggers := 100 // 1,000 fires/s
	if testdb.RaceEnabled {
		triggers = 10
		t.Logf("race detector on: %d triggers (%d fires/s); the full load runs without it", triggers, triggers*int(time.Second/interval))
	}
	eachDialect(t, func(t *testing.T, dialect string) {
		nodes := 3
		if dialect == "sqlite" {
			nodes = 1
		}
		dsn := testdb.DSN(t, dialect)
		ctx := context.Background()
		var stores []*sqlstore.Store
		for i := 0; i < nodes; i++ {
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

		// The window starts after the schedule is written and the nodes are up.
		start := time.Now().Add(2 * time.Second).Truncate(time.Second)
		end := start.Add(window)
		job := insertJob(t, stores[0], "tick", nil)
		ledger := map[fireKey]bool{}
		for i := 0; i < triggers; i++ {
			first := start.Add(time.Duration(i) * interval / time.Duration(triggers))
			row := insertTrigger(t, stores[0], job, "t"+strconv.Itoa(i), schedule.Simple{Interval: interval, RepeatCount: schedule.RepeatForever}, first, nil)
			for at := first; at.Before(end); at = at.Add(interval) {
				ledger[fireKey{row.ID, ms(at)}] = true
			}
		}

		rec := newRecorder()
		var engines []*Engine
		for i := 0; i < nodes; i++ {
			e := newEngine(t, stores[i], rec, "node"+strconv.Itoa(i), clock.Real{}, nil)
			startEngine(t, e)
			engines = append(engines, e)
		}

		// Wait until every ledger fire has started (a signal per fire), then stop the nodes.
		deadline := time.After(time.Until(end) + 30*time.Second)
		for missing := len(ledger); missing > 0; {
			select {
			case f := <-rec.started:
				if ledger[fireKey{f.Execution.TriggerID, f.Execution.ScheduledAt}] {
					missing--
				}
			case <-deadline:
				t.Fatalf("%d of %d ledger fires did not run", missing, len(ledger))
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
		// Nothing fired that the schedules do not contain.
		rec.mu.Lock()
		for k := range rec.runs {
			if k.scheduledAt < ms(end) && !ledger[k] {
				t.Errorf("fired but not in the ledger: %s", describe(k))
			}
		}
		rec.mu.Unlock()
		if nodes > 1 {
			for _, e := range engines {
				if e.Stats().Fired.Load() == 0 {
					t.Errorf("node %s fired nothing: the work was not shared", e.NodeID())
				}
			}
		}
		var total int64
		for _, e := range engines {
			total += e.Stats().Fired.Load()
			t.Logf("%s: fired %d, lost races %d", e.NodeID(), e.Stats().Fired.Load(), e.Stats().LostRaces.Load())
		}
		if total < int64(len(ledger)) {
			t.Errorf("nodes report %d fires, the ledger has %d", total, len(ledger))
		}
	})
}
