package engine

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/oraclecase"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestMisfireAfterOutage replays the Quartz oracle's misfire cases (every trigger kind and
// instruction, no calendar; see loadMisfireCases) as a cluster outage: the trigger is stored as it was when
// the last node went down, a node comes up at NOW, and the fires it schedules must be the
// ones Quartz schedules after updateAfterMisfire — the NEXT time and the fires after it.
func TestMisfireAfterOutage(t *testing.T) {
	cases := loadMisfireCases(t)
	if len(cases) < 30 {
		t.Fatalf("only %d misfire cases found in the oracle's expected output", len(cases))
	}
	eachDialect(t, func(t *testing.T, dialect string) {
		for _, mc := range cases {
			if mc.SQLiteOnly && dialect != "sqlite" {
				continue
			}
			t.Run(mc.Input, func(t *testing.T) {
				st := openStore(t, dialect)
				// The dialects run in parallel: each builds its own trigger.
				c, err := oraclecase.ParseMisfire(mc.Input)
				if err != nil {
					t.Fatal(err)
				}
				tr := c.Trigger
				if _, err := tr.ComputeFirst(nil); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < c.Fired; i++ {
					tr.Triggered(nil)
				}
				job := insertJob(t, st, "job", nil)
				row := insertTrigger(t, st, job, "trigger", tr.Schedule, tr.Start, func(r *store.Trigger) {
					r.TimeZone = c.Zone
					r.EndAt = millis(tr.End)
					r.MisfirePolicy = tr.Misfire.String()
					r.NextFireAt, r.PrevFireAt, r.TimesFired = millis(tr.Next), millis(tr.Prev), int64(tr.TimesTriggered)
				})
				// A node comes up at NOW and looks a week ahead, so one acquisition round
				// schedules every fire Quartz lists.
				clk := clock.NewFake(c.Now)
				e := newEngine(t, st, newRecorder(), "node", clk, func(c *Config) {
					c.LookAhead = 7 * 24 * time.Hour
					c.MisfireThreshold = time.Minute
					c.Acquirers = 1 // the first round signalled is the one that took the fires
				})
				startEngine(t, e)
				waitFor(t, "the first acquisition round", e.signals.acquired, 1)

				execs, err := st.ExecutionList(context.Background(), store.ExecutionFilter{JobID: job.ID, Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				var got []int64
				for _, ex := range execs {
					got = append(got, ex.ScheduledAt)
				}
				slices.Sort(got)
				want := mc.Want
				if len(got) > len(want) {
					got = got[:len(want)]
				}
				if !slices.Equal(got, want) {
					t.Errorf("scheduled fires %v, Quartz %v", fmtTimes(got), fmtTimes(want))
				}
				after, err := st.TriggerGet(context.Background(), row.ID)
				if err != nil {
					t.Fatal(err)
				}
				if len(mc.Want) == 0 && after.State != store.TriggerComplete {
					t.Errorf("trigger state %s, want complete (Quartz: NEXT none)", after.State)
				}
			})
		}
	})
}

type misfireCase struct {
	Input string
	Want  []int64 // NEXT and the fires after it; empty for NEXT none
	// SQLiteOnly: the case adds schedule math only, which every dialect stores as the same
	// numbers, so it runs on the embedded database alone (a schema per case on the servers
	// would triple the test's time).
	SQLiteOnly bool
}

// loadMisfireCases reads the oracle's misfire blocks without a calendar whose missed fire is
// late by more than the engine's threshold: from Quartz's corpus those of cron and simple
// triggers, and from the cases with the trigger's end near (misfire-left) those of
// daily-interval and calendar-interval triggers after two fires.
func loadMisfireCases(t *testing.T) []misfireCase {
	var out []misfireCase
	for _, file := range []struct {
		name       string
		kinds      []schedule.Kind
		fired      int // -1: any
		sqliteOnly bool
	}{
		{"quartz", []schedule.Kind{schedule.KindCron, schedule.KindSimple}, -1, false},
		{"misfire-left", []schedule.Kind{schedule.KindDailyInterval, schedule.KindCalendarInterval}, 2, true},
	} {
		f, err := os.Open("../schedule/testdata/" + file.name + "-expected.txt")
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := oraclecase.ReadExpected(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if !b.Misfire || b.Err != "" || b.Now-b.Missed <= time.Minute.Milliseconds() {
				continue
			}
			mc, err := oraclecase.ParseMisfire(b.Input)
			if err != nil {
				t.Fatalf("%s: %v", b.Input, err)
			}
			if mc.Calendar != "none" || !slices.Contains(file.kinds, mc.Trigger.Schedule.Kind()) ||
				(file.fired >= 0 && mc.Fired != file.fired) {
				continue
			}
			c := misfireCase{Input: b.Input, SQLiteOnly: file.sqliteOnly}
			if b.HasNext {
				c.Want = append([]int64{b.Next}, b.Times...)
			}
			out = append(out, c)
		}
	}
	return out
}

func fmtTimes(ms []int64) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = time.UnixMilli(m).UTC().Format("2006-01-02T15:04:05.000")
	}
	return out
}
