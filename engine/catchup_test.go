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

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func hm(msec int64) string { return time.UnixMilli(msec).UTC().Format("15:04") }

// runOf describes an execution as the catch-up tests compare it: scheduled time, cause and
// data interval.
func runOf(x *store.Execution) string {
	return fmt.Sprintf("%s %s [%s,%s]", hm(x.ScheduledAt), x.Cause, hm(x.IntervalStart), hm(x.IntervalEnd))
}

// TestCatchUpPolicies stores an hourly trigger that last fired at 01:00 and missed 02:00 to
// 05:00 while the cluster was down, brings a node up at 05:30 and checks each run it makes:
// the cluster's misfire threshold applies by default (Quartz's smart policy: one run now),
// a per-trigger catch-up window longer than the outage runs every missed fire, and the
// coalesced catch-up makes one run covering 01:00 to 05:00, on every database.
func TestCatchUpPolicies(t *testing.T) {
	hourly, err := schedule.ParseCron("0 0 * * * ?", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		misfire schedule.MisfirePolicy
		window  time.Duration
		catchUp string
		want    []string
	}{
		{"default: threshold, smart", schedule.MisfireSmart, 0, "",
			[]string{"05:30 misfire [01:00,05:30]", "06:00 schedule [05:30,06:00]"}},
		{"default: threshold, do_nothing", schedule.MisfireDoNothing, 0, "",
			[]string{"06:00 misfire [01:00,06:00]"}},
		{"window of 4h: every missed fire runs", schedule.MisfireDoNothing, 4 * time.Hour, "", []string{
			"02:00 schedule [01:00,02:00]", "03:00 schedule [02:00,03:00]", "04:00 schedule [03:00,04:00]",
			"05:00 schedule [04:00,05:00]", "06:00 schedule [05:00,06:00]"}},
		{"window of 3h: smart", schedule.MisfireSmart, 3 * time.Hour, "",
			[]string{"05:30 misfire [01:00,05:30]", "06:00 schedule [05:30,06:00]"}},
		{"coalesce", schedule.MisfireSmart, 0, store.CatchUpCoalesce,
			[]string{"05:30 misfire [01:00,05:00]", "06:00 schedule [05:00,06:00]"}},
		{"coalesce, whatever the misfire policy", schedule.MisfireDoNothing, 0, store.CatchUpCoalesce,
			[]string{"05:30 misfire [01:00,05:00]", "06:00 schedule [05:00,06:00]"}},
		{"coalesce within a window of 4h: every missed fire runs", schedule.MisfireSmart, 4 * time.Hour, store.CatchUpCoalesce, []string{
			"02:00 schedule [01:00,02:00]", "03:00 schedule [02:00,03:00]", "04:00 schedule [03:00,04:00]",
			"05:00 schedule [04:00,05:00]", "06:00 schedule [05:00,06:00]"}},
	}
	eachDialect(t, func(t *testing.T, dialect string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				st := openStore(t, dialect)
				job := insertJob(t, st, "job", nil)
				insertTrigger(t, st, job, "hourly", hourly, utc("2026-03-01T00:30:00Z"), func(r *store.Trigger) {
					r.MisfirePolicy = c.misfire.String()
					r.PrevFireAt, r.NextFireAt, r.TimesFired = ms(utc("2026-03-01T01:00:00Z")), ms(utc("2026-03-01T02:00:00Z")), 1
					r.CatchUpWindow, r.CatchUp = c.window.Milliseconds(), c.catchUp
				})
				clk := clock.NewFake(utc("2026-03-01T05:30:00Z"))
				e := newEngine(t, st, newRecorder(), "node", clk, func(cfg *Config) {
					cfg.LookAhead = time.Hour
					cfg.MisfireThreshold = time.Minute
					cfg.Acquirers = 1
				})
				startEngine(t, e)
				waitFor(t, "the first acquisition round", e.signals.acquired, 1)
				execs, err := st.ExecutionList(context.Background(), store.ExecutionFilter{JobID: job.ID, Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				slices.SortFunc(execs, func(a, b *store.Execution) int { return int(a.ScheduledAt - b.ScheduledAt) })
				var got []string
				for _, x := range execs {
					got = append(got, runOf(x))
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("runs\n  %q\nwant\n  %q", got, c.want)
				}
			})
		}
	})
}

// TestPreviewCoalesce checks that a trigger's preview shows what acquisition will do with
// its catch-up policy: the coalesced run now, then its next fires.
func TestPreviewCoalesce(t *testing.T) {
	hourly, err := schedule.ParseCron("0 0 * * * ?", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t, "sqlite")
	job := insertJob(t, st, "job", nil)
	for _, c := range []struct {
		window time.Duration
		want   []string
		late   bool
	}{
		{0, []string{"05:30", "06:00", "07:00"}, true},
		{4 * time.Hour, []string{"02:00", "03:00", "04:00"}, false},
	} {
		row := insertTrigger(t, st, job, fmt.Sprint("hourly-", c.window), hourly, utc("2026-03-01T00:30:00Z"), func(r *store.Trigger) {
			r.PrevFireAt, r.NextFireAt, r.TimesFired = ms(utc("2026-03-01T01:00:00Z")), ms(utc("2026-03-01T02:00:00Z")), 1
			r.CatchUp, r.CatchUpWindow = store.CatchUpCoalesce, c.window.Milliseconds()
		})
		e := newEngine(t, st, newRecorder(), "node", clock.NewFake(utc("2026-03-01T05:30:00Z")), nil)
		p, err := e.PreviewTrigger(context.Background(), row, utc("2026-03-01T05:30:00Z"), 3)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range p.Fires {
			got = append(got, hm(f.UnixMilli()))
		}
		if !slices.Equal(got, c.want) || p.Misfired != c.late {
			t.Errorf("window %v: preview %v misfired %v, want %v %v", c.window, got, p.Misfired, c.want, c.late)
		}
	}
}

// TestResumeCoalescing checks that resuming a paused coalescing trigger leaves its missed
// fires for acquisition to coalesce (the misfire policy is not applied at resume), while a
// trigger without coalesce gets Quartz's resume as before.
func TestResumeCoalescing(t *testing.T) {
	hourly, err := schedule.ParseCron("0 0 * * * ?", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t, "sqlite")
	job := insertJob(t, st, "job", nil)
	e := newEngine(t, st, newRecorder(), "node", clock.NewFake(utc("2026-03-01T05:30:00Z")), nil)
	for _, c := range []struct {
		catchUp string
		changed bool
		next    string
	}{{store.CatchUpCoalesce, false, "02:00"}, {"", true, "05:30"}} {
		row := insertTrigger(t, st, job, "hourly-"+c.catchUp, hourly, utc("2026-03-01T00:30:00Z"), func(r *store.Trigger) {
			r.State, r.CatchUp = store.TriggerPaused, c.catchUp
			r.PrevFireAt, r.NextFireAt, r.TimesFired = ms(utc("2026-03-01T01:00:00Z")), ms(utc("2026-03-01T02:00:00Z")), 1
		})
		changed, err := e.CatchUpOnResume(context.Background(), row, utc("2026-03-01T05:30:00Z"))
		if err != nil {
			t.Fatal(err)
		}
		after, err := st.TriggerGet(context.Background(), row.ID)
		if err != nil {
			t.Fatal(err)
		}
		if changed != c.changed || hm(after.NextFireAt) != c.next {
			t.Errorf("catch-up %q: changed %v, next %s; want %v, %s", c.catchUp, changed, hm(after.NextFireAt), c.changed, c.next)
		}
	}
}

// TestCatchUpWindowOnReturnedFires plants fires a dead node had taken, 3 and 2 minutes late
// now, of do_nothing triggers: with the cluster's threshold (1 minute) they are skipped, with
// a catch-up window of 5 minutes they run, and with one of 150 s only the newer runs.
func TestCatchUpWindowOnReturnedFires(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		n := newFakeNode(t, dialect, nil, func(c *Config) { c.MisfireThreshold = time.Minute })
		job := insertJob(t, n.st, "job", nil)
		cron, err := schedule.ParseCron("0 * * * * ?", time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		trigger := func(name string, window time.Duration) *store.Trigger {
			return insertTrigger(t, n.st, job, name, cron, t0.Add(-time.Hour), func(r *store.Trigger) {
				r.MisfirePolicy, r.NextFireAt, r.CatchUpWindow = schedule.MisfireDoNothing.String(), ms(t0.Add(time.Minute)), window.Milliseconds()
			})
		}
		threshold, wide, narrow := trigger("threshold", 0), trigger("wide", 5*time.Minute), trigger("narrow", 150*time.Second)
		var fires []*store.Execution
		for _, tr := range []*store.Trigger{threshold, wide, narrow} {
			for _, ago := range []time.Duration{3 * time.Minute, 2 * time.Minute} {
				fires = append(fires, &store.Execution{JobID: job.ID, TriggerID: tr.ID, ScheduledAt: ms(t0.Add(-ago)),
					Cause: store.CauseSchedule, State: store.ExecPending})
			}
		}
		if _, err := n.st.ExecutionsInsert(ctx, fires); err != nil {
			t.Fatal(err)
		}
		n.start()
		n.completed(len(fires))
		for _, c := range []struct {
			tr   *store.Trigger
			ago  time.Duration
			runs bool
		}{
			{threshold, 3 * time.Minute, false}, {threshold, 2 * time.Minute, false},
			{wide, 3 * time.Minute, true}, {wide, 2 * time.Minute, true},
			{narrow, 3 * time.Minute, false}, {narrow, 2 * time.Minute, true},
		} {
			if got := n.rec.ran(fireKey{c.tr.ID, ms(t0.Add(-c.ago))}); got != c.runs {
				t.Errorf("trigger %s, fire %s ago: ran %v, want %v", c.tr.Name, c.ago, got, c.runs)
			}
		}
	})
}
