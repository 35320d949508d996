package sundial_test

import (
	"context"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestResumeAppliesMisfireOnce: a job paused across ten of its minutely fires and resumed
// fires as its misfire policy says, once, like Quartz's resume: fire_now (and smart, which
// is fire-once-now for cron) one catch-up now, do_nothing none, and never every missed
// minute, even after a pause shorter than the misfire threshold. ignore keeps every missed
// fire, as it asks.
func TestResumeAppliesMisfireOnce(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			st := teststore.Open(t, dialect)
			start := time.Date(2030, 1, 2, 0, 0, 30, 0, time.UTC)
			clk := clock.NewFake(start)
			s, err := sundial.New(sundial.Config{Store: st, Clock: clk, MisfireThreshold: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			minutely, err := sundial.Cron("0 * * * * ?", "UTC")
			if err != nil {
				t.Fatal(err)
			}
			ids := map[schedule.MisfirePolicy]int64{}
			for _, p := range []schedule.MisfirePolicy{schedule.MisfireFireNow, schedule.MisfireSmart, schedule.MisfireDoNothing, schedule.MisfireIgnore} {
				id, err := s.ScheduleJob(ctx, sundial.Job{Name: p.String(), Handler: "noop"}, sundial.Trigger{Schedule: minutely, Misfire: p})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.PauseJob(ctx, id); err != nil {
					t.Fatal(err)
				}
				ids[p] = id
			}
			// Ten minutes paused: shorter than the misfire threshold, so only the resume's own
			// catch-up keeps the missed minutes from being replayed.
			now := start.Add(10 * time.Minute)
			clk.Set(now)
			nextMinute := time.Date(2030, 1, 2, 0, 11, 0, 0, time.UTC)
			for p, want := range map[schedule.MisfirePolicy][]time.Time{
				schedule.MisfireFireNow:   {now, nextMinute},
				schedule.MisfireSmart:     {now, nextMinute},
				schedule.MisfireDoNothing: {nextMinute, nextMinute.Add(time.Minute)},
				schedule.MisfireIgnore:    {time.Date(2030, 1, 2, 0, 1, 0, 0, time.UTC), time.Date(2030, 1, 2, 0, 2, 0, 0, time.UTC)},
			} {
				if err := s.ResumeJob(ctx, ids[p]); err != nil {
					t.Fatal(err)
				}
				trs, err := st.TriggerList(ctx, store.TriggerFilter{JobID: ids[p]})
				if err != nil || len(trs) != 1 {
					t.Fatalf("%s: triggers %v, %v", p, trs, err)
				}
				if trs[0].State != store.TriggerWaiting {
					t.Errorf("%s: resumed trigger is %s", p, trs[0].State)
				}
				// What acquisition will fire from here (it applies no misfire: the catch-up
				// left nothing later than the threshold).
				got, err := s.Engine().PreviewTrigger(ctx, trs[0], now, 2)
				if err != nil {
					t.Fatal(err)
				}
				if got.Misfired || len(got.Fires) != 2 || !got.Fires[0].Equal(want[0]) || !got.Fires[1].Equal(want[1]) {
					t.Errorf("%s: after the resume it fires %v (misfired %v), want %v", p, got.Fires, got.Misfired, want)
				}
			}
		})
	}
}
