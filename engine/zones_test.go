package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestZonesFireInEachZone: a trigger of two zones (01:30 daily in London and in Abidjan, which
// keeps UTC all year) fires at 01:30 in each. In winter both are the same instant, and stay two
// fires with two keys; London's spring-forward gap (2026-03-29, 01:00 → 02:00) skips its fire
// that day (Quartz), Abidjan's fires. The node holding the fires of 03-29 and 03-30 (a jitter
// keeps them acquired) stops before they start: the node taking over runs each once, under
// the same trigger row, scheduled time and zone.
func TestZonesFireInEachZone(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		ctx := context.Background()
		london, err := schedule.LoadZone("Europe/London")
		if err != nil {
			t.Fatal(err)
		}
		cron, err := schedule.ParseCron("0 30 1 * * ?", london)
		if err != nil {
			t.Fatal(err)
		}
		const maxJitter = 10 * time.Minute
		start := time.Date(2026, 3, 27, 0, 0, 0, 0, time.UTC)
		clk := clock.NewFake(start)
		rec := newRecorder()
		tune := func(c *Config) { c.Acquirers, c.NodeTimeout = 1, 30*24*time.Hour }
		n1 := newEngine(t, st, rec, "n1", clk, tune)
		job := insertJob(t, st, "zones", nil)
		row := insertTrigger(t, st, job, "zones", cron, start, func(r *store.Trigger) {
			r.TimeZone, r.Zones, r.JitterMs = "Europe/London", []string{"Europe/London", "Africa/Abidjan"}, maxJitter.Milliseconds()
		})
		zr, err := n1.ZoneRow(ctx, st, row, "Africa/Abidjan")
		if err != nil {
			t.Fatal(err)
		}
		if err := st.TriggerInsert(ctx, zr); err != nil {
			t.Fatal(err)
		}
		zoneOf := map[int64]string{row.ID: "Europe/London", zr.ID: "Africa/Abidjan"}
		startEngine(t, n1)

		utc := func(s string) time.Time {
			v, err := time.Parse(time.RFC3339, s)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		steps := []struct {
			at    string
			fires []string // zone@scheduled UTC
			stop  bool     // stop the node holding them before they start
		}{
			{"2026-03-27T01:30:00Z", []string{"Africa/Abidjan@2026-03-27T01:30:00Z", "Europe/London@2026-03-27T01:30:00Z"}, false},
			{"2026-03-28T01:30:00Z", []string{"Africa/Abidjan@2026-03-28T01:30:00Z", "Europe/London@2026-03-28T01:30:00Z"}, false},
			{"2026-03-29T01:30:00Z", []string{"Africa/Abidjan@2026-03-29T01:30:00Z"}, true},
			{"2026-03-30T00:30:00Z", []string{"Europe/London@2026-03-30T00:30:00Z"}, false},
			{"2026-03-30T01:30:00Z", []string{"Africa/Abidjan@2026-03-30T01:30:00Z"}, false},
		}
		e := n1
		for _, s := range steps {
			at := utc(s.at)
			clk.Set(at)
			waitAcquired(t, e, len(s.fires))
			if s.stop {
				if err := e.Stop(ctx); err != nil {
					t.Fatal(err)
				}
				e = newEngine(t, st, rec, "n2", clk, tune)
				startEngine(t, e)
				waitAcquired(t, e, len(s.fires))
			}
			clk.Set(at.Add(maxJitter))
			var got []string
			for _, f := range waitFor(t, "the fires of "+s.at, rec.started, len(s.fires)) {
				x := f.Execution
				if zoneOf[x.TriggerID] != x.FireZone {
					t.Errorf("fire of trigger row %d ran with zone %q, want %q", x.TriggerID, x.FireZone, zoneOf[x.TriggerID])
				}
				got = append(got, fmt.Sprintf("%s@%s", x.FireZone, time.UnixMilli(x.ScheduledAt).UTC().Format(time.RFC3339)))
			}
			slices.Sort(got)
			if !slices.Equal(got, s.fires) {
				t.Errorf("at %s fired %v, want %v", s.at, got, s.fires)
			}
		}
		if d := rec.duplicates(); len(d) > 0 {
			t.Errorf("fires ran twice: %v", d)
		}
		select {
		case f := <-rec.started:
			t.Errorf("unexpected fire %+v", f.Execution)
		default:
		}
	})
}
