package engine

import (
	"context"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestPreviewTriggerAppliesMisfire: a trigger whose pending fire is long past previews the
// times its misfire policy gives, as acquisition will fire them; one on time previews its
// schedule. Nothing is written.
func TestPreviewTriggerAppliesMisfire(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		now := time.Date(2024, 1, 10, 15, 0, 0, 0, time.UTC)
		e := newEngine(t, st, newRecorder(), "n1", clock.NewFake(now), nil)
		noon, err := schedule.ParseCron("0 0 12 * * ?", time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		job := insertJob(t, st, "j", nil)
		day := func(d int) time.Time { return time.Date(2024, 1, d, 12, 0, 0, 0, time.UTC) }
		for _, tc := range []struct {
			policy   schedule.MisfirePolicy
			at       time.Time
			misfired bool
			want     []time.Time
		}{
			{schedule.MisfireDoNothing, now, true, []time.Time{day(11), day(12)}},
			{schedule.MisfireFireNow, now, true, []time.Time{now, day(11)}},
			{schedule.MisfireDoNothing, start, false, []time.Time{day(1), day(2)}},
		} {
			row := insertTrigger(t, st, job, tc.policy.String()+tc.at.String(), noon, start, func(r *store.Trigger) {
				r.MisfirePolicy = tc.policy.String()
			})
			p, err := e.PreviewTrigger(context.Background(), row, tc.at, 2)
			if err != nil {
				t.Fatal(err)
			}
			if p.Misfired != tc.misfired || len(p.Fires) != len(tc.want) {
				t.Fatalf("%s at %s: %+v, want misfired %v and %v", tc.policy, tc.at, p, tc.misfired, tc.want)
			}
			for i := range tc.want {
				if !p.Fires[i].Equal(tc.want[i]) {
					t.Errorf("%s at %s: fire %d is %s, want %s", tc.policy, tc.at, i, p.Fires[i], tc.want[i])
				}
			}
			stored, err := st.TriggerGet(context.Background(), row.ID)
			if err != nil || stored.NextFireAt != row.NextFireAt {
				t.Errorf("preview changed the stored trigger: %+v, %v", stored, err)
			}
		}
	})
}

// TestPreviewTriggerAfter: the times after a given instant come from the trigger's schedule
// and calendar alone, strictly after the instant and up to its end, whatever its pending
// fire and misfire state; a paused trigger lists the same.
func TestPreviewTriggerAfter(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		ctx := context.Background()
		start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		now := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC) // every fire below is long missed
		e := newEngine(t, st, newRecorder(), "n1", clock.NewFake(now), nil)
		if err := st.CalendarPut(ctx, &store.Calendar{Name: "closed", Spec: "holiday:2024-01-12"}); err != nil {
			t.Fatal(err)
		}
		noon, err := schedule.ParseCron("0 0 12 * * ?", time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		job := insertJob(t, st, "j", nil)
		day := func(d int) time.Time { return time.Date(2024, 1, d, 12, 0, 0, 0, time.UTC) }
		for _, state := range []store.TriggerState{store.TriggerWaiting, store.TriggerPaused} {
			row := insertTrigger(t, st, job, "noon-"+string(state), noon, start, func(r *store.Trigger) {
				r.CalendarName, r.EndAt, r.State = "closed", ms(day(14).Add(time.Hour)), state
				r.MisfirePolicy = schedule.MisfireFireNow.String()
			})
			for _, tc := range []struct {
				after time.Time
				n     int
				want  []time.Time
			}{
				{day(10), 5, []time.Time{day(11), day(13), day(14)}}, // strictly after; the 12th excluded; ends on the 14th
				{day(10).Add(-time.Millisecond), 2, []time.Time{day(10), day(11)}},
				{start.Add(-24 * time.Hour), 1, []time.Time{day(1)}}, // before the start: from the start
				{day(14), 3, nil},
			} {
				p, err := e.PreviewTriggerAfter(ctx, row, tc.after, tc.n)
				if err != nil {
					t.Fatal(err)
				}
				if p.Misfired || len(p.Fires) != len(tc.want) {
					t.Fatalf("%s after %s: %+v, want %v", state, tc.after, p, tc.want)
				}
				for i := range tc.want {
					if !p.Fires[i].Equal(tc.want[i]) {
						t.Errorf("%s after %s: fire %d is %s, want %s", state, tc.after, i, p.Fires[i], tc.want[i])
					}
				}
			}
		}
	})
}
